//! One sweep worker: expand the sweep, then claim and run configurations one at a time
//! until `count` ran, nothing is left, or shutdown. Several workers (processes, hosts)
//! run the same sweep side by side; the claims ([`super::claim`]) keep them apart.
//!
//! Runs go through the same run loop and publisher as `agent-runner run`
//! ([`crate::agent::execute`]); a configuration is its arm's config on one task with one
//! seed. The worker owns the order in which it tries configurations and the
//! `optimizer_update` streams of the adaptive and bayes methods.
//!
//! `bayes` claims trials (`<sweep>.trial.<n>`, lowest free index first) rather than
//! configurations: the worker that holds trial `n` asks the optimizer for its config
//! given the finished trials before it, runs it on every task of the sweep with every
//! seed, publishes the proposal with the trial's result, and marks it done with the
//! config's matrix values.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bench_clickhouse::ClickHouseConfig;
use bench_delivery::{DeliveryReport, PublishSetup, Publisher, PublisherHandle};
use bench_sandbox::SandboxMode;
use bench_schemas::{
    sha256_hex, Hash256, OptimizerUpdate, Payload, RunConfig, RunSequencer, SweepRef,
};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::adaptive::{self, ArmStats, Bandit};
use super::bayes::{self, Observation, Proposal, SearchSpace};
use super::claim::{Claim, ClaimBoard, ClaimRecord, ClaimSettings};
use super::expand::{self, Configuration, Expansion};
use super::file::{Method, SweepFile};
use super::{trials, SweepError};
use crate::agent::{self, RunSpec, RunSummary};
use crate::error::{Error, Exit, Outcome};
use crate::policy::identity::identify;
use crate::policy::{self, LlmConfig};
use crate::recorder::RunRecorder;
use crate::task_image::{ImageCacheArgs, TaskImages};
use bench_task::{LoadOptions, LoadedScenario, LoadedTask};

/// `policy_id` of the adaptive method's `optimizer_update` events.
pub const OPTIMIZER_POLICY_ID: &str = "optimizer:ucb1";

/// `policy_id` of the bayes method's `optimizer_update` events.
pub const BAYES_POLICY_ID: &str = "optimizer:tpe";

/// How long a bayes worker waits for finished trials to reach ClickHouse before it
/// proposes without them (the sink's delay, normally well under a second).
const RESULT_WAIT: Duration = Duration::from_secs(30);

/// Between two reads of ClickHouse while waiting for results.
const RESULT_POLL: Duration = Duration::from_millis(200);

/// Everything `agent-runner sweep` needs, validated.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// The sweep file.
    pub file: PathBuf,
    /// Where scenario names are looked up.
    pub scenarios_dir: PathBuf,
    /// Run even if the scenario, a task or a fixture differs from `pins.toml`.
    pub allow_unpinned: bool,
    /// Configurations this worker runs at most.
    pub count: usize,
    /// `host` on every event and owner of this worker's claims.
    pub worker: String,
    /// Per-run artifacts go to `<out_dir>/<run_id>/`; `None` = none written.
    pub out_dir: Option<PathBuf>,
    /// Observation bytes kept per tool call.
    pub output_cap: usize,
    /// Whether agent commands must run in the sandbox (`--unsandboxed`).
    pub sandbox: SandboxMode,
    /// Where task images are cached.
    pub images: ImageCacheArgs,
    /// Where events go (and claims live: the same NATS).
    pub publish: PublishSetup,
    /// How `llm` policies reach their provider.
    pub llm: Option<LlmConfig>,
    /// KV bucket, replicas and lease of the claims; the lease defaults to the scenario's
    /// execution timeout plus ten minutes (per run a claim holds).
    pub claims: ClaimSettings,
    /// Past results for the adaptive and bayes methods (required by them, unused
    /// otherwise).
    pub clickhouse: Option<ClickHouseConfig>,
}

