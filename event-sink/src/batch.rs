//! A batch: the messages received since the last flush, each decoded once, on arrival,
//! checked by [`admission::admit`] (plausible `ts`, subject agreeing with the body),
//! indexed by table, and sized so the caller knows when to flush. An accepted event's
//! typed row is encoded ([`rowbinary`]) into its type's buffer right away, so the decoded
//! event is dropped at once and never decoded again: what is kept per message is its
//! body, the envelope `events_raw` needs, and the encoded typed row.
//!
//! One batch is flushed as a unit: one INSERT per table that has rows, then one answer
//! per message. Keeping the messages of every table in one unit is what makes "ack only
//! after every insert holding the message succeeded" simple, as each event has rows in
//! two tables (`events_raw` and its typed table).
//!
//! This module holds data; it performs no I/O.

use std::ops::Range;
use std::time::Instant;

use bench_schemas::subject::headers;
use bench_schemas::{Decoded, EventType, SubjectPrefix};

use crate::admission::{self, Candidate};
use crate::config::BatchConfig;
use crate::consumer::Delivery;
use crate::failure::{self, BadData};
use crate::rowbinary;
use crate::rows::{Arrival, DeadLetterRow, EventRawRow, RawBytes, RawEnvelope, TypedRow};

/// `dead_letters.error_class` of a valid event whose typed row has no RowBinary encoding
/// (a sink defect, not the producer's: kept as a dead letter rather than lost).
pub const UNENCODABLE: &str = "unencodable";

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
    /// Where an accepted event's typed row is in its type's buffer of the batch.
    typed: Range<usize>,
}

impl Item {
    /// Decodes and admits a delivery of either protocol, received at `received_at` (epoch
    /// seconds) from a stream under `prefix`, and encodes an accepted event's typed row
    /// at the end of `typed` (the buffer of its type, chosen by `typed_buffer`). Headers
    /// are only kept for messages that are not accepted: the dead letter shows them. A
    /// Smith event may take its id from `Nats-Msg-Id`, read here.
    fn decode<'b>(
        mut delivery: Delivery,
        received_at: u32,
        prefix: &SubjectPrefix,
        typed_buffer: impl FnOnce(EventType) -> &'b mut Vec<u8>,
    ) -> Self {
        let msg_id = delivery
            .headers
            .as_ref()
            .and_then(|h| h.get(headers::MSG_ID))
            .map(|v| v.as_str());
        let mut typed = 0..0;
        let (decoded, event_id) = match bench_schemas::decode_message(&delivery.payload, msg_id) {
            Ok(event) => {
                let arrival = Arrival {
                    received_at,
                    stream_seq: delivery.stream_seq,
                };
                let decoded = admission::admit(&event, &delivery.subject, prefix, received_at)
                    .and_then(|()| {
                        let buffer = typed_buffer(event.event_type());
                        typed = encode_typed(&event, arrival, buffer)?;
                        Ok(RawEnvelope::of(&event))
                    });
                (decoded, Some(event.event_id()))
            }
            Err(e) => {
                let (class, error) = failure::bad_data(&e);
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
            typed,
        }
    }

    /// What first write wins needs of an accepted event, its body hashed; `None` for
    /// bad data. Only called for events whose id is already stored or repeated in the
    /// batch: a new event is never hashed.
    pub fn candidate(&self, index: Index) -> Option<Candidate<Index>> {
        let env = self.decoded.as_ref().ok()?;
        Some(Candidate {
            index,
            event_id: env.event_id,
            body_hash: admission::body_hash(&self.delivery.payload),
            stream_seq: self.delivery.stream_seq,
        })
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

/// Appends the typed row of `event` to `buffer`; returns where it is.
fn encode_typed(
    event: &Decoded,
    arrival: Arrival,
    buffer: &mut Vec<u8>,
) -> Result<Range<usize>, BadData> {
    let start = buffer.len();
    match rowbinary::encode(&TypedRow::new(event, arrival), buffer) {
        Ok(()) => Ok(start..buffer.len()),
        Err(e) => {
            buffer.truncate(start);
            Err(BadData {
                class: UNENCODABLE,
                error: format!("the typed row cannot be encoded: {e}"),
            })
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
    /// The encoded typed rows (RowBinary), per type in [`EventType::ALL`] order.
    typed: [Vec<u8>; EventType::ALL.len()],
    /// Sum of the message bodies and encoded typed rows: what the batch holds.
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
    /// Decodes and admits a delivery received at `received_at` (epoch seconds) from a
    /// stream under `prefix`, and adds it.
    pub fn receive(&mut self, delivery: Delivery, received_at: u32, prefix: &SubjectPrefix) {
        let typed = &mut self.typed;
        let item = Item::decode(delivery, received_at, prefix, |event_type| {
            &mut typed[type_index(event_type)]
        });
        self.push(item);
    }

    /// Adds a decoded message.
    fn push(&mut self, item: Item) {
        let index = Index::try_from(self.items.len()).unwrap_or(Index::MAX);
        match &item.decoded {
            Ok(env) => {
                self.by_type[type_index(env.event_type)].push(index);
                self.accepted.push(index);
            }
            Err(_) => self.bad.push(index),
        }
        self.bytes += item.delivery.payload.len() + item.typed.len();
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

    /// Sum of the message bodies and encoded typed rows, bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether a row or byte limit is reached.
    pub fn is_full(&self, limits: &BatchConfig) -> bool {
        self.items.len() >= limits.max_rows || self.bytes >= limits.max_bytes
    }

    /// When the batch is due (`None` while empty): `linger` after its first message
    /// while it holds at most `linger_max_rows` messages (little is waiting: flush soon,
    /// for freshness), else `flush_interval` after it (a busy stream: fewer, larger
    /// inserts, so ClickHouse's part count stays low).
    pub fn deadline(&self, limits: &BatchConfig) -> Option<Instant> {
        let wait = if self.items.len() <= limits.linger_max_rows {
            limits.linger
        } else {
            limits.flush_interval
        };
        self.opened.map(|at| at + wait)
    }

    /// The item at `index`.
    pub fn item(&self, index: Index) -> &Item {
        &self.items[index as usize]
    }

    /// Every item, in arrival order.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// The encoded typed row of the accepted event at `index` (empty for others).
    pub fn typed_row(&self, index: Index) -> &[u8] {
        let item = self.item(index);
        match &item.decoded {
            Ok(env) => &self.typed[type_index(env.event_type)][item.typed.clone()],
            Err(_) => &[],
        }
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

    /// Moves every item to the end of `parts[part(item)]`, in arrival order, with its
    /// encoded typed row: nothing is decoded again. `part` must return an index of
    /// `parts`.
    pub fn move_into(self, parts: &mut [Batch], part: impl Fn(&Item) -> usize) {
        let Batch { items, typed, .. } = self;
        for mut item in items {
            let target = &mut parts[part(&item)];
            if let Ok(env) = &item.decoded {
                let buffer = type_index(env.event_type);
                let start = target.typed[buffer].len();
                target.typed[buffer].extend_from_slice(&typed[buffer][item.typed.clone()]);
                item.typed = start..target.typed[buffer].len();
            }
            target.push(item);
        }
    }
}
