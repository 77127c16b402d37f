//! Bytes off the wire → a validated [`BenchmarkEvent`], or a typed [`DecodeError`] saying
//! exactly why not. This is the one place that decides what is "bad data": the sink
//! dead-letters anything this returns an error for, and nothing else.
//!
//! Two paths, same verdicts: the fast path (`fast`) decodes a valid event in one pass; when it says no,
//! the precise path below re-reads the bytes through `serde_json::Value` to name the
//! offending field.
//!
//! Two protocols: [`decode`] reads this crate's wire format only; [`decode_message`]
//! (what the sink runs) also reads events of the Smith protocol ([`crate::smith`]). The
//! Smith reading is tried only after the fast path refused the bytes and only when
//! `schema_version` is absent, so native events are decoded exactly as fast as by
//! [`decode`], and a native event with a bad field still gets the native error.

mod fast;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::envelope::{BenchmarkEvent, SCHEMA_VERSION};
use crate::payload::{EventType, Payload};
use crate::smith::{self, SmithEvent};
use crate::truncate::MAX_EVENT_BYTES;
use fast::Timestamp;

pub use crate::decode_error::DecodeError;

/// The wire protocol an event arrived in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// This crate's wire format (`schema_version` 1).
    Benchstream,
    /// The Smith protocol ([`crate::smith`]).
    Smith,
}

impl Protocol {
    /// The name stored with every row (`protocol` column): `benchstream` or `smith`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Protocol::Benchstream => "benchstream",
            Protocol::Smith => "smith",
        }
    }
}

/// A valid event of either protocol.
// Native events are the common case: boxing them to even out the variants would add an
// allocation per event, and a `Decoded` lives only while one message is handled.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// This crate's wire format.
    Benchstream(BenchmarkEvent),
    /// A Smith event, mapped onto this crate's types.
    Smith(SmithEvent),
}

impl Decoded {
    /// Which protocol produced the event.
    pub const fn protocol(&self) -> Protocol {
        match self {
            Decoded::Benchstream(_) => Protocol::Benchstream,
            Decoded::Smith(_) => Protocol::Smith,
        }
    }

    /// The dedup key.
    pub fn event_id(&self) -> uuid::Uuid {
        match self {
            Decoded::Benchstream(e) => e.event_id,
            Decoded::Smith(e) => e.event_id,
        }
    }

    /// The run.
    pub fn run_id(&self) -> uuid::Uuid {
        match self {
            Decoded::Benchstream(e) => e.run_id,
            Decoded::Smith(e) => e.run_id,
        }
    }

    /// When it happened on the producer.
    pub fn ts(&self) -> &chrono::DateTime<chrono::Utc> {
        match self {
            Decoded::Benchstream(e) => &e.ts,
            Decoded::Smith(e) => &e.ts,
        }
    }

    /// The event type.
    pub fn event_type(&self) -> EventType {
        match self {
            Decoded::Benchstream(e) => e.event_type(),
            Decoded::Smith(e) => e.event_type(),
        }
    }
}

/// Decodes and validates one event of this crate's wire format.
pub fn decode(bytes: &[u8]) -> Result<BenchmarkEvent, DecodeError> {
    let text = checked_text(bytes)?;
    let event = match fast::decode(text) {
        Some(event) => event,
        None => precise(parse_object(text)?)?,
    };
    check_semantics(&event)?;
    Ok(event)
}

/// Decodes and validates one message of either protocol. `msg_id` is its `Nats-Msg-Id`
/// header, which a Smith event may take its id from ([`smith::event_id`]); native events
/// carry theirs in the body.
pub fn decode_message(bytes: &[u8], msg_id: Option<&str>) -> Result<Decoded, DecodeError> {
    let text = checked_text(bytes)?;
    let event = match fast::decode(text) {
        Some(event) => event,
        None => {
            let object = parse_object(text)?;
            if smith::is_smith(&object) {
                return smith::decode(object, msg_id).map(Decoded::Smith);
            }
            precise(object)?
        }
    };
    check_semantics(&event)?;
    Ok(Decoded::Benchstream(event))
}

