//! The payloads of Smith events, mapped: read from Smith's shape (`Deserialize`), holding
//! this crate's units and enums, written in this crate's naming (`Serialize`, e.g.
//! `execution_timeout_ms`). Where Smith's payload already is one of this crate's types
//! once its encodings are converted (`context_decision`, `failure`), that type is used.
//! The others differ in what they know, so they have their own type, without the fields
//! Smith does not send.

use serde::{Deserialize, Serialize};

use super::wire;
use crate::payload::{
    ContextDecision, EventType, EvidenceFootprint, ExitKind, Failure, RetryPolicy, SandboxLimits,
    StepType,
};

/// Smith's `event_type`: externally tagged by variant name (`{"RunStart": {…}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SmithPayload {
    /// `run_start`: the run config only.
    RunStart(SmithRunConfig),
    /// `run_stop`: the result, without exit status, cost or call counts.
    RunStop(SmithRunResult),
    /// `step`.
    Step(SmithStep),
    /// `tool_call`.
    ToolCall(SmithToolCall),
    /// `context_decision`.
    #[serde(deserialize_with = "wire::context_decision")]
    ContextDecision(ContextDecision),
    /// `failure`.
    #[serde(deserialize_with = "wire::failure")]
    Failure(Failure),
    /// `optimizer_update`.
    OptimizerUpdate(SmithSuggestion),
}

impl SmithPayload {
    /// Smith's variant names, i.e. the tags a Smith `event_type` may carry.
    pub const TAGS: [&'static str; 7] = [
        "RunStart",
        "RunStop",
        "Step",
        "ToolCall",
        "ContextDecision",
        "Failure",
        "OptimizerUpdate",
    ];

    /// The event type in this crate's terms.
    pub fn event_type(&self) -> EventType {
        match self {
            SmithPayload::RunStart(_) => EventType::RunStart,
            SmithPayload::RunStop(_) => EventType::RunStop,
            SmithPayload::Step(_) => EventType::Step,
            SmithPayload::ToolCall(_) => EventType::ToolCall,
            SmithPayload::ContextDecision(_) => EventType::ContextDecision,
            SmithPayload::Failure(_) => EventType::Failure,
            SmithPayload::OptimizerUpdate(_) => EventType::OptimizerUpdate,
        }
    }
}

/// Smith's `RunConfig`: this crate's [`crate::RunConfig`] without model, provider,
/// context strategy and cost limit, which Smith does not record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmithRunConfig {
    /// Maximum agent iterations.
    pub max_iterations: u32,
    /// Sampling temperature (an f32 in Smith, as its shortest decimal).
    #[serde(deserialize_with = "wire::f32_value")]
    pub temperature: f64,
    /// Context window, tokens.
    pub context_window: u32,
    /// Fraction of the context window at which pruning starts (an f32 in Smith).
    #[serde(deserialize_with = "wire::f32_value")]
    pub pruning_threshold: f64,
    /// Planner look-ahead depth.
    pub planner_depth: u32,
    /// Debate rounds.
    pub debate_rounds: u32,
    /// Tools the agent may call.
    pub available_tools: Vec<String>,
    /// Per tool call timeout, ms.
    pub tool_timeout_ms: u64,
    /// How failed calls are retried (same shape as this crate's).
    pub retry_policy: RetryPolicy,
    /// Wall-clock limit of the run, ms (a `Duration` in Smith).
    #[serde(
        rename(deserialize = "execution_timeout"),
        deserialize_with = "wire::duration_ms"
    )]
    pub execution_timeout_ms: u64,
    /// Judge runs without progress before stopping.
    pub failing_tests_patience: u32,
    /// Stop when nothing progressed for this long, ms (a `Duration` in Smith).
    #[serde(
        rename(deserialize = "no_progress_timeout"),
        deserialize_with = "wire::duration_ms"
    )]
    pub no_progress_timeout_ms: u64,
    /// Sandbox image.
    pub docker_image: String,
    /// Commit of the tool implementations.
    pub tools_commit: String,
    /// Sandbox limits (`cpu_cores` an f32 in Smith).
    #[serde(deserialize_with = "wire::sandbox_limits")]
    pub sandbox_limits: SandboxLimits,
}