/// A sweep ready to run: the file, its scenario and its expansion.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The sweep file.
    pub sweep: SweepFile,
    /// sha256 of the sweep file (the optimizer stream's `cfg_hash`).
    pub sha256: bench_schemas::Hash256,
    /// The base scenario with the sweep's tasks.
    pub scenario: LoadedScenario,
    /// Arms and configurations (none for `bayes`).
    pub expansion: Expansion,
    /// `bayes` only: the search space.
    pub space: Option<SearchSpace>,
}

impl Plan {
    /// Loads the sweep file, its scenario and tasks, and expands it; `llm` is how its
    /// model-backed configurations reach their provider (part of their `cfg_hash`).
    pub fn load(
        file: &Path,
        scenarios_dir: &Path,
        allow_unpinned: bool,
        llm: Option<&LlmConfig>,
    ) -> Result<Plan, Error> {
        let bytes = std::fs::read(file).map_err(|e| SweepError::File {
            path: file.to_path_buf(),
            message: e.to_string(),
        })?;
        let text = String::from_utf8(bytes.clone()).map_err(|e| SweepError::File {
            path: file.to_path_buf(),
            message: e.to_string(),
        })?;
        let sweep = SweepFile::parse(file, &text)?;
        let mut scenario = LoadedScenario::load(
            &sweep.scenario_path(file, scenarios_dir),
            &LoadOptions {
                tasks: sweep.tasks.clone(),
                allow_unpinned,
            },
        )?;
        // Logged with their count; the plan holds only the tasks that can be judged.
        scenario.without_broken();
        // Every configuration derives from this one: its endpoint, prompt and tools are
        // theirs (a sweep varies none of them).
        identify(&mut scenario.scenario.config, scenario.scenario.policy, llm);
        let tasks: Vec<String> = scenario.tasks.iter().map(|t| t.task.id.clone()).collect();
        let base_seed = sweep.seed.unwrap_or(scenario.scenario.seed);
        if sweep.method == Method::Bayes {
            let space = SearchSpace::new(&sweep, &scenario.scenario.config, base_seed)?;
            return Ok(Plan {
                sweep,
                sha256: sha256_hex(&bytes),
                scenario,
                expansion: Expansion::default(),
                space: Some(space),
            });
        }
        let expansion = expand::expand(&sweep, &scenario.scenario.config, &tasks, base_seed)?;
        if expansion.arms.is_empty() {
            return Err(SweepError::Invalid(format!(
                "sweep {} has no config left after constraints",
                sweep.name
            ))
            .into());
        }
        Ok(Plan {
            sweep,
            sha256: sha256_hex(&bytes),
            scenario,
            expansion,
            space: None,
        })
    }

    fn task(&self, id: &str) -> Option<&LoadedTask> {
        self.scenario.tasks.iter().find(|t| t.task.id == id)
    }

    /// The sweep's seed: the run seed of every bayes trial and the optimizer's seed.
    fn seed(&self) -> u64 {
        self.sweep.seed.unwrap_or(self.scenario.scenario.seed)
    }

    /// Runs of the whole sweep (all workers).
    pub fn runs(&self) -> usize {
        match self.sweep.trials {
            Some(trials) => usize::try_from(trials)
                .unwrap_or(usize::MAX)
                .saturating_mul(self.trial_runs().len()),
            None => self.expansion.configurations.len(),
        }
    }

    /// The claim key of bayes trial `n`.
    pub fn trial_key(&self, n: u64) -> String {
        format!("{}.trial.{n}", self.sweep.name)
    }

    /// The runs of every bayes trial, in the order they run: (repeat, task id, seed),
    /// every task of the sweep with the first seed, then with the next.
    pub fn trial_runs(&self) -> Vec<(u32, &str, u64)> {
        let seeds = self.sweep.seed_list(self.seed());
        (0u32..)
            .zip(seeds)
            .flat_map(|(repeat, seed)| {
                self.scenario
                    .tasks
                    .iter()
                    .map(move |t| (repeat, t.task.id.as_str(), seed))
            })
            .collect()
    }
}

/// How many proposals `--dry-run` prints at most.
const DRY_RUN_PROPOSALS: u64 = 10;

