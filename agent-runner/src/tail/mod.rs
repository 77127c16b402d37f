//! `agent-runner tail`: events from the stream as they arrive, one readable line each
//! (or the raw JSON), filtered by run, type, task and policy; optionally starting with
//! the last N matching events or everything since a time.
//!
//! - [`filter`]: run ids and types become subject filters (JetStream sends only those);
//!   task and policy are checked in the payload.
//! - [`line`](mod@line): the readable line of an event.
//! - [`args`]: the `agent-runner tail` flags → [`TailConfig`].
//!
//! The events come through an *ordered* pull consumer: ephemeral, in memory, no acks,
//! recreated by the client at the right sequence after a gap. It is created with a name
//! of its own (`tail-<uuid>`) and deleted, with any recreation of it, when the tail ends,
//! so a tail leaves no state on the server (and the server would drop a forgotten one
//! after 30 s of inactivity anyway). Nothing here acks: the sinks' durable consumer is
//! not affected.
//!
//! `--last N` cannot be asked of JetStream for an arbitrary filter, so the tail replays
//! from the start (or from `--since`) and keeps the last N matching events until it has
//! caught up (the server reports nothing pending), prints them, then goes on live.
//! Without any filter or `--since`, it starts N messages before the end of the stream
//! instead of replaying all of it.

pub(crate) mod args;
mod error;
pub(crate) mod filter;
pub(crate) mod line;

use std::collections::VecDeque;
use std::io::{self, Write};

use async_nats::jetstream::consumer::pull::OrderedConfig;
use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::stream::Stream;
use bench_nats::NatsConfig;
use bench_schemas::SubjectPrefix;
use chrono::{DateTime, Utc};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

pub use args::TailArgs;
pub use error::TailError;
pub use filter::Filter;

/// Everything `agent-runner tail` needs, validated.
#[derive(Debug, Clone)]
pub struct TailConfig {
    /// How to connect (no background retry: an unreachable broker is an error).
    pub nats: NatsConfig,
    /// Subject prefix of the events. Default `bench`.
    pub prefix: SubjectPrefix,
    /// The events stream. Default `BENCH_EVENTS`.
    pub stream: String,
    /// Which events to show.
    pub filter: Filter,
    /// Show the last this many matching events before the live ones; `None` = none.
    pub last: Option<usize>,
    /// Replay from this time (with `last`: the last N since then); `None` = from now.
    pub since: Option<DateTime<Utc>>,
    /// Print each event's JSON as it is on the wire instead of a readable line.
    pub json: bool,
}

/// Shows the events of `config` on `out` until `shutdown` fires, the connection ends or
/// `out` is closed (a pager or `head` quit); then deletes the consumer. Returns the number
/// of events shown.
pub async fn run(
    config: TailConfig,
    out: &mut (dyn Write + Send),
    shutdown: CancellationToken,
) -> Result<u64, crate::Error> {
    let client = bench_nats::connect(&config.nats, false).await?;
    let js = async_nats::jetstream::new(client);
    let stream = js
        .get_stream(&config.stream)
        .await
        .map_err(|source| TailError::Stream {
            stream: config.stream.clone(),
            source,
        })?;
    let name = format!("tail-{}", uuid::Uuid::now_v7().simple());
    let result = show(&config, &stream, &name, out, shutdown).await;
    delete_consumers(&stream, &name).await;
    Ok(result?)
}

async fn show(
    config: &TailConfig,
    stream: &Stream,
    name: &str,
    out: &mut (dyn Write + Send),
    shutdown: CancellationToken,
) -> Result<u64, TailError> {
    let mut subjects = config.filter.subjects(&config.prefix);
    let (filter_subject, filter_subjects) = match subjects.len() {
        1 => (subjects.remove(0), Vec::new()),
        _ => (String::new(), subjects),
    };
    let consumer = stream
        .create_consumer(OrderedConfig {
            name: Some(name.to_owned()),
            description: Some("agent-runner tail".to_owned()),
            filter_subject,
            filter_subjects,
            deliver_policy: deliver_policy(config, stream.cached_info().state.last_sequence),
            ..OrderedConfig::default()
        })
        .await
        .map_err(|source| TailError::Consumer {
            stream: config.stream.clone(),
            source,
        })?;
    let mut messages = consumer.messages().await?;
    let mut output = Output {
        out,
        held: config.last.map(VecDeque::with_capacity),
        last: config.last.unwrap_or(0),
        shown: 0,
    };
    loop {
        let message = tokio::select! {
            _ = shutdown.cancelled() => break,
            next = messages.next() => match next {
                Some(Ok(message)) => message,
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "tail consumer; the client recreates it and goes on");
                    continue;
                }
                None => break,
            },
        };
        // The payload is parsed for the filter only when a filter needs it.
        let matches = config.filter.subjects_only()
            || config.filter.matches_payload(
                &serde_json::from_slice(&message.payload).unwrap_or(serde_json::Value::Null),
            );
        let line = matches.then(|| render(config.json, &message.subject, &message.payload));
        let caught_up = message.info().map_or(true, |info| info.pending == 0);
        if output.take(line, caught_up).is_err() {
            // The reader went away (`| head`, a closed pager): nothing more to show.
            break;
        }
    }
    Ok(output.shown)
}

