//! One run: one policy's attempt at one task under one config, from `run_start` to
//! `run_stop`.
//!
//! The loop, per turn: check the limits ([`crate::limits`]), ask the policy for a
//! [`Decision`] (bounded by the execution time left and by shutdown), then for each action
//! emit `step` (act), run the tool, emit `tool_call`, a `failure` when the tool failed, and
//! `step` (observe). A `submit` ends the loop; so do a limit, a [`PolicyStop`](crate::policy::PolicyStop) and
//! shutdown. Then the judge runs in the scratch directory, a closing `step` (conclude), a
//! `failure` for an unsuccessful run, and `run_stop` with the verdict. Every event of the
//! turn shares its `step_id`.
//!
//! Shutdown (SIGINT/SIGTERM) ends the run within seconds, judge included: the tool call
//! in flight is dropped (its process tree killed), the judge is skipped, and `run_stop`
//! says `exit_error`, reason `shutdown`, with test counts and score null (nobody judged).
//!
//! A tool error is a tool call whose `exit_kind` is not `ok`, a command exiting non-zero
//! included: each one gets a `failure` event (root `tool`, or `path` for a path outside
//! the workspace) and counts in `run_stop.tool_errors`, as the `tool_errors` query counts
//! it.
//!
//! A run that could not get its sandbox (at the start, for a tool call, for a judge
//! probe or for the final judge: [`Confinement::setup_failure`]) is not a result: it ends
//! there, `exit_environment`, unjudged, with `success`, `final_score` and the test counts
//! null and a `failure` (category `environment`) saying why, so it counts in no success
//! rate.
//!
//! The loop never fails because of the agent: tool errors, a broken policy or a missing
//! sandbox become events and an exit status. It returns an error only when the run's own
//! artifacts cannot be written.

use std::path::Path;
use std::time::Instant;

use bench_delivery::PublisherHandle;
use bench_sandbox::{Confinement, SandboxMode, SandboxUnavailable};
use bench_schemas::{
    ExitKind, ExitStatus, ExperimentRef, Failure, FailureRoot, FinalErrorState, Payload,
    RecoveryAttempt, Regrade, RunStop, Step, StepType, SweepRef, ToolCall,
};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::limits::{Limits, Patience, RunEnd};
use crate::policy::{Decision, Exchange, Policy, PolicyEvents, Turn};
use crate::recorder::{RecordError, RunRecorder, Usage};
use crate::run_lifecycle::{self, environment_end, millis, Judged, Opening};
use crate::task_image::TaskImages;
use crate::tools::{ToolLimits, ToolOutcome, ToolRequest, Toolbox};
use bench_judge::Verdict;
use bench_task::{LoadedScenario, LoadedTask, PolicyKind};

pub use crate::run_lifecycle::RunSummary;

/// Everything one run needs besides its policy.
#[derive(Debug, Clone)]
pub struct RunSpec<'a> {
    /// The scenario (config, name, hash).
    pub scenario: &'a LoadedScenario,
    /// The task.
    pub task: &'a LoadedTask,
    /// The run's seed.
    pub seed: u64,
    /// `host` on every event.
    pub host: &'a str,
    /// Observation bytes kept per tool call.
    pub output_cap: usize,
    /// Whether the run's commands must run in the sandbox.
    pub sandbox: SandboxMode,
    /// Where `<run_id>/events.jsonl` and `summary.json` go; `None` = nowhere.
    pub out_dir: Option<&'a Path>,
    /// Where the events go; `None` = local artifacts only.
    pub publisher: Option<PublisherHandle>,
    /// The sweep job this run is (`run_start.sweep`); `None` outside a sweep.
    pub sweep: Option<SweepRef>,
    /// The run's experiment, repeat, tags and planned runs (`run_start`).
    pub experiment: ExperimentRef,
    /// `--regrade K`: judge a SWE-bench-format task's final diff K more times
    /// (`run_stop.regrade`); 0 = judge once.
    pub regrade: u32,
    /// The images of the command's tasks, prepared before its first run.
    pub images: &'a TaskImages,
}

