//! Settings of the sink: raw, all-optional layers ([`SinkArgs`], one section per
//! component) from a TOML file, `BENCH_*` environment variables and flags, merged
//! `file < env < flags`, then checked once into a validated [`Config`].
//!
//! Every field is documented with its default and unit; the same text is the `--help`
//! of the flag, and `event-sink/README.md` has the full table. Durations are integer
//! milliseconds (`*_ms`) and sizes integer bytes so that the unit is in the name.
//!
//! This module only reads and checks settings; it opens no connection.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bench_cli::config_file::{invalid, nonempty, positive, InvalidSetting};
use bench_clickhouse::{ClickHouseArgs, ClickHouseConfig};
use bench_nats::{NatsArgs, NatsConfig, NatsConfigError, StreamSpec};
use bench_schemas::{SubjectPrefix, SubjectPrefixError};
use serde::Deserialize;

use bench_cli::section;

use crate::failure::Backoff;
use crate::metrics::ConnectionLimits;

/// `[stream]`: the JetStream stream the sink reads. Its name and subject prefix are
/// `--stream` and `--subject-prefix` of [`NatsArgs`] on the command line (worded for the
/// sink by [`SinkArgs`]), and `name` and `prefix` here in a config file.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamArgs {
    /// Stream name. Default `BENCH_EVENTS`. Flag `--stream` ([`NatsArgs::stream`]).
    #[arg(skip)]
    pub name: Option<String>,
    /// Subject prefix; the stream captures `<prefix>.events.>`. Default `bench`. Flag
    /// `--subject-prefix` ([`NatsArgs::subject_prefix`]).
    #[arg(skip)]
    pub prefix: Option<String>,
    /// Replicas when the sink creates the stream: 1 locally, 3 on a cluster. Default 1.
    #[arg(
        id = "stream-replicas",
        long = "stream-replicas",
        env = "BENCH_STREAM_REPLICAS"
    )]
    pub replicas: Option<usize>,
    /// Only verify that stream and consumer exist; never create them. Default false.
    #[arg(num_args = 0..=1, default_missing_value = "true")]
    #[arg(id = "no-create", long = "no-create", env = "BENCH_SINK_NO_CREATE")]
    pub no_create: Option<bool>,
}

impl StreamArgs {
    /// Field by field, `self` wins over `lower`.
    pub fn merge(self, lower: StreamArgs) -> StreamArgs {
        StreamArgs {
            name: self.name.or(lower.name),
            prefix: self.prefix.or(lower.prefix),
            replicas: self.replicas.or(lower.replicas),
            no_create: self.no_create.or(lower.no_create),
        }
    }
}

section! {
    /// `[consumer]`: the durable pull consumer every sink process shares.
    #[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct ConsumerArgs {
        /// Durable consumer name; sinks with the same name share the work. Default
        /// `event-sink`.
        pub name: Option<String> = ("consumer", "BENCH_SINK_CONSUMER"),
        /// Time JetStream waits for an ack before redelivering, ms. Default 10000. The sink
        /// sends progress acks every third of it while it holds a message (filling a batch,
        /// waiting for the writer, inserting, retrying), so it need not cover ClickHouse
        /// outages; it is how soon the messages of a crashed sink come back.
        pub ack_wait_ms: Option<u64> = ("ack-wait-ms", "BENCH_SINK_ACK_WAIT_MS"),
        /// Messages delivered but not yet acked, over all sinks, before JetStream pauses
        /// delivery. Default 100000 (a sink holds up to 2 batches).
        pub max_ack_pending: Option<i64> = ("max-ack-pending", "BENCH_SINK_MAX_ACK_PENDING"),
        /// Deliveries of one message before JetStream gives up on it; -1 = never. Default
        /// -1: a finite value drops events silently after that many failed inserts.
        #[arg(allow_hyphen_values = true)]
        pub max_deliver: Option<i64> = ("max-deliver", "BENCH_SINK_MAX_DELIVER"),
        /// Messages asked for per pull request. Default 1000.
        pub fetch_batch: Option<usize> = ("fetch-batch", "BENCH_SINK_FETCH_BATCH"),
    }
}

