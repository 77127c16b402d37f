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

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bench_schemas::{
    Canonical, ExitKind, ExitStatus, Failure, FailureRoot, FinalErrorState, Hash256, Payload,
    RecoveryAttempt, Regrade, RunConfig, RunIntegrity, RunSequencer, RunStart, RunStop,
    SandboxInfo, SandboxLimits, ScenarioRef, Step, StepType, SweepRef, ToolCall,
};
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::integrity;
use crate::judge::{self, Verdict, SCORING_VERSION};
use crate::limits::{Limits, Patience, RunEnd};
use crate::policy::{Decision, Exchange, Policy, PolicyEvents, Turn};
use crate::publish::PublisherHandle;
use crate::recorder::{RecordError, RunRecorder, Usage, DIFF_FILE};
use crate::scenario::{LoadedScenario, LoadedTask, PolicyKind};
use crate::tools::bwrap::{Confinement, SandboxMode};
use crate::tools::{ToolLimits, ToolOutcome, ToolRequest, Toolbox};

/// Version of this runner (`run_start.runner_version`).
pub const RUNNER_VERSION: &str = env!("CARGO_PKG_VERSION");

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
    /// `--regrade K`: judge a SWE-bench-format task's final diff K more times
    /// (`run_stop.regrade`); 0 = judge once.
    pub regrade: u32,
}

/// `summary.json`: the run's identity and result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// The run's id, on every event it emitted.
    pub run_id: Uuid,
    /// The task it ran.
    pub task_id: String,
    /// The scenario (name and file hash) the run came from.
    pub scenario: ScenarioRef,
    /// The policy that acted, as `run_start` names it.
    pub policy_id: String,
    /// The run's seed; `None` when the scenario set none.
    pub seed: Option<u64>,
    /// The worker host it ran on.
    pub host: String,
    /// Hash of the run config (`run_start.cfg_hash`).
    pub cfg_hash: Hash256,
    /// Hash of the environment it ran in (`run_start.env_hash`).
    pub env_hash: Hash256,
    /// Hash of the task fixture it started from.
    pub fixture_sha256: Hash256,
    /// Events emitted (`seq` 0 to `events - 1`).
    pub events: u64,
    /// The `run_stop` payload.
    pub result: RunStop,
    /// Protected files (`[judge] protect`) the agent had changed, restored from the fixture
    /// before the final verdict, as `"<path> (modified|deleted|created)"`; empty when none
    /// were (omitted from `summary.json` then).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub protected_restored: Vec<String>,
    /// The judge tests that failed, with why, as `"<name>: <reason>"` (`failed`, `no
    /// report (exit 0)`, `timed out`, ...); omitted from `summary.json` when none did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub judge_failures: Vec<String>,
    /// The artifact directory, if any.
    pub artifacts: Option<PathBuf>,
}

impl RunSummary {
    /// The summary of the run `rec` recorded, once its `run_stop` (`result`) is emitted;
    /// written to `summary.json` beside its `events.jsonl`.
    /// `verdict` is the judge's that `result` reports, if any: the protected files it
    /// restored are listed.
    pub fn record(
        rec: &RunRecorder,
        scenario: ScenarioRef,
        fixture_sha256: Hash256,
        result: RunStop,
        verdict: Option<&Verdict>,
    ) -> Result<RunSummary, RecordError> {
        let seq = rec.sequencer();
        let protected_restored = verdict
            .iter()
            .flat_map(|v| &v.restored)
            .map(ToString::to_string)
            .collect();
        let summary = RunSummary {
            run_id: seq.run_id,
            task_id: seq.task_id.clone(),
            scenario,
            policy_id: seq.policy_id.clone(),
            seed: seq.seed,
            host: seq.host.clone(),
            cfg_hash: seq.cfg_hash.clone(),
            env_hash: seq.env_hash.clone(),
            fixture_sha256,
            events: rec.events(),
            result,
            protected_restored,
            judge_failures: verdict.map(Verdict::failures_explained).unwrap_or_default(),
            artifacts: rec.dir().map(Path::to_path_buf),
        };
        rec.write_summary(&summary)?;
        Ok(summary)
    }
}

