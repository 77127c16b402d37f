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
//! | `bench_sink_batch_duration_seconds` | histogram | time to flush one batch: inserts, retries and acks |
//! | `bench_sink_consumer_pending_messages` | gauge | messages in the stream not yet delivered to the consumer (lag) |
//! | `bench_sink_consumer_ack_pending_messages` | gauge | delivered, not yet acked (all sinks) |
//! | `bench_sink_consumer_redelivered_messages` | gauge | delivered more than once, not yet acked |
//!
//! The consumer gauges come from JetStream's consumer info, polled every few seconds.
//! This module counts and serves; it decides nothing.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Label of per-table metrics.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TableLabel {
    pub table: &'static str,
}

/// Label of per-class dead-letter counts.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClassLabel {
    pub class: &'static str,
}

/// Label of retry counts.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CauseLabel {
    pub cause: &'static str,
}

/// Label of ack counts.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: &'static str,
}

/// Every metric of one sink, registered in [`Metrics::registry`]. Clones share values.
#[derive(Debug, Clone)]
pub struct Metrics {
    pub consumed: Counter,
    pub acked: Family<OutcomeLabel, Counter>,
    pub inserted: Family<TableLabel, Counter>,
    pub dead_lettered: Family<ClassLabel, Counter>,
    pub retries: Family<CauseLabel, Counter>,
    pub batch_duration: Histogram,
    pub pending: Gauge,
    pub ack_pending: Gauge,
    pub redelivered: Gauge,
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
    addr: SocketAddr,
    #[source]
    source: std::io::Error,
}

/// Binds `addr` and serves `/metrics` and `/healthz` until `shutdown` is cancelled.
/// Returns the bound address (useful with port 0) and the server task.
pub async fn serve(
    addr: SocketAddr,
    metrics: Metrics,
    shutdown: CancellationToken,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), BindError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| BindError { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| BindError { addr, source })?;
    let app = Router::new()
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
        .route("/healthz", get(|| async { "ok\n" }));
    let task = tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await;
        if let Err(e) = served {
            tracing::warn!(error = %e, "metrics endpoint stopped");
        }
    });
    Ok((bound, task))
}

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
