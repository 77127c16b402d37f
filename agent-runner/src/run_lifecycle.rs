//! A run's life cycle around its turns: its prologue and epilogue, written once for a native run ([`crate::agent::execute`])
//! and an external agent's ([`crate::exec::bridge::run`]), and the `run_start` and
//! `env_hash` of a run recorded elsewhere (an imported trajectory, a received trace):
//!
//! - the prologue ([`Opening::open`]): the sandbox in force ([`sandbox_in_force`]) →
//!   `env_hash` → sequencer → recorder → `run_start`;
//! - the judge ([`judge_scratch`]): the submission taken from the scratch copy, the verdict
//!   on that diff alone, the scratch copy's own verdict as a cross-check, and the run's
//!   end once a judge sandbox that could not be set up is counted;
//! - the epilogue ([`OpenRun::close`]): `run_stop` → `summary.json`, with the pieces of
//!   `run_stop` both kinds of run share ([`run_stop`], [`record_submission`]).
//!
//! `env_hash` is assembled here and nowhere else, from one [`RunEnvironment`], so a native
//! run and an external agent's under the same isolation, toolchain and task hash their
//! environment alike: who acts (the policy, the agent program) is `policy_id`, never part
//! of the environment. Runs recorded elsewhere (imports, traces) had no sandbox, recorder
//! or judge of this runner and their environment is not known: they hash where they came
//! from ([`bench_schemas::Provenance`]), which never equals a run's environment here,
//! and their `run_start` ([`recorded_run_start`]) says "no sandbox" rather than guess one.
//! Every `run_start` of a run executed here is built by [`run_start`].
//!
//! This module decides nothing about how a run ends and starts no agent: what happens
//! between `run_start` and the judge is the caller's.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bench_delivery::PublisherHandle;
use bench_judge::{
    cutoff_score, integrity_flags, judge_submitted, unjudged, CaptureError, FailReason,
    IntegritySeen, Submission, Verdict, SCORING_VERSION,
};
use bench_sandbox::Confinement;
use bench_schemas::{
    recorded_run_start, Canonical, EnvironmentImage, ExitStatus, ExperimentRef, Failure,
    FailureRoot, FinalErrorState, Hash256, Payload, RunConfig, RunIntegrity, RunSequencer,
    RunStart, RunStop, SandboxInfo, SandboxLimits, ScenarioRef, SweepRef,
};
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::limits::RunEnd;
use crate::recorder::{RecordError, RunRecorder, DIFF_FILE};
use bench_task::{LoadedScenario, LoadedTask};

/// Version of this runner (`run_start.runner_version`).
pub const RUNNER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Every `run_start` of a run this runner executes ([`Opening::open`]): one recorded
/// elsewhere ([`recorded_run_start`]) with the sandbox, image and sweep it knows.
/// `versions`: the runner's and the scoring's; `membership`: the run's sweep, if any,
/// and its experiment.
fn run_start(
    config: RunConfig,
    scenario: ScenarioRef,
    fixture_sha256: Hash256,
    versions: (String, &str),
    (sandbox, image): (Option<SandboxInfo>, Option<EnvironmentImage>),
    (sweep, experiment): (Option<SweepRef>, ExperimentRef),
) -> RunStart {
    RunStart {
        sandbox,
        sweep: sweep.map(Box::new),
        image: image.map(Box::new),
        ..recorded_run_start(config, scenario, fixture_sha256, versions, experiment)
    }
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

/// What `env_hash` covers: everything about where the run executes that may change its
/// outcome, and nothing host-specific (the same fixture on two hosts hashes the same).
#[derive(Debug, Serialize)]
struct RunEnvironment<'a> {
    docker_image: Option<&'a str>,
    tools_commit: &'a str,
    sandbox_limits: &'a SandboxLimits,
    fixture_sha256: &'a Hash256,
    task_sha256: &'a Hash256,
    runner_version: &'static str,
    scoring_version: &'static str,
    /// Observation bytes the runner's tools keep per call; absent when the agent brings
    /// its own tools (an external agent), since the runner then caps nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    output_cap_bytes: Option<usize>,
    /// The isolation and the limits actually enforced (`run_start.sandbox`).
    sandbox: &'a SandboxInfo,
    /// The manifest digest of the task's image (`run_start.image`); absent when the task
    /// runs on the host's system directories.
    #[serde(skip_serializing_if = "Option::is_none")]
    image_digest: Option<&'a str>,
}

