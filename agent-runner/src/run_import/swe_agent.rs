//! One SWE-agent trajectory → the events of one run, deterministically: the same file
//! bytes give the same events (ids and content; only `ts` is the import's), so importing
//! twice stores one copy (JetStream drops the re-publish inside its duplicate window, and
//! ClickHouse's ReplacingMergeTree keeps the first copy).
//!
//! Ids: `run_id` is a UUIDv8 of the file's SHA-256; event and step ids are UUIDv8s of
//! the run id and the event or step index. Times: SWE-agent writes no timestamps, and a
//! file's modification time says when it was last copied, not when the run happened, so
//! neither is guessed: `ts` is when the import recorded the event (the run starts at the
//! import, each event is placed after the steps' `execution_time` before it, plus its
//! index in ms to keep the order), and `run_stop.wall_time_ms` is null (the file times
//! each command, not the run; each step's time is its `tool_call.latency_ms`).
//!
//! Config: what the trajectory's `replay_config` states (model name, temperature, call
//! and cost limits, the sandbox image `env.deployment.image` or `environment.image_name`,
//! the tool timeout `agent.tools.execution_timeout`); every other setting null (or "not
//! applicable"), never the number of steps taken or the environment's name.
//!
//! Events: `run_start`; per trajectory step a `step` `reason` (the thought, when any),
//! `act` (the action), a `tool_call` (tool = the action's first word, latency =
//! `execution_time`, null when the step has none, retries null: the file does not count
//! them, `exit_kind` `deterministic` when the observation carries a failing
//! command's message such as `command not found` or a Python traceback, else `ok`:
//! SWE-agent records no exit code; these count in `run_stop.tool_errors`) and `observe`
//! (the observation); a `conclude` step with the
//! submission; a `failure` unless the run was submitted; `run_stop` with `model_stats`
//! (tokens, cost, API calls) and the mapped `exit_status`. SWE-agent does not evaluate
//! its patch, so nobody judged the run: a run that submitted a non-empty patch has
//! `success` null (unknown), one that did not has `success` false (and a `failure`), one
//! that ended `exit_api` or `exit_environment` (an infrastructure failure, no result,
//! whatever steps came before) has `success` null, and
//! `final_score`, `tests_passed`, `tests_failed` and `stability_variance` are null. Token
//! totals and cost are the file's `model_stats`, null where it has none or says 0 for a
//! run that made model calls (SWE-agent's "not counted", "no price"); per-call token
//! counts are not in the file, so there are no `deliberation` events (the totals are on
//! `run_stop`).

use std::path::Path;

use bench_schemas::{
    sha256_hex, BenchmarkEvent, Canonical, EvidenceFootprint, ExitKind, ExitStatus, ExperimentRef,
    Failure, FailureRoot, FinalErrorState, Hash256, Payload, RunConfig, RunSequencer, RunStart,
    RunStop, ScenarioRef, Step, StepType, ToolCall,
};
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::traj::{TrajStep, Trajectory};
use super::ImportError;
use bench_judge::Verdict;
use bench_schemas::{derived_uuid, recorded_run_start, Provenance};

/// `run_start.scoring_version` of imported runs: not judged by benchstream.
pub const SCORING_VERSION: &str = "swe-agent-unevaluated";

/// Provider reported for imported runs when the trajectory does not name one.
const PROVIDER: &str = "swe-agent";

/// A trajectory file as read from disk.
#[derive(Debug, Clone)]
pub struct TrajFile<'a> {
    /// Its path (the file stem is the task id).
    pub path: &'a Path,
    /// Its bytes.
    pub bytes: &'a [u8],
    /// When the import recorded it: the `ts` of the run's first event.
    pub recorded_at: DateTime<Utc>,
}

