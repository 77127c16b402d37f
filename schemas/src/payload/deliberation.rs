//! `deliberation`: one LLM call, with honest token and cost accounting.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::is_false;

/// `deliberation`: one LLM call.
///
/// Token fields follow one convention so that nothing is double counted:
/// `input_tokens` INCLUDES `cached_input_tokens`, `output_tokens` INCLUDES
/// `reasoning_tokens`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Deliberation {
    /// Role of the caller: `agent`, `summarizer`, `planner`, ...
    pub agent: String,
    pub provider: String,
    pub model: String,
    pub status: DeliberationStatus,
    pub latency_ms: u64,
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub cache_write_tokens: u64,
    /// Completion tokens, reasoning ones included.
    pub output_tokens: u64,
    pub reasoning_tokens: u64,
    /// The call's cost, USD, exact to the number nearest it. Null when it is unknown
    /// (never 0 for "unknown"): no price, or a call that got no completion (timeout,
    /// HTTP error, unreadable reply), whose tokens the provider never reported.
    pub cost_usd: Option<f64>,
    /// Where `cost_usd` came from: `provider_api` or `override` prices, or `unknown`
    /// whenever `cost_usd` is null (the prices, when known, are still given below).
    pub pricing_source: PricingSource,
    pub prompt_price_per_mtok: Option<f64>,
    pub completion_price_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_prompt_price_per_mtok: Option<f64>,
    /// Retries spent on this call (429/5xx/timeouts) before the final answer.
    #[serde(default)]
    pub retries: u32,
    pub actions: Vec<Action>,
    /// At most [`crate::truncate::SUMMARY_MAX_CHARS`] chars.
    pub summary: String,
    pub confidence: Option<f64>,
    /// Head of the raw model output, at most [`crate::truncate::RAW_OUTPUT_MAX_CHARS`] chars.
    pub raw_output: String,
    pub raw_output_truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub summary_truncated: bool,
}

/// Outcome of an LLM call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliberationStatus {
    Ok,
    ParseFailure,
    Timeout,
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
    ProviderApi,
    Override,
    Unknown,
}

impl PricingSource {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            PricingSource::ProviderApi => "provider_api",
            PricingSource::Override => "override",
            PricingSource::Unknown => "unknown",
        }
    }
}

/// One action the model proposed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Action {
    #[serde(rename = "type")]
    pub action_type: String,
    pub target: String,
    pub priority: u32,
    /// At most [`crate::truncate::ACTION_REASON_MAX_CHARS`] chars.
    pub reason: String,
}
