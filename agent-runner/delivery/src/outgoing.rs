//! [`Outgoing`]: one event as a message ready to publish or to spool (subject, header
//! values, wire bytes). The publisher sends it and the spool stores it; this module
//! depends on neither.

use async_nats::HeaderMap;
use bench_schemas::subject::{header_safe, headers};
use bench_schemas::{BenchmarkEvent, SubjectPrefix};
use bytes::Bytes;

use crate::quarantine::RecordIdentity;

/// One message ready to publish (or to spool): subject, header values, payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// `<prefix>.events.<run_id>.<type>`.
    pub subject: String,
    /// `Nats-Msg-Id`: the `event_id`.
    pub msg_id: String,
    /// `Bench-Type`.
    pub event_type: String,
    /// `Bench-Task`: the `task_id`, made header-safe.
    pub task: String,
    /// `Bench-Schema`: the `schema_version`.
    pub schema: String,
    /// The event's wire JSON.
    pub payload: Bytes,
}

impl Outgoing {
    /// The message of `event`, whose wire bytes are `payload`.
    pub fn new(prefix: &SubjectPrefix, event: &BenchmarkEvent, payload: Bytes) -> Outgoing {
        Outgoing {
            subject: prefix.event_subject(event.run_id, event.event_type()),
            msg_id: event.event_id.to_string(),
            event_type: event.event_type().as_str().to_owned(),
            task: header_safe(&event.task_id),
            schema: event.schema_version.to_string(),
            payload,
        }
    }

    /// Subject and id, for a quarantine entry.
    pub fn identity(&self) -> RecordIdentity<'_> {
        RecordIdentity {
            subject: &self.subject,
            msg_id: &self.msg_id,
        }
    }

    /// The NATS headers.
    pub fn headers(&self) -> HeaderMap {
        let mut map = HeaderMap::new();
        map.insert(headers::MSG_ID, self.msg_id.as_str());
        map.insert(headers::SCHEMA, self.schema.as_str());
        map.insert(headers::TYPE, self.event_type.as_str());
        map.insert(headers::TASK, self.task.as_str());
        map
    }
}