/// How a result reads in the runner's reports: `solved`, `unsolved`, `unjudged` (a
/// submission nobody judged) or `no result` (the run could not get its sandbox), the score (`-` when no judge ran) and the tests passing
/// out of those run (`-` likewise).
pub fn result_words(r: &RunStop) -> (&'static str, String, String) {
    let outcome = match r.success {
        Some(true) => "solved",
        Some(false) => "unsolved",
        None if matches!(
            r.exit_status,
            ExitStatus::ExitEnvironment | ExitStatus::ExitApi
        ) =>
        {
            "no result"
        }
        None => "unjudged",
    };
    let score = r
        .final_score
        .map_or_else(|| "-".to_owned(), |s| format!("{s:.2}"));
    let tests = match (r.tests_passed, r.tests_failed) {
        (Some(passed), Some(failed)) => format!("{passed}/{}", passed + failed),
        _ => "-".to_owned(),
    };
    (outcome, score, tests)
}

/// State of the loop.
struct Progress {
    history: Vec<Exchange>,
    tool_errors: u32,
    turns: u32,
    last_change: Instant,
    patience: Patience,
    /// The first tool failure, the root of the run's `failure` if it fails.
    first_tool_failure: Option<FailureRoot>,
}

impl Progress {
    /// A run's progress before its first turn: nothing done, the clock of no progress
    /// started now.
    fn new() -> Progress {
        Progress {
            history: Vec::new(),
            tool_errors: 0,
            turns: 0,
            last_change: Instant::now(),
            patience: Patience::default(),
            first_tool_failure: None,
        }
    }
}

/// Executes one run of `policy` on `spec.task`.
pub(crate) async fn execute(
    spec: RunSpec<'_>,
    mut policy: Box<dyn Policy>,
    shutdown: CancellationToken,
) -> Result<RunSummary, RecordError> {
    let started = Instant::now();
    let config = &spec.scenario.scenario.config;
    let confinement = spec.sandbox.confinement(
        &config.sandbox_limits,
        spec.scenario.scenario.policy == PolicyKind::Scripted,
    );
    // Without a sandbox that must exist the run records `none` and ends
    // `exit_environment` below, before any agent command runs.
    let sandbox = run_lifecycle::sandbox_in_force(confinement.as_ref().ok(), config);
    let mut run = Opening {
        scenario: spec.scenario,
        task: spec.task,
        policy_id: policy.policy_id(),
        seed: spec.seed,
        host: spec.host,
        output_cap: Some(spec.output_cap),
        sweep: spec.sweep.clone(),
        experiment: spec.experiment.clone(),
        publisher: spec.publisher.clone(),
        out_dir: spec.out_dir,
    }
    .open(sandbox, spec.images.record(&spec.task.task.id))?;

    let mut progress = Progress::new();
    let (end, toolbox) = match toolbox(&spec, confinement) {
        Ok(toolbox) => {
            let end = turns(
                &mut run.rec,
                &mut *policy,
                &toolbox,
                &spec,
                &mut progress,
                started,
                &shutdown,
            )
            .await?;
            (end, Some(toolbox))
        }
        Err(e) => {
            tracing::error!(task = %spec.task.task.id, error = %e, "cannot set up the sandbox");
            (environment_end(e), None)
        }
    };
    let (judged, regrades) = match &toolbox {
        Some(toolbox) => judge_final(&spec, toolbox, end, &shutdown).await,
        // No sandbox, no scratch copy: nothing was judged or compared.
        None => (
            Judged {
                verdict: None,
                end,
                files_modified: None,
                submission: None,
                workspace_differs: None,
                cutoff_score: None,
            },
            Vec::new(),
        ),
    };
    let result = conclude(&mut run.rec, &spec, &judged, &regrades, &progress, started)?;
    run.close(result, judged.verdict.as_ref())
}

