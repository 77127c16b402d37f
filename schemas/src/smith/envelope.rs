//! Smith's envelope as it is published: the fields around `event_type`, read before they
//! are mapped into a [`super::SmithEvent`]. It holds the payload ([`SmithPayload`]), so it
//! sits above `payload`, which knows nothing of it (nor does `wire`).

use chrono::{DateTime, Utc};
use serde::Deserialize;
use uuid::Uuid;

use super::payload::SmithPayload;

/// Smith's envelope. `data` is compared with `event_type` before this is read; unknown
/// extra fields are ignored here (the sink keeps the message byte for byte).
#[derive(Deserialize)]
pub(super) struct Envelope {
    pub run_id: Uuid,
    pub task_id: String,
    pub step_id: Uuid,
    pub ts: Timestamp,
    pub policy_id: String,
    pub cfg_hash: String,
    pub env_hash: String,
    pub seed: u64,
    pub event_type: SmithPayload,
}

/// Smith's `ts`: RFC 3339 in UTC with 0 to 9 fraction digits, all of which chrono reads.
#[derive(Deserialize)]
pub(super) struct Timestamp(#[serde(with = "crate::envelope::ts_format")] pub DateTime<Utc>);
