//! The OTLP/HTTP server: `POST /v1/traces`, `/v1/logs`, `/v1/metrics` → auth → body
//! ([`crate::body`]) → events ([`crate::mapping`], [`crate::logs`]) → the publisher → the
//! reply.
//!
//! The reply is 200 only once every event of the request is acknowledged by JetStream or
//! fsync'd into the spool (a [`Receipt`] per event), so an exporter that got no answer
//! (the receiver died, the connection broke) sends the batch again and nothing is lost;
//! the copy carries the same event ids and is dropped downstream. Statuses: 400 malformed
//! body, 401 missing or wrong bearer token, 413 body over the limit, 415 unsupported
//! content type or encoding, 503 with `Retry-After` only when the publisher has stopped
//! (spool full or broken; retryable, per the OTLP/HTTP specification). Spans and log
//! records refused by the mapping (bad ids or times, records that are no GenAI event), and
//! events that can never be delivered (too large, quarantined), are counted and explained
//! in `partial_success`; metrics are counted, not stored, and `partial_success` says so.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use bench_delivery::{PublisherHandle, Settled};
use bench_schemas::BenchmarkEvent;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsPartialSuccess, ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::body::{self, BodyError, Encoding};
use crate::config::ReceiverConfig;
use crate::error::OtlpError;
use crate::intake::{Counters, Shared, Unavailable, UNAVAILABLE_MESSAGE};
use crate::mapping::Mapper;
use crate::runs::Ledger;

/// Reasons kept in one reply's `partial_success.error_message`, at most.
const MAX_REASONS: usize = 5;

/// What a receiver did, from start to shutdown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Export requests answered 200.
    pub requests: u64,
    /// Spans accepted.
    pub spans: u64,
    /// Spans refused (in `partial_success`).
    pub rejected_spans: u64,
    /// GenAI log records accepted.
    pub log_records: u64,
    /// Log records refused (not GenAI events, no trace; in `partial_success`).
    pub rejected_log_records: u64,
    /// Metric data points received (counted, not stored).
    pub metric_points: u64,
    /// Events acknowledged or spooled.
    pub events: u64,
    /// Model calls that came after their run's `run_stop` (in their own rows, not in the
    /// run's totals).
    pub late_calls: u64,
    /// Runs whose root never came, closed by `--run-timeout`.
    pub timed_out_runs: u64,
    /// Closing spans (roots, spans stating `benchstream.run_end`) that came after their
    /// run was closed by another or by `--run-timeout` (nothing published).
    pub late_roots: u64,
    /// `gen_ai.evaluation.result` log records that came after their run was closed (their
    /// own rows only, not in the run's `run_stop`).
    pub late_evaluations: u64,
}

/// The listening sockets of a receiver, bound before anything else starts.
#[derive(Debug)]
pub struct Listeners {
    /// OTLP/HTTP.
    http: TcpListener,
    /// OTLP/gRPC, when served.
    grpc: Option<TcpListener>,
}

impl Listeners {
    /// Binds the addresses of `config`: OTLP/HTTP, and OTLP/gRPC when it is served.
    pub async fn bind(config: &ReceiverConfig) -> Result<Listeners, OtlpError> {
        let http = bind(config.listen).await?;
        let grpc = match config.grpc_listen {
            Some(addr) => Some(bind(addr).await?),
            None => None,
        };
        Ok(Listeners { http, grpc })
    }
}

async fn bind(addr: std::net::SocketAddr) -> Result<TcpListener, OtlpError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| OtlpError::Bind { addr, source })
}

