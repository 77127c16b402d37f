//! The event envelope: the fields every event carries, whatever its `type`, and the
//! timestamp format. [`EventType`] (from [`crate::payload`]) and [`Hash256`] (from
//! [`crate::canonical`]) are re-exported here, where the envelope's users look for them.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use crate::canonical::{Hash256, HashError};
pub use crate::payload::EventType;
use crate::payload::Payload;

/// The `schema_version` this crate reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// One thing that happened in a benchmark run; one NATS message.
///
/// Serialized as a flat JSON object: the envelope fields, `type` and `data`. Extra top-level
/// fields a newer producer added are accepted and kept (in `extra`), so that a decode →
/// encode round trip loses nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "BenchmarkEvent")]
pub struct BenchmarkEvent {
    /// Wire format version: 1. A consumer dead-letters a version it does not read.
    pub schema_version: u32,
    /// Unique per event (UUIDv7); also the `Nats-Msg-Id` header and the dedup key end to end.
    pub event_id: Uuid,
    /// One run = one agent attempt at one task under one config.
    pub run_id: Uuid,
    /// The benchmark task, any UTF-8 (never used raw in a subject).
    pub task_id: String,
    /// Groups the events of one agent step; null for run-level events. Must be present
    /// (a UUID or null): an event without it is refused.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub step_id: Option<Uuid>,
    /// Per-run sequence number: 0 at the run's first event (`run_start`), +1 per event, no
    /// gaps. Null when the producer cannot number a run's events in advance (runs received
    /// as OpenTelemetry traces, whose spans arrive in any order): such a run cannot be
    /// checked for gaps. Must be present (a number or null): an event without it is
    /// refused.
    #[schemars(required, extend("type" = ["integer", "null"]))]
    pub seq: Option<u64>,
    /// When it happened on the runner (RFC 3339, UTC, at least millisecond precision).
    #[serde(with = "ts_format")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub ts: DateTime<Utc>,
    /// The agent policy under test, e.g. `openai/gpt-4o-mini:observation_masking`.
    pub policy_id: String,
    /// SHA-256 of the canonical JSON of the run config (`run_start` data minus replay
    /// metadata).
    pub cfg_hash: Hash256,
    /// SHA-256 of the canonical JSON of the environment descriptor (image, tools commit,
    /// sandbox limits and isolation, fixture and task hashes, runner and scoring versions).
    pub env_hash: Hash256,
    /// The seed the runner used for everything random in the run. Null when the producer
    /// states none (an imported trajectory, a run received as an OpenTelemetry trace):
    /// such a run cannot be replayed by seed. Must be present (a number or null): an event
    /// without it is refused. Events written before it could be null carry 0 where their
    /// producer had no seed (imports, traces), a 0 that cannot be told from a real seed 0.
    #[schemars(required, extend("type" = ["integer", "null"]))]
    pub seed: Option<u64>,
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

/// `ts` on the wire: RFC 3339 in UTC with a `Z`, with as many fraction digits as the value
/// needs but never fewer than 3 (millisecond precision is part of the contract).
pub mod ts_format {
    use chrono::{DateTime, SecondsFormat, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    /// Formats a timestamp the way the wire wants it.
    pub fn format(ts: &DateTime<Utc>) -> String {
        let nanos = ts.timestamp_subsec_nanos();
        let precision = if nanos.is_multiple_of(1_000_000) {
            SecondsFormat::Millis
        } else if nanos.is_multiple_of(1_000) {
            SecondsFormat::Micros
        } else {
            SecondsFormat::Nanos
        };
        ts.to_rfc3339_opts(precision, true)
    }

    /// Serializes with [`format`](fn@format).
    pub fn serialize<S: Serializer>(ts: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(ts))
    }

    /// Reads any RFC 3339 timestamp (any offset, 0 to 9 fraction digits) as UTC.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let raw = std::borrow::Cow::<str>::deserialize(d)?;
        DateTime::parse_from_rfc3339(&raw)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| serde::de::Error::custom(format!("ts {raw:?} is not RFC 3339: {e}")))
    }
}
