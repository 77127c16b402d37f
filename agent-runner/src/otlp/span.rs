//! Attribute lookup on one span: its own attributes first, then its resource's, with the
//! aliases instrumentation libraries use for the same fact. Values of the wrong type
//! count as absent (a fact nobody stated), never as 0 or false.

use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::span::Event;
use opentelemetry_proto::tonic::trace::v1::Span;

/// The GenAI conventions' token attributes and their aliases, most current first.
pub mod tokens {
    /// Prompt tokens, cached included: the current name, then the legacy one (also
    /// OpenLLMetry's).
    pub const INPUT: &[&str] = &["gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"];
    /// Completion tokens, reasoning included.
    pub const OUTPUT: &[&str] = &[
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.completion_tokens",
    ];
    /// Prompt tokens read from the provider's cache: the current name, OpenLLMetry's,
    /// Sentry's, pydantic-ai's.
    pub const CACHE_READ: &[&str] = &[
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_read_input_tokens",
        "gen_ai.usage.input_tokens.cached",
        "gen_ai.usage.details.cache_read_tokens",
    ];
    /// Prompt tokens written to the provider's cache: the current name, OpenLLMetry's,
    /// pydantic-ai's.
    pub const CACHE_WRITE: &[&str] = &[
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.cache_creation_input_tokens",
        "gen_ai.usage.details.cache_write_tokens",
    ];
    /// Hidden reasoning tokens: the current name, OpenLLMetry's, Sentry's, pydantic-ai's.
    pub const REASONING: &[&str] = &[
        "gen_ai.usage.reasoning.output_tokens",
        "gen_ai.usage.reasoning_tokens",
        "gen_ai.usage.output_tokens.reasoning",
        "gen_ai.usage.details.reasoning_tokens",
    ];
}

/// One span with the resource that produced it.
#[derive(Debug, Clone, Copy)]
pub struct SpanView<'a> {
    /// The span.
    pub span: &'a Span,
    /// Its resource's attributes (`service.name`, `benchstream.*`, ...).
    pub resource: &'a [KeyValue],
}

impl<'a> SpanView<'a> {
    /// The value of the first of `keys` the span (or, failing that, its resource) has.
    fn value(&self, keys: &[&str]) -> Option<&'a Value> {
        keys.iter()
            .find_map(|key| find(&self.span.attributes, key).or_else(|| find(self.resource, key)))
    }

    /// A string attribute (the first of `keys` present as a non-empty string).
    pub fn str(&self, keys: &[&str]) -> Option<&'a str> {
        keys.iter().find_map(|key| match self.value(&[key]) {
            Some(Value::StringValue(s)) if !s.is_empty() => Some(s.as_str()),
            _ => None,
        })
    }

    /// A count: a non-negative integer attribute (or an integer written as a string, as
    /// some libraries do).
    pub fn count(&self, keys: &[&str]) -> Option<u64> {
        keys.iter().find_map(|key| match self.value(&[key])? {
            Value::IntValue(n) => u64::try_from(*n).ok(),
            Value::StringValue(s) => s.trim().parse().ok(),
            _ => None,
        })
    }

    /// A boolean attribute (`true`/`false`, or those words as a string).
    pub fn bool(&self, key: &str) -> Option<bool> {
        match self.value(&[key])? {
            Value::BoolValue(b) => Some(*b),
            Value::StringValue(s) => s.parse().ok(),
            _ => None,
        }
    }

    /// A string-array attribute (a lone string counts as one element).
    pub fn strings(&self, key: &str) -> Vec<&'a str> {
        match self.value(&[key]) {
            Some(Value::ArrayValue(array)) => array
                .values
                .iter()
                .filter_map(|v| match &v.value {
                    Some(Value::StringValue(s)) => Some(s.as_str()),
                    _ => None,
                })
                .collect(),
            Some(Value::StringValue(s)) => vec![s.as_str()],
            _ => Vec::new(),
        }
    }

    /// The span's own attribute only (not the resource's).
    pub fn own_str(&self, key: &str) -> Option<&'a str> {
        match find(&self.span.attributes, key) {
            Some(Value::StringValue(s)) if !s.is_empty() => Some(s.as_str()),
            _ => None,
        }
    }

    /// The span's events named `name`.
    pub fn events(&self, name: &'a str) -> impl Iterator<Item = &'a Event> + 'a {
        self.span.events.iter().filter(move |e| e.name == name)
    }
}

/// A string attribute of an event.
pub fn event_str<'a>(event: &'a Event, key: &str) -> Option<&'a str> {
    match find(&event.attributes, key) {
        Some(Value::StringValue(s)) if !s.is_empty() => Some(s.as_str()),
        _ => None,
    }
}

/// A number attribute of an event (integer or double).
pub fn event_number(event: &Event, key: &str) -> Option<f64> {
    match find(&event.attributes, key)? {
        Value::DoubleValue(x) => Some(*x),
        Value::IntValue(n) => Some(*n as f64),
        _ => None,
    }
}

/// A string attribute among `attributes` (for the resource's own attributes).
pub fn attribute_str<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match find(attributes, key) {
        Some(Value::StringValue(s)) if !s.is_empty() => Some(s.as_str()),
        _ => None,
    }
}

fn find<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v: &AnyValue| v.value.as_ref())
}
