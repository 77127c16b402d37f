//! A batch: the messages received since the last flush, each decoded on arrival (to
//! validate and route it; only its envelope is kept, the typed row decodes the body again
//! when it is written), checked by [`admission::admit`] (plausible `ts`,
//! subject agreeing with the body), indexed by table, and sized so the caller knows when
//! to flush.
//!
//! One batch is flushed as a unit: one INSERT per table that has rows, then one answer
//! per message. Keeping the messages of every table in one unit is what makes "ack only
//! after every insert holding the message succeeded" simple, as each event has rows in
//! two tables (`events_raw` and its typed table).
//!
//! This module holds data; it performs no I/O.

use std::time::{Duration, Instant};

use schemas::subject::headers;
use schemas::{Decoded, EventType, Protocol, SubjectPrefix};

use crate::admission::{self, Candidate};
use crate::classify;
use crate::config::BatchConfig;
use crate::consumer::Delivery;
use crate::rows::{Arrival, DeadLetterRow, EventRawRow, RawBytes, RawEnvelope};

/// A message that is not an acceptable event: what `dead_letters` says about it.
#[derive(Debug)]
pub struct BadData {
    /// `DecodeError::class`.
    pub class: &'static str,
    /// The error text.
    pub error: String,
}

/// One received message and what it decoded to.
#[derive(Debug)]
pub struct Item {
    /// The message.
    pub delivery: Delivery,
    /// When the sink decoded it, epoch seconds.
    pub received_at: u32,
    /// The envelope of a valid event, or why it is not one.
    pub decoded: Result<RawEnvelope, BadData>,
    /// The event_id of a message that decoded (even if not admitted); `None` otherwise.
    pub event_id: Option<uuid::Uuid>,
}

impl Item {
    /// Decodes and admits a delivery of either protocol, received at `received_at` (epoch
    /// seconds) from a stream under `prefix`. Headers are only kept for messages that are
    /// not accepted: the dead letter shows them. A Smith event may take its id from
    /// `Nats-Msg-Id`, read here.
    pub fn decode(mut delivery: Delivery, received_at: u32, prefix: &SubjectPrefix) -> Self {
        let msg_id = delivery
            .headers
            .as_ref()
            .and_then(|h| h.get(headers::MSG_ID))
            .map(|v| v.as_str());
        let (decoded, event_id) = match schemas::decode_message(&delivery.payload, msg_id) {
            Ok(event) => (
                admission::admit(&event, &delivery.subject, prefix, received_at)
                    .map(|()| RawEnvelope::of(&event)),
                Some(event.event_id()),
            ),
            Err(e) => {
                let (class, error) = classify::bad_data(&e);
                (Err(BadData { class, error }), None)
            }
        };
        if decoded.is_ok() {
            delivery.headers = None;
        }
        Item {
            delivery,
            received_at,
            decoded,
            event_id,
        }
    }

    /// What first write wins needs of an accepted event, its body hashed; `None` for
    /// bad data. Only called for events whose id is already stored or repeated in the
    /// batch: a new event is never hashed.
    pub fn candidate(&self, index: Index) -> Option<Candidate> {
        let env = self.decoded.as_ref().ok()?;
        Some(Candidate {
            index,
            event_id: env.event_id,
            body_hash: admission::body_hash(&self.delivery.payload),
            stream_seq: self.delivery.stream_seq,
        })
    }

    /// The event again, for its typed row; `None` for bad data. A Smith event gets the
    /// id it was given on arrival (its `Nats-Msg-Id` header is not kept).
    pub fn event(&self) -> Option<Decoded> {
        let env = self.decoded.as_ref().ok()?;
        let mut buffer = uuid::Uuid::encode_buffer();
        let msg_id = match env.protocol {
            Protocol::Benchstream => None,
            Protocol::Smith => Some(&*env.event_id.hyphenated().encode_lower(&mut buffer)),
        };
        schemas::decode_message(&self.delivery.payload, msg_id).ok()
    }

    /// The `events_raw` row of an accepted event.
    pub fn raw_row(&self) -> Option<EventRawRow<'_>> {
        let env = self.decoded.as_ref().ok()?;
        Some(EventRawRow::new(
            env,
            &self.delivery.payload,
            &self.delivery.subject,
            self.arrival(),
        ))
    }

    /// When and in which stream message it arrived.
    pub fn arrival(&self) -> Arrival {
        Arrival {
            received_at: self.received_at,
            stream_seq: self.delivery.stream_seq,
        }
    }

    /// The `dead_letters` row of this message, with `class` and `error` saying why.
    pub fn dead_letter_row<'a>(
        &'a self,
        stream: &'a str,
        class: &'a str,
        error: &'a str,
    ) -> DeadLetterRow<'a> {
        DeadLetterRow {
            received_at: self.received_at,
            stream,
            stream_seq: self.delivery.stream_seq,
            subject: &self.delivery.subject,
            headers: self.delivery.headers_text(),
            raw: RawBytes(&self.delivery.payload),
            error_class: class,
            error,
            delivered: self.delivery.delivered,
            event_id: self.event_id,
        }
    }
}

/// Item indices are `u32`: a batch never holds more than `u32::MAX` messages.
pub type Index = u32;

/// Messages waiting for one flush.
#[derive(Debug, Default)]
pub struct Batch {
    items: Vec<Item>,
    /// Accepted events per type, in [`EventType::ALL`] order.
    by_type: [Vec<Index>; EventType::ALL.len()],
    /// Accepted events, all types.
    accepted: Vec<Index>,
    /// Messages that failed to decode.
    bad: Vec<Index>,
    /// Sum of the message bodies.
    bytes: usize,
    /// When the first message arrived.
    opened: Option<Instant>,
}

fn type_index(event_type: EventType) -> usize {
    EventType::ALL
        .iter()
        .position(|t| *t == event_type)
        .unwrap_or_default()
}

impl Batch {
    /// Adds a decoded message.
    pub fn push(&mut self, item: Item) {
        let index = Index::try_from(self.items.len()).unwrap_or(Index::MAX);
        match &item.decoded {
            Ok(env) => {
                self.by_type[type_index(env.event_type)].push(index);
                self.accepted.push(index);
            }
            Err(_) => self.bad.push(index),
        }
        self.bytes += item.delivery.payload.len();
        self.opened.get_or_insert_with(Instant::now);
        self.items.push(item);
    }

    /// Messages in the batch.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the batch holds nothing.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Sum of the message bodies, bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether a row or byte limit is reached.
    pub fn is_full(&self, limits: &BatchConfig) -> bool {
        self.items.len() >= limits.max_rows || self.bytes >= limits.max_bytes
    }

    /// When the batch must be flushed at the latest; `None` while empty.
    pub fn deadline(&self, flush_interval: Duration) -> Option<Instant> {
        self.opened.map(|at| at + flush_interval)
    }

    /// The item at `index`.
    pub fn item(&self, index: Index) -> &Item {
        &self.items[index as usize]
    }

    /// Every item, in arrival order.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// Accepted events of one type.
    pub fn of_type(&self, event_type: EventType) -> &[Index] {
        &self.by_type[type_index(event_type)]
    }

    /// Accepted events.
    pub fn accepted(&self) -> &[Index] {
        &self.accepted
    }

    /// Messages that failed to decode.
    pub fn bad(&self) -> &[Index] {
        &self.bad
    }
}