impl<'a> RunEnvironment<'a> {
    /// The environment of a run of the task hashed `task_sha256` under `config`, confined as `sandbox` says, with
    /// the runner's tools capped at `output_cap` bytes (`None`: the runner's tools are not
    /// the agent's).
    fn of(
        config: &'a RunConfig,
        task_sha256: &'a Hash256,
        fixture_sha256: &'a Hash256,
        sandbox: &'a SandboxInfo,
        output_cap: Option<usize>,
    ) -> RunEnvironment<'a> {
        RunEnvironment {
            docker_image: config.docker_image.as_deref(),
            tools_commit: &config.tools_commit,
            sandbox_limits: &config.sandbox_limits,
            fixture_sha256,
            task_sha256,
            runner_version: RUNNER_VERSION,
            scoring_version: SCORING_VERSION,
            output_cap_bytes: output_cap,
            sandbox,
            image_digest: None,
        }
    }
}

/// `run_start.sandbox` of a run under `config` confined by `confinement`; a run whose
/// sandbox could not be made (`None`) records `none`, since no agent command of it runs
/// confined (it ends `exit_environment` before any does).
pub(crate) fn sandbox_in_force(
    confinement: Option<&Confinement>,
    config: &RunConfig,
) -> SandboxInfo {
    let (tool_timeout_ms, execution_timeout_ms) =
        (config.tool_timeout_ms, config.execution_timeout_ms);
    match confinement {
        Some(c) => c.info(tool_timeout_ms, execution_timeout_ms),
        None => Confinement::unsandboxed(&config.sandbox_limits)
            .info(tool_timeout_ms, execution_timeout_ms),
    }
}

/// Who runs which task, and where its events go: what the prologue needs besides the
/// sandbox in force.
pub(crate) struct Opening<'a> {
    /// The scenario (its config is the run's).
    pub scenario: &'a LoadedScenario,
    /// The task.
    pub task: &'a LoadedTask,
    /// `policy_id` on every event.
    pub policy_id: String,
    /// The run's seed.
    pub seed: u64,
    /// `host` on every event.
    pub host: &'a str,
    /// Observation bytes the runner's tools keep per call; `None` when the agent runs its
    /// own tools.
    pub output_cap: Option<usize>,
    /// The sweep job this run is (`run_start.sweep`); `None` outside a sweep.
    pub sweep: Option<SweepRef>,
    /// The run's experiment, repeat, tags and planned runs.
    pub experiment: ExperimentRef,
    /// Where the events go; `None` = local artifacts only.
    pub publisher: Option<PublisherHandle>,
    /// Where `<run_id>/events.jsonl` and `summary.json` go; `None` = nowhere.
    pub out_dir: Option<&'a Path>,
}

/// A run whose `run_start` is emitted: its recorder, and what its summary repeats.
pub(crate) struct OpenRun {
    /// The run's event stream.
    pub rec: RunRecorder,
    scenario: ScenarioRef,
    fixture_sha256: Hash256,
}

