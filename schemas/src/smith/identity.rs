//! The `event_id` of a Smith event, which carries none in its body.
//!
//! Smith producers may set `Nats-Msg-Id`; when it is a UUID it is the id, as it is for
//! native events. Anything else (no header, or one per publish attempt) cannot be the dedup
//! key, so the id is derived from the facts that identify the event: its run, its step,
//! its type and its timestamp to the nanosecond. Every copy of one event, however it was
//! (re)published, then gets the same id and counts once.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use uuid::{Builder, Uuid};

use crate::payload::EventType;

/// Separates derived ids from any other use of SHA-256 over the same bytes, and versions
/// the derivation: changing the inputs would change every stored id.
const DOMAIN: &[u8] = b"benchstream/smith-event-id/v1\0";

/// The id of a Smith event: `msg_id` when it parses as a UUID (any of the usual text
/// forms), else [`derived_event_id`].
pub fn event_id(
    msg_id: Option<&str>,
    run_id: Uuid,
    step_id: Uuid,
    event_type: EventType,
    ts: &DateTime<Utc>,
) -> Uuid {
    msg_id
        .and_then(|id| Uuid::try_parse(id.trim()).ok())
        .filter(|id| !id.is_nil())
        .unwrap_or_else(|| derived_event_id(run_id, step_id, event_type, ts))
}

/// A UUIDv8 made of the first 16 bytes of SHA-256 over (run_id, step_id, type, ts): the
/// same event always gets the same id. `ts` enters as seconds and nanoseconds, so the
/// number of fraction digits it was written with does not matter.
pub fn derived_event_id(
    run_id: Uuid,
    step_id: Uuid,
    event_type: EventType,
    ts: &DateTime<Utc>,
) -> Uuid {
    let mut hasher = Sha256::new();
    hasher.update(DOMAIN);
    hasher.update(run_id.as_bytes());
    hasher.update(step_id.as_bytes());
    hasher.update(event_type.as_str().as_bytes());
    hasher.update([0]);
    hasher.update(ts.timestamp().to_be_bytes());
    hasher.update(ts.timestamp_subsec_nanos().to_be_bytes());
    let digest = hasher.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    Builder::from_custom_bytes(bytes).into_uuid()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .expect("rfc 3339")
            .with_timezone(&Utc)
    }

    #[test]
    fn a_uuid_message_id_is_the_event_id() {
        let id = Uuid::now_v7();
        let t = ts("2026-01-01T00:00:00Z");
        let got = event_id(
            Some(&id.to_string()),
            Uuid::nil(),
            Uuid::nil(),
            EventType::Step,
            &t,
        );
        assert_eq!(got, id);
        let simple = id.simple().to_string();
        assert_eq!(
            event_id(Some(&simple), Uuid::nil(), Uuid::nil(), EventType::Step, &t),
            id
        );
    }

    #[test]
    fn other_message_ids_give_the_derived_id() {
        let (run, step) = (Uuid::now_v7(), Uuid::now_v7());
        let t = ts("2026-01-01T00:00:00.5Z");
        let derived = derived_event_id(run, step, EventType::Step, &t);
        for msg_id in [
            None,
            Some("smith-1"),
            Some(""),
            Some(&*Uuid::nil().to_string()),
        ] {
            assert_eq!(event_id(msg_id, run, step, EventType::Step, &t), derived);
        }
        assert_eq!(derived.get_version_num(), 8);
    }

    #[test]
    fn derived_id_depends_on_every_input_but_not_on_how_ts_is_written() {
        let (run, step) = (Uuid::now_v7(), Uuid::now_v7());
        let t = ts("2026-01-01T00:00:00.5Z");
        let id = derived_event_id(run, step, EventType::Step, &t);
        assert_eq!(
            id,
            derived_event_id(
                run,
                step,
                EventType::Step,
                &ts("2026-01-01T00:00:00.500000000Z")
            )
        );
        assert_ne!(id, derived_event_id(step, run, EventType::Step, &t));
        assert_ne!(id, derived_event_id(run, step, EventType::ToolCall, &t));
        assert_ne!(
            id,
            derived_event_id(
                run,
                step,
                EventType::Step,
                &ts("2026-01-01T00:00:00.500000001Z")
            )
        );
    }
}
