//! The events stream as the tests and benches see it: created on a test's nats-server,
//! read back message by message.

use async_nats::jetstream;
use async_nats::HeaderMap;
use bench_nats::{NatsConfig, StreamSpec};
use bench_schemas::{BenchmarkEvent, SubjectPrefix};
use bytes::Bytes;

/// A JetStream context on the server at `url`.
pub async fn jetstream(url: &str) -> jetstream::Context {
    let client = bench_nats::connect(&NatsConfig::plain(url), false)
        .await
        .expect("connect to nats");
    jetstream::new(client)
}

/// The stream of `prefix`, created on the server at `url`.
pub async fn create_stream(url: &str, prefix: &SubjectPrefix) -> StreamSpec {
    let spec = StreamSpec {
        prefix: prefix.clone(),
        ..StreamSpec::default()
    };
    spec.ensure(&jetstream(url).await, true)
        .await
        .expect("create stream");
    spec
}

/// One message of the stream.
#[derive(Debug)]
pub struct Received {
    /// The subject it was published on.
    pub subject: String,
    /// Its headers (`Nats-Msg-Id`, the schema version, ...).
    pub headers: HeaderMap,
    /// The bytes stored.
    pub payload: Bytes,
    /// The payload, decoded.
    pub event: BenchmarkEvent,
}

impl Received {
    /// The value of header `name`, if the message has it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.as_str())
    }
}

/// Every message of the stream, in stream order.
pub async fn stream_messages(url: &str, spec: &StreamSpec) -> Vec<Received> {
    let js = jetstream(url).await;
    let mut stream = js.get_stream(&spec.name).await.expect("stream exists");
    let state = stream.info().await.expect("stream info").state.clone();
    let mut out = Vec::new();
    if state.messages == 0 {
        return out;
    }
    for seq in state.first_sequence..=state.last_sequence {
        let m = stream.get_raw_message(seq).await.expect("stored message");
        let event = bench_schemas::decode(&m.payload).expect("stored events are valid");
        out.push(Received {
            subject: m.subject.to_string(),
            headers: m.headers,
            payload: m.payload,
            event,
        });
    }
    out
}

/// The `seq` of every event of `run_id` among `messages`, sorted.
pub fn sorted_seqs(messages: &[Received], run_id: uuid::Uuid) -> Vec<u64> {
    let mut seqs: Vec<u64> = messages
        .iter()
        .filter(|m| m.event.run_id == run_id)
        .map(|m| m.event.seq.expect("runner events carry a seq"))
        .collect();
    seqs.sort_unstable();
    seqs
}