/// The events of `file`, each with its wire bytes, in `seq` order; its run is in
/// `experiment`.
pub fn events(
    file: &TrajFile<'_>,
    host: &str,
    experiment: &ExperimentRef,
) -> Result<Vec<(BenchmarkEvent, Vec<u8>)>, ImportError> {
    let traj: Trajectory = serde_json::from_slice(file.bytes).map_err(|e| ImportError::Parse {
        path: file.path.to_path_buf(),
        message: e.to_string(),
    })?;
    let file_sha256 = sha256_hex(file.bytes);
    let config = run_config(&traj);
    let mut sequencer = sequencer(file, &file_sha256, &traj, &config, host);
    let total_ms: i64 = traj.trajectory.iter().map(placement_ms).sum();
    let start = file.recorded_at;
    let end = start + Duration::milliseconds(total_ms);
    let mut out = Out {
        sequencer: &mut sequencer,
        events: Vec::new(),
        path: file.path,
    };
    out.push(
        start,
        None,
        Payload::RunStart(run_start(&traj, config, file_sha256, experiment.clone())),
    )?;
    out.push_steps(&traj, start)?;
    let ending = Ending::of(&traj);
    out.push(
        end,
        None,
        Payload::Step(text_step(
            StepType::Conclude,
            if ending.patch.is_empty() {
                "no submission"
            } else {
                &traj.info.submission
            },
        )),
    )?;
    if ending.success == Some(false) {
        out.push(
            end,
            None,
            Payload::Failure(failure(&traj, ending.exit_status)),
        )?;
    }
    out.push(end, None, Payload::RunStop(run_stop(&traj, ending)))?;
    Ok(out.events)
}

/// The envelope of the run a trajectory file records: its ids derived from the file's
/// bytes, its task (the file stem), policy (the model), config and environment (where it
/// says it ran) hashes; SWE-agent records no seed.
fn sequencer(
    file: &TrajFile<'_>,
    file_sha256: &Hash256,
    traj: &Trajectory,
    config: &RunConfig,
    host: &str,
) -> RunSequencer {
    let task_id = file
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    RunSequencer::new(
        derived_uuid(&format!("swe-agent/{file_sha256}")),
        task_id,
        format!("swe-agent/{}", config.model),
        config.canonical_hash(),
        Provenance::SweAgent {
            source: "swe-agent",
            swe_agent_version: &traj.info.swe_agent_version,
            environment: &traj.environment,
        }
        .env_hash(),
        None,
        host,
    )
}

/// The imported run's `run_start`: the file stands for scenario and fixture.
fn run_start(
    traj: &Trajectory,
    config: RunConfig,
    file_sha256: Hash256,
    experiment: ExperimentRef,
) -> RunStart {
    let scenario = ScenarioRef {
        name: "swe-agent".to_owned(),
        sha256: file_sha256.clone(),
    };
    let version = version_or_unknown(&traj.info.swe_agent_version);
    recorded_run_start(
        config,
        scenario,
        file_sha256,
        (version, SCORING_VERSION),
        experiment,
    )
}

/// How an imported run ended, as far as its file says.
struct Ending<'t> {
    exit_status: ExitStatus,
    early_reason: Option<String>,
    /// The submitted patch, trimmed; empty when there is none.
    patch: &'t str,
    success: Option<bool>,
}

impl<'t> Ending<'t> {
    fn of(traj: &'t Trajectory) -> Ending<'t> {
        let (exit_status, early_reason) = exit_status(&traj.info.exit_status);
        let patch = traj.info.submission.trim();
        // Nobody judged the patch: success is unknown, unless there is none to judge. A
        // run the provider or the environment ended is an infrastructure failure, no
        // result: unknown too (agent-runner/README.md).
        let submitted = exit_status == ExitStatus::Submitted && !patch.is_empty();
        let infrastructure_failure = matches!(
            exit_status,
            ExitStatus::ExitApi | ExitStatus::ExitEnvironment
        );
        let success = if infrastructure_failure {
            None
        } else {
            Verdict::run_success(None, submitted)
        };
        Ending {
            exit_status,
            early_reason,
            patch,
            success,
        }
    }
}

/// The imported run's `run_stop`: the file's `model_stats` and what its steps show;
/// nobody judged it, so every judged number is null.
fn run_stop(traj: &Trajectory, ending: Ending<'_>) -> RunStop {
    let stats = &traj.info.model_stats;
    let api_calls = traj.api_calls();
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    RunStop {
        success: ending.success,
        final_score: None,
        wall_time_ms: None,
        total_tokens: stats.total_tokens(api_calls),
        tool_errors: Some(count(
            traj.trajectory
                .iter()
                .filter(|s| observed_exit_kind(&s.observation) != ExitKind::Ok)
                .count(),
        )),
        stability_variance: None,
        failing_tests: Vec::new(),
        tests_passed: None,
        tests_failed: None,
        // The submitted patch is the run's change to the repository; without one the
        // file does not say what changed.
        files_modified: (!ending.patch.is_empty())
            .then(|| count(ending.patch.matches("diff --git ").count())),
        early_stopped: ending.early_reason.is_some(),
        early_stop_reason: ending.early_reason,
        exit_status: ending.exit_status,
        cost_usd: stats.cost_usd(api_calls),
        api_calls,
        turns: Some(count(traj.trajectory.len())),
        claim: None,
        diff_sha256: None,
        final_diff: None,
        final_diff_truncated: false,
        integrity: None,
        regrade: None,
        cutoff_score: None,
    }
}

/// Collects stamped events with their derived ids.
struct Out<'a> {
    sequencer: &'a mut RunSequencer,
    events: Vec<(BenchmarkEvent, Vec<u8>)>,
    path: &'a Path,
}

