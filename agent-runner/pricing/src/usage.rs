//! The token counts of one call, read from the `usage` block of a chat completion in the
//! shapes providers actually send, normalised to one convention: `input` INCLUDES
//! `cached_input` and `cache_write`, `output` INCLUDES `reasoning`. Nothing is counted
//! twice, whichever fields a provider fills in.
//!
//! | shape | input | cached | cache writes | reasoning |
//! |---|---|---|---|---|
//! | OpenAI, OpenRouter, vLLM, Ollama | `prompt_tokens` (includes cached) | `prompt_tokens_details.cached_tokens` | `prompt_tokens_details.cache_write_tokens` | `completion_tokens_details.reasoning_tokens` |
//! | DeepSeek | `prompt_tokens` = hit + miss | `prompt_cache_hit_tokens` | | `completion_tokens_details.reasoning_tokens` |
//! | Anthropic-style fields in an OpenAI block (LiteLLM, some OpenRouter routes) | `prompt_tokens` | `cache_read_input_tokens` | `cache_creation_input_tokens` | |
//! | Anthropic native (`input_tokens`, no `prompt_tokens`) | `input_tokens` + reads + writes | `cache_read_input_tokens` | `cache_creation_input_tokens` | |
//!
//! When a provider names the same count twice (OpenRouter sends `cached_tokens` and some
//! routes add `cache_read_input_tokens`), the first field in the table's order is used,
//! never the sum. A `prompt_tokens` smaller than the cached and written tokens it must
//! include means the provider counted them apart: they are added, so that the invariant
//! `input ≥ cached + writes` holds. Likewise `output ≥ reasoning`.
//!
//! A call's usage is known only when the block gives both a prompt count (`prompt_tokens`
//! or `input_tokens`) and a completion count (`completion_tokens` or `output_tokens`);
//! otherwise (no `usage` block, or one without those counts) it is unknown and the call's
//! token counts are recorded as null, never as 0. Within a known usage, a cache or
//! reasoning detail the provider leaves out is 0: providers omit the details of what
//! did not happen.

use serde_json::Value;

/// Token counts of one call (see the module docs for the convention).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    /// Prompt tokens, cache reads and writes included.
    pub input: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached_input: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write: u64,
    /// Completion tokens, reasoning included.
    pub output: u64,
    /// Hidden reasoning tokens.
    pub reasoning: u64,
}

impl TokenUsage {
    /// Reads a `usage` object; `None` when it reports no prompt or no completion count
    /// (missing or ill-typed fields count as absent).
    pub fn from_usage(usage: &Value) -> Option<TokenUsage> {
        let count = |path: &[&str]| -> Option<u64> {
            path.iter()
                .try_fold(usage, |v, key| v.get(key))
                .and_then(Value::as_u64)
        };
        let first = |paths: &[&[&str]]| paths.iter().find_map(|p| count(p));

        let cached_input = first(&[
            &["prompt_tokens_details", "cached_tokens"],
            &["prompt_cache_hit_tokens"],
            &["cache_read_input_tokens"],
        ])
        .unwrap_or(0);
        let cache_write = first(&[
            &["prompt_tokens_details", "cache_write_tokens"],
            &["cache_creation_input_tokens"],
        ])
        .unwrap_or(0);
        let input = match count(&["prompt_tokens"]) {
            Some(prompt) if prompt >= cached_input.saturating_add(cache_write) => prompt,
            // Saturating: the counts are whatever the endpoint sent.
            Some(prompt) => prompt
                .saturating_add(cached_input)
                .saturating_add(cache_write),
            // Anthropic's own `input_tokens` leaves cache reads and writes out.
            None => count(&["input_tokens"])?
                .saturating_add(cached_input)
                .saturating_add(cache_write),
        };
        let reasoning = first(&[
            &["completion_tokens_details", "reasoning_tokens"],
            &["reasoning_tokens"],
        ])
        .unwrap_or(0);
        let completion = first(&[&["completion_tokens"], &["output_tokens"]])?;
        let output = if completion >= reasoning {
            completion
        } else {
            completion + reasoning
        };
        Some(TokenUsage {
            input,
            cached_input,
            cache_write,
            output,
            reasoning,
        })
    }

    /// Prompt tokens billed at the full prompt price.
    pub fn uncached_input(&self) -> u64 {
        self.input - self.cached_input - self.cache_write
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn usage(v: Value) -> TokenUsage {
        TokenUsage::from_usage(&v).expect("a known usage")
    }

    #[test]
    fn openai_details_are_included_not_added() {
        let u = usage(json!({
            "prompt_tokens": 1000, "completion_tokens": 300, "total_tokens": 1300,
            "prompt_tokens_details": {"cached_tokens": 600},
            "completion_tokens_details": {"reasoning_tokens": 200}
        }));
        assert_eq!(
            u,
            TokenUsage {
                input: 1000,
                cached_input: 600,
                cache_write: 0,
                output: 300,
                reasoning: 200
            }
        );
        assert_eq!(u.uncached_input(), 400);
    }

    #[test]
    fn huge_counts_saturate_instead_of_wrapping() {
        let u = usage(json!({
            "input_tokens": u64::MAX, "output_tokens": 1,
            "cache_read_input_tokens": u64::MAX, "cache_creation_input_tokens": 5
        }));
        assert_eq!(u.input, u64::MAX);
    }

    #[test]
    fn deepseek_hit_tokens_are_cached_input() {
        let u = usage(json!({
            "prompt_tokens": 500, "completion_tokens": 20,
            "prompt_cache_hit_tokens": 384, "prompt_cache_miss_tokens": 116
        }));
        assert_eq!((u.input, u.cached_input, u.output), (500, 384, 20));
    }

    #[test]
    fn anthropic_fields_in_an_openai_block_are_not_double_counted() {
        let u = usage(json!({
            "prompt_tokens": 900, "completion_tokens": 50,
            "prompt_tokens_details": {"cached_tokens": 700},
            "cache_read_input_tokens": 700, "cache_creation_input_tokens": 100
        }));
        assert_eq!((u.input, u.cached_input, u.cache_write), (900, 700, 100));
        assert_eq!(u.uncached_input(), 100);
    }

    #[test]
    fn exclusive_counts_are_added_up() {
        let native = usage(json!({
            "input_tokens": 50, "output_tokens": 10,
            "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 200
        }));
        assert_eq!(
            (native.input, native.cached_input, native.cache_write),
            (1250, 1000, 200)
        );
        let exclusive = usage(json!({
            "prompt_tokens": 50, "completion_tokens": 10,
            "cache_read_input_tokens": 1000,
            "completion_tokens_details": {"reasoning_tokens": 40}
        }));
        assert_eq!((exclusive.input, exclusive.output), (1050, 50));
    }

    #[test]
    fn missing_usage_is_unknown_not_zero() {
        for unknown in [
            Value::Null,
            json!({}),
            json!({"prompt_tokens": "12", "completion_tokens": 3}),
            json!({"prompt_tokens": 12}),
            json!({"completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 5}}),
        ] {
            assert_eq!(TokenUsage::from_usage(&unknown), None, "{unknown}");
        }
    }

    #[test]
    fn reported_zeros_and_absent_details_are_exact() {
        assert_eq!(
            usage(json!({"prompt_tokens": 0, "completion_tokens": 0})),
            TokenUsage::default()
        );
        assert_eq!(
            usage(json!({"input_tokens": 7, "output_tokens": 2})),
            TokenUsage {
                input: 7,
                output: 2,
                ..TokenUsage::default()
            }
        );
    }
}
