//! What the sink counts, in Prometheus form, and the HTTP endpoint serving it:
//! `GET /metrics` (OpenMetrics text) and `GET /healthz` (200 while the service runs).
//!
//! | metric | type | meaning |
//! |---|---|---|
//! | `bench_sink_messages_consumed_total` | counter | messages pulled from JetStream (redeliveries included) |
//! | `bench_sink_messages_acked_total{outcome}` | counter | acks sent: `ack` (inserted) or `term` (dead-lettered) |
//! | `bench_sink_rows_inserted_total{table}` | counter | rows ClickHouse accepted, per table |
//! | `bench_sink_dead_letters_total{class}` | counter | dead-lettered messages per `error_class` |
//! | `bench_sink_retries_total{cause}` | counter | transient failures retried: `clickhouse` (flush) or `nats` (pull) |
//! | `bench_sink_flush_recoveries_total` | counter | flushes that succeeded after at least one retry |
//! | `bench_sink_messages_waiting` | gauge | messages of a flush that failed and waits to be retried (0 while inserts succeed) |
//! | `bench_sink_rows_waiting{shard}` | gauge | on a cluster with `replica_urls`: messages of that shard's runs the sink holds, unacked, until they are written (queued or being flushed); grows while the shard is down |
//! | `bench_sink_probes_answered_total` | counter | waits for a retry cut short because ClickHouse answered a probe again after failing it |
//! | `bench_sink_insert_splits_total{table}` | counter | inserts split in halves because ClickHouse refused their data |
//! | `bench_sink_rows_recovered_total{table}` | counter | rows refused on their own, then stored by a later attempt (not dead-lettered) |
//! | `bench_sink_batch_duration_seconds` | histogram | time to flush one batch: inserts, retries and acks |
//! | `bench_sink_consumer_pending_messages` | gauge | messages in the stream not yet delivered to the consumer (lag) |
//! | `bench_sink_consumer_ack_pending_messages` | gauge | delivered, not yet acked (all sinks) |
//! | `bench_sink_consumer_redelivered_messages` | gauge | delivered more than once, not yet acked |
//!
//! The consumer gauges come from JetStream's consumer info, polled every few seconds.
//! This module counts and serves; it decides nothing.
//!
//! The endpoint bounds what clients can hold ([`ConnectionLimits`]): at most
//! `max_connections` open at once, one request each, closed after `timeout`. Idle or slow
//! clients cannot use up the sink's file descriptors and stall ingestion.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Label of per-table metrics.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TableLabel {
    /// The table written.
    pub table: &'static str,
}

/// Label of per-class dead-letter counts.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClassLabel {
    /// The `dead_letters.error_class`.
    pub class: &'static str,
}

/// Label of retry counts.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CauseLabel {
    /// `clickhouse` (a flush) or `nats` (a pull).
    pub cause: &'static str,
}

/// Label of per-shard gauges.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ShardLabel {
    /// `shard_num` of `system.clusters`.
    pub shard: u32,
}

/// Label of ack counts.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    /// `ack` (inserted) or `term` (dead-lettered).
    pub outcome: &'static str,
}

