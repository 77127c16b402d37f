//! Agent policies: what decides the next action.
//!
//! The run loop ([`crate::agent`]) owns the tools, the limits and the events; a [`Policy`]
//! only decides. Each turn it gets a [`Turn`] (the task, the run config and every action
//! taken so far with its observation) and returns a [`Decision`]: an optional thought and
//! the tool calls to execute. A model-backed policy reports each model call as a
//! `deliberation` event and each pruning of its context as a `context_decision` through
//! [`PolicyEvents`]; the run's token count, cost and API call count are summed from those
//! `deliberation` events, so that what is reported and what is limited are the same
//! numbers. A policy that cannot go on returns a [`PolicyStop`] with the exit status to
//! record (`exit_format`, `exit_api`, `exit_context`, ...).
//!
//! Policies must not run tools, touch the sandbox, or sleep past the run's limits: the run
//! loop bounds every `decide` by the remaining execution time.
//!
//! - [`scripted`]: replays a fixed action list (reference solutions, smoke tests).
//! - [`llm`]: a model behind an OpenAI-compatible API, with context strategies.
//! - [`identity`]: what of a model-backed policy enters `cfg_hash` besides the scenario.

pub mod identity;
pub(crate) mod llm;
pub(crate) mod scripted;

use bench_schemas::{ContextDecision, Deliberation, ExitStatus, FailureRoot, Payload};
use futures::future::BoxFuture;
use uuid::Uuid;

use crate::recorder::{RecordError, RunRecorder};
use crate::tools::{ToolOutcome, ToolRequest};
use bench_task::{LoadedScenario, LoadedTask, PolicyKind};

pub use llm::{LlmConfig, LlmPolicy};
pub use scripted::ScriptedPolicy;

/// Decides the agent's actions, one turn at a time.
pub(crate) trait Policy: Send {
    /// The `policy_id` on every event, e.g. `openai/gpt-4o-mini:observation_masking`.
    fn policy_id(&self) -> String;

    /// The next actions. Called once per turn until a `submit` runs, a limit stops the run,
    /// or this returns a [`PolicyStop`].
    fn decide<'a>(
        &'a mut self,
        turn: &'a Turn<'a>,
        events: &'a mut PolicyEvents<'_>,
    ) -> BoxFuture<'a, Result<Decision, PolicyStop>>;
}

/// What a policy sees at the start of a turn.
#[derive(Debug)]
pub(crate) struct Turn<'a> {
    /// 0-based turn number.
    pub number: u32,
    /// Every action executed so far, with its observation, oldest first.
    pub history: &'a [Exchange],
}

/// One executed action and what came back.
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    /// The request as the policy made it (with its `call_id`).
    pub request: ToolRequest,
    /// The outcome; `observation` is the text to show the model.
    pub outcome: ToolOutcome,
}

/// A policy's answer for one turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Decision {
    /// The reasoning behind the actions, if any (a `step` of type `reason`).
    pub thought: Option<String>,
    /// Tool calls to run in order. Empty = a turn without action.
    pub actions: Vec<ToolRequest>,
    /// Size of the context the policy used this turn, KiB; `None` = the size of the raw
    /// history (what a policy keeping everything would send).
    pub context_kb: Option<f64>,
    /// Index of the plan item this turn executes, for planning policies.
    pub planned_step: Option<u32>,
    /// The model call of this turn got no completion (timeout, HTTP error, unreadable
    /// reply): the agent did not act, and the turn does not count in `turns`.
    pub unanswered: bool,
}

/// A policy gives up; the run ends with `status`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{reason} ({})", status.as_str())]
pub(crate) struct PolicyStop {
    /// `exit_status` of the run.
    pub status: ExitStatus,
    /// `early_stop_reason` of the run.
    pub reason: String,
    /// The root of the run's `failure`, when the policy knows it (the provider's, for
    /// `exit_api`); `None` = the runner reads it from how the run ended.
    pub root: Option<FailureRoot>,
}

/// The events a policy emits during a turn, stamped into the run's stream with the turn's
/// `step_id`.
#[derive(Debug)]
pub(crate) struct PolicyEvents<'r> {
    recorder: &'r mut RunRecorder,
    step_id: Uuid,
    error: Option<RecordError>,
}

impl<'r> PolicyEvents<'r> {
    pub(crate) fn new(recorder: &'r mut RunRecorder, step_id: Uuid) -> Self {
        PolicyEvents {
            recorder,
            step_id,
            error: None,
        }
    }

    /// One model call. Its tokens, cost and the call itself count toward the run's totals
    /// and the cost limit.
    pub fn deliberation(&mut self, deliberation: Deliberation) {
        self.emit(Payload::Deliberation(deliberation));
    }

    /// One pruning decision about one context segment.
    pub fn context_decision(&mut self, decision: ContextDecision) {
        self.emit(Payload::ContextDecision(decision));
    }

    fn emit(&mut self, payload: Payload) {
        if self.error.is_none() {
            self.error = self.recorder.emit(Some(self.step_id), payload).err();
        }
    }

    /// The first recording error, surfaced by the run loop after the turn.
    pub(crate) fn into_error(self) -> Option<RecordError> {
        self.error
    }
}

/// A policy cannot be built for this scenario.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// An `llm` policy without a provider URL.
    #[error("policy llm needs a provider: set --llm-base-url (or BENCH_LLM_BASE_URL)")]
    NoProvider,
    /// The `llm` policy could not be set up (its HTTP client, its context strategy).
    #[error("policy llm: {0}")]
    Llm(String),
}

/// The policy a scenario asks for, for one task; `seed` is the run's, `llm` how to reach
/// the provider (model-backed policies only).
pub(crate) fn build(
    scenario: &LoadedScenario,
    task: &LoadedTask,
    seed: u64,
    llm: Option<&LlmConfig>,
) -> Result<Box<dyn Policy>, PolicyError> {
    match scenario.scenario.policy {
        PolicyKind::Scripted => Ok(Box::new(ScriptedPolicy::for_task(
            &scenario.scenario,
            &task.task,
        ))),
        PolicyKind::Llm => {
            let llm = llm.ok_or(PolicyError::NoProvider)?;
            LlmPolicy::new(&scenario.scenario.config, &task.task, seed, llm)
                .map(|p| Box::new(p) as Box<dyn Policy>)
                .map_err(|e| PolicyError::Llm(e.to_string()))
        }
    }
}
