//! [`OpenAiServer`]: a stand-in for an OpenAI-compatible provider (OpenRouter, vLLM,
//! Ollama, ...) on a free loopback port, since no hosted model is reachable from tests.
//!
//! It answers `POST .../chat/completions` from a script (a closure given each request
//! body, returning a [`Reply`]: tool calls, text, usage blocks in any provider's shape,
//! delays, HTTP errors, bodies that are not JSON), serves a model listing at
//! `GET .../models` (`/api/v1/models` in the OpenRouter shape, `/v1/models`), and records
//! every request it received so tests can check the messages actually sent.
//!
//! It runs on its own thread with its own tokio runtime, so sync and async tests use it
//! alike; dropping it stops the server (requests still sleeping in a delay are dropped).

use std::collections::VecDeque;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::oneshot;

/// What the stand-in answers to one chat-completions request.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    body: Body,
    delay: Duration,
    retry_after: Option<u64>,
}

#[derive(Debug, Clone)]
enum Body {
    Json(Value),
    Raw(String),
}

/// Usage block of replies that do not set one.
pub fn default_usage() -> Value {
    json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120})
}

impl Reply {
    /// An assistant message with `content` and function calls `(name, arguments text)`
    /// (the text may be malformed JSON on purpose).
    pub fn message(content: Option<&str>, calls: &[(&str, &str)]) -> Reply {
        let tool_calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, arguments))| {
                json!({
                    "id": format!("call_{i}_{}", next_id()),
                    "type": "function",
                    "function": {"name": name, "arguments": arguments}
                })
            })
            .collect();
        let mut message = json!({"role": "assistant", "content": content});
        if !tool_calls.is_empty() {
            message["tool_calls"] = Value::Array(tool_calls);
        }
        Reply {
            status: 200,
            body: Body::Json(json!({
                "id": format!("chatcmpl-{}", next_id()),
                "object": "chat.completion",
                "model": "stand-in",
                "choices": [{"index": 0, "message": message, "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" }}],
                "usage": default_usage()
            })),
            delay: Duration::ZERO,
            retry_after: None,
        }
    }

    /// One function call with JSON `arguments`.
    pub fn call(name: &str, arguments: &Value) -> Reply {
        Reply::message(None, &[(name, &arguments.to_string())])
    }

    /// A text-only answer.
    pub fn text(content: &str) -> Reply {
        Reply::message(Some(content), &[])
    }

    /// An HTTP error with an OpenAI-shaped error body.
    pub fn error(status: u16, message: &str) -> Reply {
        Reply {
            status,
            body: Body::Json(
                json!({"error": {"message": message, "type": "stand_in", "code": status}}),
            ),
            delay: Duration::ZERO,
            retry_after: None,
        }
    }

    /// A 200 whose body is `body` verbatim (e.g. not JSON at all).
    pub fn raw(body: &str) -> Reply {
        Reply {
            status: 200,
            body: Body::Raw(body.to_owned()),
            delay: Duration::ZERO,
            retry_after: None,
        }
    }

    /// Replaces the usage block (any provider's shape).
    pub fn usage(mut self, usage: Value) -> Reply {
        if let Body::Json(body) = &mut self.body {
            body["usage"] = usage;
        }
        self
    }

    /// Names `model` as the model that answered (the stand-in says `stand-in` otherwise).
    pub fn model(mut self, model: &str) -> Reply {
        if let Body::Json(body) = &mut self.body {
            body["model"] = Value::from(model);
        }
        self
    }

    /// Answers only after `delay`.
    pub fn delayed(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }

    /// Sends `Retry-After: <seconds>`.
    pub fn retry_after(mut self, seconds: u64) -> Reply {
        self.retry_after = Some(seconds);
        self
    }
}

fn next_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// One request the stand-in received.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The HTTP method, e.g. `POST`.
    pub method: String,
    /// The request path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The body as JSON (`Null` when empty, a string when it was not JSON).
    pub body: Value,
}

impl Recorded {
    /// Whether it is a chat-completions request.
    pub fn is_chat(&self) -> bool {
        self.method == "POST" && self.path.ends_with("/chat/completions")
    }
}

type Script = Box<dyn FnMut(&Value) -> Reply + Send>;

struct Shared {
    script: Mutex<Script>,
    models: Value,
    requests: Mutex<Vec<Recorded>>,
}

/// A running stand-in provider; stopped on drop.
pub struct OpenAiServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for OpenAiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking script must not hide the requests from the test's messages.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl OpenAiServer {
    /// Starts a server answering chat requests with `script(body)` and listing `models`
    /// (`{"data": [...]}`) at `/models`.
    pub fn start(models: Value, script: impl FnMut(&Value) -> Reply + Send + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let addr = listener.local_addr().expect("listener address");
        let shared = Arc::new(Shared {
            script: Mutex::new(Box::new(script)),
            models,
            requests: Mutex::new(Vec::new()),
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let state = shared.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("stand-in runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                let app = Router::new().fallback(handle).with_state(state);
                tokio::select! {
                    served = axum::serve(listener, app) => {
                        if let Err(e) = served {
                            eprintln!("openai stand-in stopped: {e}");
                        }
                    }
                    _ = stopped => {}
                }
            });
        });
        OpenAiServer {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Answers chat requests with `replies` in order, then with HTTP 500.
    pub fn with_replies(models: Value, replies: impl IntoIterator<Item = Reply>) -> Self {
        let mut queue: VecDeque<Reply> = replies.into_iter().collect();
        OpenAiServer::start(models, move |_| {
            queue
                .pop_front()
                .unwrap_or_else(|| Reply::error(500, "stand-in script exhausted"))
        })
    }

    /// Base URL in the OpenRouter style (`http://127.0.0.1:<port>/api/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/api/v1", self.addr)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// The bodies of the chat-completions requests received so far.
    pub fn chat_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(Recorded::is_chat)
            .map(|r| r.body)
            .collect()
    }
}

impl Drop for OpenAiServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let json_body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()))
    };
    let recorded = Recorded {
        method: method.to_string(),
        path: path.clone(),
        body: json_body,
    };
    lock(&shared.requests).push(recorded.clone());

    if method == Method::GET && path.ends_with("/models") {
        return json_response(StatusCode::OK, shared.models.to_string(), None);
    }
    if !recorded.is_chat() {
        return (StatusCode::NOT_FOUND, format!("no route {method} {path}")).into_response();
    }
    let reply = {
        let mut script = lock(&shared.script);
        (script)(&recorded.body)
    };
    tokio::time::sleep(reply.delay).await;
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let text = match reply.body {
        Body::Json(v) => v.to_string(),
        Body::Raw(s) => s,
    };
    json_response(status, text, reply.retry_after)
}

fn json_response(status: StatusCode, body: String, retry_after: Option<u64>) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(seconds) = retry_after {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    (status, headers, body).into_response()
}