/// The run's tools: its scratch copy, confined with the task's environment; why not when
/// its sandbox could not be set up.
fn toolbox(
    spec: &RunSpec<'_>,
    confinement: Result<Confinement, SandboxUnavailable>,
) -> Result<Toolbox, String> {
    let confinement = confinement.map_err(|e| e.to_string())?;
    let scratch = spec
        .task
        .workspace(confinement.workspace_bound())
        .map_err(|e| e.to_string())?;
    Ok(Toolbox::new(
        scratch,
        ToolLimits::from_config(&spec.scenario.scenario.config, spec.output_cap),
        confinement
            .with_environment(spec.task.environment_dir())
            .with_image(spec.images.root(&spec.task.task.id)),
    ))
}

/// The judge's verdict on the run's scratch copy and, under `--regrade K`, the verdicts
/// of its final diff judged K more times (for the verdict's stability).
async fn judge_final(
    spec: &RunSpec<'_>,
    toolbox: &Toolbox,
    end: RunEnd,
    shutdown: &CancellationToken,
) -> (Judged, Vec<Verdict>) {
    let judged = run_lifecycle::judge_scratch(
        spec.task,
        toolbox.scratch().root(),
        toolbox.confinement(),
        end,
        shutdown,
    )
    .await;
    let diff = judged
        .submission
        .as_ref()
        .filter(|_| judged.verdict.is_some())
        .map(|s| s.diff.as_slice());
    let regrades = match diff {
        Some(diff) if spec.regrade > 0 && !shutdown.is_cancelled() => {
            bench_judge::regrade(spec.task, diff, toolbox.confinement(), spec.regrade).await
        }
        _ => Vec::new(),
    };
    (judged, regrades)
}

/// What follows the judge: the `conclude` step, the run's `failure` when it did not
/// succeed, what a SWE-bench verdict adds; returns the run's `run_stop`.
fn conclude(
    rec: &mut RunRecorder,
    spec: &RunSpec<'_>,
    judged: &Judged,
    regrades: &[Verdict],
    progress: &Progress,
    started: Instant,
) -> Result<RunStop, RecordError> {
    let (verdict, end, files_modified) =
        (judged.verdict.as_ref(), &judged.end, &judged.files_modified);
    // After the judge: a judge test whose sandbox failed makes the run one too.
    let infrastructure_failure = end.is_infrastructure_failure();
    let success = run_lifecycle::run_success(end, verdict);
    let judge_words = match verdict {
        Some(v) => format!(
            "judge: {} of {} tests pass{}",
            v.passed,
            v.passed + v.failed,
            restored_note(v)
        ),
        None => "not judged".to_owned(),
    };
    rec.emit(
        None,
        Payload::Step(step(
            StepType::Conclude,
            format!(
                "{}; {judge_words}",
                end.reason.as_deref().unwrap_or("submitted")
            ),
        )),
    )?;
    // A submission nobody judged (success unknown) has no `failure`: it may be right. An
    // infrastructure failure (a run without its sandbox included) has one, rooted in what
    // failed.
    if success == Some(false) || infrastructure_failure {
        rec.emit(None, Payload::Failure(run_failure(end, verdict, progress)))?;
    }
    let commands = bash_commands(&progress.history);
    let swe = run_lifecycle::record_submission(
        rec,
        spec.task,
        judged,
        Some(&commands),
        spec.scenario.scenario.config.sandbox_limits.network_enabled,
        // A native agent acts through the runner's tools: it emits no event itself.
        None,
    )?;
    let regrade = verdict
        .filter(|_| !regrades.is_empty())
        .map(|v| regrade_of(v, regrades));
    Ok(RunStop {
        diff_sha256: swe.diff_sha256,
        final_diff: swe.final_diff,
        integrity: swe.integrity,
        stability_variance: regrade.as_ref().map(|(_, variance)| *variance),
        cutoff_score: judged.cutoff_score,
        regrade: regrade.map(|(regrade, _)| regrade),
        ..run_lifecycle::run_stop(
            rec,
            end,
            verdict,
            *files_modified,
            started,
            Some(progress.tool_errors),
            Some(progress.turns),
        )
    })
}

