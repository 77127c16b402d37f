//! `step`: one agent step.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::is_false;

/// `step`: what the agent did in one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    pub step_type: StepType,
    /// The step's text (thought, action, observation...), truncated to
    /// [`crate::truncate::STEP_CONTENT_MAX_CHARS`].
    pub content: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub content_truncated: bool,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub wall_time_ms: u64,
    /// Index of the plan item this step executes; null when unplanned.
    pub planned_step: Option<u32>,
    /// Size of the context sent to the model at this step, KiB.
    pub context_kb: f64,
}

/// Kind of agent step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepType {
    Reason,
    Act,
    Observe,
    Conclude,
    Plan,
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
