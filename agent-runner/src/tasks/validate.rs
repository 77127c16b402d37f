//! `agent-runner tasks validate NAME [--repeat K]`: checks every SWE-bench-format task of
//! a scenario the way SWE-bench validates instances, K times over. Each repetition judges
//! two fresh scratch copies by the task's own judge ([`crate::bench_judge::judge_submission`]):
//! the base as it is (so `test_patch` on the base: `FAIL_TO_PASS` must fail,
//! `PASS_TO_PASS` pass) and the base with the gold patch applied (every test must pass).
//! A test that contradicts its list in every repetition makes the task broken; one whose
//! outcome differs between repetitions of the same state is flaky. Only a task whose
//! judgings ran can be broken: one whose environment is missing, whose scratch copy or
//! sandbox cannot be made, whose patches do not apply or whose test command cannot start
//! is an environment error ([`TaskValidation::Error`]), with its cause; nothing is written
//! or published for it and the command exits [`Exit::Environment`]. The result is written
//! to `tasks/<id>/validation.toml` ([`Validation`]); runs, sweeps and `exec` then leave
//! broken tasks out with a count, and runs take `test_outcome.before` from it. With a
//! broker, each validation is also published as a `task_validation` event (a stream of
//! its own, `validation_event`), so ClickHouse knows which tasks are broken and
//! `bench-analysis compare` leaves their runs out.

use std::fmt;
use std::path::PathBuf;

use bench_delivery::{DeliveryReport, PublishSetup, PublisherHandle};
use bench_sandbox::{apply_patch, Confinement, SandboxMode};
use bench_schemas::{Canonical, Payload, RunSequencer};
use uuid::Uuid;

use crate::error::{Error, Exit, Outcome};
use crate::recorder::RunRecorder;
use crate::runner::{finish_optional_publisher, start_optional_publisher};
use crate::task_image::{ImageCacheArgs, TaskImages};
use bench_judge::FailReason;
use bench_task::{LoadOptions, LoadedScenario, LoadedTask, SweBench, ValidatedTest, Validation};

/// How long applying a task's gold patch may take.
const GOLD_APPLY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Everything `tasks validate` needs, validated.
#[derive(Debug, Clone)]
pub struct ValidateConfig {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Task filter and pin policy.
    pub load: LoadOptions,
    /// Repetitions of each state, ≥ 1.
    pub repeat: u32,
    /// Whether the judge's commands run in the sandbox.
    pub sandbox: SandboxMode,
    /// `host` of the `task_validation` events.
    pub host: String,
    /// Where the `task_validation` events go; `None`: nowhere (no broker given), the
    /// validations stay in the task directories.
    pub publish: Option<PublishSetup>,
    /// Where task images are cached.
    pub images: ImageCacheArgs,
}

/// `policy_id` of `task_validation` events: the gold patch is what is judged, no agent.
const VALIDATION_POLICY: &str = "validation";

/// What validation found about one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskValidation {
    /// Validated (broken or not): what was written to `validation.toml`.
    Validated(Validation),
    /// Not a SWE-bench-format task: nothing to validate.
    NotSweBench,
    /// Could not be validated (its environment is missing, no scratch copy, no sandbox,
    /// a patch that does not apply, a test command that cannot start): why. Nothing is
    /// written or published for it: this says nothing about the task.
    Error(String),
}

/// What `tasks validate` did, task by task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidateReport {
    /// `(task id, what was found)`, in scenario order.
    pub tasks: Vec<(String, TaskValidation)>,
    /// What happened to the `task_validation` events; `None` when none was published
    /// (no broker given).
    pub delivery: Option<DeliveryReport>,
}

impl ValidateReport {
    /// Tasks whose gold patch was judged and found broken.
    pub fn broken(&self) -> usize {
        self.tasks
            .iter()
            .filter(|(_, v)| matches!(v, TaskValidation::Validated(v) if v.broken))
            .count()
    }

    /// Tasks that could not be validated.
    pub fn errors(&self) -> usize {
        self.tasks
            .iter()
            .filter(|(_, v)| matches!(v, TaskValidation::Error(_)))
            .count()
    }
}