/// Every metric of one sink, registered in one registry ([`Metrics::encode`] renders it).
/// Clones share values.
#[derive(Debug, Clone)]
pub struct Metrics {
    /// `bench_sink_messages_consumed_total`.
    pub consumed: Counter,
    /// `bench_sink_messages_acked_total{outcome}`.
    pub acked: Family<OutcomeLabel, Counter>,
    /// `bench_sink_rows_inserted_total{table}`.
    pub inserted: Family<TableLabel, Counter>,
    /// `bench_sink_dead_letters_total{class}`.
    pub dead_lettered: Family<ClassLabel, Counter>,
    /// `bench_sink_retries_total{cause}`.
    pub retries: Family<CauseLabel, Counter>,
    /// `bench_sink_flush_recoveries_total`.
    pub flush_recoveries: Counter,
    /// `bench_sink_probes_answered_total`.
    pub probes_answered: Counter,
    /// `bench_sink_messages_waiting`.
    pub waiting: Gauge,
    /// `bench_sink_rows_waiting{shard}`.
    pub rows_waiting: Family<ShardLabel, Gauge>,
    /// `bench_sink_insert_splits_total{table}`.
    pub splits: Family<TableLabel, Counter>,
    /// `bench_sink_rows_recovered_total{table}`.
    pub rows_recovered: Family<TableLabel, Counter>,
    /// `bench_sink_batch_duration_seconds`.
    pub batch_duration: Histogram,
    /// `bench_sink_consumer_pending_messages`.
    pub pending: Gauge,
    /// `bench_sink_consumer_ack_pending_messages`.
    pub ack_pending: Gauge,
    /// `bench_sink_consumer_redelivered_messages`.
    pub redelivered: Gauge,
    /// Holds every metric above, for encoding.
    registry: Arc<Registry>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Fresh metrics, all zero.
    pub fn new() -> Self {
        let consumed = Counter::default();
        let acked = Family::<OutcomeLabel, Counter>::default();
        let inserted = Family::<TableLabel, Counter>::default();
        let dead_lettered = Family::<ClassLabel, Counter>::default();
        let retries = Family::<CauseLabel, Counter>::default();
        let flush_recoveries = Counter::default();
        let probes_answered = Counter::default();
        let waiting = Gauge::default();
        let rows_waiting = Family::<ShardLabel, Gauge>::default();
        let splits = Family::<TableLabel, Counter>::default();
        let rows_recovered = Family::<TableLabel, Counter>::default();
        // 5 ms .. ~80 s.
        let batch_duration = Histogram::new(exponential_buckets(0.005, 2.0, 15));
        let pending = Gauge::default();
        let ack_pending = Gauge::default();
        let redelivered = Gauge::default();

        let mut registry = Registry::with_prefix("bench_sink");
        registry.register(
            "messages_consumed",
            "Messages pulled from JetStream, redeliveries included",
            consumed.clone(),
        );
        registry.register(
            "messages_acked",
            "Acks sent: ack (inserted) or term (dead-lettered)",
            acked.clone(),
        );
        registry.register(
            "rows_inserted",
            "Rows ClickHouse accepted, per table",
            inserted.clone(),
        );
        registry.register(
            "dead_letters",
            "Messages written to dead_letters, per error class",
            dead_lettered.clone(),
        );
        registry.register(
            "retries",
            "Transient failures retried with backoff, per cause",
            retries.clone(),
        );
        registry.register(
            "flush_recoveries",
            "Flushes that succeeded after at least one retry",
            flush_recoveries.clone(),
        );
        registry.register(
            "probes_answered",
            "Retry waits cut short because ClickHouse answered a probe after failing one",
            probes_answered.clone(),
        );
        registry.register(
            "messages_waiting",
            "Messages of a flush that failed and waits to be retried",
            waiting.clone(),
        );
        registry.register(
            "rows_waiting",
            "Messages of a shard's runs held unacked until written, per shard",
            rows_waiting.clone(),
        );
        registry.register(
            "insert_splits",
            "Inserts split in halves because ClickHouse refused their data, per table",
            splits.clone(),
        );
        registry.register(
            "rows_recovered",
            "Rows refused on their own, then stored by a later attempt, per table",
            rows_recovered.clone(),
        );
        registry.register(
            "batch_duration_seconds",
            "Time to flush one batch: inserts, retries and acks",
            batch_duration.clone(),
        );
        registry.register(
            "consumer_pending_messages",
            "Messages not yet delivered to the consumer (lag), from consumer info",
            pending.clone(),
        );
        registry.register(
            "consumer_ack_pending_messages",
            "Messages delivered but not acked yet, from consumer info",
            ack_pending.clone(),
        );
        registry.register(
            "consumer_redelivered_messages",
            "Messages redelivered and not acked yet, from consumer info",
            redelivered.clone(),
        );
        Metrics {
            consumed,
            acked,
            inserted,
            dead_lettered,
            retries,
            flush_recoveries,
            probes_answered,
            waiting,
            rows_waiting,
            splits,
            rows_recovered,
            batch_duration,
            pending,
            ack_pending,
            redelivered,
            registry: Arc::new(registry),
        }
    }