section! {
    /// `[batch]`: when rows are flushed, how failed flushes are retried, how long shutdown
    /// may drain.
    #[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct BatchArgs {
        /// Rows per table per insert; every event has an `events_raw` row, so also the
        /// messages per batch. Default 20000.
        pub max_rows: Option<usize> = ("batch-max-rows", "BENCH_SINK_BATCH_MAX_ROWS"),
        /// Bytes held per batch: message bodies plus their encoded typed rows. Default
        /// 25165824 (24 MiB: about 10500 events of ~1.2 KB); with at most 2 batches in
        /// flight (one filling, one being written) this bounds the sink's memory.
        pub max_bytes: Option<usize> = ("batch-max-bytes", "BENCH_SINK_BATCH_MAX_BYTES"),
        /// Longest time a received message waits before its batch is flushed, ms: under
        /// load, at most one insert per table per interval. Default 500.
        pub flush_interval_ms: Option<u64> = ("flush-interval-ms", "BENCH_SINK_FLUSH_INTERVAL_MS"),
        /// Wait of a small batch (at most `linger_max_rows` messages) before its flush,
        /// ms: a quiet stream's events are written this soon. Default 100.
        pub linger_ms: Option<u64> = ("linger-ms", "BENCH_SINK_LINGER_MS"),
        /// Largest batch flushed after `linger_ms` rather than `flush_interval_ms`.
        /// Default 200.
        pub linger_max_rows: Option<usize> = ("linger-max-rows", "BENCH_SINK_LINGER_MAX_ROWS"),
        /// First delay before retrying a failed flush or pull, ms; doubles per attempt.
        /// Default 100.
        pub retry_initial_ms: Option<u64> = ("retry-initial-ms", "BENCH_SINK_RETRY_INITIAL_MS"),
        /// Longest delay between retries, ms. Default 10000.
        pub retry_max_ms: Option<u64> = ("retry-max-ms", "BENCH_SINK_RETRY_MAX_MS"),
        /// On SIGINT/SIGTERM, time allowed to flush and ack what was received, ms; after it
        /// the sink exits without acking the rest (JetStream redelivers it). Default 20000.
        pub drain_timeout_ms: Option<u64> = ("drain-timeout-ms", "BENCH_SINK_DRAIN_TIMEOUT_MS"),
    }
}

section! {
    /// `[metrics]`: the HTTP endpoint with `/metrics` and `/healthz`.
    #[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct MetricsArgs {
        /// Listen address of `/metrics` and `/healthz`, or `off`. Default `127.0.0.1:9464`.
        pub listen: Option<String> = ("metrics-listen", "BENCH_SINK_METRICS_LISTEN"),
        /// Connections served at once; more wait in the kernel's accept queue. Default 64.
        pub max_connections: Option<usize> =
            ("metrics-max-connections", "BENCH_SINK_METRICS_MAX_CONNECTIONS"),
        /// Time a connection gets to send its request and read the answer, ms; then it is
        /// closed. Default 10000.
        pub connection_timeout_ms: Option<u64> =
            ("metrics-connection-timeout-ms", "BENCH_SINK_METRICS_CONNECTION_TIMEOUT_MS"),
    }
}

section! {
    /// `[runtime]`: the threads the sink runs on.
    #[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct RuntimeArgs {
        /// Worker threads: 1 runs the whole sink on one thread; more let receiving from
        /// NATS, decoding and inserting run on several cores at once. Default 1.
        pub worker_threads: Option<usize> = ("worker-threads", "BENCH_SINK_WORKER_THREADS"),
    }
}

/// Every setting of the sink, as flags (+ env) or as the TOML file (one table per
/// section: `[nats]`, `[stream]`, `[consumer]`, `[clickhouse]`, `[batch]`, `[metrics]`,
/// `[runtime]`).
#[derive(Debug, Clone, Default, clap::Args, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[command(mut_arg("stream", |a| a
    .help("Stream name. Default `BENCH_EVENTS`")
    .value_name("stream")
    .help_heading("Stream")))]