/// How a result reads in the runner's reports: `solved`, `unsolved`, `unjudged` (a
/// submission nobody judged) or `no result` (the run could not get its sandbox), the score (`-` when no judge ran) and the tests passing
/// out of those run (`-` likewise).
pub fn result_words(r: &RunStop) -> (&'static str, String, String) {
    let outcome = match r.success {
        Some(true) => "solved",
        Some(false) => "unsolved",
        None if r.exit_status == ExitStatus::ExitEnvironment => "no result",
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

/// What `env_hash` covers: everything about where the run executes that may change its
/// outcome, and nothing host-specific (the same fixture on two hosts hashes the same).
#[derive(Debug, Serialize)]
struct Environment<'a> {
    docker_image: Option<&'a str>,
    tools_commit: &'a str,
    sandbox_limits: &'a SandboxLimits,
    fixture_sha256: &'a Hash256,
    task_sha256: &'a Hash256,
    runner_version: &'static str,
    scoring_version: &'static str,
    output_cap_bytes: usize,
    /// The isolation and the limits actually enforced (`run_start.sandbox`).
    sandbox: &'a SandboxInfo,
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
    let task = spec.task;
    let fixture_sha256 = task.fixture_sha256();
    let confinement = spec.sandbox.confinement(
        &config.sandbox_limits,
        spec.scenario.scenario.policy == PolicyKind::Scripted,
    );
    // Without a sandbox that must exist the run records `none` and ends
    // `exit_environment` below, before any agent command runs.
    let sandbox_info = match &confinement {
        Ok(c) => c.info(config.tool_timeout_ms, config.execution_timeout_ms),
        Err(_) => Confinement::unsandboxed(&config.sandbox_limits)
            .info(config.tool_timeout_ms, config.execution_timeout_ms),
    };
    let env_hash = Environment {
        docker_image: config.docker_image.as_deref(),
        tools_commit: &config.tools_commit,
        sandbox_limits: &config.sandbox_limits,
        fixture_sha256: &fixture_sha256,
        task_sha256: &task.task_sha256,
        runner_version: RUNNER_VERSION,
        scoring_version: SCORING_VERSION,
        output_cap_bytes: spec.output_cap,
        sandbox: &sandbox_info,
    }
    .canonical_hash();
    let sequencer = RunSequencer::new(
        Uuid::now_v7(),
        task.task.id.clone(),
        policy.policy_id(),
        config.canonical_hash(),
        env_hash,
        Some(spec.seed),
        spec.host,
    );
    let mut rec = RunRecorder::new(sequencer, spec.publisher.clone(), spec.out_dir)?;
    let start = RunStart {
        sweep: spec.sweep.clone().map(Box::new),
        ..run_start(
            config.clone(),
            spec.scenario,
            fixture_sha256.clone(),
            sandbox_info,
        )
    };
    let scenario_ref = start.scenario.clone();
    rec.emit(None, Payload::RunStart(start))?;

    let mut progress = Progress::new();
    let workspace = confinement.map_err(|e| e.to_string()).and_then(|c| {
        task.workspace(c.workspace_bound())
            .map(|ws| (ws, c.with_environment(task.environment_dir())))
            .map_err(|e| e.to_string())
    });
    let (end, toolbox) = match workspace {
        Ok((sandbox, confinement)) => {
            let toolbox = Toolbox::new(
                sandbox,
                ToolLimits::from_config(config, spec.output_cap),
                confinement,
            );
            let end = turns(
                &mut rec,
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
            tracing::error!(task = %task.task.id, error = %e, "cannot set up the sandbox");
            (environment_end(e), None)
        }
    };

    // `None`: no judge ran, so no test count or score is known.
    let (verdict, files_modified, end, regrades) = match &toolbox {
        Some(toolbox) => {
            let root = toolbox.scratch().root();
            // On shutdown the run ends now, unjudged, and the workspace is removed within
            // seconds. A run the infrastructure ended before the agent acted (its sandbox
            // missing included) is not judged: the untouched fixture would score the task,
            // not the agent.
            let verdict = if end.is_infrastructure_failure(rec.usage()) {
                None
            } else {
                tokio::select! {
                    biased;
                    _ = shutdown.cancelled() => None,
                    verdict = judge::judge_submission(task, root, toolbox.confinement()) => Some(verdict),
                }
            };
            // A judge test whose sandbox failed makes the verdict meaningless.
            let (verdict, end) = match toolbox.confinement().setup_failure() {
                Some(why) if end.status != ExitStatus::ExitEnvironment => {
                    (None, environment_end(why.to_owned()))
                }
                _ => (verdict, end),
            };
            let modified = task
                .fixture
                .changed_paths_in(root)
                .map(|changed| changed.len())
                .map_err(|e| tracing::warn!(error = %e, "cannot list the scratch directory"))
                .ok();
            // `--regrade K`: the final diff judged again, for the verdict's stability.
            let diff = verdict
                .as_ref()
                .and_then(|v| v.swe_bench.as_ref()?.diff.as_deref());
            let regrades = match diff {
                Some(diff) if spec.regrade > 0 && !shutdown.is_cancelled() => {
                    judge::regrade(task, diff, toolbox.confinement(), spec.regrade).await
                }
                _ => Vec::new(),
            };
            (verdict, modified, end, regrades)
        }
        // No sandbox, no scratch copy: nothing was compared.
        None => (None, None, end, Vec::new()),
    };
    // After the judge: a judge test whose sandbox failed makes the run one too.
    let infrastructure_failure = end.is_infrastructure_failure(rec.usage());
    let success = run_success(&end, verdict.as_ref(), rec.usage());
    let judged = match &verdict {
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
            format!("{}; {judged}", end.reason.as_deref().unwrap_or("submitted")),
        )),
    )?;
    // A submission nobody judged (success unknown) has no `failure`: it may be right. An
    // infrastructure failure (a run without its sandbox included) has one, rooted in what
    // failed.
    if success == Some(false) || infrastructure_failure {
        rec.emit(
            None,
            Payload::Failure(run_failure(&end, verdict.as_ref(), &progress)),
        )?;
    }
    let commands = bash_commands(&progress.history);
    let swe = record_swe_bench(
        &mut rec,
        task,
        verdict.as_ref(),
        Some(&commands),
        config.sandbox_limits.network_enabled,
    )?;
    let regrade = verdict
        .as_ref()
        .filter(|_| !regrades.is_empty())
        .map(|v| regrade_of(v, &regrades));
    let result = RunStop {
        diff_sha256: swe.diff_sha256,
        integrity: swe.integrity,
        stability_variance: regrade.as_ref().map(|(_, variance)| *variance),
        regrade: regrade.map(|(regrade, _)| regrade),
        ..run_stop(
            &rec,
            &end,
            verdict.as_ref(),
            files_modified,
            started,
            Some(progress.tool_errors),
            Some(progress.turns),
        )
    };
    rec.emit(None, Payload::RunStop(result.clone()))?;
    RunSummary::record(&rec, scenario_ref, fixture_sha256, result, verdict.as_ref())
}