/// Smith's `RunResult`: this crate's [`crate::RunStop`] without `exit_status`,
/// `cost_usd`, `api_calls` and `turns`, which Smith does not send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmithRunResult {
    /// Whether the run succeeded, as Smith judged it.
    pub success: bool,
    /// Wall time of the run, ms.
    pub wall_time_ms: u64,
    /// Tokens of the run.
    pub total_tokens: u64,
    /// Failed tool calls.
    pub tool_errors: u32,
    /// Variance of the score across repetitions.
    pub stability_variance: f64,
    /// The score, on Smith's own scale (stored as sent).
    pub final_score: f64,
    /// Tests still failing.
    pub failing_tests: Vec<String>,
    /// Tests passing.
    pub tests_passed: u32,
    /// Tests failing.
    pub tests_failed: u32,
    /// Files modified.
    pub files_modified: u32,
    /// Whether the run stopped early.
    pub early_stopped: bool,
    /// Why, when it did.
    pub early_stop_reason: Option<String>,
}

/// Smith's `StepData`: this crate's [`crate::Step`], except that Smith says only whether
/// the step was planned, not which plan item it executes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmithStep {
    /// Kind of step (PascalCase in Smith).
    #[serde(deserialize_with = "wire::pascal_case")]
    pub step_type: StepType,
    /// The step's text.
    pub content: String,
    /// Prompt tokens.
    pub tokens_in: u64,
    /// Completion tokens.
    pub tokens_out: u64,
    /// Wall time, ms.
    pub wall_time_ms: u64,
    /// Whether the step was planned.
    pub planned_step: bool,
    /// Context size, KiB (an integer in Smith).
    pub context_kb: u64,
}

/// How a Smith tool call ended: this crate's kind, and the message Smith attached to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExitOutcome {
    /// The kind (`Flake` → `flake`).
    pub kind: ExitKind,
    /// The message of `Deterministic`, `Flake`, `UserError` and `SystemError`; Smith's
    /// `Ok`, `Oom` and `Timeout` carry none.
    pub message: Option<String>,
}

/// Smith's `ExitKind` as an [`ExitOutcome`] (the encoding is [`wire::exit_kind`]'s).
fn exit_outcome<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ExitOutcome, D::Error> {
    let (kind, message) = wire::exit_kind(d)?;
    Ok(ExitOutcome { kind, message })
}

/// Smith's `ToolPerformance`: this crate's [`crate::ToolCall`] with Smith's own
/// `tool_args_hash` (not a SHA-256) and its exit kind as an [`ExitOutcome`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmithToolCall {
    /// The tool.
    pub tool_name: String,
    /// Smith's hash of the arguments, verbatim.
    pub tool_args_hash: String,
    /// Latency, ms.
    pub latency_ms: u64,
    /// Retries.
    pub retries: u32,
    /// How it ended.
    #[serde(deserialize_with = "exit_outcome")]
    pub exit_kind: ExitOutcome,
    /// What it touched (same shape as this crate's).
    pub evidence_footprint: EvidenceFootprint,
    /// User feedback (an f32 in Smith), when given.
    #[serde(default, deserialize_with = "wire::f32_option")]
    pub user_feedback_score: Option<f64>,
    /// Whether the tool did what the agent wanted (an f32 in Smith), when measured.
    #[serde(default, deserialize_with = "wire::f32_option")]
    pub intent_accuracy: Option<f64>,
}

/// Smith's `ConfigSuggestion`: this crate's [`crate::OptimizerUpdate`] with a Smith
/// config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmithSuggestion {
    /// The suggested config.
    pub suggested_config: SmithRunConfig,
    /// Confidence in the suggestion.
    pub confidence: f64,
    /// Expected improvement.
    pub expected_improvement: f64,
    /// 0 = exploitation, 1 = exploration.
    pub exploration_vs_exploitation: f64,
    /// Why.
    pub reasoning: String,
}