impl Opening<'_> {
    /// The prologue: `env_hash` of the run's environment, confined as `sandbox` says, in
    /// the task's `image` if it has one → sequencer → recorder → `run_start`.
    pub(crate) fn open(
        self,
        sandbox: SandboxInfo,
        image: Option<EnvironmentImage>,
    ) -> Result<OpenRun, RecordError> {
        let config = &self.scenario.scenario.config;
        let fixture_sha256 = self.task.fixture_sha256();
        let env_hash = environment_hash(
            config,
            &self.task.task_sha256,
            &fixture_sha256,
            &sandbox,
            self.output_cap,
            image.as_ref().map(|i| i.digest.as_str()),
        );
        let sequencer = RunSequencer::new(
            Uuid::now_v7(),
            self.task.task.id.clone(),
            self.policy_id,
            config.canonical_hash(),
            env_hash,
            Some(self.seed),
            self.host,
        );
        let mut rec = RunRecorder::new(sequencer, self.publisher, self.out_dir)?;
        let scenario = ScenarioRef {
            name: self.scenario.scenario.name.clone(),
            sha256: self.scenario.sha256.clone(),
        };
        let start = run_start(
            config.clone(),
            scenario.clone(),
            fixture_sha256.clone(),
            (RUNNER_VERSION.to_owned(), SCORING_VERSION),
            (Some(sandbox), image),
            (self.sweep, self.experiment),
        );
        rec.emit(None, Payload::RunStart(start))?;
        Ok(OpenRun {
            rec,
            scenario,
            fixture_sha256,
        })
    }
}

/// `env_hash` of a run of the task hashed `task_sha256` under `config`, confined as
/// `sandbox` says, with the runner's tools capped at `output_cap` bytes (`None`: the agent
/// runs its own), in the image of `image_digest` (`None`: on the host's root).
fn environment_hash(
    config: &RunConfig,
    task_sha256: &Hash256,
    fixture_sha256: &Hash256,
    sandbox: &SandboxInfo,
    output_cap: Option<usize>,
    image_digest: Option<&str>,
) -> Hash256 {
    RunEnvironment {
        image_digest,
        ..RunEnvironment::of(config, task_sha256, fixture_sha256, sandbox, output_cap)
    }
    .canonical_hash()
}

impl OpenRun {
    /// The epilogue: emits `result` as the run's `run_stop` and writes `summary.json`;
    /// `verdict` is the judge's that `result` reports, if any.
    pub(crate) fn close(
        mut self,
        result: RunStop,
        verdict: Option<&Verdict>,
    ) -> Result<RunSummary, RecordError> {
        self.rec.emit(None, Payload::RunStop(result.clone()))?;
        let seq = self.rec.sequencer();
        let protected_restored = verdict
            .iter()
            .flat_map(|v| &v.restored)
            .map(ToString::to_string)
            .collect();
        let summary = RunSummary {
            run_id: seq.run_id,
            task_id: seq.task_id.clone(),
            scenario: self.scenario,
            policy_id: seq.policy_id.clone(),
            seed: seq.seed,
            host: seq.host.clone(),
            cfg_hash: seq.cfg_hash.clone(),
            env_hash: seq.env_hash.clone(),
            fixture_sha256: self.fixture_sha256,
            events: self.rec.events(),
            result,
            protected_restored,
            judge_failures: verdict.map(Verdict::failures_explained).unwrap_or_default(),
            artifacts: self.rec.dir().map(Path::to_path_buf),
        };
        self.rec.write_summary(&summary)?;
        Ok(summary)
    }
}

/// What the judge found of a run.
pub(crate) struct Judged {
    /// The verdict, on the submitted diff; `None` when no judge ran (shutdown, an
    /// infrastructure failure, a judge sandbox that could not be set up), so test counts
    /// and score are unknown.
    pub verdict: Option<Verdict>,
    /// How the run ended, once a judge sandbox that could not be set up is counted.
    pub end: RunEnd,
    /// Paths the run changed: those its diff holds; `None` when nobody compared the
    /// workspace with the fixture.
    pub files_modified: Option<usize>,
    /// What the run submitted; `None` when nothing was taken.
    pub submission: Option<Submission>,
    /// Whether the workspace's own verdict (the cross-check) differs from the diff's;
    /// `None` when the workspace was not judged.
    pub workspace_differs: Option<bool>,
    /// What the submission scored when the provider ended the run (`run_stop.cutoff_score`).
    pub cutoff_score: Option<f64>,
}

