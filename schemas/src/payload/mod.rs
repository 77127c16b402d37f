//! The `data` object of every event type. Field names are the wire names (snake_case);
//! every closed set of values is an enum. Unknown extra fields inside `data` are ignored by
//! these types (the sink keeps them in `events_raw`), never rejected.

mod config;
mod context;
mod deliberation;
mod failure;
mod optimizer;
mod run;
mod step;
mod tool;

pub use config::{ContextStrategy, RetryPolicy, RunConfig, SandboxLimits, StrategyParams};
pub use context::{ContextDecision, SegmentType};
pub use deliberation::{Action, Deliberation, DeliberationStatus, PricingSource};
pub use failure::{Failure, FailureRoot, FinalErrorState, RecoveryAttempt};
pub use optimizer::OptimizerUpdate;
pub use run::{ExitStatus, RunStart, RunStop, ScenarioRef};
pub use step::{Step, StepType};
pub use tool::{EvidenceFootprint, ExitKind, ToolCall};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::envelope::EventType;

/// `type` + `data`: adjacently tagged on the wire (`"type": "step", "data": {...}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum Payload {
    RunStart(RunStart),
    RunStop(RunStop),
    Step(Step),
    ToolCall(ToolCall),
    Deliberation(Deliberation),
    ContextDecision(ContextDecision),
    Failure(Failure),
    OptimizerUpdate(OptimizerUpdate),
}

impl Payload {
    /// The `type` of this payload.
    pub fn event_type(&self) -> EventType {
        match self {
            Payload::RunStart(_) => EventType::RunStart,
            Payload::RunStop(_) => EventType::RunStop,
            Payload::Step(_) => EventType::Step,
            Payload::ToolCall(_) => EventType::ToolCall,
            Payload::Deliberation(_) => EventType::Deliberation,
            Payload::ContextDecision(_) => EventType::ContextDecision,
            Payload::Failure(_) => EventType::Failure,
            Payload::OptimizerUpdate(_) => EventType::OptimizerUpdate,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}
