//! One sweep worker: expand the sweep, then claim and run configurations one at a time
//! until `count` ran, nothing is left, or shutdown. Several workers (processes, hosts)
//! run the same sweep side by side; the claims ([`super::claim`]) keep them apart.
//!
//! Runs go through the same run loop and publisher as `agent-runner run`
//! ([`crate::agent::execute`]); a configuration is its arm's config on one task with one
//! seed. The worker owns the order in which it tries configurations and the
//! `optimizer_update` stream of the adaptive method.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemas::{sha256_hex, Payload, RunSequencer};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::adaptive::{self, ArmStats, Bandit, ClickHouseSource};
use super::claim::{Claim, ClaimBoard, ClaimConfig};
use super::expand::{self, Configuration, Expansion};
use super::file::{Method, SweepFile};
use super::SweepError;
use crate::agent::{self, RunSpec, RunSummary};
use crate::policy::{self, LlmConfig};
use crate::publish::{DeliveryReport, PublisherHandle};
use crate::recorder::RunRecorder;
use crate::runner::{start_publisher, PublishSetup};
use crate::scenario::{LoadOptions, LoadedScenario, LoadedTask};
use crate::tools::bwrap::SandboxMode;

/// `policy_id` of the adaptive method's `optimizer_update` events.
pub const OPTIMIZER_POLICY_ID: &str = "optimizer:ucb1";

/// Added to the scenario's execution timeout for the default claim lease: judge, setup
/// and delivery time of one run.
const LEASE_MARGIN: Duration = Duration::from_secs(600);

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
    /// Where events go (and claims live: the same NATS).
    pub publish: PublishSetup,
    /// How `llm` policies reach their provider.
    pub llm: Option<LlmConfig>,
    /// KV bucket and replicas; the lease defaults to the scenario's execution timeout
    /// plus ten minutes when `None`.
    pub bucket: String,
    /// Replicas of the claim bucket when this worker creates it.
    pub bucket_replicas: usize,
    /// Claim lease; see [`ClaimConfig::lease`].
    pub lease: Option<Duration>,
    /// Past results for the adaptive method (required by it, unused otherwise).
    pub clickhouse: Option<ClickHouseSource>,
}

/// A sweep ready to run: the file, its scenario and its expansion.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The sweep file.
    pub sweep: SweepFile,
    /// sha256 of the sweep file (the optimizer stream's `cfg_hash`).
    pub sha256: schemas::Hash256,
    /// The base scenario with the sweep's tasks.
    pub scenario: LoadedScenario,
    /// Arms and configurations.
    pub expansion: Expansion,
}

impl Plan {
    /// Loads the sweep file, its scenario and tasks, and expands it.
    pub fn load(
        file: &Path,
        scenarios_dir: &Path,
        allow_unpinned: bool,
    ) -> Result<Plan, SweepError> {
        let bytes = std::fs::read(file).map_err(|e| SweepError::File {
            path: file.to_path_buf(),
            message: e.to_string(),
        })?;
        let text = String::from_utf8(bytes.clone()).map_err(|e| SweepError::File {
            path: file.to_path_buf(),
            message: e.to_string(),
        })?;
        let sweep = SweepFile::parse(file, &text)?;
        let scenario = LoadedScenario::load(
            &sweep.scenario_path(file, scenarios_dir),
            &LoadOptions {
                tasks: sweep.tasks.clone(),
                allow_unpinned,
            },
        )?;
        let tasks: Vec<String> = scenario.tasks.iter().map(|t| t.task.id.clone()).collect();
        let base_seed = sweep.seed.unwrap_or(scenario.scenario.seed);
        let expansion = expand::expand(&sweep, &scenario.scenario.config, &tasks, base_seed)?;
        if expansion.arms.is_empty() {
            return Err(SweepError::Invalid(format!(
                "sweep {} has no config left after constraints",
                sweep.name
            )));
        }
        Ok(Plan {
            sweep,
            sha256: sha256_hex(&bytes),
            scenario,
            expansion,
        })
    }

    fn task(&self, id: &str) -> Option<&LoadedTask> {
        self.scenario.tasks.iter().find(|t| t.task.id == id)
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
                run.summary.seed,
                r.exit_status.as_str(),
                run.label,
                run.summary.run_id
            )?;
        }
        writeln!(f, "{}", self.delivery)
    }
}