/// Serves OTLP/HTTP (and OTLP/gRPC, when bound) on `listeners`, publishing through
/// `publisher`, until `shutdown`; requests under way are answered first. Both share one
/// mapping, one memory of the runs under way and one set of counts.
pub async fn serve(
    Listeners { http, grpc }: Listeners,
    config: &ReceiverConfig,
    publisher: PublisherHandle,
    shutdown: CancellationToken,
) -> Result<Counts, OtlpError> {
    let shared = Arc::new(Shared {
        mapper: Mapper {
            host: config.host.clone(),
            prices: config.prices.clone(),
            experiment: config.experiment.clone(),
        },
        ledger: Ledger::new(chrono::Utc::now(), config.run_timeout),
        token: config.bearer_token.clone(),
        max_body_bytes: config.max_body_bytes,
        publisher,
        counters: Counters::default(),
    });
    let app = Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/logs", post(logs))
        .route("/v1/metrics", post(metrics))
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .with_state(shared.clone());
    if let Ok(addr) = http.local_addr() {
        tracing::info!(%addr, "OTLP/HTTP receiver listening on /v1/traces, /v1/logs, /v1/metrics");
    }
    let http = async {
        axum::serve(http, app)
            .with_graceful_shutdown(shutdown.clone().cancelled_owned())
            .await
            .map_err(OtlpError::Serve)
    };
    let grpc = async {
        match grpc {
            Some(listener) => crate::grpc::serve(listener, shared.clone(), shutdown.clone()).await,
            None => Ok(()),
        }
    };
    let expiry = tokio::spawn(close_timed_out_runs(shared.clone(), shutdown.clone()));
    // One server failing stops the other: the receiver is not half up.
    let stop_both = shutdown.clone();
    let (http, grpc) = tokio::join!(
        async {
            let served = http.await;
            stop_both.cancel();
            served
        },
        async {
            let served = grpc.await;
            if served.is_err() {
                shutdown.cancel();
            }
            served
        }
    );
    expiry.abort();
    http?;
    grpc?;
    let mut counts = shared.counters.snapshot();
    counts.late_calls = shared.ledger.late_calls();
    counts.late_roots = shared.ledger.late_roots();
    counts.late_evaluations = shared.ledger.late_evaluations();
    Ok(counts)
}

/// Every quarter of `--run-timeout` (at most a minute), closes the runs whose root never
/// came and that no span reached for the timeout: their `run_start` and `run_stop` are
/// published like any other event; a publisher that stopped keeps them from being kept,
/// and a later receiver closes the run again with the same event ids.
async fn close_timed_out_runs(shared: Arc<Shared>, shutdown: CancellationToken) {
    let period = (shared.ledger.idle() / 4).clamp(
        std::time::Duration::from_millis(100),
        std::time::Duration::from_secs(60),
    );
    let mut ticks = tokio::time::interval(period);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let expired = shared.ledger.expire(std::time::Instant::now());
        if expired.is_empty() {
            continue;
        }
        let events: Vec<(usize, BenchmarkEvent)> = expired
            .iter()
            .enumerate()
            .flat_map(|(i, run)| shared.mapper.timed_out(run).map(|e| (i, e)))
            .collect();
        let mut reasons = Vec::new();
        match deliver(&shared.publisher, events, &mut reasons).await {
            Ok(delivered) => {
                let c = &shared.counters;
                c.timed_out_runs
                    .fetch_add(expired.len() as u64, Ordering::Relaxed);
                c.events.fetch_add(delivered.events, Ordering::Relaxed);
                for reason in reasons {
                    tracing::error!(%reason, "a run closed by --run-timeout lost an event");
                }
            }
            Err(Unavailable) => {
                tracing::error!(
                    runs = expired.len(),
                    "the publisher stopped: runs closed by --run-timeout were not published"
                );
                return;
            }
        }
    }
}

impl Counters {
    fn snapshot(&self) -> Counts {
        Counts {
            requests: self.requests.load(Ordering::Relaxed),
            spans: self.spans.load(Ordering::Relaxed),
            rejected_spans: self.rejected_spans.load(Ordering::Relaxed),
            log_records: self.log_records.load(Ordering::Relaxed),
            rejected_log_records: self.rejected_log_records.load(Ordering::Relaxed),
            metric_points: self.metric_points.load(Ordering::Relaxed),
            events: self.events.load(Ordering::Relaxed),
            late_calls: 0,
            timed_out_runs: self.timed_out_runs.load(Ordering::Relaxed),
            late_roots: 0,
            late_evaluations: 0,
        }
    }
}

