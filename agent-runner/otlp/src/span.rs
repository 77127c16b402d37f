//! Attribute lookup on one span: its own attributes first, then its resource's, with the
//! aliases instrumentation libraries use for the same fact. Values of the wrong type
//! count as absent (a fact nobody stated), never as 0 or false.

use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::span::Event;
use opentelemetry_proto::tonic::trace::v1::Span;

/// The attributes each fact of a span is read from, in the order tried: the current
/// GenAI conventions, their older names, OpenLLMetry's (traceloop) and OpenInference's.
/// The table in `schemas/README.md` ("OpenTelemetry traces") lists them per convention.
pub mod keys {
    /// What a span is: `gen_ai.operation.name`, then OpenLLMetry's older names.
    pub const OPERATION: &[&str] = &[
        "gen_ai.operation.name",
        "llm.request.type",
        "traceloop.span.kind",
    ];
    /// What a span is, in OpenInference's words (`LLM`, `TOOL`, `AGENT`, ...).
    pub const OPENINFERENCE_KIND: &str = "openinference.span.kind";
    /// The model: the one that answered, then the one asked for, then OpenInference's.
    pub const MODEL: &[&str] = &[
        "gen_ai.response.model",
        "gen_ai.request.model",
        "llm.model_name",
    ];
    /// The provider: current, older (`gen_ai.system`, also OpenLLMetry's), OpenInference's.
    pub const PROVIDER: &[&str] = &[
        "gen_ai.provider.name",
        "gen_ai.system",
        "llm.provider",
        "llm.system",
    ];
    /// The agent that made the call.
    pub const AGENT: &[&str] = &["gen_ai.agent.name", "agent.name"];
    /// Why the model stopped (an array, or one string).
    pub const FINISH_REASONS: &[&str] = &["gen_ai.response.finish_reasons", "llm.finish_reason"];
    /// What the model answered: the current structured messages (a JSON string or an
    /// OTLP array), the older indexed completion, OpenInference's first output message.
    pub const OUTPUT: &[&str] = &[
        "gen_ai.output.messages",
        "gen_ai.completion.0.content",
        "llm.output_messages.0.message.content",
    ];
    /// A tool span's tool: current, OpenInference's, OpenLLMetry's entity name.
    pub const TOOL_NAME: &[&str] = &["gen_ai.tool.name", "tool.name", "traceloop.entity.name"];
    /// A tool span's arguments: current, OpenLLMetry's entity input, OpenInference's input.
    pub const TOOL_ARGUMENTS: &[&str] = &[
        "gen_ai.tool.call.arguments",
        "traceloop.entity.input",
        "input.value",
    ];
    /// A tool span's call id: current, OpenInference's.
    pub const TOOL_CALL_ID: &[&str] = &["gen_ai.tool.call.id", "tool_call.id"];
}

/// The token attributes of each convention, in the order tried.
pub mod tokens {
    /// Prompt tokens, cached included: the current name, the older one (also
    /// OpenLLMetry's), OpenLLMetry's `llm.usage.*`, OpenInference's.
    pub const INPUT: &[&str] = &[
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.prompt_tokens",
        "llm.usage.prompt_tokens",
        "llm.token_count.prompt",
    ];
    /// Completion tokens, reasoning included.
    pub const OUTPUT: &[&str] = &[
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.completion_tokens",
        "llm.usage.completion_tokens",
        "llm.token_count.completion",
    ];
    /// Prompt tokens read from the provider's cache: the current name, OpenLLMetry's,
    /// Sentry's, pydantic-ai's, OpenInference's.
    pub const CACHE_READ: &[&str] = &[
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_read_input_tokens",
        "gen_ai.usage.input_tokens.cached",
        "gen_ai.usage.details.cache_read_tokens",
        "llm.token_count.prompt_details.cache_read",
    ];
    /// Prompt tokens written to the provider's cache: the current name, OpenLLMetry's,
    /// pydantic-ai's, OpenInference's.
    pub const CACHE_WRITE: &[&str] = &[
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.cache_creation_input_tokens",
        "gen_ai.usage.details.cache_write_tokens",
        "llm.token_count.prompt_details.cache_write",
    ];
    /// Hidden reasoning tokens: the current name, OpenLLMetry's, Sentry's, pydantic-ai's,
    /// OpenInference's.
    pub const REASONING: &[&str] = &[
        "gen_ai.usage.reasoning.output_tokens",
        "gen_ai.usage.reasoning_tokens",
        "gen_ai.usage.output_tokens.reasoning",
        "gen_ai.usage.details.reasoning_tokens",
        "llm.token_count.completion_details.reasoning",
    ];
}