/// Runs up to `config.count` configurations of the sweep, claimed through NATS, until
/// nothing is left or `shutdown` fires; then drains the publisher.
pub async fn run(
    config: SweepConfig,
    shutdown: CancellationToken,
) -> Result<SweepReport, SweepError> {
    let plan = Plan::load(&config.file, &config.scenarios_dir, config.allow_unpinned)?;
    if plan.sweep.method == Method::Adaptive && config.clickhouse.is_none() {
        return Err(SweepError::Config(
            "method adaptive reads past results: give --clickhouse-url".into(),
        ));
    }
    let lease = config.lease.unwrap_or_else(|| {
        Duration::from_millis(plan.scenario.scenario.config.execution_timeout_ms) + LEASE_MARGIN
    });
    // Claims need the broker now: without it, fail rather than risk running twice.
    let client = bench_nats::connect(&config.publish.nats, false).await?;
    let js = async_nats::jetstream::new(client);
    let board = ClaimBoard::open(
        &js,
        &ClaimConfig {
            bucket: config.bucket.clone(),
            replicas: config.bucket_replicas,
            lease,
        },
        config.worker.clone(),
    )
    .await?;
    let publisher = start_publisher(&config.publish).await?;
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
    };
    let (runs, optimizer_updates) = (worker.runs, worker.optimizer_updates);
    drop(worker.handle);
    drop(worker.optimizer);
    watcher.abort();
    let delivery = publisher.finish().await?;
    outcome?;
    Ok(SweepReport {
        sweep: plan.sweep.name.clone(),
        configurations: plan.expansion.configurations.len(),
        runs,
        optimizer_updates,
        delivery,
    })
}

struct Worker<'a> {
    plan: &'a Plan,
    config: &'a SweepConfig,
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
    async fn run_in_order(&mut self) -> Result<(), SweepError> {
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
    async fn run_adaptive(&mut self) -> Result<(), SweepError> {
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
            match adaptive::read_stats(source, &plan.expansion.arms, &tasks).await {
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
            self.announce(pick.update)?;
            local[pick.arm] += 1;
            self.run_claimed(configuration, claim).await?;
        }
        Ok(())
    }

    /// Claims the first configuration of `queue` nobody holds, dropping the ones taken.
    async fn claim_next<'c>(
        &self,
        queue: &mut Vec<&'c Configuration>,
    ) -> Result<Option<(&'c Configuration, Claim)>, SweepError> {
        while let Some(configuration) = queue.pop() {
            if let Some(claim) = self.board.claim(&configuration.key).await? {
                return Ok(Some((configuration, claim)));
            }
        }
        Ok(None)
    }

    /// Emits one `optimizer_update` on this worker's optimizer stream.
    fn announce(&mut self, update: schemas::OptimizerUpdate) -> Result<(), SweepError> {
        let plan = self.plan;
        let recorder = match &mut self.optimizer {
            Some(recorder) => recorder,
            None => self.optimizer.insert(RunRecorder::new(
                RunSequencer::new(
                    Uuid::now_v7(),
                    format!("sweep:{}", plan.sweep.name),
                    OPTIMIZER_POLICY_ID,
                    plan.sha256.clone(),
                    plan.scenario.sha256.clone(),
                    plan.sweep.seed.unwrap_or(plan.scenario.scenario.seed),
                    self.config.worker.clone(),
                ),
                Some(self.handle.clone()),
                None,
            )?),
        };
        tracing::info!(reasoning = %update.reasoning, "optimizer update");
        recorder.emit(None, Payload::OptimizerUpdate(update))?;
        self.optimizer_updates += 1;
        Ok(())
    }

    /// Runs one claimed configuration; marks it done, or releases it when the run was
    /// cut short by shutdown or could not be recorded.
    async fn run_claimed(
        &mut self,
        configuration: &Configuration,
        claim: Claim,
    ) -> Result<(), SweepError> {
        let plan = self.plan;
        let arm = &plan.expansion.arms[configuration.arm];
        let Some(task) = plan.task(&configuration.task_id) else {
            self.board.release(claim).await?;
            return Err(SweepError::Invalid(format!(
                "task {} is not loaded",
                configuration.task_id
            )));
        };
        let mut scenario = plan.scenario.clone();
        scenario.scenario.config = arm.config.clone();
        let policy = match policy::build(
            &scenario,
            task,
            configuration.seed,
            self.config.llm.as_ref(),
        ) {
            Ok(policy) => policy,
            Err(e) => {
                self.board.release(claim).await?;
                return Err(e.into());
            }
        };
        tracing::info!(key = %configuration.key, task = %configuration.task_id, seed = configuration.seed, config = %arm.label, "running configuration");
        let spec = RunSpec {
            scenario: &scenario,
            task,
            seed: configuration.seed,
            host: &self.config.worker,
            output_cap: self.config.output_cap,
            sandbox: self.config.sandbox,
            out_dir: self.config.out_dir.as_deref(),
            publisher: Some(self.handle.clone()),
        };
        let summary = match agent::execute(spec, policy, self.stop.clone()).await {
            Ok(summary) => summary,
            Err(e) => {
                self.board.release(claim).await?;
                return Err(e.into());
            }
        };
        if self.stop.is_cancelled() {
            // Cut short: the configuration is still to be run, by anyone.
            self.board.release(claim).await?;
            return Ok(());
        }
        self.board.complete(claim, summary.run_id).await?;
        self.runs.push(SweepRun {
            key: configuration.key.clone(),
            label: arm.label.clone(),
            summary,
        });
        Ok(())
    }
}
