//! `event-sink dead-letters replay`: the way back for dead letters whose cause is fixed.
//!
//! A dead letter keeps the message's bytes, subject and headers. Replaying one
//! publishes those bytes again, on the same subject, to the same stream, so the running
//! sinks take it through the path every message takes: decode, admission, first write
//! wins, insert, ack. Before publishing, the replay asks the same questions the sink
//! would, and skips with a reason what cannot land or has landed:
//!
//! - still refused: decoding or admission ([`bench_schemas::decode_message`],
//!   `admission::admit`) still refuses the bytes (the class and error say why);
//! - already stored: `event_ids` holds the same body under its `event_id` (a replay
//!   that ran before, or a redelivery that landed): nothing to do, so replaying twice is
//!   harmless;
//! - conflict: `event_ids` holds a different body under its `event_id`; first write
//!   wins, the stored version stays;
//! - repeated: an earlier dead letter of this replay carries the same `event_id`;
//! - in the duplicate window: JetStream dropped the publish as a duplicate of a message
//!   with the same `Nats-Msg-Id` in its duplicate window; run the replay again after it.
//!
//! Dead letters stay in `dead_letters` (they are the record of what happened); the
//! replayed copy is a new stream message. `--dry-run` asks every question but publishes
//! nothing. This module returns a [`Report`] and prints nothing.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use async_nats::jetstream;
use async_nats::HeaderMap;
use bench_schemas::subject::headers as header_names;
use clickhouse::Row;
use serde::Deserialize;
use uuid::Uuid;

use crate::admission;
use crate::config::Config;
use crate::writer::{ClickHouseInserter, Inserter};

/// What to replay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Only dead letters of this `error_class`; `None` = every class.
    pub class: Option<String>,
    /// Only dead letters received at or after this time, epoch seconds; `None` = all.
    pub since: Option<u32>,
    /// Ask every question, publish nothing.
    pub dry_run: bool,
}

/// Why the replay stopped before its report.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// Reading `dead_letters` failed.
    #[error("cannot read dead letters from clickhouse: {0}")]
    Read(#[source] clickhouse::error::Error),
    /// A stored `raw` column is not the hex the sink writes.
    #[error("a dead letter's raw bytes are not hex (stream_seq {stream_seq})")]
    Hex {
        /// The dead letter's stream sequence.
        stream_seq: u64,
    },
    /// Looking up what is stored under an `event_id` failed.
    #[error("{0}")]
    Lookup(String),
    /// Connecting to NATS failed.
    #[error(transparent)]
    Nats(#[from] bench_nats::ConnectError),
    /// JetStream did not take a dead letter.
    #[error("cannot publish the dead letter of stream_seq {stream_seq}: {error}")]
    Publish {
        /// The dead letter's stream sequence.
        stream_seq: u64,
        /// Why.
        error: String,
    },
}

/// A row of `deploy/clickhouse/sink/dead_letters.sql`.
#[derive(Debug, Row, Deserialize)]
struct DeadLetterRow {
    stream_seq: u64,
    subject: String,
    headers: String,
    raw_hex: String,
    error_class: String,
}

/// One dead letter considered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Considered {
    /// Stream sequence of the dead-lettered message.
    pub stream_seq: u64,
    /// Its `error_class`.
    pub class: String,
    /// The `event_id` its bytes carry, when they decode.
    pub event_id: Option<Uuid>,
    /// What the replay did with it.
    pub outcome: Outcome,
}

/// What the replay did with one dead letter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Published again as stream message `new_seq` (`None` on a dry run).
    Replayed {
        /// The new stream sequence.
        new_seq: Option<u64>,
    },
    /// Not published, and why.
    Skipped(Skip),
}

/// Why a dead letter was not published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// Decoding or admission still refuses it.
    StillRefused {
        /// The dead letter's class now.
        class: String,
        /// Why.
        error: String,
    },
    /// The same body is stored under its `event_id`.
    AlreadyStored,
    /// A different body is stored under its `event_id`.
    Conflict,
    /// An earlier dead letter of this replay has the same `event_id`.
    Repeated {
        /// The stream sequence of the earlier one.
        of: u64,
    },
    /// JetStream's duplicate window still holds its `Nats-Msg-Id`.
    InDuplicateWindow,
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::StillRefused { class, error } => write!(f, "still refused ({class}): {error}"),
            Skip::AlreadyStored => f.write_str("already stored (same body)"),
            Skip::Conflict => f.write_str("a different body is stored; the first write wins"),
            Skip::Repeated { of } => write!(f, "same event_id as stream_seq {of}"),
            Skip::InDuplicateWindow => f.write_str(
                "dropped by the stream's duplicate window (same Nats-Msg-Id); replay again later",
            ),
        }
    }
}