/// Where lines go; with `--last`, they are held back until the replay caught up.
struct Output<'a> {
    /// Where lines are written (stdout).
    out: &'a mut (dyn Write + Send),
    /// The last `last` matching lines so far, while replaying for `--last`; `None` once
    /// caught up (or without `--last`).
    held: Option<VecDeque<Vec<u8>>>,
    /// `--last N`.
    last: usize,
    /// Lines written.
    shown: u64,
}

impl Output<'_> {
    /// One message: its line if it matched, and whether nothing is pending after it.
    fn take(&mut self, line: Option<Vec<u8>>, caught_up: bool) -> io::Result<()> {
        match (&mut self.held, line) {
            (Some(ring), Some(line)) => {
                if ring.len() == self.last {
                    ring.pop_front();
                }
                if self.last > 0 {
                    ring.push_back(line);
                }
            }
            (None, Some(line)) => self.write(&line)?,
            (_, None) => {}
        }
        if caught_up {
            for line in self.held.take().unwrap_or_default() {
                self.write(&line)?;
            }
        }
        Ok(())
    }

    fn write(&mut self, line: &[u8]) -> io::Result<()> {
        self.out.write_all(line)?;
        self.out.write_all(b"\n")?;
        self.out.flush()?;
        self.shown += 1;
        Ok(())
    }
}

/// Where the consumer starts: see the module docs.
fn deliver_policy(config: &TailConfig, last_sequence: u64) -> DeliverPolicy {
    match (config.since, config.last) {
        (Some(since), _) => DeliverPolicy::ByStartTime {
            start_time: to_offset(since),
        },
        (None, Some(n)) if config.filter == Filter::default() => {
            match last_sequence.checked_sub(n as u64) {
                Some(before) => DeliverPolicy::ByStartSequence {
                    start_sequence: before + 1,
                },
                None => DeliverPolicy::All,
            }
        }
        (None, Some(_)) => DeliverPolicy::All,
        (None, None) => DeliverPolicy::New,
    }
}

fn to_offset(t: DateTime<Utc>) -> time::OffsetDateTime {
    let nanos = t.timestamp_nanos_opt().unwrap_or_default();
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(nanos))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}

/// The output line of one message (without its newline).
fn render(json: bool, subject: &str, payload: &[u8]) -> Vec<u8> {
    if !json {
        return line::render(subject, payload).into_bytes();
    }
    // The wire JSON as it is; re-serialised compactly only when it holds a control byte
    // (a newline, or an escape a producer slipped in), which then cannot reach the
    // terminal: valid JSON escapes it, anything else shows it as a space.
    if !payload.iter().any(|b| b.is_ascii_control()) {
        return payload.to_vec();
    }
    serde_json::from_slice::<serde_json::Value>(payload)
        .map(|v| v.to_string().into_bytes())
        .unwrap_or_else(|_| {
            payload
                .iter()
                .map(|&b| if b.is_ascii_control() { b' ' } else { b })
                .collect()
        })
}

/// Deletes the tail's consumer and the client's recreations of it (`<name>_<n>`).
async fn delete_consumers(stream: &Stream, name: &str) {
    let names: Vec<String> = stream
        .consumer_names()
        .filter_map(|n| async move { n.ok() })
        .filter(|n| std::future::ready(n == name || n.starts_with(&format!("{name}_"))))
        .collect()
        .await;
    for consumer in names {
        if let Err(e) = stream.delete_consumer(&consumer).await {
            tracing::debug!(consumer, error = %e, "tail consumer already gone");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_carry_no_control_bytes() {
        let subject = "bench.events.r.step";
        let plain = br#"{"a":"b"}"#;
        assert_eq!(render(true, subject, plain), plain.to_vec());
        assert_eq!(
            render(true, subject, b"{\"a\":\n \"b\"}"),
            br#"{"a":"b"}"#.to_vec()
        );
        assert_eq!(
            render(true, subject, b"not json\x1b[2J\r\nend"),
            b"not json [2J  end".to_vec()
        );
    }
}
