//! Events as the sink's tests and benchmarks feed them: the golden fixtures re-stamped
//! as fresh runs, and publishing to JetStream the way a runner does. (Creating the stream:
//! [`crate::stream`].)

use std::path::PathBuf;

use async_nats::jetstream;
use async_nats::HeaderMap;
use bench_schemas::subject::{header_safe, headers};
use bench_schemas::{BenchmarkEvent, EventType, SubjectPrefix};
use uuid::Uuid;

/// `schemas/tests/fixtures/`: one golden event per type.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schemas/tests/fixtures")
}

/// The golden fixture of `event_type`, decoded (and so known valid).
pub fn fixture(event_type: EventType) -> BenchmarkEvent {
    let path = fixtures_dir().join(format!("{}.json", event_type.as_str()));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    bench_schemas::decode(&bytes).unwrap_or_else(|e| panic!("{} is invalid: {e}", path.display()))
}

/// A run being replayed from fixtures: a fresh `run_id`, and for each event a fresh
/// `event_id` and the next `seq`, so every test (and every bench run) has its own data.
#[derive(Debug)]
pub struct Run {
    /// The run's id, on every event it stamps.
    pub run_id: Uuid,
    next_seq: u64,
}

impl Default for Run {
    fn default() -> Self {
        Run {
            run_id: Uuid::now_v7(),
            next_seq: 0,
        }
    }
}

impl Run {
    /// `event` re-stamped as the next event of this run.
    pub fn stamp(&mut self, mut event: BenchmarkEvent) -> BenchmarkEvent {
        event.run_id = self.run_id;
        event.event_id = Uuid::now_v7();
        event.seq = Some(self.next_seq);
        self.next_seq += 1;
        event
    }

    /// The next `count` events of this run, cycling through the fixtures of the types a
    /// run emits: every type but `task_validation`, which is a stream of its own, and
    /// whose table keeps only the latest validation of each task (FINAL and merges fold
    /// the others away).
    pub fn events(&mut self, count: usize) -> Vec<BenchmarkEvent> {
        let types: Vec<EventType> = EventType::ALL
            .into_iter()
            .filter(|t| *t != EventType::TaskValidation)
            .collect();
        self.cycle(&types, count)
    }

    /// The next events of this run: one of every type, in [`EventType::ALL`]'s order.
    pub fn one_of_each(&mut self) -> Vec<BenchmarkEvent> {
        self.cycle(&EventType::ALL, EventType::ALL.len())
    }

    /// The next `count` events, cycling through the fixtures of `types`.
    fn cycle(&mut self, types: &[EventType], count: usize) -> Vec<BenchmarkEvent> {
        types
            .iter()
            .cycle()
            .take(count)
            .map(|t| self.stamp(fixture(*t)))
            .collect()
    }
}

/// The subject and headers a runner publishes `event` with.
pub fn envelope(event: &BenchmarkEvent) -> (String, HeaderMap) {
    let subject = SubjectPrefix::default().event_subject(event.run_id, event.event_type());
    let mut h = HeaderMap::new();
    h.insert(headers::MSG_ID, event.event_id.to_string().as_str());
    h.insert(headers::SCHEMA, event.schema_version.to_string().as_str());
    h.insert(headers::TYPE, event.event_type().as_str());
    h.insert(headers::TASK, header_safe(&event.task_id).as_str());
    (subject, h)
}

/// Publishes `event` and waits for JetStream's ack. Returns the stream sequence.
pub async fn publish(js: &jetstream::Context, event: &BenchmarkEvent) -> u64 {
    let (subject, h) = envelope(event);
    publish_raw(js, subject, Some(h), event.to_json()).await
}

/// Publishes arbitrary bytes and waits for JetStream's ack. Returns the stream sequence.
pub async fn publish_raw(
    js: &jetstream::Context,
    subject: String,
    headers: Option<HeaderMap>,
    payload: Vec<u8>,
) -> u64 {
    let ack = match headers {
        Some(h) => js.publish_with_headers(subject, h, payload.into()).await,
        None => js.publish(subject, payload.into()).await,
    }
    .expect("publish");
    ack.await.expect("JetStream ack").sequence
}

/// Publishes `events` keeping up to `window` JetStream acks outstanding, as a runner
/// does; returns once every event is acked.
pub async fn publish_all(
    js: &jetstream::Context,
    events: impl IntoIterator<Item = BenchmarkEvent>,
    window: usize,
) {
    let mut in_flight = std::collections::VecDeque::with_capacity(window);
    for event in events {
        if in_flight.len() >= window {
            if let Some(ack) = in_flight.pop_front() {
                let ack: jetstream::context::PublishAckFuture = ack;
                ack.await.expect("JetStream ack");
            }
        }
        let (subject, h) = envelope(&event);
        let ack = js
            .publish_with_headers(subject, h, event.to_json().into())
            .await
            .expect("publish");
        in_flight.push_back(ack);
    }
    for ack in in_flight {
        ack.await.expect("JetStream ack");
    }
}