impl Plan {
    /// The bayes dry run: the space, and the proposals that need no finished trial (the
    /// random start; the first model proposal when there is none).
    fn fmt_bayes(&self, f: &mut fmt::Formatter<'_>, space: &SearchSpace) -> fmt::Result {
        let trials = self.sweep.trials.unwrap_or(0);
        let settings = space.settings();
        writeln!(
            f,
            "sweep {} (bayes): {trials} trials, seed {}, maximising {}; {} random startup trials, then TPE (gamma {}, {} candidates)",
            self.sweep.name,
            self.seed(),
            settings.weights().describe(),
            settings.startup_trials,
            settings.gamma,
            settings.candidates
        )?;
        let tasks: Vec<&str> = self
            .scenario
            .tasks
            .iter()
            .map(|t| t.task.id.as_str())
            .collect();
        writeln!(
            f,
            "  each trial: {} runs, tasks [{}] x seeds {:?}; objective: the mean over its runs",
            self.trial_runs().len(),
            tasks.join(", "),
            self.sweep.seed_list(self.seed())
        )?;
        for line in space.describe() {
            writeln!(f, "  {line}")?;
        }
        for constraint in &self.sweep.constraints {
            writeln!(f, "  constraint: {constraint}")?;
        }
        let first = trials
            .min(settings.startup_trials.max(1))
            .min(DRY_RUN_PROPOSALS);
        writeln!(f, "first {first} proposals (independent of results):")?;
        for n in 0..first {
            match space.propose(n, &[]) {
                Ok(p) => writeln!(f, "  trial {n:<4} {}  cfg {}", p.label, p.cfg_hash)?,
                Err(e) => writeln!(f, "  trial {n:<4} {e}")?,
            }
        }
        Ok(())
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(space) = &self.space {
            return self.fmt_bayes(f, space);
        }
        let e = &self.expansion;
        writeln!(
            f,
            "sweep {} ({}): {} matrix points, {} merged (unused parameters), {} excluded by constraints, {} invalid, {} configs, {} configurations",
            self.sweep.name,
            self.sweep.method.as_str(),
            e.points,
            e.merged,
            e.excluded,
            e.invalid.len(),
            e.arms.len(),
            e.configurations.len()
        )?;
        for (label, reason) in &e.invalid {
            writeln!(f, "  invalid: {label}: {reason}")?;
        }
        for arm in &e.arms {
            writeln!(
                f,
                "  config #{:<3} {}  cfg {}",
                arm.index, arm.label, arm.cfg_hash
            )?;
        }
        Ok(())
    }
}

/// The dry run (`--dry-run`): the plan is printed, nothing runs.
impl Outcome for Plan {
    fn exit(&self) -> Exit {
        Exit::Ok
    }
}

/// One configuration this worker ran.
#[derive(Debug, Clone)]
pub struct SweepRun {
    /// Its claim key.
    pub key: String,
    /// Its arm's label.
    pub label: String,
    /// The run.
    pub summary: RunSummary,
}

/// What a worker did.
#[derive(Debug, Clone)]
pub struct SweepReport {
    /// Sweep name.
    pub sweep: String,
    /// Configurations of the sweep (all workers).
    pub configurations: usize,
    /// Runs of this worker, in order.
    pub runs: Vec<SweepRun>,
    /// `optimizer_update` events emitted.
    pub optimizer_updates: u64,
    /// What the publisher did.
    pub delivery: DeliveryReport,
}

impl fmt::Display for SweepReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "sweep {}: this worker ran {} of {} configurations ({} optimizer updates)",
            self.sweep,
            self.runs.len(),
            self.configurations,
            self.optimizer_updates
        )?;
        for run in &self.runs {
            let r = &run.summary.result;
            let (outcome, score, _) = crate::agent::result_words(r);
            writeln!(
                f,
                "  {:<28} seed {:<6} {outcome:<8} {:<15} score {score:<4}  {}  run {}",
                run.summary.task_id,
                run.summary
                    .seed
                    .map_or_else(|| "-".to_owned(), |seed| seed.to_string()),
                r.exit_status.as_str(),
                run.label,
                run.summary.run_id
            )?;
        }
        writeln!(f, "{}", self.delivery)
    }
}

