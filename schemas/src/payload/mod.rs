//! `type` and the `data` object of every event type: [`EventType`], the closed set of
//! types, and [`Payload`], the type with its data. Field names are the wire names
//! (snake_case); every closed set of values is an enum. Unknown extra fields inside `data` are ignored by
//! these types (the sink keeps them in `events_raw`), never rejected.

mod config;
mod context;
mod decision;
mod deliberation;
mod failure;
mod genai_event;
mod optimizer;
mod run;
mod step;
mod task_validation;
mod test_outcome;
mod tool;

pub use config::{ContextStrategy, RetryPolicy, RunConfig, SandboxLimits, StrategyParams};
pub use context::{ContextDecision, SegmentType};
pub use decision::{DecisionKind, ExperimentDecision};
pub use deliberation::{Action, Deliberation, DeliberationStatus, PricingSource};
pub use failure::{Failure, FailureRoot, FinalErrorState, RecoveryAttempt};
pub use genai_event::GenAiEvent;
pub use optimizer::{OptimizerUpdate, TrialOutcome};
pub use run::{
    EnforcedLimit, EnvironmentImage, ExitStatus, ExperimentRef, PidsLimit, Regrade, RunClaim,
    RunIntegrity, RunStart, RunStop, SandboxInfo, SandboxNetwork, ScenarioRef, SweepRef,
};
pub use step::{Step, StepType};
pub use task_validation::TaskValidation;
pub use test_outcome::{TestOutcome, TestSet};
pub use tool::{EvidenceFootprint, ExitKind, ToolCall};

use std::fmt;

use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `type` + `data`: adjacently tagged on the wire (`"type": "step", "data": {...}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
#[schemars(transform = describe_tags("type", Some("data")))]
pub enum Payload {
    /// `run_start`: the run config and what is needed to replay the run; `seq` 0.
    RunStart(RunStart),
    /// `run_stop`: the result of the run.
    RunStop(RunStop),
    /// `step`: one agent step.
    Step(Step),
    /// `tool_call`: one tool invocation.
    ToolCall(ToolCall),
    /// `deliberation`: one LLM call.
    Deliberation(Deliberation),
    /// `context_decision`: one keep/prune decision about a context segment.
    ContextDecision(ContextDecision),
    /// `failure`: the root cause of a failure and the recoveries tried.
    Failure(Failure),
    /// `optimizer_update`: the next config a sweep optimizer suggests.
    OptimizerUpdate(OptimizerUpdate),
    /// `test_outcome`: one judged test of a SWE-bench-format task.
    TestOutcome(TestOutcome),
    /// `task_validation`: what validating a SWE-bench-format task with its gold patch
    /// found.
    TaskValidation(TaskValidation),
    /// `genai_event`: one OpenTelemetry GenAI event (captured content, inference
    /// details, an evaluation result) of a run received as traces.
    GenaiEvent(GenAiEvent),
    /// `experiment_decision`: what an experiment run until decided concluded.
    ExperimentDecision(ExperimentDecision),
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
            Payload::TestOutcome(_) => EventType::TestOutcome,
            Payload::TaskValidation(_) => EventType::TaskValidation,
            Payload::GenaiEvent(_) => EventType::GenaiEvent,
            Payload::ExperimentDecision(_) => EventType::ExperimentDecision,
        }
    }
}

/// The closed set of event types (`type` on the wire and the last subject token).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    /// `run_start`.
    RunStart,
    /// `run_stop`.
    RunStop,
    /// `step`.
    Step,
    /// `tool_call`.
    ToolCall,
    /// `deliberation`.
    Deliberation,
    /// `context_decision`.
    ContextDecision,
    /// `failure`.
    Failure,
    /// `optimizer_update`.
    OptimizerUpdate,
    /// `test_outcome`.
    TestOutcome,
    /// `task_validation`.
    TaskValidation,
    /// `genai_event`.
    GenaiEvent,
    /// `experiment_decision`.
    ExperimentDecision,
}

impl EventType {
    /// Every event type, in a stable order.
    pub const ALL: [EventType; 12] = [
        EventType::RunStart,
        EventType::RunStop,
        EventType::Step,
        EventType::ToolCall,
        EventType::Deliberation,
        EventType::ContextDecision,
        EventType::Failure,
        EventType::OptimizerUpdate,
        EventType::TestOutcome,
        EventType::TaskValidation,
        EventType::GenaiEvent,
        EventType::ExperimentDecision,
    ];

    /// The wire name, e.g. `tool_call`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventType::RunStart => "run_start",
            EventType::RunStop => "run_stop",
            EventType::Step => "step",
            EventType::ToolCall => "tool_call",
            EventType::Deliberation => "deliberation",
            EventType::ContextDecision => "context_decision",
            EventType::Failure => "failure",
            EventType::OptimizerUpdate => "optimizer_update",
            EventType::TestOutcome => "test_outcome",
            EventType::TaskValidation => "task_validation",
            EventType::GenaiEvent => "genai_event",
            EventType::ExperimentDecision => "experiment_decision",
        }
    }

    /// Parses a wire name.
    pub fn from_wire(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A JSON Schema transform for a tagged enum: gives each variant's tag property (whose
/// schema is the tag's `const`) the variant's description and, for an adjacently tagged
/// enum, its `content` property a description naming the tag. Derived schemas describe
/// the variant object only, which would leave these properties undescribed.
fn describe_tags(tag: &'static str, content: Option<&'static str>) -> impl FnMut(&mut Schema) {
    move |schema: &mut Schema| {
        let Some(Value::Array(variants)) = schema.get_mut("oneOf") else {
            return;
        };
        for variant in variants.iter_mut().filter_map(Value::as_object_mut) {
            let about = variant.get("description").cloned();
            let Some(Value::Object(properties)) = variant.get_mut("properties") else {
                continue;
            };
            let name = properties
                .get(tag)
                .and_then(|t| t.get("const"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            if let (Some(Value::Object(tag_schema)), Some(about)) = (properties.get_mut(tag), about)
            {
                tag_schema.entry("description").or_insert(about);
            }
            if let (Some(Value::Object(content_schema)), Some(name)) =
                (content.and_then(|c| properties.get_mut(c)), name)
            {
                content_schema
                    .entry("description")
                    .or_insert_with(|| Value::from(format!("The `{name}` payload.")));
            }
        }
    }
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