/// What became of a request's events.
#[derive(Debug, Default)]
pub(super) struct Delivered {
    /// Items (spans, records) with an event that can never be delivered.
    pub(super) undeliverable: u64,
    /// Events acknowledged or spooled.
    pub(super) events: u64,
}

/// Publishes `events` (each with the index of the item it came from) and waits until
/// each is acknowledged or spooled; adds to `reasons` why an item's event can never be
/// delivered. `Err` when the publisher stopped before keeping them all.
pub(super) async fn deliver(
    publisher: &PublisherHandle,
    events: Vec<(usize, BenchmarkEvent)>,
    reasons: &mut Vec<String>,
) -> Result<Delivered, Unavailable> {
    let mut undeliverable = BTreeSet::new();
    let mut receipts = Vec::with_capacity(events.len());
    for (item, mut event) in events {
        match event.enforce_limits() {
            Ok(bytes) => match publisher.send_tracked(&event, Bytes::from(bytes)) {
                Some(receipt) => receipts.push((item, receipt)),
                None => return Err(Unavailable),
            },
            Err(e) => {
                undeliverable.insert(item);
                note(reasons, format!("{} event: {e}", event.event_type()));
            }
        }
    }
    let mut delivered = 0;
    for (item, receipt) in receipts {
        match receipt.await {
            Ok(Settled::Acked | Settled::Spooled) => delivered += 1,
            Ok(Settled::Quarantined) => {
                undeliverable.insert(item);
                note(
                    reasons,
                    "an event was refused by the broker for good (see `agent-runner spool status`)"
                        .to_owned(),
                );
            }
            // The publisher stopped before keeping it: the exporter must send again.
            Err(_) => return Err(Unavailable),
        }
    }
    Ok(Delivered {
        undeliverable: undeliverable.len() as u64,
        events: delivered,
    })
}

impl Shared {
    /// The spans of `request` mapped and delivered: the reply.
    pub(super) async fn export_traces(
        &self,
        request: &ExportTraceServiceRequest,
    ) -> Result<ExportTraceServiceResponse, Unavailable> {
        let mapped = self.mapper.map(request, &self.ledger);
        let mut reasons = mapped.reasons;
        let delivered = deliver(&self.publisher, mapped.events, &mut reasons).await?;
        let rejected = mapped.rejected + delivered.undeliverable;
        let c = &self.counters;
        c.requests.fetch_add(1, Ordering::Relaxed);
        c.spans
            .fetch_add(mapped.spans.saturating_sub(rejected), Ordering::Relaxed);
        c.rejected_spans.fetch_add(rejected, Ordering::Relaxed);
        c.events.fetch_add(delivered.events, Ordering::Relaxed);
        Ok(ExportTraceServiceResponse {
            partial_success: (rejected > 0).then(|| ExportTracePartialSuccess {
                rejected_spans: saturating_i64(rejected),
                error_message: reasons.join("; "),
            }),
        })
    }

    /// The GenAI events among the log records of `request` delivered: the reply.
    pub(super) async fn export_logs(
        &self,
        request: &ExportLogsServiceRequest,
    ) -> Result<ExportLogsServiceResponse, Unavailable> {
        let mapped = self.mapper.map_logs(request, &self.ledger);
        let mut reasons = mapped.reasons;
        let delivered = deliver(&self.publisher, mapped.events, &mut reasons).await?;
        let rejected = mapped.rejected + delivered.undeliverable;
        let c = &self.counters;
        c.requests.fetch_add(1, Ordering::Relaxed);
        c.log_records
            .fetch_add(mapped.records.saturating_sub(rejected), Ordering::Relaxed);
        c.rejected_log_records
            .fetch_add(rejected, Ordering::Relaxed);
        c.events.fetch_add(delivered.events, Ordering::Relaxed);
        Ok(ExportLogsServiceResponse {
            partial_success: (rejected > 0).then(|| ExportLogsPartialSuccess {
                rejected_log_records: saturating_i64(rejected),
                error_message: reasons.join("; "),
            }),
        })
    }

