//! The `llm` policy: a model behind an OpenAI-compatible chat-completions API decides
//! each turn's tool calls, under one of four context strategies (`raw`,
//! `observation_masking`, `llm_summary`, `hybrid`).
//!
//! Every model call, the agent's and the summariser's, is one `deliberation` event with
//! honest token counts, retries and cost (null when the price is unknown); every pruning
//! is a `context_decision`. The policy never runs tools and never sleeps past the
//! per-call timeout and the retry policy; the run loop bounds each turn by the run's time
//! left and enforces the cost limit from the deliberations' costs.
//!
//! - [`policy`]: [`LlmPolicy`] (the turn: context, call, parse, exit statuses) and its
//!   [`LlmConfig`].
//! - [`call`]: one model call with retries → its `deliberation`.
//! - [`context`]: the strategies (their [`ContextPlan`](bench_task::ContextPlan),
//!   checked at config load) and what they prune.
//! - [`transcript`]: the conversation so far and its rendering into messages.
//! - [`prompt`]: every text the runner puts in a prompt, and the tool definitions.
//! - [`parse`]: replies (function calls, or JSON in text) → tool requests.

pub(crate) mod call;
pub(crate) mod context;
pub(crate) mod parse;
pub(crate) mod policy;
pub(crate) mod prompt;
pub(crate) mod transcript;

pub use policy::{LlmConfig, LlmPolicy, DEFAULT_MAX_FORMAT_ERRORS, DEFAULT_MAX_PROVIDER_FAILURES};
