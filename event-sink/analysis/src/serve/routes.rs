//! The router: each page and its JSON twin read the same data ([`super::data`]) under
//! the query timeout; a failed or slow read answers with an error page (or JSON) and a
//! 4xx/5xx status, never ends the server.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, Request, State};
use axum::http::header::{
    HeaderName, HeaderValue, CONTENT_SECURITY_POLICY, X_CONTENT_TYPE_OPTIONS,
};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use axum::Router;
use bench_cli::token::BearerToken;
use clickhouse::Client;
use maud::Markup;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::data::{self, DataError};
use super::live::{Live, LiveFilter};
use super::{assets, auth, pages};
use crate::compare::CompareError;

/// No script but the viewer's own file, no inline script or style, nothing fetched
/// from elsewhere.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// What every handler shares.
#[derive(Debug)]
pub struct AppState {
    /// The database.
    pub client: Client,
    /// Longest a page's reads may take.
    pub query_timeout: Duration,
    /// Longest a page waits for an answer computed for the first time (`--page-wait-ms`).
    pub page_wait: Duration,
    /// `--runs-dir`.
    pub runs_dir: Option<PathBuf>,
    /// `--bearer-token`.
    pub token: Option<BearerToken>,
    /// The live feed.
    pub live: Arc<Live>,
    /// The experiments' standings computed so far.
    pub standings: data::StandingCache,
    /// The comparisons computed so far.
    pub comparisons: data::ComparisonCache,
    /// What is computed in the background.
    pub ahead: super::ahead::Ahead,
}

/// Every route.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(home))
        .route("/experiments/{name}", get(experiment))
        .route("/runs/{run_id}", get(run))
        .route("/tasks/{task_id}", get(task))
        .route("/compare", get(compare))
        .route("/api/experiments", get(api_experiments))
        .route("/api/experiments/{name}", get(api_experiment))
        .route("/api/runs/{run_id}", get(api_run))
        .route("/api/tasks/{task_id}", get(api_task))
        .route("/api/compare", get(api_compare))
        .route("/api/live", get(live))
        .route("/api/status", get(status))
        .route("/assets/live.js", get(assets::live_js))
        .route("/assets/style.css", get(assets::style_css))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            state.token.clone(),
            auth::require_token,
        ))
        .layer(middleware::from_fn(security_headers))
        .with_state(state)
}