    /// The data points of `request` counted (metrics are not stored): the reply, a
    /// partial success that rejects nothing and says so.
    pub(super) fn export_metrics(
        &self,
        request: &ExportMetricsServiceRequest,
    ) -> ExportMetricsServiceResponse {
        let points = metric_points(request);
        let c = &self.counters;
        c.requests.fetch_add(1, Ordering::Relaxed);
        c.metric_points.fetch_add(points, Ordering::Relaxed);
        ExportMetricsServiceResponse {
            partial_success: (points > 0).then(|| ExportMetricsPartialSuccess {
                rejected_data_points: 0,
                error_message: format!(
                    "{points} data points accepted and counted; metrics are not mapped to \
                     benchmark events"
                ),
            }),
        }
    }
}

/// The data points of a metrics request.
fn metric_points(request: &ExportMetricsServiceRequest) -> u64 {
    request
        .resource_metrics
        .iter()
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .map(|m| match &m.data {
            Some(Data::Gauge(g)) => g.data_points.len(),
            Some(Data::Sum(s)) => s.data_points.len(),
            Some(Data::Histogram(h)) => h.data_points.len(),
            Some(Data::ExponentialHistogram(h)) => h.data_points.len(),
            Some(Data::Summary(s)) => s.data_points.len(),
            None => 0,
        } as u64)
        .sum()
}

fn saturating_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Why a request was refused before anything was mapped.
enum Refusal {
    /// No bearer token, or another: 401.
    Unauthorized,
    /// The body: 400, 413 or 415.
    Body(BodyError),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                [(WWW_AUTHENTICATE, "Bearer")],
                "missing or wrong bearer token\n",
            )
                .into_response(),
            Refusal::Body(e) => (e.status(), format!("{e}\n")).into_response(),
        }
    }
}

/// Checks the bearer token, then decodes the body: the request and its encoding.
fn accept<M: prost::Message + Default + serde::de::DeserializeOwned>(
    shared: &Shared,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<(Encoding, M), Refusal> {
    if let Some(token) = &shared.token {
        let given = headers.get(AUTHORIZATION).map(|v| v.as_bytes());
        if !given.is_some_and(|g| token.admits(g)) {
            return Err(Refusal::Unauthorized);
        }
    }
    let encoding = body::encoding(headers).map_err(Refusal::Body)?;
    let request =
        body::decode(headers, encoding, body, shared.max_body_bytes).map_err(Refusal::Body)?;
    Ok((encoding, request))
}

/// `POST /v1/traces`.
async fn traces(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let (encoding, request) = match accept(&shared, &headers, &body) {
        Ok(accepted) => accepted,
        Err(refusal) => return refusal.into_response(),
    };
    match shared.export_traces(&request).await {
        Ok(response) => reply(encoding, &response),
        Err(Unavailable) => unavailable(),
    }
}

/// `POST /v1/logs`.
async fn logs(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let (encoding, request) = match accept(&shared, &headers, &body) {
        Ok(accepted) => accepted,
        Err(refusal) => return refusal.into_response(),
    };
    match shared.export_logs(&request).await {
        Ok(response) => reply(encoding, &response),
        Err(Unavailable) => unavailable(),
    }
}

/// `POST /v1/metrics`.
async fn metrics(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    match accept(&shared, &headers, &body) {
        Ok((encoding, request)) => reply(encoding, &shared.export_metrics(&request)),
        Err(refusal) => refusal.into_response(),
    }
}

fn note(reasons: &mut Vec<String>, reason: String) {
    if reasons.len() < MAX_REASONS && !reasons.contains(&reason) {
        reasons.push(reason);
    }
}

fn reply<M: prost::Message + serde::Serialize>(encoding: Encoding, response: &M) -> Response {
    (
        StatusCode::OK,
        [(CONTENT_TYPE, encoding.content_type())],
        encoding.encode(response),
    )
        .into_response()
}

/// Seconds an exporter is asked to wait before sending again after a 503.
const RETRY_AFTER_SECONDS: &str = "5";

fn unavailable() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(RETRY_AFTER, RETRY_AFTER_SECONDS)],
        format!("{UNAVAILABLE_MESSAGE}\n"),
    )
        .into_response()
}