/// `run_stop.regrade` and the variance of the scores, from the run's own verdict and the
/// verdicts of its final diff judged again.
fn regrade_of(first: &Verdict, again: &[Verdict]) -> (Regrade, f64) {
    let all: Vec<&Verdict> = std::iter::once(first).chain(again).collect();
    let scores: Vec<f64> = all.iter().map(|v| v.score()).collect();
    let n = scores.len() as f64;
    let mean = scores.iter().sum::<f64>() / n;
    let variance = scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / n;
    let regrade = Regrade {
        judgings: u32::try_from(all.len()).unwrap_or(u32::MAX),
        resolved: u32::try_from(all.iter().filter(|v| v.success()).count()).unwrap_or(u32::MAX),
        stable: scores.iter().all(|s| *s == scores[0]),
    };
    (regrade, variance)
}

/// The `bash` commands of a native run's tool calls, in order.
fn bash_commands(history: &[Exchange]) -> Vec<String> {
    history
        .iter()
        .filter(|e| e.request.tool == "bash")
        .filter_map(|e| e.request.args.get("command")?.as_str().map(str::to_owned))
        .collect()
}

/// The turns of the run, until something ends it.
async fn turns(
    rec: &mut RunRecorder,
    policy: &mut dyn Policy,
    toolbox: &Toolbox,
    spec: &RunSpec<'_>,
    progress: &mut Progress,
    started: Instant,
    shutdown: &CancellationToken,
) -> Result<RunEnd, RecordError> {
    let mut turns = Turns {
        rec,
        policy,
        toolbox,
        spec,
        progress,
        limits: Limits::from_config(&spec.scenario.scenario.config),
        started,
        shutdown,
    };
    loop {
        if let Some(end) = turns.take_turn().await? {
            return Ok(end);
        }
    }
}

/// The agent loop's state and what it acts with, borrowed for the run's turns.
struct Turns<'t, 's> {
    rec: &'t mut RunRecorder,
    policy: &'t mut dyn Policy,
    toolbox: &'t Toolbox,
    spec: &'t RunSpec<'s>,
    progress: &'t mut Progress,
    limits: Limits,
    started: Instant,
    shutdown: &'t CancellationToken,
}

/// The end of a run that shutdown cut short.
fn shutdown_end() -> RunEnd {
    RunEnd::early(ExitStatus::ExitError, "shutdown")
}

impl Turns<'_, '_> {
    /// One turn: the limits, the policy's decision, each of its actions, and the probe of
    /// the judge's tests after a change; how the run ended if it did.
    async fn take_turn(&mut self) -> Result<Option<RunEnd>, RecordError> {
        if self.shutdown.is_cancelled() {
            return Ok(Some(shutdown_end()));
        }
        let progress = &self.progress;
        if let Some(end) = self.limits.check(
            progress.turns,
            self.started,
            progress.last_change,
            self.rec.usage(),
        ) {
            return Ok(Some(end));
        }
        let step_id = Uuid::now_v7();
        let usage_before = self.rec.usage().clone();
        let decision = match self.decide(step_id).await? {
            Ok(decision) => decision,
            Err(end) => return Ok(Some(end)),
        };
        // A turn whose model call got no answer is not one of the agent's.
        if decision.unanswered {
            return Ok(None);
        }
        self.progress.turns += 1;
        let modified = match self.act(step_id, decision, &usage_before).await? {
            Acted::Ended(end) => return Ok(Some(end)),
            Acted::Modified(modified) => modified,
        };
        if modified {
            self.progress.last_change = Instant::now();
            return self.probe().await;
        }
        Ok(None)
    }