impl Outcome for SweepReport {
    fn exit(&self) -> Exit {
        let tally =
            crate::error::RunTally::of(self.runs.iter().map(|r| r.summary.result.exit_status));
        crate::error::runs_exit(tally, Some(&self.delivery))
    }
}

/// Runs up to `config.count` configurations of the sweep, claimed through NATS, until
/// nothing is left or `shutdown` fires; then drains the publisher.
pub async fn run(config: SweepConfig, shutdown: CancellationToken) -> Result<SweepReport, Error> {
    let plan = Plan::load(
        &config.file,
        &config.scenarios_dir,
        config.allow_unpinned,
        config.llm.as_ref(),
    )?;
    let models = plan
        .sweep
        .matrix
        .get("model")
        .and_then(toml::Value::as_array)
        .map_or(1, Vec::len);
    if models > 1
        && config
            .llm
            .as_ref()
            .is_some_and(|l| l.price_overrides.is_some())
    {
        return Err(Error::Config(format!(
            "sweep {} runs {models} models: --prompt-price-per-mtok and \
             --completion-price-per-mtok price one; give each model's prices with --prices",
            plan.sweep.name
        )));
    }
    if matches!(plan.sweep.method, Method::Adaptive | Method::Bayes) && config.clickhouse.is_none()
    {
        return Err(Error::Config(format!(
            "method {} reads past results: give --clickhouse-url",
            plan.sweep.method.as_str()
        )));
    }
    if plan.scenario.scenario.policy == bench_task::PolicyKind::Llm {
        let mut models: Vec<&str> = std::iter::once(&plan.scenario.scenario.config)
            .chain(plan.expansion.arms.iter().map(|arm| &arm.config))
            .map(|c| c.model.as_str())
            .collect();
        models.sort_unstable();
        models.dedup();
        crate::runner::check_provider(config.llm.as_ref(), &models).await?;
    }
    // A bayes claim holds a whole trial: all of its runs.
    let held_runs = match plan.sweep.method {
        Method::Bayes => u32::try_from(plan.trial_runs().len()).unwrap_or(u32::MAX),
        _ => 1,
    };
    let claims = config.claims.config(
        plan.scenario.scenario.config.execution_timeout_ms,
        held_runs,
    );
    // Claims need the broker now: without it, fail rather than risk running twice.
    let client = bench_nats::connect(&config.publish.nats, false).await?;
    let js = async_nats::jetstream::new(client);
    let board = ClaimBoard::open(&js, &claims, config.worker.clone()).await?;
    let confinement = config.sandbox.confinement(
        &plan.scenario.scenario.config.sandbox_limits,
        plan.scenario.scenario.policy == bench_task::PolicyKind::Scripted,
    )?;
    let images = TaskImages::prepare(
        &plan.scenario.tasks,
        &config.images,
        confinement.is_sandboxed(),
    )
    .await?;
    let publisher = Publisher::connect(&config.publish).await?;
    let stop = shutdown.child_token();
    let watcher = {
        let (failed, stop) = (publisher.failed(), stop.clone());
        tokio::spawn(async move {
            failed.cancelled().await;
            stop.cancel();
        })
    };
    let mut worker = Worker {
        plan: &plan,
        config: &config,
        images: &images,
        board,
        handle: publisher.handle(),
        stop,
        runs: Vec::new(),
        optimizer: None,
        optimizer_updates: 0,
    };
    let outcome = match plan.sweep.method {
        Method::Grid | Method::Random => worker.run_in_order().await,
        Method::Adaptive => worker.run_adaptive().await,
        Method::Bayes => worker.run_bayes().await,
    };
    let (runs, optimizer_updates) = (worker.runs, worker.optimizer_updates);
    drop(worker.handle);
    drop(worker.optimizer);
    watcher.abort();
    let delivery = publisher.finish().await?;
    outcome?;
    Ok(SweepReport {
        sweep: plan.sweep.name.clone(),
        configurations: plan.runs(),
        runs,
        optimizer_updates,
        delivery,
    })
}

