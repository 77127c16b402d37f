//! The OTLP/HTTP server: `POST /v1/traces` → auth → body ([`super::body`]) → events
//! ([`super::mapping`]) → the publisher → the reply.
//!
//! The reply is 200 only once every event of the request is acknowledged by JetStream or
//! fsync'd into the spool (a [`Receipt`] per event), so an exporter that got no answer
//! (the receiver died, the connection broke) sends the batch again and nothing is lost;
//! the copy carries the same event ids and is dropped downstream. Statuses: 400 malformed
//! body, 401 missing or wrong bearer token, 413 body over the limit, 415 unsupported
//! content type or encoding, 503 when the publisher has stopped (retryable, per the
//! OTLP/HTTP specification). Spans refused by the mapping (bad ids or times), and events
//! that can never be delivered (too large, quarantined), are counted and explained in
//! `partial_success`.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use bench_cli::token::BearerToken;
use bench_delivery::{DeliveryReport, Publisher, PublisherHandle, Settled};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceResponse,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::args::OtlpConfig;
use super::body::{self, BodyError, Encoding};
use super::mapping::Mapper;
use crate::error::{Error, Exit, OtlpError, Outcome};

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
    /// Events acknowledged or spooled.
    pub events: u64,
}

/// What `agent-runner otlp` reports when it stops.
#[derive(Debug, Clone)]
pub struct OtlpReport {
    /// What the receiver took.
    pub counts: Counts,
    /// What the publisher did with it.
    pub delivery: DeliveryReport,
}

impl fmt::Display for OtlpReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.counts;
        writeln!(
            f,
            "otlp: {} requests, {} spans ({} rejected), {} events",
            c.requests, c.spans, c.rejected_spans, c.events
        )?;
        writeln!(f, "{}", self.delivery)
    }
}

impl Outcome for OtlpReport {
    fn exit(&self) -> Exit {
        self.delivery.exit()
    }
}

/// Binds, starts the publisher, serves until `shutdown`, then drains the publisher.
pub async fn run(config: OtlpConfig, shutdown: CancellationToken) -> Result<OtlpReport, Error> {
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|source| OtlpError::Bind {
            addr: config.listen,
            source,
        })?;
    let publisher = Publisher::connect(&config.publish).await?;
    // A publisher that failed for good (spool full or broken) can keep nothing more: stop.
    let stop = shutdown.child_token();
    let failed = publisher.failed();
    let stop_on_failure = stop.clone();
    let watch = tokio::spawn(async move {
        failed.cancelled().await;
        stop_on_failure.cancel();
    });
    let counts = serve(listener, &config, publisher.handle(), stop).await;
    watch.abort();
    let delivery = publisher.finish().await?;
    Ok(OtlpReport {
        counts: counts?,
        delivery,
    })
}

/// Serves OTLP/HTTP on `listener`, publishing through `publisher`, until `shutdown`;
/// requests under way are answered first.
pub async fn serve(
    listener: TcpListener,
    config: &OtlpConfig,
    publisher: PublisherHandle,
    shutdown: CancellationToken,
) -> Result<Counts, OtlpError> {
    let shared = Arc::new(Shared {
        mapper: Mapper {
            host: config.host.clone(),
            prices: config.prices.clone(),
            experiment: config.experiment.clone(),
        },
        token: config.bearer_token.clone(),
        max_body_bytes: config.max_body_bytes,
        publisher,
        counters: Counters::default(),
    });
    let app = Router::new()
        .route("/v1/traces", post(export))
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .with_state(shared.clone());
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "OTLP/HTTP receiver listening on /v1/traces");
    }
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
        .map_err(OtlpError::Serve)?;
    Ok(shared.counters.snapshot())
}

/// What every request handler shares.
struct Shared {
    mapper: Mapper,
    token: Option<BearerToken>,
    max_body_bytes: usize,
    publisher: PublisherHandle,
    counters: Counters,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    spans: AtomicU64,
    rejected_spans: AtomicU64,
    events: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> Counts {
        Counts {
            requests: self.requests.load(Ordering::Relaxed),
            spans: self.spans.load(Ordering::Relaxed),
            rejected_spans: self.rejected_spans.load(Ordering::Relaxed),
            events: self.events.load(Ordering::Relaxed),
        }
    }
}

/// `POST /v1/traces`.
async fn export(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(token) = &shared.token {
        let given = headers.get(AUTHORIZATION).map(|v| v.as_bytes());
        if !given.is_some_and(|g| token.admits(g)) {
            return (
                StatusCode::UNAUTHORIZED,
                [(WWW_AUTHENTICATE, "Bearer")],
                "missing or wrong bearer token\n",
            )
                .into_response();
        }
    }
    let encoding = match body::encoding(&headers) {
        Ok(encoding) => encoding,
        Err(e) => return refuse(&e),
    };
    let request = match body::decode(&headers, encoding, &body, shared.max_body_bytes) {
        Ok(request) => request,
        Err(e) => return refuse(&e),
    };
    let mapped = shared.mapper.map(&request);
    let mut reasons = mapped.reasons;
    // Spans with an event that can never be delivered.
    let mut undeliverable = BTreeSet::new();
    let mut receipts = Vec::with_capacity(mapped.events.len());
    for (span, mut event) in mapped.events {
        match event.enforce_limits() {
            Ok(bytes) => match shared.publisher.send_tracked(&event, Bytes::from(bytes)) {
                Some(receipt) => receipts.push((span, receipt)),
                None => return unavailable(),
            },
            Err(e) => {
                undeliverable.insert(span);
                note(&mut reasons, format!("{} event: {e}", event.event_type()));
            }
        }
    }
    let mut delivered = 0;
    for (span, receipt) in receipts {
        match receipt.await {
            Ok(Settled::Acked | Settled::Spooled) => delivered += 1,
            Ok(Settled::Quarantined) => {
                undeliverable.insert(span);
                note(
                    &mut reasons,
                    "an event was refused by the broker for good (see `agent-runner spool status`)"
                        .to_owned(),
                );
            }
            // The publisher stopped before keeping it: the exporter must send again.
            Err(_) => return unavailable(),
        }
    }
    let rejected = mapped.rejected + undeliverable.len() as u64;
    let c = &shared.counters;
    c.requests.fetch_add(1, Ordering::Relaxed);
    c.spans
        .fetch_add(mapped.spans.saturating_sub(rejected), Ordering::Relaxed);
    c.rejected_spans.fetch_add(rejected, Ordering::Relaxed);
    c.events.fetch_add(delivered, Ordering::Relaxed);
    let response = ExportTraceServiceResponse {
        partial_success: (rejected > 0).then(|| ExportTracePartialSuccess {
            rejected_spans: i64::try_from(rejected).unwrap_or(i64::MAX),
            error_message: reasons.join("; "),
        }),
    };
    reply(StatusCode::OK, encoding, &response)
}

fn note(reasons: &mut Vec<String>, reason: String) {
    if reasons.len() < MAX_REASONS && !reasons.contains(&reason) {
        reasons.push(reason);
    }
}

fn reply(
    status: StatusCode,
    encoding: Encoding,
    response: &ExportTraceServiceResponse,
) -> Response {
    (
        status,
        [(CONTENT_TYPE, encoding.content_type())],
        encoding.encode(response),
    )
        .into_response()
}

fn refuse(error: &BodyError) -> Response {
    (error.status(), format!("{error}\n")).into_response()
}

fn unavailable() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        "the publisher has stopped; send again later\n",
    )
        .into_response()
}