/// The `run_start` of a run of `scenario` under `config`, on a scratch copy of the fixture
/// hashed `fixture_sha256`, confined as `sandbox` says.
pub(crate) fn run_start(
    config: RunConfig,
    scenario: &LoadedScenario,
    fixture_sha256: Hash256,
    sandbox: SandboxInfo,
) -> RunStart {
    RunStart {
        config,
        scenario: ScenarioRef {
            name: scenario.scenario.name.clone(),
            sha256: scenario.sha256.clone(),
        },
        fixture_sha256,
        scoring_version: SCORING_VERSION.to_owned(),
        runner_version: RUNNER_VERSION.to_owned(),
        sandbox: Some(sandbox),
        sweep: None,
    }
}

/// What a verdict by SWE-bench's rules adds to `run_stop`.
#[derive(Debug, Default)]
pub(crate) struct SweBenchStop {
    /// `run_stop.diff_sha256`.
    pub diff_sha256: Option<Hash256>,
    /// `run_stop.integrity`.
    pub integrity: Option<RunIntegrity>,
}

/// Records what a verdict by SWE-bench's rules adds to a run of `task`: one
/// `test_outcome` per test, and the final diff as [`DIFF_FILE`] beside the run's events;
/// returns the diff's SHA-256 and the run's integrity flags for `run_stop` (nothing
/// without such a verdict). `commands` are the agent's `bash` commands, when the runner
/// saw them.
pub(crate) fn record_swe_bench(
    rec: &mut RunRecorder,
    task: &LoadedTask,
    verdict: Option<&Verdict>,
    commands: Option<&[String]>,
    network_enabled: bool,
) -> Result<SweBenchStop, RecordError> {
    let (Some(verdict), Some(swe)) = (verdict, &task.task.swe_bench) else {
        return Ok(SweBenchStop::default());
    };
    let Some(judged) = &verdict.swe_bench else {
        return Ok(SweBenchStop::default());
    };
    for test in &judged.tests {
        rec.emit(None, Payload::TestOutcome(test.clone()))?;
    }
    if let Some(diff) = &judged.diff {
        rec.write_artifact(DIFF_FILE, diff)?;
    }
    Ok(SweBenchStop {
        diff_sha256: judged.diff.as_deref().map(bench_schemas::sha256_hex),
        integrity: Some(integrity::flags(integrity::Seen {
            restored: &verdict.restored,
            commands,
            network_enabled,
            diff: judged.diff.as_deref(),
            gold: &swe.patch,
        })),
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

/// The `run_stop` of a run that ended as `end`, `started` ago, with the model usage `rec`
/// counted: judged by `verdict` (`None`: no judge ran, so test counts and score are
/// unknown), with `files_modified` paths changed in its scratch copy (`None`: nobody
/// compared it with the fixture), `tool_errors` failed tool calls and `turns` turns
/// (`None`: nobody counted them).
pub(crate) fn run_stop(
    rec: &RunRecorder,
    end: &RunEnd,
    verdict: Option<&Verdict>,
    files_modified: Option<usize>,
    started: Instant,
    tool_errors: Option<u32>,
    turns: Option<u32>,
) -> RunStop {
    let usage = rec.usage();
    RunStop {
        success: run_success(end, verdict, usage),
        final_score: verdict.map(Verdict::score),
        wall_time_ms: Some(millis(started.elapsed())),
        total_tokens: usage.total_tokens(),
        tool_errors,
        stability_variance: None,
        failing_tests: verdict.map(Verdict::failing).unwrap_or_default(),
        tests_passed: verdict.map(|v| v.passed),
        tests_failed: verdict.map(|v| v.failed),
        files_modified: files_modified.map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
        early_stopped: end.early_stopped(),
        early_stop_reason: end.reason.clone(),
        exit_status: end.status,
        cost_usd: usage.cost_usd(),
        api_calls: Some(usage.api_calls),
        turns,
        claim: None,
        diff_sha256: None,
        integrity: None,
        regrade: None,
    }
}

/// `run_stop.success` of a run that ended as `end` after the model usage `usage`, judged
/// by `verdict`: null for an infrastructure failure (not a result), else as
/// [`Verdict::run_success`] reads the verdict.
fn run_success(end: &RunEnd, verdict: Option<&Verdict>, usage: &Usage) -> Option<bool> {
    if end.is_infrastructure_failure(usage) {
        None
    } else {
        Verdict::run_success(verdict, end.status == ExitStatus::Submitted)
    }
}

/// The end of a run whose sandbox could not be set up, `why`.
pub(crate) fn environment_end(why: String) -> RunEnd {
    RunEnd {
        root: Some(sandbox_root(why)),
        ..RunEnd::early(ExitStatus::ExitEnvironment, "sandbox setup failed")
    }
}

/// The `failure` root of a sandbox that could not be set up, `why`.
fn sandbox_root(why: String) -> FailureRoot {
    FailureRoot::Build {
        error_type: "sandbox".to_owned(),
        command: why,
    }
}

/// The `failure` of a run of an `exec` agent whose sandbox could not be set up, `why`
/// (a native run's comes from [`run_failure`], with what its turns add).
pub(crate) fn environment_failure(why: &str) -> Failure {
    Failure {
        first_failure_root: sandbox_root(why.to_owned()),
        recovery_attempts: Vec::new(),
        final_error_state: FinalErrorState {
            recoverable: false,
            error_category: "environment".to_owned(),
            confidence: 1.0,
            similar_failures: 0,
        },
        contributing_factors: Vec::new(),
        remediation_suggestions: Vec::new(),
    }
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
    let config: &RunConfig = &spec.scenario.scenario.config;
    let limits = Limits::from_config(config);
    loop {
        if shutdown.is_cancelled() {
            return Ok(RunEnd::early(ExitStatus::ExitError, "shutdown"));
        }
        if let Some(end) = limits.check(progress.turns, started, progress.last_change, rec.usage())
        {
            return Ok(end);
        }
        let step_id = Uuid::now_v7();
        let turn = Turn {
            number: progress.turns,
            history: &progress.history,
        };
        let usage_before = rec.usage().clone();
        let decided = {
            let mut events = PolicyEvents::new(rec, step_id);
            let decided = tokio::select! {
                decided = tokio::time::timeout(limits.remaining(started), policy.decide(&turn, &mut events)) => Some(decided),
                _ = shutdown.cancelled() => None,
            };
            if let Some(e) = events.into_error() {
                return Err(e);
            }
            decided
        };
        let decision: Decision = match decided {
            None => return Ok(RunEnd::early(ExitStatus::ExitError, "shutdown")),
            Some(Err(_elapsed)) => {
                return Ok(RunEnd::early(ExitStatus::ExitTimeout, "execution_timeout"))
            }
            Some(Ok(Err(stop))) => {
                return Ok(RunEnd {
                    root: stop.root,
                    ..RunEnd::early(stop.status, stop.reason)
                })
            }
            Some(Ok(Ok(decision))) => decision,
        };
        // A turn whose model call got no answer is not one of the agent's.
        if decision.unanswered {
            continue;
        }
        progress.turns += 1;
        let usage = rec.usage();
        let context_kb = Some(decision.context_kb.unwrap_or_else(|| {
            let bytes: usize = progress
                .history
                .iter()
                .map(|e| e.outcome.observation.len())
                .sum();
            bytes as f64 / 1024.0
        }));
        // The turn's model calls go on its first step (the reason step, else the first
        // act), so summing a run's steps counts each call once.
        let mut turn_tokens = usage.tokens_since(&usage_before);
        if let Some(thought) = decision.thought {
            let (tokens_in, tokens_out) = turn_tokens.take().unzip();
            rec.emit(
                Some(step_id),
                Payload::Step(Step {
                    tokens_in,
                    tokens_out,
                    planned_step: decision.planned_step,
                    context_kb,
                    ..step(StepType::Reason, thought)
                }),
            )?;
        }
        let mut modified = false;
        for request in decision.actions {
            let (tokens_in, tokens_out) = turn_tokens.take().unzip();
            rec.emit(
                Some(step_id),
                Payload::Step(Step {
                    tokens_in,
                    tokens_out,
                    planned_step: decision.planned_step,
                    context_kb,
                    ..step(StepType::Act, request.describe())
                }),
            )?;
            let outcome = tokio::select! {
                outcome = toolbox.call(&request, limits.remaining(started)) => outcome,
                _ = shutdown.cancelled() => return Ok(RunEnd::early(ExitStatus::ExitError, "shutdown")),
            };
            record_tool_call(rec, step_id, &request, &outcome, progress)?;
            rec.emit(
                Some(step_id),
                Payload::Step(Step {
                    wall_time_ms: Some(millis(outcome.latency)),
                    ..step(StepType::Observe, outcome.observation.clone())
                }),
            )?;
            if let Some(why) = toolbox.confinement().setup_failure() {
                return Ok(environment_end(why.to_owned()));
            }
            modified |= !outcome.footprint.files_modified.is_empty();
            let submitted = outcome.submitted;
            progress.history.push(Exchange { request, outcome });
            if submitted {
                return Ok(RunEnd::submitted());
            }
        }
        if modified {
            progress.last_change = Instant::now();
            if limits.probes_tests() {
                let probe =
                    judge::judge(spec.task, toolbox.scratch().root(), toolbox.confinement()).await;
                if let Some(why) = toolbox.confinement().setup_failure() {
                    return Ok(environment_end(why.to_owned()));
                }
                if let Some(end) = limits.observe_failing(&mut progress.patience, probe.failed) {
                    return Ok(end);
                }
            }
        }
    }
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
            latency_ms: millis(outcome.latency),
            retries: outcome.retries,
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

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
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
        // Whatever the model answered before: a run without its sandbox is no result.
        let answered = Usage {
            answered_calls: 2,
            ..Usage::default()
        };
        assert_eq!(end.status, ExitStatus::ExitEnvironment);
        assert_eq!(run_success(&end, Some(&passing), &answered), None);
        assert_eq!(run_success(&end, None, &answered), None);
        // Other ends keep the judge's word: no submission is no success.
        let forfeit = RunEnd::early(ExitStatus::ExitForfeit, "max_iterations");
        assert_eq!(run_success(&forfeit, None, &answered), Some(false));
        assert_eq!(
            run_success(&RunEnd::submitted(), Some(&passing), &answered),
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
            environment_failure("why").final_error_state.error_category,
            "environment"
        );
    }
}