/// Everything the replay considered, in stream order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Nothing was published (`--dry-run`).
    pub dry_run: bool,
    /// Every dead letter selected, with what became of it.
    pub considered: Vec<Considered>,
}

impl Report {
    /// Dead letters published (or, on a dry run, that would be).
    pub fn replayed(&self) -> usize {
        self.considered
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Replayed { .. }))
            .count()
    }

    /// Dead letters skipped.
    pub fn skipped(&self) -> usize {
        self.considered.len() - self.replayed()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.considered {
            let id = c.event_id.map(|id| id.to_string()).unwrap_or_default();
            match &c.outcome {
                Outcome::Replayed { new_seq: Some(seq) } => writeln!(
                    f,
                    "replayed\t{}\t{}\t{id}\tas stream_seq {seq}",
                    c.stream_seq, c.class
                )?,
                Outcome::Replayed { new_seq: None } => {
                    writeln!(f, "would replay\t{}\t{}\t{id}", c.stream_seq, c.class)?
                }
                Outcome::Skipped(why) => {
                    writeln!(f, "skipped\t{}\t{}\t{id}\t{why}", c.stream_seq, c.class)?
                }
            }
        }
        let verb = if self.dry_run {
            "would replay"
        } else {
            "replayed"
        };
        writeln!(
            f,
            "{} dead letters: {verb} {}, skipped {}",
            self.considered.len(),
            self.replayed(),
            self.skipped()
        )
    }
}

/// A `--since` that is neither an RFC 3339 time nor a `YYYY-MM-DD` date.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--since {0:?}: expected an RFC 3339 time (2026-11-25T20:00:00Z) or a date (2026-11-25, midnight UTC)")]
pub struct SinceError(pub String);

/// `--since`: an RFC 3339 time, or a date meaning its midnight UTC; epoch seconds.
pub fn parse_since(text: &str) -> Result<u32, SinceError> {
    let seconds = chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp())
        .or_else(|_| {
            chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .map(|d| d.and_time(chrono::NaiveTime::MIN).and_utc().timestamp())
        })
        .map_err(|_| SinceError(text.to_owned()))?;
    u32::try_from(seconds).map_err(|_| SinceError(text.to_owned()))
}

/// Parses a dead letter's headers text (`Name: value` per line) back into headers.
pub fn parse_headers(text: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for line in text.lines() {
        if let Some((name, value)) = line.split_once(": ") {
            headers.append(name, value);
        }
    }
    headers
}

/// How long one lookup of stored originals may take.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Replays the dead letters `selection` names, with the sink's settings `config`
/// (ClickHouse to read them and look up stored events, NATS and the stream to publish).
pub async fn replay(config: &Config, selection: &Selection) -> Result<Report, ReplayError> {
    let client = config.clickhouse.client();
    let class = selection.class.clone().unwrap_or_default();
    let rows = client
        .query(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../deploy/clickhouse/sink/dead_letters.sql"
        )))
        .bind(config.stream.name.as_str())
        .bind(class.as_str())
        .bind(class.as_str())
        .bind(selection.since.unwrap_or(0))
        .fetch_all::<DeadLetterRow>()
        .await
        .map_err(ReplayError::Read)?;

    // Decode and admit each as the sink would, now.
    let now = u32::try_from(chrono::Utc::now().timestamp()).unwrap_or(u32::MAX);
    let mut letters = Vec::with_capacity(rows.len());
    for row in rows {
        let raw = hex::decode(&row.raw_hex).map_err(|_| ReplayError::Hex {
            stream_seq: row.stream_seq,
        })?;
        let headers = parse_headers(&row.headers);
        let msg_id = headers.get(header_names::MSG_ID).map(|v| v.as_str());
        let verdict = bench_schemas::decode_message(&raw, msg_id)
            .map_err(|e| (e.class().to_owned(), e.to_string()))
            .and_then(|event| {
                admission::admit(&event, &row.subject, &config.stream.prefix, now)
                    .map(|()| event.event_id())
                    .map_err(|bad| (bad.class.to_owned(), bad.error))
            });
        letters.push((row, raw, headers, verdict));
    }

    // First write wins, as the sink applies it: the stored originals of their ids.
    let ids: Vec<Uuid> = letters
        .iter()
        .filter_map(|(.., verdict)| verdict.as_ref().ok().copied())
        .collect();
    let lookup = ClickHouseInserter::single(client, LOOKUP_TIMEOUT, config.stream.name.clone());
    let originals = lookup.originals(&ids).await.map_err(ReplayError::Lookup)?;

    let js = if selection.dry_run {
        None
    } else {
        Some(jetstream::new(
            bench_nats::connect(&config.nats, false).await?,
        ))
    };
    // The stream_seq of the first dead letter replayed for each event_id.
    let mut first_of: HashMap<Uuid, u64> = HashMap::new();
    let mut report = Report {
        dry_run: selection.dry_run,
        considered: Vec::with_capacity(letters.len()),
    };
    for (row, raw, mut headers, verdict) in letters {
        let (event_id, outcome) = match verdict {
            Err((class, error)) => (None, Outcome::Skipped(Skip::StillRefused { class, error })),
            Ok(id) => {
                let outcome = if let Some(original) = originals.get(&id) {
                    if original.body_hash == admission::body_hash(&raw) {
                        Outcome::Skipped(Skip::AlreadyStored)
                    } else {
                        Outcome::Skipped(Skip::Conflict)
                    }
                } else if let Some(&of) = first_of.get(&id) {
                    Outcome::Skipped(Skip::Repeated { of })
                } else {
                    first_of.insert(id, row.stream_seq);
                    match &js {
                        None => Outcome::Replayed { new_seq: None },
                        Some(js) => {
                            // A kept `Nats-Msg-Id` stays (a Smith event may take its id
                            // from it). Without one (events ClickHouse refused are
                            // dead-lettered without headers), the dead letter's own
                            // identity: JetStream drops a second replay of it within its
                            // duplicate window, and it is not the original's id, which
                            // the window may still hold.
                            if headers.get(header_names::MSG_ID).is_none() {
                                let replay_id =
                                    format!("replay-{}-{}", config.stream.name, row.stream_seq);
                                headers.insert(header_names::MSG_ID, replay_id.as_str());
                            }
                            publish(js, &row, headers, raw).await?
                        }
                    }
                };
                (Some(id), outcome)
            }
        };
        report.considered.push(Considered {
            stream_seq: row.stream_seq,
            class: row.error_class,
            event_id,
            outcome,
        });
    }
    Ok(report)
}

