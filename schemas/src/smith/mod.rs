//! The Smith benchmark protocol, read as it is published: the event protocol this wire
//! format grew from, whose producers serialise their own `BenchmarkEvent` and publish
//! that JSON unchanged on the same `<prefix>.events.<run_id>.<type>` subjects.
//!
//! A message is read as Smith when it has no `schema_version` and its `event_type` is an
//! externally tagged object (`{"RunStart": {…}}`); [`crate::decode::decode_message`]
//! decides that, only after the native fast path said no, so native events pay nothing.
//!
//! # How Smith maps onto this crate's types
//!
//! | Smith sends | becomes |
//! |---|---|
//! | `event_type` `{"ToolCall": {…}}` (and `data`, a copy of it) | [`SmithPayload`]; `data` must equal `event_type` when present |
//! | PascalCase variants (`"Plan"`, `"SearchResults"`) | this crate's snake_case enums ([`crate::StepType`], [`crate::SegmentType`]) |
//! | `Duration` `{secs, nanos}` | milliseconds (`execution_timeout_ms`, `no_progress_timeout_ms`), sub-millisecond rest dropped |
//! | `f32` values widened to f64 (`0.699999988079071`) | the shortest decimal of the f32 (`0.7`): `temperature`, `pruning_threshold`, `cpu_cores`, `user_feedback_score`, `intent_accuracy` |
//! | `ExitKind` `"Oom"` / `{"Flake": "msg"}` | [`crate::ExitKind`] plus `exit_message` (NULL for `Ok`, `Oom`, `Timeout`, which carry none) |
//! | `FailureRoot` `{"Build": {…}}` | [`crate::FailureRoot`] (`kind` tag); `Context.pruning_error`, a bool in Smith, as the text `"true"` / `"false"` |
//! | `planned_step: bool` | [`SmithStep::planned_step`]; the plan index this crate records is unknown (NULL) |
//! | `ts` with 0 to 9 fraction digits | the same instant |
//! | `cfg_hash`, `env_hash` (Rust `DefaultHasher`, 16 hex chars or fewer) | kept verbatim; never comparable with this format's SHA-256 hashes |
//!
//! Smith does not send `event_id`, `seq`, `host`, the model, provider and context
//! strategy of a run, its scenario and fixture pins, scoring or runner versions, a run's
//! `exit_status`, `cost_usd`, `api_calls` or `turns`. None of them is made up: the mapped
//! types have no such fields, and the sink stores NULL for them.
//!
//! Identity: see [`event_id`]. The `Nats-Msg-Id` header is used when it is a UUID;
//! otherwise the id is derived from what the event says, so every copy of one event gets
//! the same id and counts once.

mod envelope;
mod identity;
mod payload;
mod wire;

pub use identity::{derived_event_id, event_id};
pub use payload::{
    ExitOutcome, SmithPayload, SmithRunConfig, SmithRunResult, SmithStep, SmithSuggestion,
    SmithToolCall,
};
pub use wire::shortest_f32_decimal;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::decode_error::DecodeError;
use crate::payload::EventType;

/// One Smith event, mapped onto this crate's types.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SmithEvent {
    /// The dedup key: the `Nats-Msg-Id` when it is a UUID, else derived (see [`event_id`]).
    pub event_id: Uuid,
    /// The run, as Smith sends it.
    pub run_id: Uuid,
    /// The benchmark task.
    pub task_id: String,
    /// Smith gives every event a step id, run-level events included.
    pub step_id: Uuid,
    /// When it happened on the producer.
    #[serde(with = "crate::envelope::ts_format")]
    pub ts: DateTime<Utc>,
    /// The policy under test.
    pub policy_id: String,
    /// Smith's own config hash (Rust `DefaultHasher`), verbatim; not a SHA-256.
    pub cfg_hash: String,
    /// Smith's own environment hash (Rust `DefaultHasher`), verbatim; not a SHA-256.
    pub env_hash: String,
    /// The seed the producer used.
    pub seed: u64,
    /// The mapped `event_type`.
    pub payload: SmithPayload,
}

impl SmithEvent {
    /// The event's type in this crate's terms (`ToolCall` → `tool_call`).
    pub fn event_type(&self) -> EventType {
        self.payload.event_type()
    }
}

/// Whether a JSON object is a Smith event: no `schema_version`, and an `event_type` that
/// is an object (externally tagged enum).
pub(crate) fn is_smith(object: &Map<String, Value>) -> bool {
    !object.contains_key("schema_version")
        && matches!(object.get("event_type"), Some(Value::Object(tag)) if tag.len() == 1)
}

/// Maps a Smith event object; `msg_id` is the message's `Nats-Msg-Id` header, if any.
pub(crate) fn decode(
    mut object: Map<String, Value>,
    msg_id: Option<&str>,
) -> Result<SmithEvent, DecodeError> {
    // `data` repeats `event_type` in Smith's own serialisation. When the two differ the
    // event says two things, and neither is guessed at.
    if let Some(data) = object.remove("data") {
        if object.get("event_type") != Some(&data) {
            return Err(DecodeError::InvalidField {
                path: "data".to_owned(),
                message: "differs from event_type (Smith sends the same value in both)".to_owned(),
            });
        }
    }
    if let Some(Value::Object(tag)) = object.get("event_type") {
        if let Some(name) = tag.keys().next() {
            if !SmithPayload::TAGS.contains(&name.as_str()) {
                return Err(DecodeError::UnknownType(name.clone()));
            }
        }
    }
    let wire: envelope::Envelope = serde_path_to_error::deserialize(Value::Object(object))
        .map_err(|e| DecodeError::InvalidField {
            path: e.path().to_string(),
            message: e.into_inner().to_string(),
        })?;
    let event_type = wire.event_type.event_type();
    Ok(SmithEvent {
        event_id: event_id(msg_id, wire.run_id, wire.step_id, event_type, &wire.ts.0),
        run_id: wire.run_id,
        task_id: wire.task_id,
        step_id: wire.step_id,
        ts: wire.ts.0,
        policy_id: wire.policy_id,
        cfg_hash: wire.cfg_hash,
        env_hash: wire.env_hash,
        seed: wire.seed,
        payload: wire.event_type,
    })
}