    /// The policy's decision for this turn, bounded by the execution time left and by
    /// shutdown; how the run ended when there is none.
    async fn decide(&mut self, step_id: Uuid) -> Result<Result<Decision, RunEnd>, RecordError> {
        let turn = Turn {
            number: self.progress.turns,
            history: &self.progress.history,
        };
        let mut events = PolicyEvents::new(self.rec, step_id);
        let decided = tokio::select! {
            decided = tokio::time::timeout(self.limits.remaining(self.started), self.policy.decide(&turn, &mut events)) => Some(decided),
            _ = self.shutdown.cancelled() => None,
        };
        if let Some(e) = events.into_error() {
            return Err(e);
        }
        Ok(match decided {
            None => Err(shutdown_end()),
            Some(Err(_elapsed)) => Err(RunEnd::early(ExitStatus::ExitTimeout, "execution_timeout")),
            Some(Ok(Err(stop))) => Err(RunEnd {
                root: stop.root,
                ..RunEnd::early(stop.status, stop.reason)
            }),
            Some(Ok(Ok(decision))) => Ok(decision),
        })
    }

    /// The turn's steps: its `reason` step, then per action `act`, the tool call and
    /// `observe`; whether a tool changed a file, or how the run ended.
    async fn act(
        &mut self,
        step_id: Uuid,
        decision: Decision,
        usage_before: &Usage,
    ) -> Result<Acted, RecordError> {
        let context_kb = Some(decision.context_kb.unwrap_or_else(|| {
            let bytes: usize = self
                .progress
                .history
                .iter()
                .map(|e| e.outcome.observation.len())
                .sum();
            bytes as f64 / 1024.0
        }));
        // The turn's model calls go on its first step (the reason step, else the first
        // act), so summing a run's steps counts each call once.
        let mut turn_tokens = self.rec.usage().tokens_since(usage_before);
        let mut planned = |step_type: StepType, content: String| {
            let (tokens_in, tokens_out) = turn_tokens.take().unzip();
            Payload::Step(Step {
                tokens_in,
                tokens_out,
                planned_step: decision.planned_step,
                context_kb,
                ..step(step_type, content)
            })
        };
        if let Some(thought) = decision.thought {
            self.rec
                .emit(Some(step_id), planned(StepType::Reason, thought))?;
        }
        let mut modified = false;
        for request in decision.actions {
            self.rec
                .emit(Some(step_id), planned(StepType::Act, request.describe()))?;
            let outcome = tokio::select! {
                outcome = self.toolbox.call(&request, self.limits.remaining(self.started)) => outcome,
                _ = self.shutdown.cancelled() => return Ok(Acted::Ended(shutdown_end())),
            };
            record_tool_call(self.rec, step_id, &request, &outcome, self.progress)?;
            self.rec.emit(
                Some(step_id),
                Payload::Step(Step {
                    wall_time_ms: Some(millis(outcome.latency)),
                    ..step(StepType::Observe, outcome.observation.clone())
                }),
            )?;
            if let Some(why) = self.toolbox.confinement().setup_failure() {
                return Ok(Acted::Ended(environment_end(why.to_owned())));
            }
            modified |= !outcome.footprint.files_modified.is_empty();
            let submitted = outcome.submitted;
            self.progress.history.push(Exchange { request, outcome });
            if submitted {
                return Ok(Acted::Ended(RunEnd::submitted()));
            }
        }
        Ok(Acted::Modified(modified))
    }

    /// After a turn that changed a file, when probes are on (`failing_tests_patience`):
    /// the judge's tests run as a probe; how the run ended if patience ran out.
    async fn probe(&mut self) -> Result<Option<RunEnd>, RecordError> {
        if !self.limits.probes_tests() {
            return Ok(None);
        }
        let confinement = self.toolbox.confinement();
        let probe =
            bench_judge::judge(self.spec.task, self.toolbox.scratch().root(), confinement).await;
        if let Some(why) = confinement.setup_failure() {
            return Ok(Some(environment_end(why.to_owned())));
        }
        Ok(self
            .limits
            .observe_failing(&mut self.progress.patience, probe.failed))
    }
}

/// What a turn's actions came to.
enum Acted {
    /// The run ended (submitted, shutdown, a sandbox missing).
    Ended(RunEnd),
    /// The turn goes on; whether a tool changed a file.
    Modified(bool),
}

