//! One model call, retries included, and the `deliberation` event that reports it:
//! status, latency, tokens, retries, pricing, raw output head. The caller (the agent turn
//! or the summariser) then adds what it parsed from the reply (actions, summary) and may
//! downgrade the status to `parse_failure`. `confidence` stays null: a chat completion
//! states none.
//!
//! A call that got no completion (timeout, HTTP error, unreadable reply), or whose reply
//! reported no usage, has unknown tokens: its token counts are null, and so is its cost
//! (`cost_usd` null and `pricing_source` `unknown`), never 0 or $0.

use bench_schemas::truncate::{truncate_chars, RAW_OUTPUT_MAX_CHARS, SUMMARY_MAX_CHARS};
use bench_schemas::{Deliberation, DeliberationStatus, PricingSource, RetryPolicy};

use crate::provider::{with_retries, CallError, ChatClient, ChatRequest, Completion};
use bench_pricing::Pricing;

/// Role of the agent making the call (`deliberation.agent`).
pub const AGENT: &str = "agent";
/// Role of summary calls, so that cost splits into agent vs summary.
pub const SUMMARIZER: &str = "summarizer";

/// A model as one role calls it: client, model name, prices, retry policy.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub client: ChatClient,
    /// `deliberation.provider`.
    pub provider: String,
    pub model: String,
    pub pricing: Pricing,
    pub retry: RetryPolicy,
}

/// A finished call: its event (to complete and emit) and its result.
#[derive(Debug)]
pub struct Called {
    pub deliberation: Deliberation,
    pub result: Result<Completion, CallError>,
}

impl Endpoint {
    /// Calls the model (retrying per the policy) and reports it as `agent`.
    pub async fn call(&self, agent: &str, request: &ChatRequest) -> Called {
        let attempts = with_retries(&self.retry, || self.client.chat(request)).await;
        let (status, usage, raw, error) = match &attempts.result {
            Ok(c) => (DeliberationStatus::Ok, c.usage, c.raw.clone(), None),
            // No answer, so no usage: what the provider counted (and billed) is unknown.
            Err(e) => {
                let status = match e {
                    CallError::Timeout(_) => DeliberationStatus::Timeout,
                    CallError::Malformed { .. } => DeliberationStatus::ParseFailure,
                    _ => DeliberationStatus::ApiError,
                };
                let raw = match e {
                    CallError::Malformed { body, .. } => body.clone(),
                    _ => String::new(),
                };
                (status, None, raw, Some(e.to_string()))
            }
        };
        let mut deliberation = Deliberation {
            agent: agent.to_owned(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            status,
            latency_ms: Some(u64::try_from(attempts.latency.as_millis()).unwrap_or(u64::MAX)),
            input_tokens: usage.map(|u| u.input),
            cached_input_tokens: usage.map(|u| u.cached_input),
            cache_write_tokens: usage.map(|u| u.cache_write),
            output_tokens: usage.map(|u| u.output),
            reasoning_tokens: usage.map(|u| u.reasoning),
            cost_usd: None,
            pricing_source: PricingSource::Unknown,
            prompt_price_per_mtok: None,
            completion_price_per_mtok: None,
            cached_prompt_price_per_mtok: None,
            retries: Some(attempts.retries),
            actions: Vec::new(),
            summary: String::new(),
            confidence: None,
            raw_output: String::new(),
            raw_output_truncated: false,
            error,
            summary_truncated: false,
        };
        set_raw_output(&mut deliberation, raw);
        self.pricing.stamp(&mut deliberation);
        Called {
            deliberation,
            result: attempts.result,
        }
    }
}

/// Sets `raw_output` to the head of `raw`.
fn set_raw_output(d: &mut Deliberation, mut raw: String) {
    d.raw_output_truncated = truncate_chars(&mut raw, RAW_OUTPUT_MAX_CHARS);
    d.raw_output = raw;
}

/// Sets `summary` to the head of `summary`.
pub fn set_summary(d: &mut Deliberation, mut summary: String) {
    d.summary_truncated = truncate_chars(&mut summary, SUMMARY_MAX_CHARS);
    d.summary = summary;
}