#[command(mut_arg("subject_prefix", |a| a
    .help("Subject prefix; the stream captures `<prefix>.events.>`. Default `bench`")
    .value_name("subject-prefix")
    .help_heading("Stream")))]
pub struct SinkArgs {
    /// TOML config file; flags and environment override it.
    #[arg(id = "config", long = "config", env = "BENCH_SINK_CONFIG")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// `[nats]`.
    #[command(flatten, next_help_heading = "NATS")]
    pub nats: NatsArgs,
    /// `[stream]`.
    #[command(flatten, next_help_heading = "Stream")]
    pub stream: StreamArgs,
    /// `[consumer]`.
    #[command(flatten, next_help_heading = "Consumer")]
    pub consumer: ConsumerArgs,
    /// `[clickhouse]`.
    #[command(flatten, next_help_heading = "ClickHouse")]
    pub clickhouse: ClickHouseArgs,
    /// `[batch]`.
    #[command(flatten, next_help_heading = "Batching")]
    pub batch: BatchArgs,
    /// `[metrics]`.
    #[command(flatten, next_help_heading = "Metrics")]
    pub metrics: MetricsArgs,
    /// `[runtime]`.
    #[command(flatten, next_help_heading = "Runtime")]
    pub runtime: RuntimeArgs,
}

impl SinkArgs {
    /// Field by field, `self` wins over `lower`.
    pub fn merge(self, lower: SinkArgs) -> SinkArgs {
        SinkArgs {
            config: self.config.or(lower.config),
            nats: self.nats.merge(lower.nats),
            stream: self.stream.merge(lower.stream),
            consumer: self.consumer.merge(lower.consumer),
            clickhouse: self.clickhouse.merge(lower.clickhouse),
            batch: self.batch.merge(lower.batch),
            metrics: self.metrics.merge(lower.metrics),
            runtime: self.runtime.merge(lower.runtime),
        }
    }

    /// Reads a TOML config file.
    pub fn from_file(path: &Path) -> Result<SinkArgs, ConfigError> {
        Ok(bench_cli::config_file::read(path)?)
    }

    /// Merges the config file named by `config` (if any) below these settings, then
    /// validates the result.
    pub fn load(self) -> Result<Config, ConfigError> {
        let merged = match &self.config {
            Some(path) => {
                let file = SinkArgs::from_file(path)?;
                self.merge(file)
            }
            None => self,
        };
        merged.resolve()
    }

    /// Fills defaults and checks every value.
    pub fn resolve(mut self) -> Result<Config, ConfigError> {
        // The stream's name and prefix: flags and environment (`NatsArgs`) over the
        // file's `[stream]`.
        let name = self.nats.stream.take();
        let prefix = self.nats.subject_prefix.take();
        Ok(Config {
            // Also parses the URL: a garbage one is a settings error (exit 2), not a
            // connect one.
            nats: self.nats.resolve()?,
            create: !self.stream.no_create.unwrap_or(false),
            stream: self.stream.resolve(name, prefix)?,
            consumer: self.consumer.resolve()?,
            clickhouse: self.clickhouse.resolve()?,
            batch: self.batch.resolve()?,
            metrics: self.metrics.resolve()?,
            worker_threads: positive("runtime.worker_threads", self.runtime.worker_threads)?
                .unwrap_or(1),
        })
    }
}

impl StreamArgs {
    /// The stream to read, defaults filled and names checked; `name` and `prefix` (the
    /// flags) win over the file's.
    fn resolve(
        self,
        name: Option<String>,
        prefix: Option<SubjectPrefix>,
    ) -> Result<StreamSpec, ConfigError> {
        let prefix: SubjectPrefix = match (prefix, self.prefix) {
            (Some(p), _) => p,
            (None, Some(p)) => p.parse()?,
            (None, None) => SubjectPrefix::default(),
        };
        let defaults = StreamSpec::default();
        let stream = StreamSpec {
            name: nonempty("stream.name", name.or(self.name))?.unwrap_or(defaults.name),
            prefix,
            replicas: positive("stream.replicas", self.replicas)?.unwrap_or(defaults.replicas),
        };
        if !is_nats_name(&stream.name) {
            return Err(invalid("stream.name", "letters, digits, `-` and `_` only").into());
        }
        Ok(stream)
    }
}

