//! Running a whole scenario: load and verify it, connect the publisher, run every
//! selected task `repeats` times (at most `concurrency` at once) with a progress bar, then
//! drain the publisher. [`run`] is what `agent-runner run` and the tests call.

use std::fmt;
use std::path::PathBuf;

use bench_delivery::{DeliveryReport, PublishFailure, PublishSetup, Publisher, SPOOL_SLOTS};
use bench_sandbox::SandboxMode;
use bench_schemas::{ContextStrategy, ExperimentRef};
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio_util::sync::CancellationToken;

use crate::agent::{self, RunSpec, RunSummary};
use crate::error::{Error, Exit, Outcome, RunTally};
use crate::policy::{self, LlmConfig};
use crate::task_image::{ImageCacheArgs, TaskImages};
use bench_task::{LoadOptions, LoadedScenario, PolicyKind};

/// Everything `agent-runner run` needs, validated.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Task filter and pin policy.
    pub load: LoadOptions,
    /// Runs executing at once on this host. Default 1.
    pub concurrency: usize,
    /// Replaces the scenario's seed.
    pub seed: Option<u64>,
    /// Per-run artifacts go to `<out_dir>/<run_id>/`; `None` = none written.
    pub out_dir: Option<PathBuf>,
    /// `host` on every event. Default: the machine's host name.
    pub host: String,
    /// Observation bytes kept per tool call. Default [`crate::tools::DEFAULT_OUTPUT_CAP`].
    pub output_cap: usize,
    /// Where events go; `None` = local artifacts only (`--no-publish`).
    pub publish: Option<PublishSetup>,
    /// Draw a progress bar on stderr (hidden anyway when stderr is not a terminal).
    pub progress: bool,
    /// How `llm` policies reach their provider; `None` = not configured (an `llm`
    /// scenario then fails to start).
    pub llm: Option<LlmConfig>,
    /// Whether agent commands must run in the sandbox. Default: required.
    pub sandbox: SandboxMode,
    /// Judge each SWE-bench-format run's final diff this many more times
    /// (`run_stop.regrade`). Default 0.
    pub regrade: u32,
    /// Runs of each task, with seeds `seed..seed+repeats-1`. Default 1.
    pub repeats: u32,
    /// The repeat index of the first of those runs: they are repeats `first_repeat..`
    /// with seeds `seed + first_repeat..`. 0 unless a command runs an experiment's
    /// repeats in rounds (`--until-decided`).
    pub first_repeat: u32,
    /// The model and strategy that replace the scenario's.
    pub overrides: PolicyOverrides,
    /// The experiment and tags of every run (`repeat` is set here, and `planned_runs`
    /// unless given).
    pub experiment: ExperimentRef,
    /// Where task images are cached.
    pub images: ImageCacheArgs,
}

/// Settings of the scenario's policy replaced for one command (`--model`, `--strategy`),
/// so that one scenario file serves several policies; they enter `cfg_hash` like the
/// scenario's own.
#[derive(Debug, Clone, Default)]
pub struct PolicyOverrides {
    /// The model, instead of the scenario's.
    pub model: Option<String>,
    /// The context strategy, instead of the scenario's.
    pub strategy: Option<ContextStrategy>,
}

impl PolicyOverrides {
    /// Replaces the scenario's settings; refuses a model for a scenario that calls no
    /// model and a strategy whose parameters the scenario does not set.
    pub fn apply(&self, scenario: &mut LoadedScenario) -> Result<(), Error> {
        let config = &mut scenario.scenario.config;
        if let Some(model) = &self.model {
            if scenario.scenario.policy != PolicyKind::Llm {
                return Err(Error::Config(format!(
                    "--model: scenario {} runs the scripted policy, which calls no model",
                    scenario.scenario.name
                )));
            }
            config.model.clone_from(model);
        }
        if let Some(strategy) = self.strategy {
            config.strategy = Some(strategy);
            bench_task::ContextPlan::from_config(config).map_err(|e| {
                Error::Config(format!(
                    "--strategy {}: scenario {} does not set what it needs: config.{e}",
                    strategy.as_str(),
                    scenario.scenario.name
                ))
            })?;
        }
        Ok(())
    }
}

/// The outcome of a scenario.
#[derive(Debug, Clone)]
pub struct ScenarioReport {
    /// Scenario name.
    pub scenario: String,
    /// One summary per finished run, in completion order.
    pub runs: Vec<RunSummary>,
    /// What the publisher did; `None` without publishing.
    pub delivery: Option<DeliveryReport>,
    /// Tasks left out because `tasks validate` found them broken.
    pub broken: Vec<String>,
}