struct Worker<'a> {
    plan: &'a Plan,
    config: &'a SweepConfig,
    images: &'a TaskImages,
    board: ClaimBoard,
    handle: PublisherHandle,
    stop: CancellationToken,
    runs: Vec<SweepRun>,
    /// The adaptive method's `optimizer_update` stream (one per worker process).
    optimizer: Option<RunRecorder>,
    optimizer_updates: u64,
}

impl Worker<'_> {
    fn done(&self) -> bool {
        self.runs.len() >= self.config.count || self.stop.is_cancelled()
    }

    /// `grid` and `random`: the configurations in plan order, each claimed or skipped.
    async fn run_in_order(&mut self) -> Result<(), Error> {
        for configuration in &self.plan.expansion.configurations {
            if self.done() {
                break;
            }
            if let Some(claim) = self.board.claim(&configuration.key).await? {
                self.run_claimed(configuration, claim).await?;
            }
        }
        Ok(())
    }

    /// `adaptive`: the bandit picks an arm, the worker claims that arm's next free
    /// configuration; arms with nothing left to claim drop out.
    async fn run_adaptive(&mut self) -> Result<(), Error> {
        let plan = self.plan;
        let Some(source) = &self.config.clickhouse else {
            return Ok(());
        };
        let mut pending: Vec<Vec<&Configuration>> = vec![Vec::new(); plan.expansion.arms.len()];
        for c in plan.expansion.configurations.iter().rev() {
            pending[c.arm].push(c);
        }
        let tasks: Vec<String> = plan
            .scenario
            .tasks
            .iter()
            .map(|t| t.task.id.clone())
            .collect();
        let mut stats: HashMap<String, ArmStats> = HashMap::new();
        let mut local = vec![0u64; plan.expansion.arms.len()];
        while !self.done() {
            match adaptive::read_stats(source, &plan.expansion.arms, &tasks, &plan.sweep.adaptive)
                .await
            {
                Ok(fresh) => stats = fresh,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read past results; using the last ones")
                }
            }
            let eligible: Vec<usize> = (0..pending.len())
                .filter(|&i| !pending[i].is_empty())
                .collect();
            let bandit = Bandit::new(&plan.expansion.arms, &plan.sweep.adaptive);
            let Some(pick) = bandit.pick(&stats, &eligible, &local) else {
                break;
            };
            let Some((configuration, claim)) = self.claim_next(&mut pending[pick.arm]).await?
            else {
                continue;
            };
            let recorder = match &mut self.optimizer {
                Some(recorder) => recorder,
                None => self.optimizer.insert(optimizer_stream(
                    plan,
                    self.config,
                    &self.handle,
                    OPTIMIZER_POLICY_ID,
                    plan.sha256.clone(),
                    plan.seed(),
                )?),
            };
            emit(recorder, pick.update)?;
            self.optimizer_updates += 1;
            local[pick.arm] += 1;
            self.run_claimed(configuration, claim).await?;
        }
        Ok(())
    }

    /// `bayes`: claim the lowest free trial, ask the optimizer for its config given the
    /// finished trials before it, run it.
    async fn run_bayes(&mut self) -> Result<(), Error> {
        let plan = self.plan;
        let (Some(source), Some(space)) = (&self.config.clickhouse, &plan.space) else {
            return Ok(());
        };
        let mut known = KnownTrials::default();
        while !self.done() {
            let Some((trial, claim)) = self.claim_trial(&known).await? else {
                break;
            };
            let observations = match known.observations(self, source, trial).await {
                Ok(observations) => observations,
                Err(e) => {
                    self.board.release(claim).await?;
                    return Err(e);
                }
            };
            let proposal = match space.propose(trial, &observations) {
                Ok(proposal) => proposal,
                Err(e) => {
                    self.board.release(claim).await?;
                    return Err(e.into());
                }
            };
            let key = plan.trial_key(trial);
            let mut runs = Vec::new();
            for (repeat, task_id, seed) in plan.trial_runs() {
                let job = Job {
                    key: &key,
                    config: &proposal.config,
                    label: &proposal.label,
                    task_id,
                    seed,
                    trial: Some(trial),
                    repeat: Some(repeat),
                };
                match self.execute(&job).await {
                    Ok(Some(summary)) => runs.push((summary.run_id, summary.result)),
                    // Cut short: the trial is still to be run, by anyone.
                    Ok(None) => return Ok(self.board.release(claim).await?),
                    Err(e) => {
                        self.board.release(claim).await?;
                        return Err(e);
                    }
                }
            }
            let stops: Vec<_> = runs.iter().map(|(id, stop)| (*id, stop)).collect();
            let outcome = bayes::outcome(&stops, &plan.sweep.bayes.weights());
            let stream = self.announce_proposal(&proposal, outcome)?;
            self.board
                .complete(claim, stream, Some(proposal.values))
                .await?;
        }
        Ok(())
    }

    /// The lowest trial not known done that this worker can claim, if any.
    async fn claim_trial(&self, known: &KnownTrials) -> Result<Option<(u64, Claim)>, Error> {
        let total = self.plan.sweep.trials.unwrap_or(0);
        for n in (0..total).filter(|n| !known.done.contains_key(n)) {
            if let Some(claim) = self.board.claim(&self.plan.trial_key(n)).await? {
                return Ok(Some((n, claim)));
            }
        }
        Ok(None)
    }

    /// Emits the `optimizer_update` of a bayes proposal, with its trial's `outcome`, on
    /// a stream of its own, whose `cfg_hash` is the proposed config's (the one its runs
    /// carry) and whose `seed` is the proposal's generator seed; returns the stream's run
    /// id, which the trial's claim records.
    fn announce_proposal(
        &mut self,
        proposal: &Proposal,
        outcome: bench_schemas::TrialOutcome,
    ) -> Result<Uuid, Error> {
        let mut recorder = optimizer_stream(
            self.plan,
            self.config,
            &self.handle,
            BAYES_POLICY_ID,
            proposal.cfg_hash.clone(),
            proposal.rng_seed,
        )?;
        emit(
            &mut recorder,
            OptimizerUpdate {
                outcome: Some(outcome),
                ..proposal.update.clone()
            },
        )?;
        self.optimizer_updates += 1;
        Ok(recorder.sequencer().run_id)
    }

    /// Claims the first configuration of `queue` nobody holds, dropping the ones taken.
    async fn claim_next<'c>(
        &self,
        queue: &mut Vec<&'c Configuration>,
    ) -> Result<Option<(&'c Configuration, Claim)>, Error> {
        while let Some(configuration) = queue.pop() {
            if let Some(claim) = self.board.claim(&configuration.key).await? {
                return Ok(Some((configuration, claim)));
            }
        }
        Ok(None)
    }

    /// Runs one claimed configuration of the matrix.
    async fn run_claimed(
        &mut self,
        configuration: &Configuration,
        claim: Claim,
    ) -> Result<(), Error> {
        let arm = &self.plan.expansion.arms[configuration.arm];
        let job = Job {
            key: &configuration.key,
            config: &arm.config,
            label: &arm.label,
            task_id: &configuration.task_id,
            seed: configuration.seed,
            trial: None,
            repeat: None,
        };
        match self.execute(&job).await {
            Ok(Some(summary)) => Ok(self.board.complete(claim, summary.run_id, None).await?),
            // Cut short: the configuration is still to be run, by anyone.
            Ok(None) => Ok(self.board.release(claim).await?),
            Err(e) => {
                self.board.release(claim).await?;
                Err(e)
            }
        }
    }

    /// Runs one job of a claim this worker holds; `None` when shutdown cut it short. The
    /// caller marks the claim done or releases it.
    async fn execute(&mut self, job: &Job<'_>) -> Result<Option<RunSummary>, Error> {
        let plan = self.plan;
        let Some(task) = plan.task(job.task_id) else {
            return Err(SweepError::Invalid(format!("task {} is not loaded", job.task_id)).into());
        };
        let mut scenario = plan.scenario.clone();
        scenario.scenario.config = job.config.clone();
        let policy = policy::build(&scenario, task, job.seed, self.config.llm.as_ref())?;
        tracing::info!(key = %job.key, task = %job.task_id, seed = job.seed, config = %job.label, "running configuration");
        let spec = RunSpec {
            scenario: &scenario,
            task,
            seed: job.seed,
            host: &self.config.worker,
            output_cap: self.config.output_cap,
            sandbox: self.config.sandbox,
            out_dir: self.config.out_dir.as_deref(),
            publisher: Some(self.handle.clone()),
            sweep: Some(SweepRef {
                name: plan.sweep.name.clone(),
                key: job.key.to_owned(),
                trial: job.trial,
            }),
            // A sweep is the experiment named after it.
            experiment: bench_schemas::ExperimentRef {
                name: Some(plan.sweep.name.clone()),
                repeat: job.repeat,
                planned_runs: u32::try_from(plan.runs()).ok(),
                ..Default::default()
            },
            // Sweeps judge once; `run --regrade` measures a verdict's stability.
            regrade: 0,
            images: self.images,
        };
        let summary = agent::execute(spec, policy, self.stop.clone()).await?;
        if self.stop.is_cancelled() {
            return Ok(None);
        }
        self.runs.push(SweepRun {
            key: job.key.to_owned(),
            label: job.label.to_owned(),
            summary: summary.clone(),
        });
        Ok(Some(summary))
    }
}

