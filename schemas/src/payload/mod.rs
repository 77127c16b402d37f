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
pub use run::{EnforcedLimit, ExitStatus, RunStart, RunStop, SandboxInfo, ScenarioRef};
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Asserts `as_str` of every variant is its serde name.
    fn assert_wire_names<T: Copy + Serialize>(variants: &[T], as_str: fn(T) -> &'static str) {
        for &v in variants {
            let wire = serde_json::to_value(v).ok();
            assert_eq!(Some(as_str(v)), wire.as_ref().and_then(|w| w.as_str()));
        }
    }

    #[test]
    fn enum_as_str_is_the_wire_name() {
        use ContextStrategy as C;
        use DeliberationStatus as D;
        use ExitKind as K;
        use ExitStatus as E;
        use PricingSource as P;
        use SegmentType as S;
        use StepType as T;
        let steps = [
            T::Reason,
            T::Act,
            T::Observe,
            T::Conclude,
            T::Plan,
            T::Debate,
        ];
        assert_wire_names(&steps, T::as_str);
        let statuses = [D::Ok, D::ParseFailure, D::Timeout, D::ApiError];
        assert_wire_names(&statuses, D::as_str);
        assert_wire_names(&[P::ProviderApi, P::Override, P::Unknown], P::as_str);
        let segments = [
            S::FileContent,
            S::SearchResults,
            S::ConversationHistory,
            S::ToolOutput,
            S::ReasoningContext,
            S::Documentation,
            S::ErrorLogs,
        ];
        assert_wire_names(&segments, S::as_str);
        let strategies = [C::Raw, C::ObservationMasking, C::LlmSummary, C::Hybrid];
        assert_wire_names(&strategies, C::as_str);
        let kinds = [
            K::Ok,
            K::Deterministic,
            K::Flake,
            K::Oom,
            K::Timeout,
            K::UserError,
            K::SystemError,
        ];
        assert_wire_names(&kinds, K::as_str);
        let exits = [
            E::Submitted,
            E::ExitCost,
            E::ExitContext,
            E::ExitTimeout,
            E::ExitFormat,
            E::ExitApi,
            E::ExitEnvironment,
            E::ExitForfeit,
            E::ExitCommand,
            E::ExitError,
        ];
        assert_wire_names(&exits, E::as_str);
    }
}