impl ScenarioReport {
    /// Events not acknowledged yet: left in the spool for the next start.
    pub fn undelivered(&self) -> u64 {
        self.delivery.as_ref().map_or(0, |d| d.left_in_spool)
    }

    /// How the runs ended: those that could not get their sandbox (`exit_environment`)
    /// or whose provider failed (`exit_api`) are no results.
    pub fn tally(&self) -> RunTally {
        RunTally::of(self.runs.iter().map(|r| r.result.exit_status))
    }
}

impl fmt::Display for ScenarioReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "scenario {}: {} runs", self.scenario, self.runs.len())?;
        for run in &self.runs {
            let r = &run.result;
            let (outcome, score, tests) = agent::result_words(r);
            writeln!(
                f,
                "  {:<32} {outcome:<8} {:<15} score {score:<4}  tests {tests:<5}  turns {:>2}  events {:>3}  run {}",
                run.task_id,
                r.exit_status.as_str(),
                r.turns.map_or_else(|| "-".to_owned(), |t| t.to_string()),
                run.events,
                run.run_id
            )?;
        }
        if !self.broken.is_empty() {
            writeln!(
                f,
                "{} broken tasks skipped (tasks validate): {}",
                self.broken.len(),
                self.broken.join(", ")
            )?;
        }
        let tally = self.tally();
        if tally.no_sandbox > 0 {
            writeln!(
                f,
                "{} runs could not get their sandbox (exit_environment): no results, counted in no success rate; the log says why",
                tally.no_sandbox
            )?;
        }
        let provider_failed = tally.infrastructure - tally.no_sandbox;
        if provider_failed > 0 {
            writeln!(
                f,
                "{provider_failed} runs ended because the provider failed (exit_api): no results, counted in no success rate; the log says why"
            )?;
        }
        if let Some(d) = &self.delivery {
            writeln!(f, "{d}")?;
        }
        Ok(())
    }
}

/// The delivery's exit code, else [`Exit::Infrastructure`] when no run was a result,
/// else [`Exit::Environment`] when a run could not get its sandbox
/// ([`crate::error::runs_exit`]).
impl Outcome for ScenarioReport {
    fn exit(&self) -> Exit {
        crate::error::runs_exit(self.tally(), self.delivery.as_ref())
    }
}