/// Publishes one dead letter's bytes again and waits for JetStream's ack.
async fn publish(
    js: &jetstream::Context,
    row: &DeadLetterRow,
    headers: HeaderMap,
    raw: Vec<u8>,
) -> Result<Outcome, ReplayError> {
    let failed = |error: String| ReplayError::Publish {
        stream_seq: row.stream_seq,
        error,
    };
    let ack = js
        .publish_with_headers(row.subject.clone(), headers, raw.into())
        .await
        .map_err(|e| failed(e.to_string()))?
        .await
        .map_err(|e| failed(e.to_string()))?;
    Ok(if ack.duplicate {
        Outcome::Skipped(Skip::InDuplicateWindow)
    } else {
        Outcome::Replayed {
            new_seq: Some(ack.sequence),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_is_a_time_or_a_date() {
        assert_eq!(parse_since("2026-11-25T20:00:00Z"), Ok(1_795_636_800));
        assert_eq!(parse_since("2026-11-25T21:00:00+01:00"), Ok(1_795_636_800));
        assert_eq!(parse_since("2026-11-25"), Ok(1_795_564_800));
        assert!(parse_since("yesterday").is_err());
        assert!(parse_since("1960-01-01").is_err());
    }

    #[test]
    fn headers_text_parses_back() {
        let headers = parse_headers("Bench-Type: step\nNats-Msg-Id: abc\nX: a: b");
        assert_eq!(
            headers.get(header_names::MSG_ID).map(|v| v.as_str()),
            Some("abc")
        );
        assert_eq!(headers.get("X").map(|v| v.as_str()), Some("a: b"));
        assert!(parse_headers("").get(header_names::MSG_ID).is_none());
    }

    #[test]
    fn the_report_says_what_was_replayed_and_why_the_rest_was_not() {
        let report = Report {
            dry_run: false,
            considered: vec![
                Considered {
                    stream_seq: 7,
                    class: "rejected_by_clickhouse".into(),
                    event_id: Some(Uuid::nil()),
                    outcome: Outcome::Replayed { new_seq: Some(40) },
                },
                Considered {
                    stream_seq: 9,
                    class: "malformed_json".into(),
                    event_id: None,
                    outcome: Outcome::Skipped(Skip::StillRefused {
                        class: "malformed_json".into(),
                        error: "EOF".into(),
                    }),
                },
            ],
        };
        let text = report.to_string();
        assert!(
            text.contains("replayed\t7\trejected_by_clickhouse"),
            "{text}"
        );
        assert!(text.contains("as stream_seq 40"), "{text}");
        assert!(
            text.contains("skipped\t9\tmalformed_json\t\tstill refused"),
            "{text}"
        );
        assert!(
            text.ends_with("2 dead letters: replayed 1, skipped 1\n"),
            "{text}"
        );
    }
}