impl Out<'_> {
    /// Per trajectory step from `start`: `reason` (the thought, when any), `act`, the
    /// tool call and `observe`, each placed after the steps' `execution_time` before it.
    fn push_steps(&mut self, traj: &Trajectory, start: DateTime<Utc>) -> Result<(), ImportError> {
        let run_id = self.sequencer.run_id;
        let mut elapsed = 0i64;
        for (index, step) in traj.trajectory.iter().enumerate() {
            let at = start + Duration::milliseconds(elapsed);
            let step_id = Some(derived_uuid(&format!("{run_id}/step/{index}")));
            if !step.thought.trim().is_empty() {
                self.push(
                    at,
                    step_id,
                    Payload::Step(text_step(StepType::Reason, &step.thought)),
                )?;
            }
            self.push(
                at,
                step_id,
                Payload::Step(text_step(StepType::Act, &step.action)),
            )?;
            self.push(at, step_id, Payload::ToolCall(tool_call(step)))?;
            self.push(
                at,
                step_id,
                Payload::Step(Step {
                    wall_time_ms: step_ms(step),
                    ..text_step(StepType::Observe, &step.observation)
                }),
            )?;
            elapsed += placement_ms(step);
        }
        Ok(())
    }

    fn push(
        &mut self,
        at: DateTime<Utc>,
        step_id: Option<Uuid>,
        payload: Payload,
    ) -> Result<(), ImportError> {
        let index = self.sequencer.next_seq();
        let event_id = derived_uuid(&format!("{}/event/{index}", self.sequencer.run_id));
        let ts = at + Duration::milliseconds(i64::try_from(index).unwrap_or(0));
        let mut event = self.sequencer.next_at(event_id, ts, step_id, payload);
        let bytes = event.enforce_limits().map_err(|e| ImportError::TooLarge {
            path: self.path.to_path_buf(),
            seq: index,
            source: e,
        })?;
        self.events.push((event, bytes));
        Ok(())
    }
}

/// The step's `execution_time` in ms; `None` when the step does not state it.
fn step_ms(step: &TrajStep) -> Option<u64> {
    step.execution_time
        .map(|s| (s.max(0.0) * 1000.0).round() as u64)
}

/// How far the events after `step` are placed after it: its time when stated, else
/// nothing (only the order of `ts` matters then, which the event index keeps).
fn placement_ms(step: &TrajStep) -> i64 {
    step_ms(step).map_or(0, |ms| i64::try_from(ms).unwrap_or(i64::MAX))
}

fn version_or_unknown(version: &str) -> String {
    if version.is_empty() {
        "swe-agent-unknown".to_owned()
    } else {
        format!("swe-agent-{version}")
    }
}

/// A `step` with text only: the file has no per-step tokens or plan.
fn text_step(step_type: StepType, content: &str) -> Step {
    crate::agent::step(step_type, content.to_owned())
}

