//! `bench-analysis serve`: a read-only web viewer of the stored runs, with live updates.
//!
//! Every page is HTML that reads without JavaScript; each has a JSON twin under `/api/`
//! built from the same data (one struct per page, serialized or rendered). The one
//! script (an embedded asset, [`assets`]) listens to `/api/live` and re-fetches the page
//! it is on when an event of its subject arrives.
//!
//! # Layout
//!
//! - [`args`]: the flags ([`ServeArgs`]) and the validated [`ServeConfig`]; refusing a
//!   non-loopback address without `--bearer-token`.
//! - [`db`]: the viewer's own reads, bound with the client's `?` placeholders.
//! - [`data`]: what each page shows, as serializable structs built from [`db`] and
//!   [`crate::compare`]; the standings and comparisons kept (single flight, bounded,
//!   served stale while computed again).
//! - [`warm`]: computing the newest experiments' standings and comparisons (and those
//!   visited) in the background, at the start and when their runs change; [`ahead`]:
//!   its handle (what to look at now, how far it has come).
//! - [`pages`]: the HTML of each page (maud: every value escaped).
//! - [`routes`]: the router, the handlers and the errors they answer with.
//! - [`auth`]: the bearer token as a header or as a cookie set by `?token=`.
//! - [`live`]: one ephemeral NATS consumer on the events stream fanned out to
//!   Server-Sent Events, filtered per listener.
//! - [`assets`]: the script and the style sheet, compiled in.

pub(crate) mod ahead;
pub mod args;
pub(crate) mod assets;
pub(crate) mod auth;
pub(crate) mod data;
pub(crate) mod db;
pub(crate) mod live;
pub(crate) mod pages;
pub(crate) mod routes;
pub(crate) mod warm;

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use args::{ServeArgs, ServeConfig, ServeError};

/// Serves `config` until `shutdown`: binds its address, starts the live feed (or says
/// why there is none) and answers requests; requests under way are answered first.
pub async fn run(config: ServeConfig, shutdown: CancellationToken) -> Result<(), ServeError> {
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: config.listen,
            source,
        })?;
    serve(listener, config, shutdown).await
}

/// Serves `config` on `listener` (already bound) until `shutdown`.
pub async fn serve(
    listener: TcpListener,
    config: ServeConfig,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let (ahead, woken) = ahead::Ahead::new();
    let live = live::Live::start(&config, ahead.sender(), shutdown.clone()).await;
    let state = Arc::new(routes::AppState {
        client: config.clickhouse.client(),
        query_timeout: config.query_timeout,
        page_wait: config.page_wait,
        runs_dir: config.runs_dir.clone(),
        token: config.bearer_token.clone(),
        live,
        standings: data::StandingCache::new(config.kept_max),
        comparisons: data::ComparisonCache::new(config.kept_max),
        ahead,
    });
    warm::spawn(state.clone(), woken, config.ahead, shutdown.clone());
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "viewer listening on http://{addr}/");
    }
    axum::serve(listener, routes::router(state))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
        .map_err(ServeError::Serve)
}
