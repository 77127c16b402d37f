//! The JetStream side: the durable pull consumer all sinks share, pulling messages as
//! [`Delivery`] values, and answering them (ack, progress, term).
//!
//! The consumer acks explicitly, one message at a time: `AckAll` would also ack messages
//! another sink holds but has not inserted yet. The stream itself is created or
//! verified by `bench_nats::StreamSpec`, shared with the runner.
//!
//! This module does not decide when to ack; the writer does, after the inserts.

use std::time::Duration;

use async_nats::jetstream::consumer::pull::{self, Batch};
use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, PullConsumer};
use async_nats::jetstream::context::ConsumerInfoErrorKind;
use async_nats::jetstream::message::Acker;
use async_nats::jetstream::stream::Stream;
use async_nats::jetstream::{self, AckKind};
use async_nats::{HeaderMap, Subject};
use bytes::Bytes;

use crate::config::ConsumerConfig;

/// Why the consumer could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ConsumerError {
    #[error(
        "consumer {name} does not exist on stream {stream} (create it, or run without --no-create)"
    )]
    /// `--no-create` and the consumer is absent.
    Missing {
        /// The stream.
        stream: String,
        /// The consumer's durable name.
        name: String,
    },
    /// The consumer exists, but would not wait for the sink's acks.
    #[error("consumer {name} exists with ack policy {policy:?}; the sink needs explicit acks")]
    WrongAckPolicy {
        /// The consumer's durable name.
        name: String,
        /// Its ack policy.
        policy: AckPolicy,
    },
    /// JetStream refused or did not answer.
    #[error("cannot set up consumer {name}: {source}")]
    Request {
        /// The consumer's durable name.
        name: String,
        /// The server's or the client's error.
        #[source]
        source: async_nats::Error,
    },
}

/// The consumer config the sink wants for `config`, reading `filter_subject`.
pub fn consumer_config(config: &ConsumerConfig, filter_subject: String) -> pull::Config {
    pull::Config {
        durable_name: Some(config.name.clone()),
        name: Some(config.name.clone()),
        description: Some("benchstream event-sink: events into ClickHouse".to_owned()),
        deliver_policy: DeliverPolicy::All,
        ack_policy: AckPolicy::Explicit,
        ack_wait: config.ack_wait,
        max_deliver: config.max_deliver,
        max_ack_pending: config.max_ack_pending,
        filter_subject,
        ..pull::Config::default()
    }
}

/// Gets the durable consumer, creating it when absent and `create` is set. An existing
/// consumer whose limits differ is updated when `create` is set, kept (with a warning)
/// otherwise.
pub async fn ensure_consumer(
    stream: &Stream,
    wanted: pull::Config,
    create: bool,
) -> Result<PullConsumer, ConsumerError> {
    let name = wanted.durable_name.clone().unwrap_or_default();
    let request = |source: async_nats::Error| ConsumerError::Request {
        name: name.clone(),
        source,
    };
    match stream.consumer_info(&name).await {
        Ok(info) => {
            let have = &info.config;
            if have.ack_policy != AckPolicy::Explicit {
                return Err(ConsumerError::WrongAckPolicy {
                    name: name.clone(),
                    policy: have.ack_policy,
                });
            }
            let differs = have.ack_wait != wanted.ack_wait
                || have.max_deliver != wanted.max_deliver
                || have.max_ack_pending != wanted.max_ack_pending
                || have.filter_subject != wanted.filter_subject;
            if differs && create {
                tracing::info!(consumer = %name, "updating consumer settings");
                return stream
                    .update_consumer(wanted)
                    .await
                    .map_err(|e| request(e.into()));
            }
            if differs {
                tracing::warn!(
                    consumer = %name,
                    "consumer settings differ from the sink's config; kept (--no-create)"
                );
            }
            stream.get_consumer(&name).await.map_err(request)
        }
        Err(e) if e.kind() == ConsumerInfoErrorKind::NotFound => {
            if !create {
                return Err(ConsumerError::Missing {
                    stream: stream.cached_info().config.name.clone(),
                    name,
                });
            }
            tracing::info!(consumer = %name, "creating consumer");
            stream
                .create_consumer(wanted)
                .await
                .map_err(|e| request(e.into()))
        }
        Err(e) => Err(request(e.into())),
    }
}

/// Sends one pull request for at most `max_messages` messages / `max_bytes` bytes,
/// which the server holds for up to `expires`.
pub async fn pull(
    consumer: &PullConsumer,
    max_messages: usize,
    max_bytes: usize,
    expires: Duration,
) -> Result<Batch, async_nats::Error> {
    Ok(consumer
        .batch()
        .max_messages(max_messages)
        .max_bytes(max_bytes)
        .expires(expires)
        .messages()
        .await?)
}

/// One delivered message, kept until its batch is flushed.
pub struct Delivery {
    /// Answers the delivery (ack, progress, term).
    acker: Acker,
    /// The subject it was published on.
    pub subject: Subject,
    /// The body, byte for byte.
    pub payload: Bytes,
    /// Its headers, for dead letters.
    pub headers: Option<HeaderMap>,
    /// Stream sequence: where to find it with `nats stream get`.
    pub stream_seq: u64,
    /// How many times JetStream has delivered it, this time included.
    pub delivered: u64,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("subject", &self.subject)
            .field("stream_seq", &self.stream_seq)
            .field("delivered", &self.delivered)
            .field("bytes", &self.payload.len())
            .finish_non_exhaustive()
    }
}

impl Delivery {
    /// Takes a message apart. Messages without JetStream metadata (which a pull consumer
    /// does not deliver) get sequence 0.
    pub fn new(message: jetstream::Message) -> Self {
        let (stream_seq, delivered) = message
            .info()
            .map(|info| {
                (
                    info.stream_sequence,
                    u64::try_from(info.delivered).unwrap_or(0),
                )
            })
            .unwrap_or((0, 0));
        let (message, acker) = message.split();
        Delivery {
            acker,
            subject: message.subject,
            payload: message.payload,
            headers: message.headers,
            stream_seq,
            delivered,
        }
    }

    /// Sends `kind` for this delivery. A lost answer only means a redelivery, which
    /// dedup absorbs, so failures are logged, not returned.
    pub async fn answer(&self, kind: AckKind) {
        if let Err(e) = self.acker.ack_with(kind).await {
            tracing::debug!(error = %e, stream_seq = self.stream_seq, "ack not sent");
        }
    }

    /// The headers as text, one `Name: value` per line, sorted by name.
    pub fn headers_text(&self) -> String {
        let Some(headers) = &self.headers else {
            return String::new();
        };
        let mut lines: Vec<String> = headers
            .iter()
            .flat_map(|(name, values)| {
                values
                    .iter()
                    .map(move |value| format!("{}: {}", AsRef::<str>::as_ref(name), value.as_str()))
            })
            .collect();
        lines.sort();
        lines.join("\n")
    }
}