/// One run to do, whatever the method.
struct Job<'a> {
    /// Claim key.
    key: &'a str,
    /// The run config.
    config: &'a RunConfig,
    /// Its matrix values, for reports.
    label: &'a str,
    /// The task.
    task_id: &'a str,
    /// The run's seed.
    seed: u64,
    /// The bayes trial, numbered from 0; `None` for a grid configuration.
    trial: Option<u64>,
    /// A bayes trial's run: which of the sweep's seeds it runs with, from 0.
    repeat: Option<u32>,
}

/// A new `optimizer_update` stream: `task_id = sweep:<name>`, this worker's host.
fn optimizer_stream(
    plan: &Plan,
    config: &SweepConfig,
    handle: &PublisherHandle,
    policy_id: &str,
    cfg_hash: Hash256,
    seed: u64,
) -> Result<RunRecorder, Error> {
    Ok(RunRecorder::new(
        RunSequencer::new(
            Uuid::now_v7(),
            format!("sweep:{}", plan.sweep.name),
            policy_id,
            cfg_hash,
            plan.scenario.sha256.clone(),
            Some(seed),
            config.worker.clone(),
        ),
        Some(handle.clone()),
        None,
    )?)
}

/// Emits `update` on `recorder`.
fn emit(recorder: &mut RunRecorder, update: bench_schemas::OptimizerUpdate) -> Result<(), Error> {
    tracing::info!(reasoning = %update.reasoning, "optimizer update");
    recorder.emit(None, Payload::OptimizerUpdate(update))?;
    Ok(())
}

