//! Spools as a runner that lost the broker leaves them: events of a fresh run written with
//! the runner's own spool code, for tests that then damage or flush them.

use std::fs;
use std::path::Path;

use bench_delivery::Outgoing;
use bench_delivery::{Spool, SpoolConfig};
use bench_schemas::SubjectPrefix;
use bytes::Bytes;

/// `n` events of a new run (the golden `step` event with fresh ids, seq 0..n) as the
/// publisher sends them under `prefix`.
pub fn step_messages(prefix: &str, n: u64) -> Vec<Outgoing> {
    let prefix: SubjectPrefix = prefix.parse().expect("prefix");
    let golden = fs::read(format!(
        "{}/../schemas/tests/fixtures/step.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("golden step event");
    let mut event = bench_schemas::decode(&golden).expect("golden event decodes");
    event.run_id = uuid::Uuid::new_v4();
    (0..n)
        .map(|seq| {
            event.event_id = uuid::Uuid::new_v4();
            event.seq = Some(seq);
            Outgoing::new(&prefix, &event, Bytes::from(event.to_json()))
        })
        .collect()
}

/// A spool at `path` holding `messages`; its bytes.
pub fn spool_with(path: &Path, messages: &[Outgoing]) -> Vec<u8> {
    let config = SpoolConfig {
        path: path.to_owned(),
        max_bytes: 1 << 20,
    };
    Spool::open(config)
        .expect("open spool")
        .append(messages)
        .expect("append");
    fs::read(path).expect("spool bytes")
}

/// The `Nats-Msg-Id`s of `messages`, in order.
pub fn ids(messages: &[Outgoing]) -> Vec<String> {
    messages.iter().map(|m| m.msg_id.clone()).collect()
}