/// Judges a run of `task` that ended as `end`, its scratch
/// copy at `root`: the submission is taken from it ([`judge_submitted`]), the verdict
/// computed from that diff alone on a fresh pristine copy (`bench-judge`), and the
/// scratch copy judged too, as a cross-check whose disagreement is a flag. On shutdown the
/// run ends now, unjudged, and the workspace is removed within seconds. A run the
/// infrastructure ended (its sandbox missing included) is not judged: the untouched
/// fixture would score the task, not the agent.
pub(crate) async fn judge_scratch(
    task: &LoadedTask,
    root: &Path,
    confinement: &Confinement,
    end: RunEnd,
    shutdown: &CancellationToken,
) -> Judged {
    if end.is_infrastructure_failure() {
        let files_modified = task
            .fixture
            .changed_paths_in(root)
            .map(|changed| changed.len())
            .map_err(|e| tracing::warn!(error = %e, "cannot list the scratch directory"))
            .ok();
        // The provider ended the run: what the agent had done by then is judged for
        // information, never as the run's result.
        let cutoff_score = if end.status == ExitStatus::ExitApi {
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => None,
                score = cutoff_score(task, root, confinement) => score,
            }
        } else {
            None
        };
        return Judged {
            verdict: None,
            end,
            files_modified,
            submission: None,
            workspace_differs: None,
            cutoff_score,
        };
    }
    let judged = tokio::select! {
        biased;
        _ = shutdown.cancelled() => None,
        judged = judge_submitted(task, root, confinement) => Some(judged),
    };
    let (verdict, end, submission, workspace_differs) = match judged {
        None => (None, end, None, None),
        Some(Ok((verdict, submission, differs))) => (Some(verdict), end, Some(submission), differs),
        // What the workspace holds made its submission too slow to take: the agent's.
        Some(Err(e @ CaptureError::TimedOut(_))) => {
            tracing::warn!(task = %task.task.id, error = %e, "no submission");
            let verdict = unjudged(task, FailReason::Setup(e.to_string()));
            (Some(verdict), end, None, None)
        }
        Some(Err(e)) => {
            tracing::error!(task = %task.task.id, error = %e, "cannot take the submission");
            (None, environment_end(e.to_string()), None, None)
        }
    };
    // A judge test whose sandbox failed makes the verdict meaningless.
    let (verdict, end) = match confinement.setup_failure() {
        Some(why) if end.status != ExitStatus::ExitEnvironment => {
            (None, environment_end(why.to_owned()))
        }
        _ => (verdict, end),
    };
    Judged {
        verdict,
        end,
        files_modified: submission.as_ref().map(|s| s.changed.len()),
        submission,
        workspace_differs,
        cutoff_score: None,
    }
}

/// What a run's submission adds to `run_stop`.
#[derive(Debug, Default)]
pub(crate) struct SubmissionStop {
    /// `run_stop.diff_sha256`.
    pub diff_sha256: Option<Hash256>,
    /// `run_stop.final_diff`: the diff when it is UTF-8 text (cut to its limit when the
    /// event is sent).
    pub final_diff: Option<String>,
    /// `run_stop.integrity`.
    pub integrity: Option<RunIntegrity>,
}

