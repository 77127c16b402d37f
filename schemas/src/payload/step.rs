//! `step`: one agent step.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::is_false;

/// `step`: what the agent did in one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    /// Kind of step.
    pub step_type: StepType,
    /// The step's text (thought, action, observation...), truncated to
    /// 16384 chars (`STEP_CONTENT_MAX_CHARS`).
    pub content: String,
    /// Whether `content` was cut to its limit; absent means false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub content_truncated: bool,
    /// Prompt tokens of the model calls this step made. The calls of a turn are on its
    /// first step: its `reason` step, or its first `act` step when the model wrote no
    /// text. Null when the step made no model call, or when the tokens of one of its calls
    /// are unknown (its `deliberation` has them null): never a made-up 0 or a partial sum.
    pub tokens_in: Option<u64>,
    /// Completion tokens of the model calls this step made; null as for `tokens_in`.
    pub tokens_out: Option<u64>,
    /// Wall time of the step, ms; null (or absent) when not measured separately (a
    /// `reason` or `act` step, whose time is its model call's or tool call's).
    #[serde(default)]
    pub wall_time_ms: Option<u64>,
    /// Index of the plan item this step executes; null when unplanned.
    pub planned_step: Option<u32>,
    /// Size of the context sent to the model at this step, KiB; null (or absent) when
    /// not measured (a step that sent nothing to a model: `observe`, `conclude`).
    #[serde(default)]
    pub context_kb: Option<f64>,
}

/// Kind of agent step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepType {
    /// The model thought about what to do.
    Reason,
    /// The agent called a tool.
    Act,
    /// The agent read a tool's result.
    Observe,
    /// The run's end: what the agent submitted and what the judge said.
    Conclude,
    /// The agent made or revised a plan.
    Plan,
    /// Agents argued over a decision.
    Debate,
}

impl StepType {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            StepType::Reason => "reason",
            StepType::Act => "act",
            StepType::Observe => "observe",
            StepType::Conclude => "conclude",
            StepType::Plan => "plan",
            StepType::Debate => "debate",
        }
    }
}