/// The attributes of one span or log record, and those of the resource that produced it.
#[derive(Debug, Clone, Copy)]
pub struct Attributes<'a> {
    /// The span's or record's own.
    pub own: &'a [KeyValue],
    /// Its resource's (`service.name`, `benchstream.*`, ...).
    pub resource: &'a [KeyValue],
}

/// One span with the resource that produced it; its attributes through `Deref`.
#[derive(Debug, Clone, Copy)]
pub struct SpanView<'a> {
    /// The span.
    pub span: &'a Span,
    attributes: Attributes<'a>,
}

impl<'a> std::ops::Deref for SpanView<'a> {
    type Target = Attributes<'a>;

    fn deref(&self) -> &Attributes<'a> {
        &self.attributes
    }
}

impl<'a> Attributes<'a> {
    /// The value of the first of `keys` the span (or, failing that, its resource) has.
    fn value(&self, keys: &[&str]) -> Option<&'a Value> {
        keys.iter()
            .find_map(|key| find(self.own, key).or_else(|| find(self.resource, key)))
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

    /// A string-array attribute, the first of `keys` present (a lone string counts as
    /// one element).
    pub fn strings(&self, keys: &[&str]) -> Vec<&'a str> {
        match self.value(keys) {
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

    /// A text attribute: a non-empty string as it is, a structured value (an array or a
    /// key-value list, as the current conventions allow for messages) as JSON text.
    pub fn text(&self, keys: &[&str]) -> Option<String> {
        keys.iter().find_map(|key| match self.value(&[key])? {
            Value::StringValue(s) if !s.is_empty() => Some(s.clone()),
            structured @ (Value::ArrayValue(_) | Value::KvlistValue(_)) => Some(
                to_json(Some(&AnyValue {
                    value: Some(structured.clone()),
                }))
                .to_string(),
            ),
            _ => None,
        })
    }

    /// The own attribute only (not the resource's).
    pub fn own_str(&self, key: &str) -> Option<&'a str> {
        attribute_str(self.own, key)
    }

    /// The own boolean attribute only (not the resource's), as [`Self::bool`] reads it.
    pub fn own_bool(&self, key: &str) -> Option<bool> {
        Attributes {
            own: self.own,
            resource: &[],
        }
        .bool(key)
    }
}

impl<'a> SpanView<'a> {
    /// `span` of `resource`.
    pub fn new(span: &'a Span, resource: &'a [KeyValue]) -> Self {
        SpanView {
            span,
            attributes: Attributes {
                own: &span.attributes,
                resource,
            },
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

/// A number attribute (integer or double) among `attributes` (an event's, a record's).
pub fn attribute_number(attributes: &[KeyValue], key: &str) -> Option<f64> {
    match find(attributes, key)? {
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

/// An OTLP value as JSON: arrays and key-value lists become JSON arrays and objects,
/// bytes lowercase hex, a non-finite double and an unset value null.
pub fn to_json(value: Option<&AnyValue>) -> serde_json::Value {
    use serde_json::Value as Json;
    match value.and_then(|v| v.value.as_ref()) {
        None => Json::Null,
        Some(Value::StringValue(s)) => Json::from(s.as_str()),
        Some(Value::BoolValue(b)) => Json::from(*b),
        Some(Value::IntValue(n)) => Json::from(*n),
        Some(Value::DoubleValue(x)) => {
            serde_json::Number::from_f64(*x).map_or(Json::Null, Json::Number)
        }
        Some(Value::ArrayValue(a)) => a.values.iter().map(|v| to_json(Some(v))).collect(),
        Some(Value::KvlistValue(list)) => attributes_json(&list.values),
        Some(Value::BytesValue(b)) => {
            Json::from(b.iter().map(|b| format!("{b:02x}")).collect::<String>())
        }
        // An index into a string table only profiles carry: nothing to resolve it with.
        Some(Value::StringValueStrindex(_)) => Json::Null,
    }
}

/// Attributes as a JSON object (the first value of a key repeated wins).
pub fn attributes_json(attributes: &[KeyValue]) -> serde_json::Value {
    let mut object = serde_json::Map::new();
    for kv in attributes {
        if !object.contains_key(&kv.key) {
            object.insert(kv.key.clone(), to_json(kv.value.as_ref()));
        }
    }
    serde_json::Value::Object(object)
}

fn find<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v: &AnyValue| v.value.as_ref())
}