fn record_tool_call(
    rec: &mut RunRecorder,
    step_id: Uuid,
    request: &ToolRequest,
    outcome: &ToolOutcome,
    progress: &mut Progress,
) -> Result<(), RecordError> {
    rec.emit(
        Some(step_id),
        Payload::ToolCall(ToolCall {
            tool_name: request.tool.clone(),
            call_id: request.call_id.clone(),
            tool_args_hash: request.args_hash(),
            latency_ms: Some(millis(outcome.latency)),
            retries: Some(outcome.retries),
            exit_kind: outcome.exit_kind,
            exit_message: outcome.message.clone(),
            evidence_footprint: outcome.footprint.clone(),
            user_feedback_score: None,
            intent_accuracy: None,
        }),
    )?;
    if !outcome.is_error() {
        return Ok(());
    }
    progress.tool_errors += 1;
    let said = failure_text(outcome);
    let message = said
        .clone()
        .unwrap_or_else(|| format!("{} with no output", outcome.exit_kind.as_str()));
    let root = match &outcome.bad_path {
        Some(path) => FailureRoot::Path {
            invalid_path: path.clone(),
            expected_location: "a path inside the task workspace".to_owned(),
        },
        None => FailureRoot::Tool {
            tool_name: request.tool.clone(),
            usage_error: message.clone(),
        },
    };
    progress
        .first_tool_failure
        .get_or_insert_with(|| root.clone());
    let recovery_attempts = (outcome.retries > 0)
        .then(|| RecoveryAttempt {
            strategy: format!("retry x{} (retry_policy)", outcome.retries),
            success: false,
            time_spent_ms: millis(outcome.latency),
            side_effects: Vec::new(),
        })
        .into_iter()
        .collect();
    rec.emit(
        Some(step_id),
        Payload::Failure(Failure {
            first_failure_root: root,
            recovery_attempts,
            final_error_state: FinalErrorState {
                recoverable: true,
                error_category: outcome.exit_kind.as_str().to_owned(),
                confidence: 1.0,
                similar_failures: progress.tool_errors - 1,
            },
            contributing_factors: said.into_iter().collect(),
            remediation_suggestions: vec![remedy(outcome.exit_kind).to_owned()],
        }),
    )
}

/// Characters of a failed command's output kept as its error.
const FAILURE_TEXT_MAX_CHARS: usize = 1000;

/// What a failed tool call said about its failure: the runner's message, else the end of
/// its output, where a command exiting non-zero says why (`cp: cannot stat …`) before the
/// runner's `[exit code N]` line; `None` when it said nothing.
fn failure_text(outcome: &ToolOutcome) -> Option<String> {
    if let Some(message) = outcome.message.as_ref().filter(|m| !m.trim().is_empty()) {
        return Some(message.clone());
    }
    let text = outcome.observation.trim();
    let chars = text.chars().count();
    let tail: String = text
        .chars()
        .skip(chars.saturating_sub(FAILURE_TEXT_MAX_CHARS))
        .collect();
    (!tail.is_empty()).then_some(tail)
}

fn remedy(kind: ExitKind) -> &'static str {
    match kind {
        ExitKind::Timeout => "make the command finish within tool_timeout_ms, or raise it",
        ExitKind::UserError => "check the tool's arguments and paths (relative to the task root)",
        ExitKind::Oom => "use less memory, or raise sandbox_limits.memory_mb",
        ExitKind::Deterministic => "read the command's output: it exited non-zero",
        _ => "retry; report if it persists",
    }
}