impl fmt::Display for ValidateReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut flaky_tasks = 0;
        for (id, found) in &self.tasks {
            match found {
                TaskValidation::Validated(v) => {
                    let word = if v.broken { "broken" } else { "valid" };
                    write!(
                        f,
                        "{word} {id}: {} tests, {} repeats",
                        v.tests.len(),
                        v.repeats
                    )?;
                    if v.broken {
                        write!(f, "; {}", v.reasons.join("; "))?;
                    }
                    let flaky = v.flaky();
                    if !flaky.is_empty() {
                        flaky_tasks += 1;
                        write!(f, "; flaky: {}", flaky.join(", "))?;
                    }
                    writeln!(f)?;
                }
                TaskValidation::NotSweBench => {
                    writeln!(f, "skipped {id}: not a SWE-bench-format task")?
                }
                TaskValidation::Error(why) => {
                    writeln!(f, "error {id}: not validated, nothing recorded: {why}")?
                }
            }
        }
        writeln!(
            f,
            "{} tasks, {} broken, {} not validated (environment errors), {flaky_tasks} with \
             flaky tests",
            self.tasks.len(),
            self.broken(),
            self.errors()
        )?;
        match &self.delivery {
            Some(delivery) => writeln!(f, "task_validation events: {delivery}"),
            None => writeln!(
                f,
                "task_validation events: none published (no --nats-url): ClickHouse does \
                 not know these validations, so compare cannot leave broken tasks out"
            ),
        }
    }
}

/// [`Exit::Environment`] when a task could not be validated, else [`Exit::Failure`] when a
/// task is broken.
impl Outcome for ValidateReport {
    fn exit(&self) -> Exit {
        if self.errors() > 0 {
            Exit::Environment
        } else if self.broken() > 0 {
            Exit::Failure
        } else {
            Exit::Ok
        }
    }
}

/// Validates every selected task of the scenario and writes each one's
/// `validation.toml`.
pub async fn validate(config: &ValidateConfig) -> Result<ValidateReport, Error> {
    let scenario = LoadedScenario::load(&config.scenario, &config.load)?;
    let limits = &scenario.scenario.config.sandbox_limits;
    let sandboxed = config.sandbox.confinement(limits, true)?.is_sandboxed();
    let images = TaskImages::prepare(&scenario.tasks, &config.images, sandboxed).await?;
    let publisher = start_optional_publisher(config.publish.as_ref()).await?;
    let handle = publisher.as_ref().map(|p| p.handle());
    let mut tasks = Vec::new();
    for task in &scenario.tasks {
        let found = match &task.task.swe_bench {
            None => TaskValidation::NotSweBench,
            Some(swe) => {
                // Only the judge runs, with the dataset's patches: no agent's commands. A
                // confinement of the task's own: a sandbox failure is this task's alone.
                let confinement = config
                    .sandbox
                    .confinement(limits, true)?
                    .with_environment(task.environment_dir())
                    .with_image(images.root(&task.task.id));
                match repeat(task, swe, &confinement, config.repeat).await {
                    Ok(validation) => {
                        validation.write(&task.dir)?;
                        if let Some(handle) = &handle {
                            publish(&scenario, task, &validation, &config.host, handle)?;
                        }
                        TaskValidation::Validated(validation)
                    }
                    Err(why) => {
                        tracing::error!(task = %task.task.id, reason = %bench_sandbox::Escaped(&why), "task not validated: its environment or sandbox could not be set up");
                        TaskValidation::Error(why)
                    }
                }
            }
        };
        tasks.push((task.task.id.clone(), found));
    }
    drop(handle);
    let delivery = finish_optional_publisher(publisher).await?;
    Ok(ValidateReport { tasks, delivery })
}

/// Publishes `validation` of `task` as a stream of its own: a fresh run id, this one
/// event at `seq` 0. `cfg_hash` is the scenario config's (the sandbox limits the judge
/// ran under come from it), `env_hash` the task's pin.
fn publish(
    scenario: &LoadedScenario,
    task: &LoadedTask,
    validation: &Validation,
    host: &str,
    handle: &PublisherHandle,
) -> Result<(), Error> {
    let sequencer = RunSequencer::new(
        Uuid::now_v7(),
        task.task.id.clone(),
        VALIDATION_POLICY,
        scenario.scenario.config.canonical_hash(),
        task.task_sha256.clone(),
        None,
        host,
    );
    let mut recorder = RunRecorder::new(sequencer, Some(handle.clone()), None)?;
    recorder.emit(
        None,
        Payload::TaskValidation(validation_event(scenario, task, validation)),
    )?;
    Ok(())
}