/// What a bayes worker has learnt about finished trials; done trials never change, so
/// each is read once.
#[derive(Default)]
struct KnownTrials {
    /// Trial → (run id of its proposal's stream, matrix values) of trials marked done.
    done: BTreeMap<u64, (Uuid, BTreeMap<String, serde_json::Value>)>,
    /// Trial → objective of trials whose result ClickHouse holds (`None`: unknown).
    rewards: BTreeMap<u64, Option<f64>>,
    /// Done trials whose result was still missing after a whole wait: asked for again at
    /// each proposal, but not waited for twice.
    late: BTreeSet<u64>,
}

impl KnownTrials {
    /// The finished trials before `trial`, with their rewards, in trial order. Waits (up
    /// to [`RESULT_WAIT`], once per trial) for done trials whose result has not reached
    /// ClickHouse yet, so one worker replays the same way whatever the sink's delay.
    async fn observations(
        &mut self,
        worker: &Worker<'_>,
        source: &ClickHouseConfig,
        trial: u64,
    ) -> Result<Vec<Observation>, Error> {
        for n in 0..trial {
            if self.done.contains_key(&n) {
                continue;
            }
            if let Some(ClaimRecord::Done {
                run_id,
                values: Some(values),
                ..
            }) = worker.board.record(&worker.plan.trial_key(n)).await?
            {
                self.done.insert(n, (run_id, values));
            }
        }
        let deadline = tokio::time::Instant::now() + RESULT_WAIT;
        loop {
            let missing: Vec<(u64, Uuid)> = self
                .done
                .range(..trial)
                .filter(|(n, _)| !self.rewards.contains_key(n))
                .map(|(n, (run_id, _))| (*n, *run_id))
                .collect();
            if missing.is_empty() {
                break;
            }
            let ids: Vec<Uuid> = missing.iter().map(|(_, id)| *id).collect();
            match trials::read(source, &ids).await {
                Ok(results) => {
                    for (n, stream) in &missing {
                        if let Some(objective) = results.get(stream) {
                            self.rewards.insert(*n, *objective);
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot read trial results"),
            }
            let waiting: Vec<u64> = missing
                .iter()
                .map(|(n, _)| *n)
                .filter(|n| !self.rewards.contains_key(n) && !self.late.contains(n))
                .collect();
            if waiting.is_empty() {
                break;
            }
            if tokio::time::Instant::now() >= deadline || worker.stop.is_cancelled() {
                tracing::warn!(
                    trial,
                    ?waiting,
                    "proposing without finished trials whose results are not in clickhouse"
                );
                self.late.extend(waiting);
                break;
            }
            tokio::time::sleep(RESULT_POLL).await;
        }
        Ok(self
            .rewards
            .range(..trial)
            .filter_map(|(n, reward)| {
                let (_, values) = self.done.get(n)?;
                Some(Observation {
                    trial: *n,
                    values: values.clone(),
                    reward: (*reward)?,
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sweep that varies the tools gives each config the hash of the tool definitions
    /// it offers (not the base scenario's), whatever the method.
    #[test]
    fn a_sweep_over_tools_hashes_the_tools_each_config_offers() {
        let dir = tempfile::tempdir().expect("dir");
        let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/llm-local.toml");
        let scenarios = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios");
        let tools = r#"available_tools = [["bash", "submit"], ["bash", "grep", "view", "submit"]]"#;
        let provider = LlmConfig {
            provider: crate::provider::ProviderConfig {
                base_url: "http://127.0.0.1:18080/v1".to_owned(),
                api_key: None,
                timeout: std::time::Duration::from_secs(1),
                max_tokens: None,
            },
            price_overrides: None,
            price_table: None,
            max_format_errors: 1,
            max_provider_failures: 1,
        };
        let llm_local = || {
            let text = include_str!("../../../scenarios/llm-local.toml");
            bench_task::Scenario::parse(Path::new("llm-local.toml"), text)
                .expect("llm-local scenario")
                .config
        };
        let own_hash = |config: &RunConfig| {
            let mut fresh = llm_local();
            fresh.available_tools = config.available_tools.clone();
            identify(&mut fresh, bench_task::PolicyKind::Llm, Some(&provider));
            fresh.tool_definitions_sha256
        };
        let mut seen = Vec::new();
        for method in ["method = \"grid\"", "method = \"bayes\"\ntrials = 4"] {
            let file = dir.path().join("tools.toml");
            let text = format!(
                "name = \"tools\"\nscenario = \"{scenario}\"\ntasks = [\"sh-ci-exit-status\"]\n{method}\n[matrix]\n{tools}\n"
            );
            std::fs::write(&file, text).expect("sweep file");
            let plan = crate::sweep::Plan::load(
                &file,
                std::path::Path::new(scenarios),
                false,
                Some(&provider),
            )
            .expect("plan");
            let configs: Vec<RunConfig> = match &plan.space {
                Some(space) => (0..4)
                    .map(|n| space.propose(n, &[]).expect("proposal").config)
                    .collect(),
                None => plan
                    .expansion
                    .arms
                    .iter()
                    .map(|a| a.config.clone())
                    .collect(),
            };
            for config in configs {
                assert!(config.available_tools.len() < 6, "{config:?}");
                assert_eq!(
                    config.tool_definitions_sha256,
                    own_hash(&config),
                    "{method}"
                );
                seen.push((config.available_tools.len(), config.tool_definitions_sha256));
            }
        }
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 2, "two tool sets, two hashes: {seen:?}");
    }
}