/// The `failure` of a run that did not succeed: why, as far as the runner can tell.
/// A root given by whoever ended the run comes first: a run the provider ended
/// (`exit_api`) is filed under `provider`, category `provider`.
fn run_failure(end: &RunEnd, verdict: Option<&Verdict>, progress: &Progress) -> Failure {
    let (root, category) = match (&end.reason, &progress.first_tool_failure, &end.root) {
        (_, _, Some(root)) if end.status == ExitStatus::ExitEnvironment => {
            (root.clone(), "environment")
        }
        (_, _, Some(root)) => (root.clone(), root.kind()),
        (None, _, None) => {
            // A submission that failed its judge (an unjudged one has no `failure`).
            let (failed, total, failing) = verdict.map_or((0, 0, String::new()), |v| {
                (
                    v.failed,
                    v.passed + v.failed,
                    v.failures_explained().join("; "),
                )
            });
            (
                FailureRoot::Semantic {
                    logic_error: format!("{failed} of {total} judge tests fail after submit"),
                    context: failing,
                },
                "wrong_fix",
            )
        }
        (Some(reason), _, None) => (
            FailureRoot::Planning {
                reasoning_error: format!("stopped before submitting: {reason}"),
                step_number: progress.turns,
            },
            "early_stop",
        ),
    };
    let mut contributing_factors = Vec::new();
    if let Some(verdict) = verdict.filter(|v| !v.restored.is_empty()) {
        contributing_factors.push(format!(
            "protected files changed by the agent, restored before judging: {}",
            restored_list(verdict)
        ));
    }
    if progress.tool_errors > 0 {
        contributing_factors.push(format!("{} tool calls failed", progress.tool_errors));
    }
    if let Some(
        FailureRoot::Path { invalid_path, .. }
        | FailureRoot::Tool {
            usage_error: invalid_path,
            ..
        },
    ) = &progress.first_tool_failure
    {
        contributing_factors.push(format!("first tool failure: {invalid_path}"));
    }
    Failure {
        first_failure_root: root,
        recovery_attempts: Vec::new(),
        final_error_state: FinalErrorState {
            recoverable: false,
            error_category: category.to_owned(),
            confidence: 1.0,
            similar_failures: 0,
        },
        contributing_factors,
        remediation_suggestions: Vec::new(),
    }
}

/// `"tests/test_ci.sh (modified), ..."`.
fn restored_list(verdict: &Verdict) -> String {
    let files: Vec<String> = verdict.restored.iter().map(ToString::to_string).collect();
    files.join(", ")
}

/// What the `conclude` step adds when the judge had to restore protected files.
fn restored_note(verdict: &Verdict) -> String {
    if verdict.restored.is_empty() {
        String::new()
    } else {
        format!(
            " (protected files restored before judging: {})",
            restored_list(verdict)
        )
    }
}

/// A `step` payload that made no model call, with no timing or plan.
pub(crate) fn step(step_type: StepType, content: String) -> Step {
    Step {
        step_type,
        content,
        content_truncated: false,
        tokens_in: None,
        tokens_out: None,
        wall_time_ms: None,
        planned_step: None,
        context_kb: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_without_its_sandbox_is_no_result_whatever_was_judged() {
        let end = environment_end("bwrap: Creating new namespace failed".to_owned());
        let passing = Verdict {
            passed: 3,
            ..Verdict::default()
        };
        assert_eq!(end.status, ExitStatus::ExitEnvironment);
        assert_eq!(run_lifecycle::run_success(&end, Some(&passing)), None);
        assert_eq!(run_lifecycle::run_success(&end, None), None);
        // Other ends keep the judge's word: no submission is no success.
        let forfeit = RunEnd::early(ExitStatus::ExitForfeit, "max_iterations");
        assert_eq!(run_lifecycle::run_success(&forfeit, None), Some(false));
        assert_eq!(
            run_lifecycle::run_success(&RunEnd::submitted(), Some(&passing)),
            Some(true)
        );

        let progress = Progress::new();
        let failure = run_failure(&end, None, &progress);
        assert_eq!(failure.final_error_state.error_category, "environment");
        assert!(matches!(
            failure.first_failure_root,
            FailureRoot::Build { ref command, .. } if command.contains("namespace")
        ));
        assert_eq!(
            run_lifecycle::environment_failure("why")
                .final_error_state
                .error_category,
            "environment"
        );
    }
}