fn tool_call(step: &TrajStep) -> ToolCall {
    let tool_name = step
        .action
        .split_whitespace()
        .next()
        .unwrap_or("none")
        .to_owned();
    ToolCall {
        tool_name,
        // SWE-agent's thought-action format gives calls no id.
        call_id: None,
        tool_args_hash: serde_json::json!({ "action": step.action }).canonical_hash(),
        latency_ms: step_ms(step),
        // SWE-agent records no retries of a command.
        retries: None,
        exit_kind: observed_exit_kind(&step.observation),
        exit_message: None,
        evidence_footprint: EvidenceFootprint {
            bytes_read: step.observation.len() as u64,
            ..EvidenceFootprint::default()
        },
        user_feedback_score: None,
        intent_accuracy: None,
    }
}

/// What a command printed when it failed, as shells and Python print it.
const FAILURE_MARKS: [&str; 4] = [
    "command not found",
    "Traceback (most recent call last)",
    "No such file or directory",
    "Permission denied",
];

/// How a step's action ended, as far as its observation tells: SWE-agent records no
/// exit code, so a call whose observation carries a failing command's message is
/// `deterministic`, and any other `ok` (no failure seen).
fn observed_exit_kind(observation: &str) -> ExitKind {
    if FAILURE_MARKS.iter().any(|mark| observation.contains(mark)) {
        ExitKind::Deterministic
    } else {
        ExitKind::Ok
    }
}

/// SWE-agent's `exit_status` → the wire enum, and an early-stop reason. `submitted
/// (exit_cost)` means SWE-agent hit a limit and auto-submitted: submitted, stopped early.
fn exit_status(raw: &str) -> (ExitStatus, Option<String>) {
    let raw = raw.trim();
    if raw == "submitted" {
        return (ExitStatus::Submitted, None);
    }
    if raw.starts_with("submitted") {
        return (ExitStatus::Submitted, Some(raw.to_owned()));
    }
    let status = [
        ("exit_cost", ExitStatus::ExitCost),
        ("exit_context", ExitStatus::ExitContext),
        ("exit_format", ExitStatus::ExitFormat),
        ("exit_api", ExitStatus::ExitApi),
        ("exit_environment", ExitStatus::ExitEnvironment),
        ("exit_forfeit", ExitStatus::ExitForfeit),
        ("exit_command", ExitStatus::ExitCommand),
        ("timeout", ExitStatus::ExitTimeout),
    ]
    .into_iter()
    .find(|(needle, _)| raw.contains(needle))
    .map_or(ExitStatus::ExitError, |(_, status)| status);
    let reason = if raw.is_empty() {
        "no exit_status"
    } else {
        raw
    };
    (status, Some(reason.to_owned()))
}

fn failure(traj: &Trajectory, status: ExitStatus) -> Failure {
    let last = traj.trajectory.last();
    Failure {
        first_failure_root: FailureRoot::Planning {
            reasoning_error: format!(
                "swe-agent ended with {} ({})",
                status.as_str(),
                if traj.info.exit_status.is_empty() {
                    "no exit_status"
                } else {
                    &traj.info.exit_status
                }
            ),
            step_number: u32::try_from(traj.trajectory.len()).unwrap_or(u32::MAX),
        },
        recovery_attempts: Vec::new(),
        final_error_state: FinalErrorState {
            recoverable: false,
            error_category: status.as_str().to_owned(),
            confidence: 1.0,
            similar_failures: 0,
        },
        contributing_factors: last
            .map(|s| vec![format!("last action: {}", s.action)])
            .unwrap_or_default(),
        remediation_suggestions: Vec::new(),
    }
}

/// The run config of an imported run: what the trajectory's `replay_config` states
/// (model name, temperature, cost and call limits with 0 meaning none, the sandbox image,
/// the tool timeout), every other setting null or "not applicable" (no tools list beyond
/// the commands the agent used).
fn run_config(traj: &Trajectory) -> RunConfig {
    let replay = traj.replay_config().unwrap_or(Value::Null);
    let model = &replay["agent"]["model"];
    let get_f64 = |key: &str| model.get(key).and_then(Value::as_f64);
    let name = model
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_owned();
    let provider = name
        .split_once('/')
        .map_or(PROVIDER, |(provider, _)| provider)
        .to_owned();
    // SWE-agent 1.x names the image under `env.deployment`, 0.x under `environment`.
    let image = [
        &replay["env"]["deployment"]["image"],
        &replay["environment"]["image_name"],
    ]
    .into_iter()
    .find_map(Value::as_str)
    .map(str::to_owned);
    // Seconds in SWE-agent's config.
    let tool_timeout_ms = replay["agent"]["tools"]["execution_timeout"]
        .as_f64()
        .filter(|s| *s > 0.0)
        .map(|s| (s * 1000.0).round() as u64);
    RunConfig {
        max_iterations: model
            .get("per_instance_call_limit")
            .and_then(Value::as_u64)
            .filter(|&n| n > 0)
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
        temperature: get_f64("temperature"),
        available_tools: tools_used(traj),
        cost_limit_usd: get_f64("per_instance_cost_limit").filter(|&c| c > 0.0),
        tool_timeout_ms,
        docker_image: image,
        ..RunConfig::unstated(
            name,
            provider,
            version_or_unknown(&traj.info.swe_agent_version),
        )
    }
}