impl ConsumerArgs {
    /// The durable consumer, defaults filled and bounds checked.
    fn resolve(self) -> Result<ConsumerConfig, ConfigError> {
        let consumer = ConsumerConfig {
            name: nonempty("consumer.name", self.name)?.unwrap_or_else(|| "event-sink".into()),
            ack_wait: Duration::from_millis(self.ack_wait_ms.unwrap_or(10_000)),
            max_ack_pending: self.max_ack_pending.unwrap_or(100_000),
            max_deliver: self.max_deliver.unwrap_or(-1),
            fetch_batch: positive("consumer.fetch_batch", self.fetch_batch)?.unwrap_or(1000),
        };
        if !is_nats_name(&consumer.name) {
            return Err(invalid("consumer.name", "letters, digits, `-` and `_` only").into());
        }
        if consumer.ack_wait < Duration::from_secs(3) {
            return Err(invalid("consumer.ack_wait_ms", "must be at least 3000").into());
        }
        if consumer.max_ack_pending != -1 && consumer.max_ack_pending < 1 {
            return Err(invalid("consumer.max_ack_pending", "must be -1 or positive").into());
        }
        if consumer.max_deliver != -1 && consumer.max_deliver < 1 {
            return Err(invalid("consumer.max_deliver", "must be -1 or positive").into());
        }
        Ok(consumer)
    }
}

impl BatchArgs {
    /// Batching, retries and draining, defaults filled and bounds checked.
    fn resolve(self) -> Result<BatchConfig, ConfigError> {
        let millis = |key: &'static str, value: Option<u64>, default: u64| {
            positive(key, value).map(|v| Duration::from_millis(v.unwrap_or(default)))
        };
        let batch = BatchConfig {
            max_rows: positive("batch.max_rows", self.max_rows)?.unwrap_or(20_000),
            max_bytes: positive("batch.max_bytes", self.max_bytes)?.unwrap_or(24 << 20),
            flush_interval: millis("batch.flush_interval_ms", self.flush_interval_ms, 500)?,
            linger: millis("batch.linger_ms", self.linger_ms, 100)?,
            linger_max_rows: self.linger_max_rows.unwrap_or(200),
            retry: Backoff {
                initial: millis("batch.retry_initial_ms", self.retry_initial_ms, 100)?,
                max: millis("batch.retry_max_ms", self.retry_max_ms, 10_000)?,
            },
            drain_timeout: Duration::from_millis(self.drain_timeout_ms.unwrap_or(20_000)),
        };
        if batch.retry.max < batch.retry.initial {
            return Err(invalid(
                "batch.retry_max_ms",
                "must not be below batch.retry_initial_ms",
            )
            .into());
        }
        Ok(batch)
    }
}

impl MetricsArgs {
    /// The metrics endpoint (`off`: none), defaults filled.
    fn resolve(self) -> Result<MetricsConfig, ConfigError> {
        Ok(MetricsConfig {
            listen: match self.listen.as_deref() {
                None => Some(SocketAddr::from(([127, 0, 0, 1], 9464))),
                Some("off") => None,
                Some(addr) => Some(addr.parse().map_err(|_| {
                    invalid(
                        "metrics.listen",
                        "must be `host:port` (IP address) or `off`",
                    )
                })?),
            },
            limits: ConnectionLimits {
                max_connections: positive("metrics.max_connections", self.max_connections)?
                    .unwrap_or(64),
                timeout: Duration::from_millis(
                    positive("metrics.connection_timeout_ms", self.connection_timeout_ms)?
                        .unwrap_or(10_000),
                ),
            },
        })
    }
}

