//! The event envelope: the fields every event carries, whatever its `type`.

use std::borrow::Cow;
use std::fmt;

use chrono::{DateTime, Utc};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::payload::Payload;

/// The `schema_version` this crate reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// One thing that happened in a benchmark run; one NATS message.
///
/// Serialized as a flat JSON object: the envelope fields, `type` and `data`. Extra top-level
/// fields a newer producer added are kept in [`BenchmarkEvent::extra`] so that a decode →
/// encode round trip loses nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "BenchmarkEvent")]
pub struct BenchmarkEvent {
    /// Wire format version; [`SCHEMA_VERSION`] for this crate.
    pub schema_version: u32,
    /// Unique per event (UUIDv7); also the `Nats-Msg-Id` header and the dedup key end to end.
    pub event_id: Uuid,
    /// One run = one agent attempt at one task under one config.
    pub run_id: Uuid,
    /// The benchmark task, any UTF-8 (never used raw in a subject).
    pub task_id: String,
    /// Groups the events of one agent step; null for run-level events.
    pub step_id: Option<Uuid>,
    /// Per-run sequence number: 0 at `run_start`, +1 per event, no gaps.
    pub seq: u64,
    /// When it happened on the runner (RFC 3339, UTC, at least millisecond precision).
    #[serde(with = "ts_format")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub ts: DateTime<Utc>,
    /// The agent policy under test, e.g. `openai/gpt-4o-mini:observation_masking`.
    pub policy_id: String,
    /// SHA-256 of the canonical JSON of the run config.
    pub cfg_hash: Hash256,
    /// SHA-256 of the canonical JSON of the environment descriptor.
    pub env_hash: Hash256,
    /// The seed the runner used.
    pub seed: u64,
    /// The worker host / runner instance that produced the event.
    pub host: String,
    /// `type` + `data`.
    #[serde(flatten)]
    pub payload: Payload,
    /// Unknown top-level fields, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl BenchmarkEvent {
    /// The event's `type`.
    pub fn event_type(&self) -> EventType {
        self.payload.event_type()
    }

    /// Serializes to the wire form (compact JSON).
    pub fn to_json(&self) -> Vec<u8> {
        // Serializing these types cannot fail: every map key is a string and no custom
        // serializer returns an error.
        serde_json::to_vec(self).unwrap_or_else(|e| unreachable!("event serialization: {e}"))
    }
}

/// The closed set of event types (`type` on the wire and the last subject token).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    RunStart,
    RunStop,
    Step,
    ToolCall,
    Deliberation,
    ContextDecision,
    Failure,
    OptimizerUpdate,
}

impl EventType {
    /// Every event type, in a stable order.
    pub const ALL: [EventType; 8] = [
        EventType::RunStart,
        EventType::RunStop,
        EventType::Step,
        EventType::ToolCall,
        EventType::Deliberation,
        EventType::ContextDecision,
        EventType::Failure,
        EventType::OptimizerUpdate,
    ];

    /// The wire name, e.g. `tool_call`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventType::RunStart => "run_start",
            EventType::RunStop => "run_stop",
            EventType::Step => "step",
            EventType::ToolCall => "tool_call",
            EventType::Deliberation => "deliberation",
            EventType::ContextDecision => "context_decision",
            EventType::Failure => "failure",
            EventType::OptimizerUpdate => "optimizer_update",
        }
    }

    /// Parses a wire name.
    pub fn from_wire(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A SHA-256 digest as 64 lowercase hex chars (`cfg_hash`, `env_hash`, fixture pins).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Hash256(String);

/// Why a string is not a [`Hash256`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HashError {
    /// Not exactly 64 characters.
    #[error("hash must be 64 hex chars, got {0} chars")]
    Length(usize),
    /// A character outside `0-9a-f`.
    #[error("hash must be lowercase hex, found {0:?}")]
    NotHex(char),
}

impl Hash256 {
    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Wraps a raw 32-byte digest.
    pub fn from_digest(digest: [u8; 32]) -> Self {
        Hash256(hex::encode(digest))
    }
}

impl TryFrom<String> for Hash256 {
    type Error = HashError;

    fn try_from(s: String) -> Result<Self, HashError> {
        if s.len() != 64 {
            return Err(HashError::Length(s.chars().count()));
        }
        if let Some(c) = s.chars().find(|c| !matches!(c, '0'..='9' | 'a'..='f')) {
            return Err(HashError::NotHex(c));
        }
        Ok(Hash256(s))
    }
}

impl std::str::FromStr for Hash256 {
    type Err = HashError;

    fn from_str(s: &str) -> Result<Self, HashError> {
        Hash256::try_from(s.to_owned())
    }
}

impl From<Hash256> for String {
    fn from(h: Hash256) -> String {
        h.0
    }
}

impl fmt::Display for Hash256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl JsonSchema for Hash256 {
    fn schema_name() -> Cow<'static, str> {
        "Hash256".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "SHA-256 digest, 64 lowercase hex chars",
            "type": "string",
            "pattern": "^[0-9a-f]{64}$"
        })
    }
}

/// `ts` on the wire: RFC 3339 in UTC with a `Z`, with as many fraction digits as the value
/// needs but never fewer than 3 (millisecond precision is part of the contract).
pub mod ts_format {
    use chrono::{DateTime, SecondsFormat, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    /// Formats a timestamp the way the wire wants it.
    pub fn format(ts: &DateTime<Utc>) -> String {
        let nanos = ts.timestamp_subsec_nanos();
        let precision = if nanos % 1_000_000 == 0 {
            SecondsFormat::Millis
        } else if nanos % 1_000 == 0 {
            SecondsFormat::Micros
        } else {
            SecondsFormat::Nanos
        };
        ts.to_rfc3339_opts(precision, true)
    }

    pub fn serialize<S: Serializer>(ts: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(ts))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let raw = std::borrow::Cow::<str>::deserialize(d)?;
        DateTime::parse_from_rfc3339(&raw)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| serde::de::Error::custom(format!("ts {raw:?} is not RFC 3339: {e}")))
    }
}