/// The distinct commands the agent used, sorted.
fn tools_used(traj: &Trajectory) -> Vec<String> {
    let mut tools: Vec<String> = traj
        .trajectory
        .iter()
        .filter_map(|s| s.action.split_whitespace().next().map(str::to_owned))
        .collect();
    tools.sort();
    tools.dedup();
    tools
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `run_stop` of a trajectory that ended `exit_status` after `steps` steps.
    fn run_stop_of(exit_status: &str, steps: usize) -> RunStop {
        run_stop_observing(exit_status, steps, "a.py")
    }

    /// The same, each step observing `observation`.
    fn run_stop_observing(exit_status: &str, steps: usize, observation: &str) -> RunStop {
        let step = serde_json::json!({"action": "ls", "observation": observation,
                                      "thought": "", "execution_time": 0.5});
        let bytes = serde_json::to_vec(&serde_json::json!({
            "trajectory": vec![step; steps],
            "info": {"exit_status": exit_status, "model_stats": {"api_calls": 3}},
        }))
        .expect("json");
        let file = TrajFile {
            path: Path::new("t.traj"),
            bytes: &bytes,
            recorded_at: DateTime::from_timestamp(1_750_000_000, 0).expect("time"),
        };
        let events = events(&file, "h", &ExperimentRef::default()).expect("events");
        match events.last().map(|(e, _)| &e.payload) {
            Some(Payload::RunStop(stop)) => stop.clone(),
            other => panic!("last event {other:?}"),
        }
    }

    #[test]
    fn a_provider_or_environment_that_failed_is_no_result_whatever_came_before() {
        for status in ["exit_api", "exit_environment_error"] {
            assert_eq!(run_stop_of(status, 0).success, None, "{status}");
            assert_eq!(run_stop_of(status, 1).success, None, "{status}");
        }
        assert_eq!(run_stop_of("exit_cost", 0).success, Some(false));
    }

    #[test]
    fn an_observation_of_a_failing_command_is_a_tool_error_not_ok() {
        for failed in [
            "bash: pytset: command not found",
            "Traceback (most recent call last):\n  File \"x.py\", line 1\nNameError: y",
        ] {
            assert_eq!(observed_exit_kind(failed), ExitKind::Deterministic);
            assert_eq!(
                run_stop_observing("submitted", 2, failed).tool_errors,
                Some(2)
            );
        }
        assert_eq!(observed_exit_kind("a.py\nb.py"), ExitKind::Ok);
        assert_eq!(run_stop_of("submitted", 2).tool_errors, Some(0));
    }

    /// The events of a trajectory file with `json` as its content.
    fn events_of(json: &Value) -> Vec<BenchmarkEvent> {
        let bytes = serde_json::to_vec(json).expect("json");
        let file = TrajFile {
            path: Path::new("t.traj"),
            bytes: &bytes,
            recorded_at: DateTime::from_timestamp(1_750_000_000, 0).expect("time"),
        };
        events(&file, "h", &ExperimentRef::default())
            .expect("events")
            .into_iter()
            .map(|(e, _)| e)
            .collect()
    }

    #[test]
    fn what_the_trajectory_does_not_state_is_null_not_made_up() {
        let step = serde_json::json!({"action": "ls", "observation": "a.py",
                                      "thought": "", "execution_time": 2.0});
        let events = events_of(&serde_json::json!({
            "trajectory": [step.clone(), step],
            "environment": "main",
            "info": {"exit_status": "submitted", "model_stats": {"instance_cost": 0}},
        }));
        let (Some(Payload::RunStart(start)), Some(Payload::RunStop(stop))) = (
            events.first().map(|e| &e.payload),
            events.last().map(|e| &e.payload),
        ) else {
            panic!("run_start first, run_stop last: {events:?}")
        };
        let c = &start.config;
        assert_eq!(
            (
                c.strategy,
                c.max_iterations,
                c.temperature,
                c.context_window
            ),
            (None, None, None, None)
        );
        assert_eq!(
            (c.tool_timeout_ms, c.sandbox_limits.memory_mb),
            (None, None)
        );
        assert_eq!(c.docker_image, None, "the environment's name is no image");
        assert!(events.iter().all(|e| e.seed.is_none()));
        // Steps were taken, so calls were made: nobody counted them, or priced them.
        assert_eq!(
            (stop.api_calls, stop.cost_usd, stop.total_tokens),
            (None, None, None)
        );
        assert_eq!((stop.wall_time_ms, stop.files_modified), (None, None));
        assert_eq!(stop.tool_errors, Some(0));
        // Not the file's time: the import's, the steps spaced by their execution times.
        assert_eq!(events[0].ts.timestamp(), 1_750_000_000);
        assert!(events
            .last()
            .is_some_and(|e| e.ts.timestamp() >= 1_750_000_004));
    }

    #[test]
    fn a_step_without_execution_time_has_no_latency_and_no_step_has_retries() {
        let timed = serde_json::json!({"action": "ls", "observation": "a.py",
                                       "execution_time": 0.25});
        let untimed = serde_json::json!({"action": "cat a.py", "observation": "x = 1",
                                         "execution_time": null});
        let bare = serde_json::json!({"action": "pwd", "observation": "/repo"});
        let events = events_of(&serde_json::json!({
            "trajectory": [timed, untimed, bare],
            "info": {"exit_status": "submitted"},
        }));
        let calls: Vec<(Option<u64>, Option<u32>)> = events
            .iter()
            .filter_map(|e| match &e.payload {
                Payload::ToolCall(c) => Some((c.latency_ms, c.retries)),
                _ => None,
            })
            .collect();
        assert_eq!(calls, [(Some(250), None), (None, None), (None, None)]);
        let observed: Vec<Option<u64>> = events
            .iter()
            .filter_map(|e| match &e.payload {
                Payload::Step(s) if s.step_type == StepType::Observe => Some(s.wall_time_ms),
                _ => None,
            })
            .collect();
        assert_eq!(observed, [Some(250), None, None]);
    }

    #[test]
    fn what_the_replay_config_states_is_kept() {
        let replay = serde_json::json!({
            "env": {"deployment": {"image": "swebench/sweb.eval.x86_64.a:latest"}},
            "agent": {"model": {"name": "openai/gpt-4o", "temperature": 0.2,
                                "per_instance_call_limit": 40},
                      "tools": {"execution_timeout": 30}},
        });
        let events = events_of(&serde_json::json!({
            "trajectory": [],
            "replay_config": replay.to_string(),
            "info": {"exit_status": "exit_cost"},
        }));
        let Some(Payload::RunStart(start)) = events.first().map(|e| &e.payload) else {
            panic!("run_start first")
        };
        let c = &start.config;
        assert_eq!(
            c.docker_image.as_deref(),
            Some("swebench/sweb.eval.x86_64.a:latest")
        );
        assert_eq!(
            (c.temperature, c.max_iterations, c.tool_timeout_ms),
            (Some(0.2), Some(40), Some(30_000))
        );
        assert_eq!(c.provider, "openai");
    }

    #[test]
    fn exit_statuses_map_to_the_wire_enum() {
        assert_eq!(exit_status("submitted"), (ExitStatus::Submitted, None));
        assert_eq!(
            exit_status("submitted (exit_cost)"),
            (
                ExitStatus::Submitted,
                Some("submitted (exit_cost)".to_owned())
            )
        );
        assert_eq!(exit_status("exit_context").0, ExitStatus::ExitContext);
        assert_eq!(
            exit_status("exit_environment_error").0,
            ExitStatus::ExitEnvironment
        );
        assert_eq!(exit_status("").0, ExitStatus::ExitError);
    }
}