/// Records what a judged run adds: one `test_outcome` per test of a SWE-bench-format
/// task's verdict, the submitted diff as [`DIFF_FILE`] beside the run's events; returns
/// the diff's SHA-256 and the run's integrity flags for `run_stop` (nothing when nothing
/// was judged). `commands` are the agent's `bash` commands, when the runner saw them;
/// `forged_events` the lines of an `exec` agent refused as other producers' events.
pub(crate) fn record_submission(
    rec: &mut RunRecorder,
    task: &LoadedTask,
    judged: &Judged,
    commands: Option<&[String]>,
    network_enabled: bool,
    forged_events: Option<u32>,
) -> Result<SubmissionStop, RecordError> {
    let Some(verdict) = &judged.verdict else {
        return Ok(SubmissionStop::default());
    };
    if let Some(swe) = &verdict.swe_bench {
        for test in &swe.tests {
            rec.emit(None, Payload::TestOutcome(test.clone()))?;
        }
    }
    let diff = judged.submission.as_ref().map(|s| s.diff.as_slice());
    if let Some(diff) = diff {
        rec.write_artifact(DIFF_FILE, diff)?;
    }
    let shadows = verdict
        .swe_bench
        .as_ref()
        .zip(judged.submission.as_ref())
        .map(|(swe, submission)| {
            let added: std::collections::BTreeSet<&str> = submission.added(task).collect();
            swe.shadows
                .iter()
                .filter(|(_, path)| {
                    added.contains(path.as_str())
                        || added.iter().any(|a| a.starts_with(&format!("{path}/")))
                })
                .map(|(module, path)| format!("{module} ({path})"))
                .collect::<Vec<String>>()
        });
    let excluded = judged
        .submission
        .as_ref()
        .map(|s| s.excluded.as_slice())
        .unwrap_or_default();
    Ok(SubmissionStop {
        diff_sha256: diff.map(bench_schemas::sha256_hex),
        final_diff: diff
            .and_then(|d| std::str::from_utf8(d).ok())
            .map(str::to_owned),
        integrity: Some(integrity_flags(IntegritySeen {
            restored: &verdict.restored,
            commands,
            network_enabled,
            diff,
            gold: task
                .task
                .swe_bench
                .as_ref()
                .map_or("", |swe| swe.patch.as_str()),
            excluded,
            workspace_differs: judged.workspace_differs,
            shadows: shadows.as_deref(),
            forged_events,
        })),
    })
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
        success: run_success(end, verdict),
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
        final_diff: None,
        final_diff_truncated: false,
        integrity: None,
        regrade: None,
        cutoff_score: None,
    }
}

