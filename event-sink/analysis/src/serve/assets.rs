//! The viewer's static files, compiled into the binary: no CDN, no network fetch.

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};

/// The one script: live updates (see `assets/live.js`).
const LIVE_JS: &str = include_str!("assets/live.js");
/// The style sheet.
const STYLE_CSS: &str = include_str!("assets/style.css");

/// `/assets/live.js`.
pub async fn live_js() -> Response {
    asset("text/javascript; charset=utf-8", LIVE_JS)
}

/// `/assets/style.css`.
pub async fn style_css() -> Response {
    asset("text/css; charset=utf-8", STYLE_CSS)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [(CONTENT_TYPE, content_type), (CACHE_CONTROL, "no-cache")],
        body,
    )
        .into_response()
}