/// The size limit and UTF-8, checked before any parsing.
fn checked_text(bytes: &[u8]) -> Result<&str, DecodeError> {
    if bytes.len() > MAX_EVENT_BYTES {
        return Err(DecodeError::Oversize { size: bytes.len() });
    }
    std::str::from_utf8(bytes).map_err(|e| DecodeError::InvalidUtf8(e.to_string()))
}

/// The bytes as a JSON object, for the precise path and the Smith reading.
fn parse_object(text: &str) -> Result<Map<String, Value>, DecodeError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| DecodeError::MalformedJson(e.to_string()))?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(DecodeError::NotAnObject(json_kind(&other))),
    }
}

/// The precise path: slower, and names the field when the bytes are not a valid event.
fn precise(mut object: Map<String, Value>) -> Result<BenchmarkEvent, DecodeError> {
    match object.get("schema_version") {
        None => return Err(DecodeError::MissingVersion),
        Some(v) if v.as_u64() == Some(u64::from(SCHEMA_VERSION)) => {}
        Some(v) => return Err(DecodeError::UnknownVersion(v.to_string())),
    }
    let event_type = match object.remove("type") {
        Some(Value::String(t)) => EventType::from_wire(&t).ok_or(DecodeError::UnknownType(t))?,
        _ => return Err(DecodeError::MissingType),
    };
    // Fields are taken one by one (rather than through the derived, flattened Deserialize)
    // so that an error names the exact field, e.g. `data.retry_policy.max_retries`.
    let data = object.remove("data").ok_or_else(|| missing("data"))?;
    let event = BenchmarkEvent {
        schema_version: SCHEMA_VERSION,
        event_id: take(&mut object, "event_id")?,
        run_id: take(&mut object, "run_id")?,
        task_id: take(&mut object, "task_id")?,
        step_id: take_nullable(&mut object, "step_id")?,
        seq: take_nullable(&mut object, "seq")?,
        ts: take::<Timestamp>(&mut object, "ts")?.0,
        policy_id: take(&mut object, "policy_id")?,
        cfg_hash: take(&mut object, "cfg_hash")?,
        env_hash: take(&mut object, "env_hash")?,
        seed: take_nullable(&mut object, "seed")?,
        host: take(&mut object, "host")?,
        payload: payload(event_type, data)?,
        extra: {
            object.remove("schema_version");
            object
        },
    };
    Ok(event)
}

fn missing(field: &str) -> DecodeError {
    DecodeError::InvalidField {
        path: field.to_owned(),
        message: "missing field".to_owned(),
    }
}

fn take<T: DeserializeOwned>(
    object: &mut Map<String, Value>,
    field: &str,
) -> Result<T, DecodeError> {
    let value = object.remove(field).ok_or_else(|| missing(field))?;
    T::deserialize(value).map_err(|e| DecodeError::InvalidField {
        path: field.to_owned(),
        message: e.to_string(),
    })
}

/// A field that must be present but may be null (`step_id`, `seq`, `seed`).
fn take_nullable<T: DeserializeOwned>(
    object: &mut Map<String, Value>,
    field: &str,
) -> Result<Option<T>, DecodeError> {
    take::<Option<T>>(object, field)
}