/// `run_stop.success` of a run that ended as `end`, judged by `verdict`: null for an
/// infrastructure failure (not a result), else as [`Verdict::run_success`] reads the
/// verdict.
pub(crate) fn run_success(end: &RunEnd, verdict: Option<&Verdict>) -> Option<bool> {
    if end.is_infrastructure_failure() {
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
/// (a native run's comes from its turns, with what they add).
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

/// `d` in whole milliseconds, saturating.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_schemas::{sha256_hex, Provenance};

    /// A run config as a scenario states it, and the sandbox in force for it.
    fn environment() -> (RunConfig, SandboxInfo) {
        let config = RunConfig::unstated("m".to_owned(), "p".to_owned(), "tools@1".to_owned());
        let sandbox = sandbox_in_force(None, &config);
        (config, sandbox)
    }

    #[test]
    fn a_run_recorded_elsewhere_hashes_where_it_came_from_as_a_plain_object() {
        // The hash of the object its fields make, as imports have always hashed it: a
        // re-import of the same file keeps its env_hash.
        let swe_agent = Provenance::SweAgent {
            source: "swe-agent",
            swe_agent_version: "1.0.1",
            environment: "swe_main",
        };
        assert_eq!(
            swe_agent.env_hash(),
            serde_json::json!({
                "source": "swe-agent",
                "swe_agent_version": "1.0.1",
                "environment": "swe_main",
            })
            .canonical_hash()
        );
        let trace = Provenance::Trace {
            source: "otlp",
            service: "agent",
            service_version: None,
            sdk: Some("opentelemetry"),
            sdk_version: None,
        };
        assert_eq!(
            trace.env_hash(),
            serde_json::json!({
                "source": "otlp",
                "service": "agent",
                "service_version": null,
                "sdk": "opentelemetry",
                "sdk_version": null,
            })
            .canonical_hash()
        );
        // Never the environment of a run of this runner.
        let (config, sandbox) = environment();
        let task = sha256_hex(b"task");
        let ran_here = RunEnvironment::of(&config, &task, &task, &sandbox, None);
        assert_ne!(swe_agent.env_hash(), ran_here.canonical_hash());
        let start = recorded_run_start(
            config,
            ScenarioRef {
                name: "swe-agent".to_owned(),
                sha256: task.clone(),
            },
            task,
            ("1.0.1".to_owned(), "swe-agent-unevaluated"),
            ExperimentRef::default(),
        );
        assert_eq!(start.sandbox, None);
        assert_eq!(start.sweep, None);
        assert_eq!(start.scoring_version, "swe-agent-unevaluated");
        assert_eq!(start.runner_version, "1.0.1");
    }

    #[test]
    fn a_native_and_an_exec_run_in_one_environment_hash_it_alike_but_for_the_tool_cap() {
        let (task, fixture) = (sha256_hex(b"task"), sha256_hex(b"fixture"));
        // Each kind of run builds its own config and sandbox record; nothing of who acts
        // (policy, agent program) enters the hash, so equal environments hash equal.
        let (native_config, native_sandbox) = environment();
        let (exec_config, exec_sandbox) = environment();
        let cap = crate::tools::DEFAULT_OUTPUT_CAP;
        let native = environment_hash(
            &native_config,
            &task,
            &fixture,
            &native_sandbox,
            Some(cap),
            None,
        );
        let exec = environment_hash(&exec_config, &task, &fixture, &exec_sandbox, None, None);
        // The only part an external agent lacks is the cap of the runner's tools, which
        // it does not use.
        assert_eq!(
            exec,
            serde_json::json!({
                "docker_image": null,
                "tools_commit": "tools@1",
                "sandbox_limits": exec_config.sandbox_limits,
                "fixture_sha256": fixture,
                "task_sha256": task,
                "runner_version": RUNNER_VERSION,
                "scoring_version": SCORING_VERSION,
                "sandbox": exec_sandbox,
            })
            .canonical_hash()
        );
        // A native run's hash is the one it always had: the same fields, the cap included.
        assert_eq!(
            native,
            serde_json::json!({
                "docker_image": null,
                "tools_commit": "tools@1",
                "sandbox_limits": native_config.sandbox_limits,
                "fixture_sha256": fixture,
                "task_sha256": task,
                "runner_version": RUNNER_VERSION,
                "scoring_version": SCORING_VERSION,
                "output_cap_bytes": cap,
                "sandbox": native_sandbox,
            })
            .canonical_hash()
        );
        assert_eq!(
            native,
            environment_hash(
                &exec_config,
                &task,
                &fixture,
                &exec_sandbox,
                Some(cap),
                None
            )
        );
    }

    #[test]
    fn a_different_isolation_changes_the_environment_hash() {
        let (task, fixture) = (sha256_hex(b"task"), sha256_hex(b"fixture"));
        let (config, plain) = environment();
        let isolated = SandboxInfo {
            kind: "bwrap".to_owned(),
            network_isolated: true,
            ..plain.clone()
        };
        for cap in [None, Some(crate::tools::DEFAULT_OUTPUT_CAP)] {
            assert_ne!(
                environment_hash(&config, &task, &fixture, &plain, cap, None),
                environment_hash(&config, &task, &fixture, &isolated, cap, None)
            );
        }
        let mut tighter = config.clone();
        tighter.sandbox_limits.memory_mb = Some(512);
        assert_ne!(
            environment_hash(&config, &task, &fixture, &plain, None, None),
            environment_hash(&tighter, &task, &fixture, &plain, None, None)
        );
    }

    #[test]
    fn an_images_digest_changes_the_environment_hash_and_its_absence_keeps_old_hashes() {
        let (task, fixture) = (sha256_hex(b"task"), sha256_hex(b"fixture"));
        let (config, sandbox) = environment();
        let host = environment_hash(&config, &task, &fixture, &sandbox, None, None);
        let digest = |d: char| format!("sha256:{}", d.to_string().repeat(64));
        let (one, other) = (digest('a'), digest('b'));
        let in_one = environment_hash(&config, &task, &fixture, &sandbox, None, Some(&one));
        let in_other = environment_hash(&config, &task, &fixture, &sandbox, None, Some(&other));
        assert_ne!(in_one, host);
        assert_ne!(in_one, in_other);
        // A task without an image hashes as it did before images existed.
        assert_eq!(
            host,
            RunEnvironment::of(&config, &task, &fixture, &sandbox, None).canonical_hash()
        );
    }
}
