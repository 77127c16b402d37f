//! `deliberation`: one LLM call, with honest token and cost accounting.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::is_false;

/// `deliberation`: one LLM call.
///
/// Token fields follow one convention so that nothing is double counted:
/// `input_tokens` INCLUDES `cached_input_tokens` and `cache_write_tokens`,
/// `output_tokens` INCLUDES `reasoning_tokens`. A count nobody reported is null, never
/// a made-up 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Deliberation {
    /// Role of the caller: `agent`, `summarizer`, `planner`, ...
    pub agent: String,
    /// Provider that served the call, e.g. `openrouter`, `vllm`, `local`.
    pub provider: String,
    /// Model as the provider names it, e.g. `openai/gpt-4o-mini`.
    pub model: String,
    /// How the call ended.
    pub status: DeliberationStatus,
    /// Wall time of the call, retries and their waits included, ms. Null (or absent) when
    /// the producer did not time the call: an `exec` agent that sends none.
    #[serde(default)]
    pub latency_ms: Option<u64>,
    /// Prompt tokens, cached and cache-written ones included. Null when unknown (never 0
    /// for "unknown"): a call that got no answer (timeout, HTTP error, unreadable reply)
    /// or whose answer reported no usage.
    pub input_tokens: Option<u64>,
    /// Prompt tokens served from the provider's cache (part of `input_tokens`); null
    /// when the call's tokens are unknown.
    pub cached_input_tokens: Option<u64>,
    /// Prompt tokens written to the provider's cache (part of `input_tokens`); null when
    /// the call's tokens are unknown.
    pub cache_write_tokens: Option<u64>,
    /// Completion tokens, reasoning ones included. Null when unknown, as `input_tokens`.
    pub output_tokens: Option<u64>,
    /// Hidden reasoning tokens (part of `output_tokens`); null when the call's tokens are
    /// unknown.
    pub reasoning_tokens: Option<u64>,
    /// The call's cost, USD, exact to the number nearest it. Null when it is unknown
    /// (never 0 for "unknown"): no price, or a call whose tokens the provider never
    /// reported (no completion: timeout, HTTP error, unreadable reply; or an answer
    /// without usage).
    pub cost_usd: Option<f64>,
    /// Where `cost_usd` came from: `provider_api`, `table` or `override` prices, or `unknown`
    /// whenever `cost_usd` is null (the prices, when known, are still given below).
    pub pricing_source: PricingSource,
    /// Price of uncached prompt tokens, USD per million tokens; null when unknown.
    pub prompt_price_per_mtok: Option<f64>,
    /// Price of completion tokens, USD per million tokens; null when unknown.
    pub completion_price_per_mtok: Option<f64>,
    /// Price of cached prompt tokens, USD per million tokens; absent when the provider
    /// has no separate cached price or the price is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_prompt_price_per_mtok: Option<f64>,
    /// Retries spent on this call (429/5xx/timeouts) before the final answer. Null (or
    /// absent) when the producer did not count them: an `exec` agent that sends none, a
    /// trace (a span does not say how often the call was tried).
    #[serde(default)]
    pub retries: Option<u32>,
    /// Actions the model proposed, in its order; empty when it proposed none.
    pub actions: Vec<Action>,
    /// Short summary of the answer, at most 300 chars (`SUMMARY_MAX_CHARS`).
    pub summary: String,
    /// The model's confidence in its answer, 0..1; null when it stated none.
    pub confidence: Option<f64>,
    /// Head of the raw model output, at most 4096 chars (`RAW_OUTPUT_MAX_CHARS`).
    pub raw_output: String,
    /// Whether `raw_output` was cut to its limit.
    pub raw_output_truncated: bool,
    /// Why the call failed; absent when `status` is `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether `summary` was cut to its limit; absent means false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub summary_truncated: bool,
}

/// Outcome of an LLM call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliberationStatus {
    /// The provider answered with a usable completion.
    Ok,
    /// The provider answered, but the reply could not be read.
    ParseFailure,
    /// No answer within the timeout.
    Timeout,
    /// The provider refused or failed (HTTP error, connection error).
    ApiError,
}

impl DeliberationStatus {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            DeliberationStatus::Ok => "ok",
            DeliberationStatus::ParseFailure => "parse_failure",
            DeliberationStatus::Timeout => "timeout",
            DeliberationStatus::ApiError => "api_error",
        }
    }
}

/// Where the prices of a call came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PricingSource {
    /// Read from the provider's models listing (`/models`).
    ProviderApi,
    /// Given by the operator as a price override.
    Override,
    /// Read from the operator's price table (`--prices FILE`), which names the model.
    Table,
    /// No price known: costs are null.
    Unknown,
}

impl PricingSource {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            PricingSource::ProviderApi => "provider_api",
            PricingSource::Override => "override",
            PricingSource::Table => "table",
            PricingSource::Unknown => "unknown",
        }
    }
}

/// One action the model proposed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Action {
    /// Kind of action, e.g. the tool to call (`view`, `bash`, `submit`).
    #[serde(rename = "type")]
    pub action_type: String,
    /// What the action applies to (a path, a command).
    pub target: String,
    /// Position of the action among the call's actions, from 0; lower runs first.
    pub priority: u32,
    /// Why, at most 200 chars (`ACTION_REASON_MAX_CHARS`).
    pub reason: String,
}