fn payload(event_type: EventType, data: Value) -> Result<Payload, DecodeError> {
    fn typed<T: DeserializeOwned>(
        data: Value,
        wrap: fn(T) -> Payload,
    ) -> Result<Payload, DecodeError> {
        serde_path_to_error::deserialize(data)
            .map(wrap)
            .map_err(|e| {
                let path = e.path().to_string();
                DecodeError::InvalidField {
                    path: if path == "." {
                        "data".to_owned()
                    } else {
                        format!("data.{path}")
                    },
                    message: e.into_inner().to_string(),
                }
            })
    }
    match event_type {
        EventType::RunStart => typed(data, Payload::RunStart),
        EventType::RunStop => typed(data, Payload::RunStop),
        EventType::Step => typed(data, Payload::Step),
        EventType::ToolCall => typed(data, Payload::ToolCall),
        EventType::Deliberation => typed(data, Payload::Deliberation),
        EventType::ContextDecision => typed(data, Payload::ContextDecision),
        EventType::Failure => typed(data, Payload::Failure),
        EventType::OptimizerUpdate => typed(data, Payload::OptimizerUpdate),
        EventType::TestOutcome => typed(data, Payload::TestOutcome),
        EventType::TaskValidation => typed(data, Payload::TaskValidation),
        EventType::GenaiEvent => typed(data, Payload::GenaiEvent),
        EventType::ExperimentDecision => typed(data, Payload::ExperimentDecision),
    }
}

/// Rules the type system does not express.
fn check_semantics(event: &BenchmarkEvent) -> Result<(), DecodeError> {
    if let Payload::ToolCall(call) = &event.payload {
        if call.exit_kind.needs_message() && call.exit_message.is_none() {
            return Err(DecodeError::InvalidField {
                path: "data.exit_message".to_owned(),
                message: format!("required when exit_kind is {}", call.exit_kind.as_str()),
            });
        }
    }
    Ok(())
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixtures() -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut texts: Vec<String> = std::fs::read_dir(dir)
            .expect("fixtures dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .map(|p| std::fs::read_to_string(p).expect("fixture"))
            .collect();
        texts.sort();
        texts
    }

    #[test]
    fn fast_and_precise_paths_agree_on_valid_events() {
        for text in fixtures() {
            let fast = fast::decode(&text).expect("fast path accepts a fixture");
            assert_eq!(Ok(fast), parse_object(&text).and_then(precise));
        }
    }

    #[test]
    fn fast_path_decodes_data_before_or_after_type() {
        for text in fixtures() {
            // Keys sorted by name: `data` before `type`, the raw-then-decode branch.
            let value: Value = serde_json::from_str(&text).expect("json");
            let sorted = serde_json::to_string(&value).expect("json");
            assert!(sorted.find("\"data\"") < sorted.find("\"type\""));
            assert!(text.find("\"type\"") < text.find("\"data\""));
            let fast = fast::decode(&sorted).expect("fast path accepts data first");
            assert_eq!(Some(fast), fast::decode(&text));
        }
        // A repeated `type` could retype a decoded `data`: the precise path decides.
        let text = &fixtures()[0];
        let retyped = format!(
            "{},\"type\":\"step\"}}",
            text.trim_end().trim_end_matches('}')
        );
        assert_eq!(fast::decode(&retyped), None);
    }

    #[test]
    fn fast_path_refuses_what_the_precise_path_refuses() {
        let text = &fixtures()[0];
        let mut v: Value = serde_json::from_str(text).expect("json");
        let breakages: [(&str, Value); 6] = [
            ("schema_version", Value::from(2)),
            ("schema_version", Value::from("1")),
            ("schema_version", serde_json::json!(1.0)),
            ("type", Value::from("nope")),
            ("seq", Value::from(-1)),
            ("step_id", Value::from("not-a-uuid")),
        ];
        for (field, bad) in breakages {
            let saved = v[field].clone();
            v[field] = bad;
            let text = v.to_string();
            assert!(
                fast::decode(&text).is_none(),
                "fast path accepted {field}={}",
                v[field]
            );
            assert!(
                parse_object(&text).and_then(precise).is_err(),
                "precise path accepted {field}={}",
                v[field]
            );
            v[field] = saved;
        }
        v.as_object_mut().expect("object").remove("step_id");
        assert!(
            fast::decode(&v.to_string()).is_none(),
            "step_id is required (nullable)"
        );
    }
}