/// Validated settings of one sink process.
#[derive(Debug, Clone)]
pub struct Config {
    /// Broker address and credentials.
    pub nats: NatsConfig,
    /// The stream to read (and to create when absent and `create`).
    pub stream: StreamSpec,
    /// Create stream and consumer when absent; false = only verify (`--no-create`).
    pub create: bool,
    /// The durable consumer.
    pub consumer: ConsumerConfig,
    /// Where the rows go.
    pub clickhouse: ClickHouseConfig,
    /// Batching, retries and draining.
    pub batch: BatchConfig,
    /// The metrics endpoint.
    pub metrics: MetricsConfig,
    /// Threads of the runtime the sink runs on (see [`RuntimeArgs`]).
    pub worker_threads: usize,
}

/// The durable consumer (see [`ConsumerArgs`] for meanings and defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerConfig {
    /// Durable name.
    pub name: String,
    /// Wait for an ack before redelivery.
    pub ack_wait: Duration,
    /// Delivered but unacked messages, over all sinks; -1 = no limit.
    pub max_ack_pending: i64,
    /// Deliveries of one message; -1 = no limit.
    pub max_deliver: i64,
    /// Messages per pull request.
    pub fetch_batch: usize,
}

/// Batching, retries and draining (see [`BatchArgs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchConfig {
    /// Rows per table per insert.
    pub max_rows: usize,
    /// Bytes held per batch.
    pub max_bytes: usize,
    /// Longest wait of a received message before its flush.
    pub flush_interval: Duration,
    /// Wait of a batch of at most `linger_max_rows` messages.
    pub linger: Duration,
    /// Largest batch flushed after `linger`.
    pub linger_max_rows: usize,
    /// Delays between retries of a failed flush or pull.
    pub retry: Backoff,
    /// Time shutdown may take to flush and ack.
    pub drain_timeout: Duration,
}

/// The metrics endpoint (see [`MetricsArgs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsConfig {
    /// Where to listen; `None` = off.
    pub listen: Option<SocketAddr>,
    /// Connection cap and timeout.
    pub limits: ConnectionLimits,
}