/// Runs the scenario of `config` until every run ended or `shutdown` fires; then drains
/// the publisher (acks, spool replay within the drain timeout).
pub async fn run(
    config: RunnerConfig,
    shutdown: CancellationToken,
) -> Result<ScenarioReport, Error> {
    let mut scenario = LoadedScenario::load(&config.scenario, &config.load)?;
    config.overrides.apply(&mut scenario)?;
    crate::policy::identity::identify(
        &mut scenario.scenario.config,
        scenario.scenario.policy,
        config.llm.as_ref(),
    );
    let broken = scenario.without_broken();
    let seed = config.seed.unwrap_or(scenario.scenario.seed);
    let repeats = config.repeats.max(1);
    let last = u64::from(config.first_repeat) + u64::from(repeats - 1);
    if seed.checked_add(last).is_none() {
        return Err(Error::Config(format!(
            "--repeats {repeats} from seed {seed}: the seeds pass the largest one"
        )));
    }
    let planned = scenario.tasks.len() * repeats as usize;
    // (repeat, task): every task once per repeat, the first repeat first.
    let first = config.first_repeat;
    let jobs: Vec<(u32, &bench_task::LoadedTask)> = (first..first + repeats)
        .flat_map(|r| scenario.tasks.iter().map(move |task| (r, task)))
        .collect();
    // Refuse before any run starts, not run by run.
    let confinement = config.sandbox.confinement(
        &scenario.scenario.config.sandbox_limits,
        scenario.scenario.policy == PolicyKind::Scripted,
    )?;
    let images =
        TaskImages::prepare(&scenario.tasks, &config.images, confinement.is_sandboxed()).await?;
    let policies = jobs
        .iter()
        .map(|&(r, task)| policy::build(&scenario, task, seed + u64::from(r), config.llm.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    if scenario.scenario.policy == PolicyKind::Llm && !scenario.tasks.is_empty() {
        check_provider(config.llm.as_ref(), &[&scenario.scenario.config.model]).await?;
    }

    let publisher = start_optional_publisher(config.publish.as_ref()).await?;
    // Runs stop when the operator asks or when events can no longer be kept.
    let stop = shutdown.child_token();
    let watcher = publisher.as_ref().map(|p| {
        let failed = p.failed();
        let stop = stop.clone();
        tokio::spawn(async move {
            failed.cancelled().await;
            stop.cancel();
        })
    });

    let bar = progress_bar(config.progress, planned);
    let handle = publisher.as_ref().map(Publisher::handle);
    // A plain loop (not a closure over the stream) keeps the future `Send` for spawning.
    let mut pending = Vec::with_capacity(policies.len());
    for (&(repeat, task), policy) in jobs.iter().zip(policies) {
        let spec = RunSpec {
            scenario: &scenario,
            task,
            seed: seed + u64::from(repeat),
            host: &config.host,
            output_cap: config.output_cap,
            sandbox: config.sandbox,
            out_dir: config.out_dir.as_deref(),
            publisher: handle.clone(),
            sweep: None,
            experiment: ExperimentRef {
                repeat: Some(repeat),
                // A command that plans more than this call (rounds) says so itself.
                planned_runs: config
                    .experiment
                    .planned_runs
                    .or(u32::try_from(planned).ok()),
                ..config.experiment.clone()
            },
            regrade: config.regrade,
            images: &images,
        };
        pending.push(run_one(spec, policy, stop.clone(), bar.clone()));
    }
    let runs = futures::stream::iter(pending)
        .buffer_unordered(config.concurrency.max(1))
        .collect::<Vec<_>>()
        .await;
    bar.finish_and_clear();
    drop(handle);
    if let Some(w) = watcher {
        w.abort();
    }

    let delivery = finish_optional_publisher(publisher).await?;
    let runs = runs.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok(ScenarioReport {
        scenario: scenario.scenario.name,
        runs,
        delivery,
        broken,
    })
}

/// One run, reported on the progress bar.
async fn run_one(
    spec: RunSpec<'_>,
    policy: Box<dyn policy::Policy>,
    stop: CancellationToken,
    bar: ProgressBar,
) -> Result<RunSummary, crate::recorder::RecordError> {
    bar.set_message(spec.task.task.id.clone());
    let summary = agent::execute(spec, policy, stop).await;
    if let Ok(s) = &summary {
        bar.println(format!(
            "{:<8} {} ({})",
            agent::result_words(&s.result).0,
            s.task_id,
            s.result.exit_status.as_str()
        ));
    }
    bar.inc(1);
    summary
}

/// Replays the spool and stops (`agent-runner spool flush`): slot after slot, each free
/// slot holding events (the publisher takes those first), until one is left undelivered
/// or only empty slots remain.
pub async fn flush_spool(setup: &PublishSetup) -> Result<DeliveryReport, Error> {
    let mut total = DeliveryReport::default();
    for _ in 0..SPOOL_SLOTS {
        let report = Publisher::connect(setup).await?.finish().await?;
        let progressed = report.replayed + report.quarantined > 0;
        total.add(report);
        if !progressed || total.left_in_spool > 0 {
            break;
        }
    }
    Ok(total)
}

/// [`Publisher::connect`] when there is a setup; `None` for a command told not to publish.
pub async fn start_optional_publisher(
    setup: Option<&PublishSetup>,
) -> Result<Option<Publisher>, Error> {
    match setup {
        Some(setup) => Ok(Some(Publisher::connect(setup).await?)),
        None => Ok(None),
    }
}

/// [`Publisher::finish`] of the publisher of [`start_optional_publisher`], if any.
pub async fn finish_optional_publisher(
    publisher: Option<Publisher>,
) -> Result<Option<DeliveryReport>, PublishFailure> {
    match publisher {
        Some(publisher) => Ok(Some(publisher.finish().await?)),
        None => Ok(None),
    }
}

fn progress_bar(enabled: bool, len: usize) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} runs  {msg}",
    ) {
        bar.set_style(style);
    }
    bar
}

/// Before the first run of an `llm` policy: the provider of `llm` answers and serves each
/// of `models` ([`crate::provider::check`]), or the command ends now, no run recorded.
pub(crate) async fn check_provider(llm: Option<&LlmConfig>, models: &[&str]) -> Result<(), Error> {
    let Some(llm) = llm else {
        return Ok(());
    };
    crate::provider::check(&llm.provider, models).await?;
    tracing::debug!(provider = %llm.provider.base_url, ?models, "the provider answered its check");
    Ok(())
}