    /// The metrics in OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen for metrics on {addr}: {source}")]
pub struct BindError {
    /// The address asked for.
    addr: SocketAddr,
    /// Why binding failed (typically: address in use, or a privileged port).
    #[source]
    source: std::io::Error,
}

/// How many connections the endpoint serves and for how long (see [`Endpoint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections served at once; default 64. Further clients wait in the kernel's
    /// accept queue, costing the sink no file descriptor.
    pub max_connections: usize,
    /// Time one connection gets to send its request and read the answer; default 10 s.
    /// Then it is closed, whatever state it is in.
    pub timeout: Duration,
}

/// The bound listening socket of `/metrics` and `/healthz`, not yet serving.
///
/// The endpoint runs its own accept loop rather than `axum::serve`, which keeps every
/// connection a client opens for as long as the client likes: idle connections then
/// use up the process's file descriptors, and the sink can no longer open connections
/// to ClickHouse or NATS. Here a connection is accepted only while fewer than
/// [`ConnectionLimits::max_connections`] are open, serves one request (no keep-alive:
/// a scrape every few seconds does not need it) and is closed after
/// [`ConnectionLimits::timeout`] at the latest.
pub struct Endpoint {
    /// The listening socket.
    listener: TcpListener,
    /// Its address (the real port when 0 was asked for).
    addr: SocketAddr,
    /// Applied to every connection.
    limits: ConnectionLimits,
}

impl Endpoint {
    /// Binds `addr`. Done first at start-up, so a port in use fails the sink at once.
    pub async fn bind(addr: SocketAddr, limits: ConnectionLimits) -> Result<Self, BindError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| BindError { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| BindError { addr, source })?;
        Ok(Endpoint {
            listener,
            addr,
            limits,
        })
    }

    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves `/metrics` and `/healthz` until `shutdown` is cancelled; returns the
    /// server task.
    pub fn serve(self, metrics: Metrics, shutdown: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(accept_loop(self, router(metrics), shutdown))
    }
}

fn router(metrics: Metrics) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let body = metrics.encode();
                async move {
                    (
                        [(
                            CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        body,
                    )
                        .into_response()
                }
            }),
        )
        .route("/healthz", get(|| async { "ok\n" }))
}

/// Accepts connections while a slot is free and serves each in its own task.
async fn accept_loop(endpoint: Endpoint, router: Router, shutdown: CancellationToken) {
    let Endpoint {
        listener, limits, ..
    } = endpoint;
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.keep_alive(false);
    loop {
        // The slot is taken before accepting: at the cap, new clients stay in the
        // kernel's accept queue instead of holding a descriptor here.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            _ = shutdown.cancelled() => return,
        };
        let Ok(slot) = slot else { return };
        let stream = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.cancelled() => return,
        };
        let stream = match stream {
            Ok((stream, _peer)) => stream,
            Err(error) => {
                // EMFILE and friends: wait rather than spin; the slot is given back.
                tracing::warn!(%error, "metrics endpoint cannot accept");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let connection = http.serve_connection(
            TokioIo::new(stream),
            TowerToHyperService::new(router.clone()),
        );
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let _slot = slot;
            tokio::select! {
                served = tokio::time::timeout(limits.timeout, connection) => match served {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => tracing::debug!(%error, "metrics connection failed"),
                    Err(_) => tracing::debug!("metrics connection timed out; closed"),
                },
                _ = shutdown.cancelled() => {}
            }
        });
    }
}

/// Pause after a failed `accept` (out of descriptors, say) before the next one.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_encoded_with_prefix_and_labels() {
        let metrics = Metrics::new();
        metrics.consumed.inc_by(3);
        metrics
            .inserted
            .get_or_create(&TableLabel { table: "steps" })
            .inc();
        metrics.batch_duration.observe(0.02);
        let text = metrics.encode();
        assert!(
            text.contains("bench_sink_messages_consumed_total 3"),
            "{text}"
        );
        assert!(
            text.contains("bench_sink_rows_inserted_total{table=\"steps\"} 1"),
            "{text}"
        );
        assert!(text.contains("bench_sink_batch_duration_seconds_count 1"));
        assert!(text.ends_with("# EOF\n"));
    }
}