/// Why settings are unusable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read, or has a key no section knows.
    #[error(transparent)]
    File(#[from] bench_cli::ConfigFileError),
    /// The `[clickhouse]` settings are unusable.
    #[error(transparent)]
    ClickHouse(#[from] bench_clickhouse::ConfigError),
    /// The `[nats]` settings are unusable.
    #[error(transparent)]
    Nats(#[from] NatsConfigError),
    /// The subject prefix is not one.
    #[error(transparent)]
    Prefix(#[from] SubjectPrefixError),
    /// A value is out of its range.
    #[error(transparent)]
    Invalid(#[from] InvalidSetting),
}

/// JetStream stream and consumer names: no whitespace, dots, wildcards or path
/// separators; keep to a portable set.
fn is_nats_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_text: &str) -> Result<SinkArgs, toml::de::Error> {
        toml::from_str(toml_text)
    }

    #[test]
    fn defaults_are_documented_values() {
        let config = SinkArgs::default().resolve().expect("defaults are valid");
        assert_eq!(config.stream.name, "BENCH_EVENTS");
        assert_eq!(config.stream.prefix.as_str(), "bench");
        assert!(config.create);
        assert_eq!(config.consumer.name, "event-sink");
        assert_eq!(config.consumer.ack_wait, Duration::from_secs(10));
        assert_eq!(config.consumer.max_deliver, -1);
        assert_eq!(config.clickhouse.database, "benchstream");
        assert_eq!(config.batch.max_rows, 20_000);
        assert_eq!(config.batch.flush_interval, Duration::from_millis(500));
        assert_eq!(config.worker_threads, 1);
        assert_eq!(
            config.metrics.listen,
            Some(SocketAddr::from(([127, 0, 0, 1], 9464)))
        );
    }

    #[test]
    fn flags_win_over_the_file_field_by_field() {
        let file = parse(
            "[consumer]\nname = \"from-file\"\nack_wait_ms = 9000\n\
             [clickhouse]\ndatabase = \"filedb\"\n[nats]\nurl = \"nats://file:4222\"\n",
        )
        .expect("valid file");
        let flags = SinkArgs {
            consumer: ConsumerArgs {
                name: Some("from-flag".into()),
                ..ConsumerArgs::default()
            },
            ..SinkArgs::default()
        };
        let config = flags.merge(file).resolve().expect("valid");
        assert_eq!(config.consumer.name, "from-flag");
        assert_eq!(config.consumer.ack_wait, Duration::from_secs(9));
        assert_eq!(config.clickhouse.database, "filedb");
        assert_eq!(config.nats.url, "nats://file:4222");
    }

    #[test]
    fn the_stream_flags_win_over_the_file_and_the_file_names_them_under_stream() {
        use clap::Parser;
        #[derive(Parser)]
        struct Command {
            #[command(flatten)]
            args: SinkArgs,
        }
        let file =
            parse("[stream]\nname = \"FILE_EVENTS\"\nprefix = \"file\"\n").expect("valid file");
        let config = SinkArgs::default()
            .merge(file.clone())
            .resolve()
            .expect("valid");
        assert_eq!(config.stream.name, "FILE_EVENTS");
        assert_eq!(config.stream.prefix.as_str(), "file");
        // The flags are NATS's (`--stream`, `--subject-prefix`), still the stream's own.
        let flags = Command::try_parse_from([
            "event-sink",
            "--stream",
            "FLAG_EVENTS",
            "--subject-prefix",
            "flag",
        ])
        .expect("flags parse")
        .args;
        let config = flags.merge(file).resolve().expect("valid");
        assert_eq!(config.stream.name, "FLAG_EVENTS");
        assert_eq!(config.stream.prefix.as_str(), "flag");
        // In the file they belong to `[stream]`, never to `[nats]`.
        assert!(parse("[nats]\nstream = \"X\"\n").is_err());
    }

    #[test]
    fn replica_urls_are_a_comma_separated_list_that_needs_a_cluster() {
        let args = parse(
            "[clickhouse]\ncluster = \"c\"\n\
             replica_urls = \"http://a:8123, https://b:8443,\"\n",
        )
        .expect("parses");
        let config = args.resolve().expect("valid");
        assert_eq!(
            config.clickhouse.replica_urls,
            vec!["http://a:8123".to_owned(), "https://b:8443".to_owned()]
        );
        for case in [
            "[clickhouse]\nreplica_urls = \"http://a:8123\"\n",
            "[clickhouse]\ncluster = \"c\"\nreplica_urls = \"a:8123\"\n",
        ] {
            let args = parse(case).expect("parses");
            assert!(args.resolve().is_err(), "accepted {case:?}");
        }
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(parse("[batch]\nmax_rowz = 5\n").is_err());
        assert!(parse("[clickhous]\nurl = \"http://x\"\n").is_err());
    }

    #[test]
    fn bad_values_are_refused_with_the_field_name() {
        let cases = [
            "[clickhouse]\nurl = \"tcp://x:9000\"\n",
            "[batch]\nmax_rows = 0\n",
            "[runtime]\nworker_threads = 0\n",
            "[consumer]\nack_wait_ms = 10\n",
            "[consumer]\nname = \"a.b\"\n",
            "[consumer]\nmax_deliver = 0\n",
            "[metrics]\nlisten = \"localhost\"\n",
            "[stream]\nprefix = \"a.>\"\n",
            "[nats]\nurl = \"nats://%%%:x\"\n",
            "[nats]\nurl = \"nats://ok:4222, http://[::1\"\n",
        ];
        for case in cases {
            let args = parse(case).expect("parses");
            assert!(args.resolve().is_err(), "accepted {case:?}");
        }
        let off = parse("[metrics]\nlisten = \"off\"\n").expect("parses");
        assert_eq!(off.resolve().expect("valid").metrics.listen, None);
    }

    #[test]
    fn passwords_are_not_debug_printed() {
        let args = ClickHouseArgs {
            password: Some("hunter2".into()),
            ..ClickHouseArgs::default()
        };
        assert!(!format!("{args:?}").contains("hunter2"));
        let config = SinkArgs {
            clickhouse: args,
            ..SinkArgs::default()
        }
        .resolve()
        .expect("valid");
        assert!(!format!("{config:?}").contains("hunter2"));
    }
}