/// The `task_validation` event of `validation`.
fn validation_event(
    scenario: &LoadedScenario,
    task: &LoadedTask,
    validation: &Validation,
) -> bench_schemas::TaskValidation {
    bench_schemas::TaskValidation {
        scenario: scenario.scenario.name.clone(),
        task_sha256: task.task_sha256.clone(),
        fixture_sha256: task.fixture_sha256(),
        repeats: validation.repeats,
        broken: validation.broken,
        reasons: validation.reasons.clone(),
        tests: u32::try_from(validation.tests.len()).unwrap_or(u32::MAX),
        flaky_tests: validation.flaky().into_iter().map(str::to_owned).collect(),
    }
}

/// `repeats` judgings of the base and of the gold patch; `Err` (why) when one of them
/// could not be judged, so that its outcome says nothing about the task.
async fn repeat(
    task: &LoadedTask,
    swe: &SweBench,
    confinement: &Confinement,
    repeats: u32,
) -> Result<Validation, String> {
    let mut tests: Vec<ValidatedTest> = swe
        .tests()
        .iter()
        .map(|(id, set)| ValidatedTest {
            test_id: (*id).to_owned(),
            test_set: set.as_str().to_owned(),
            passed_before: 0,
            passed_after: 0,
        })
        .collect();
    if let Some(env) = task.environment_dir().filter(|env| !env.is_dir()) {
        return Err(format!(
            "its environment {} does not exist (made by `tasks import swe-bench`)",
            env.display()
        ));
    }
    let scratch = |e: bench_sandbox::ScratchError| format!("no scratch copy of the fixture: {e}");
    for _ in 0..repeats {
        let base = task.workspace(None).map_err(scratch)?;
        let before = bench_judge::judge_submission(task, base.root(), confinement).await;
        let gold = task.workspace(None).map_err(scratch)?;
        apply_patch(gold.root(), swe.patch.as_bytes(), GOLD_APPLY_TIMEOUT)
            .await
            .map_err(|e| format!("the gold patch does not apply: {e}"))?;
        let after = bench_judge::judge_submission(task, gold.root(), confinement).await;
        if let Some(why) = confinement.setup_failure() {
            return Err(format!("the judge's sandbox could not be set up: {why}"));
        }
        for (state, verdict) in [("base", &before), ("gold patch", &after)] {
            if let Some(why) = not_judged(verdict) {
                let env = match (task.image(), task.environment_dir()) {
                    (Some(image), _) => format!("image {image}"),
                    (None, Some(env)) => env.display().to_string(),
                    (None, None) => "none".into(),
                };
                return Err(format!(
                    "the {state} could not be judged (environment {env}): {why}"
                ));
            }
        }
        for (test, i) in tests.iter_mut().zip(0..) {
            test.passed_before += u32::from(passed(&before, i));
            test.passed_after += u32::from(passed(&after, i));
        }
    }
    let reasons: Vec<String> = tests
        .iter()
        .zip(swe.tests())
        .filter_map(|(test, (_, set))| test.contradiction(set, repeats))
        .collect();
    Ok(Validation {
        repeats,
        broken: !reasons.is_empty(),
        reasons,
        tests,
    })
}

/// Why `verdict` judged nothing, if it did not: its tests could not be set up (the
/// sandbox, `test_patch`, the judge's own files) or the test command could not be started
/// (exit 126 or 127 and no report).
fn not_judged(verdict: &bench_judge::Verdict) -> Option<String> {
    verdict.failures.iter().find_map(|f| match &f.reason {
        FailReason::Setup(why) => Some(why.clone()),
        FailReason::NoReport {
            exit: Some(code @ (126 | 127)),
        } => Some(format!(
            "the test command could not be started (exit {code})"
        )),
        _ => None,
    })
}

/// Whether the `i`-th test of a SWE-bench verdict passed.
fn passed(verdict: &bench_judge::Verdict, i: usize) -> bool {
    verdict
        .swe_bench
        .as_ref()
        .and_then(|v| v.tests.get(i))
        .is_some_and(|t| t.after)
}
