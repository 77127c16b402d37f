//! `--bearer-token`: every request carries it as `Authorization: Bearer <token>` or in
//! the cookie that opening any page with `?token=<token>` sets (a browser cannot send a
//! header with a link). Without a token (only allowed on loopback) everything is open.

use axum::extract::{Query, Request, State};
use axum::http::header::{AUTHORIZATION, COOKIE, LOCATION, SET_COOKIE, WWW_AUTHENTICATE};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use bench_cli::token::BearerToken;

use super::pages::encode;

/// The cookie's name; its value is the token in hex (any token fits a cookie then).
const COOKIE_NAME: &str = "bench_viewer_token";

/// Admits a request with the token, turns a `?token=` login into the cookie (and a
/// redirect to the same page without it), refuses anything else with 401.
pub async fn require_token(
    State(token): State<Option<BearerToken>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(token) = &token else {
        return next.run(request).await;
    };
    if let Some(login) = login(&request) {
        if token.is(login.given.as_bytes()) {
            let cookie = format!(
                "{COOKIE_NAME}={}; Path=/; HttpOnly; SameSite=Strict",
                hex::encode(login.given.as_bytes())
            );
            return (
                StatusCode::SEE_OTHER,
                [(LOCATION, login.rest), (SET_COOKIE, cookie)],
            )
                .into_response();
        }
    }
    let headers = request.headers();
    let by_header = headers
        .get(AUTHORIZATION)
        .is_some_and(|v| token.admits(v.as_bytes()));
    let by_cookie = headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().strip_prefix(COOKIE_NAME)?.strip_prefix('='))
        .filter_map(|value| hex::decode(value).ok())
        .any(|given| token.is(&given));
    if by_header || by_cookie {
        return next.run(request).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(WWW_AUTHENTICATE, "Bearer")],
        "missing or wrong bearer token: send Authorization: Bearer <token>, or open a page with ?token=<token> once\n",
    )
        .into_response()
}

/// A `?token=` in the query: the token given and the URL without it.
struct Login {
    given: String,
    rest: String,
}

fn login(request: &Request) -> Option<Login> {
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(request.uri()).ok()?;
    let given = pairs.iter().find(|(k, _)| k == "token")?.1.clone();
    let kept: Vec<String> = pairs
        .iter()
        .filter(|(k, _)| k != "token")
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    let path = request.uri().path();
    let rest = if kept.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", kept.join("&"))
    };
    Some(Login { given, rest })
}