async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(
        HeaderName::from_static("referrer-policy"),
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// Why a page has no data: its status and the message shown.
#[derive(Debug)]
pub struct Failure {
    status: StatusCode,
    message: String,
}

impl Failure {
    fn bad_request(message: String) -> Failure {
        Failure {
            status: StatusCode::BAD_REQUEST,
            message,
        }
    }

    fn internal(error: impl std::fmt::Display) -> Failure {
        Failure {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: error.to_string(),
        }
    }
}

impl From<DataError> for Failure {
    fn from(error: DataError) -> Failure {
        let status = match error.root() {
            DataError::NotFound(_) => StatusCode::NOT_FOUND,
            DataError::Compare(
                CompareError::UnknownPolicy { .. }
                | CompareError::WithComma(..)
                | CompareError::BadKeys(_),
            ) => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status.is_server_error() {
            tracing::warn!(error = %error, "a page's read failed");
        }
        Failure {
            status,
            message: error.to_string(),
        }
    }
}

/// `read` under the query timeout.
async fn load<T>(
    state: &AppState,
    read: impl Future<Output = Result<T, DataError>>,
) -> Result<T, Failure> {
    match tokio::time::timeout(state.query_timeout, read).await {
        Ok(result) => result.map_err(Failure::from),
        Err(_) => Err(Failure {
            status: StatusCode::GATEWAY_TIMEOUT,
            message: format!(
                "the database did not answer within {} ms",
                state.query_timeout.as_millis()
            ),
        }),
    }
}

/// A page: `render` of the data, or the error page.
fn page<T>(
    state: &AppState,
    head: pages::Head,
    result: Result<T, Failure>,
    render: impl FnOnce(&T) -> Markup,
) -> Response {
    let live = state.live.off();
    match result {
        Ok(data) => pages::layout(&head, live, render(&data)).into_response(),
        Err(failure) => (
            failure.status,
            pages::layout(&head.without_live(), live, pages::error(&failure.message)),
        )
            .into_response(),
    }
}

/// A JSON answer: the data, or `{"error": ...}` with the failure's status.
fn json<T: Serialize>(result: Result<T, Failure>) -> Response {
    match result {
        Ok(data) => Json(data).into_response(),
        Err(failure) => (
            failure.status,
            Json(serde_json::json!({ "error": failure.message })),
        )
            .into_response(),
    }
}

fn run_id(text: &str) -> Result<Uuid, Failure> {
    Uuid::parse_str(text).map_err(|e| Failure::bad_request(format!("{text:?} is no run id: {e}")))
}

async fn home(State(state): State<Arc<AppState>>) -> Response {
    let result = load(&state, data::experiments(&state.client)).await;
    page(&state, pages::Head::new("Experiments", ""), result, |d| {
        pages::home::render(d)
    })
}

async fn api_experiments(State(state): State<Arc<AppState>>) -> Response {
    json(load(&state, data::experiments(&state.client)).await)
}

/// `/experiments/{name}`'s data; the background then looks at the experiment (its
/// linked comparison computed ahead, once it was visited).
/// `wait`: how long a first computation of its standing is awaited (`None`: until it
/// ends).
async fn read_experiment(
    state: &AppState,
    name: &str,
    wait: Option<Duration>,
) -> Result<data::ExperimentPage, Failure> {
    let result = load(
        state,
        data::experiment(&state.client, &state.standings, name, wait),
    )
    .await;
    if result.is_ok() {
        state.ahead.wake(name);
    }
    result
}

async fn experiment(State(state): State<Arc<AppState>>, Path(name): Path<String>) -> Response {
    let result = read_experiment(&state, &name, Some(state.page_wait)).await;
    let head = pages::Head::new(&name, &pages::query(&[("experiment", &name)]));
    page(&state, head, result, pages::experiment::render)
}

async fn api_experiment(State(state): State<Arc<AppState>>, Path(name): Path<String>) -> Response {
    json(read_experiment(&state, &name, None).await)
}

async fn read_run(state: &AppState, id: &str) -> Result<data::run::RunPage, Failure> {
    let id = run_id(id)?;
    load(
        state,
        data::run::run(&state.client, id, state.runs_dir.as_deref()),
    )
    .await
}

async fn run(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    let result = read_run(&state, &id).await;
    let head = pages::Head::new(&format!("Run {id}"), &pages::query(&[("run", &id)]));
    page(&state, head, result, pages::run::render)
}

async fn api_run(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    json(read_run(&state, &id).await)
}

/// `/tasks/{task_id}?a=&b=`.
#[derive(Debug, Deserialize)]
struct Pair {
    a: Option<String>,
    b: Option<String>,
}

async fn read_task(state: &AppState, task: &str, pair: Pair) -> Result<data::TaskPage, Failure> {
    let pair = match (pair.a, pair.b) {
        (Some(a), Some(b)) => Some((run_id(&a)?, run_id(&b)?)),
        (None, None) => None,
        _ => {
            return Err(Failure::bad_request(
                "give both ?a= and ?b= (two run ids)".into(),
            ))
        }
    };
    load(state, data::task(&state.client, task, pair)).await
}

async fn task(
    State(state): State<Arc<AppState>>,
    Path(task): Path<String>,
    Query(pair): Query<Pair>,
) -> Response {
    let result = read_task(&state, &task, pair).await;
    let head = pages::Head::new(&format!("Task {task}"), &pages::query(&[("task", &task)]));
    page(&state, head, result, pages::task::render)
}

async fn api_task(
    State(state): State<Arc<AppState>>,
    Path(task): Path<String>,
    Query(pair): Query<Pair>,
) -> Response {
    json(read_task(&state, &task, pair).await)
}

/// `/compare?experiment=&baseline=`.
#[derive(Debug, Clone, Deserialize)]
struct CompareQuery {
    experiment: Option<String>,
    baseline: Option<String>,
}

/// `wait`: how long a first computation of the comparison is awaited (`None`: until it
/// ends); past it, `None`.
async fn read_compare(
    state: &AppState,
    q: CompareQuery,
    wait: Option<Duration>,
) -> Result<Option<data::Compared>, Failure> {
    let nonempty = |v: Option<String>| v.filter(|v| !v.is_empty());
    load(
        state,
        data::comparison(
            &state.client,
            &state.comparisons,
            nonempty(q.experiment),
            nonempty(q.baseline),
            wait,
        ),
    )
    .await
}

async fn compare(State(state): State<Arc<AppState>>, Query(q): Query<CompareQuery>) -> Response {
    let result = read_compare(&state, q.clone(), Some(state.page_wait)).await;
    let head = pages::Head::new("Compare", "");
    page(&state, head.without_live(), result, |c| {
        pages::compare::render(c.as_ref(), &q.experiment, &q.baseline)
    })
}

/// `compare --format json`'s object with `freshness` added.
async fn api_compare(
    State(state): State<Arc<AppState>>,
    Query(q): Query<CompareQuery>,
) -> Response {
    json(read_compare(&state, q, None).await.and_then(|c| {
        let c = c.ok_or_else(|| Failure::internal("a comparison awaited without a bound"))?;
        let mut object = serde_json::to_value(&c.answer.value).map_err(Failure::internal)?;
        object["freshness"] = serde_json::to_value(&c.freshness).map_err(Failure::internal)?;
        Ok(object)
    }))
}

async fn live(State(state): State<Arc<AppState>>, Query(filter): Query<LiveFilter>) -> Response {
    match state.live.listen(filter) {
        Some(sse) => sse.into_response(),
        None => json::<()>(Err(Failure {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: format!("live updates are off: {}", state.live.off().unwrap_or("?")),
        })),
    }
}

/// `/api/status`: whether live updates are on, how many browsers listen, how far the
/// background has come.
async fn status(State(state): State<Arc<AppState>>) -> Response {
    Json(serde_json::json!({
        "live": state.live.off().is_none(),
        "live_off_because": state.live.off(),
        "listeners": state.live.listeners(),
        "ahead": state.ahead.status(),
    }))
    .into_response()
}

async fn not_found(State(state): State<Arc<AppState>>) -> Response {
    let failure = Failure {
        status: StatusCode::NOT_FOUND,
        message: "no such page".into(),
    };
    page::<()>(
        &state,
        pages::Head::new("Not found", ""),
        Err(failure),
        |_| {
            maud::html! {}
        },
    )
}
