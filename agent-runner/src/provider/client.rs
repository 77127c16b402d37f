//! One HTTP attempt against an OpenAI-compatible API: `POST {base}/chat/completions` with
//! tools (function calling), and `GET {base}/models`. Each attempt runs under the per-call
//! timeout and ends in a [`Completion`] or a classified [`CallError`]; retrying is
//! [`super::retry`]'s job, pricing is `bench-pricing`'s.

use std::sync::Once;
use std::time::Duration;

use secrecy::{ExposeSecret as _, SecretString};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::TokenUsage;

/// Environment variables tried, in order, for the API key when no name is given.
pub const API_KEY_ENV_VARS: [&str; 3] =
    ["BENCH_LLM_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"];

/// Where and how to call the provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// Base URL of the API, up to and including the version segment:
    /// `https://openrouter.ai/api/v1`, `http://localhost:8000/v1` (vLLM),
    /// `http://localhost:11434/v1` (Ollama).
    pub base_url: String,
    /// Bearer token; `None` sends no `Authorization` header (local servers). Never logged.
    pub api_key: Option<SecretString>,
    /// Limit of one HTTP attempt, connection to last body byte. Default 30 s.
    pub timeout: Duration,
    /// `max_tokens` of each completion; `None` = the provider's default.
    pub max_tokens: Option<u32>,
}

/// One chat message, as the API takes it (and as an assistant reply comes back).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        #[serde(default)]
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

impl Message {
    /// The text the message carries (for size estimates).
    pub fn text_len(&self) -> usize {
        match self {
            Message::System { content } | Message::User { content } => content.len(),
            Message::Tool { content, .. } => content.len(),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                content.as_deref().map_or(0, str::len)
                    + tool_calls
                        .iter()
                        .map(|c| c.function.name.len() + c.function.arguments.len())
                        .sum::<usize>()
            }
        }
    }
}

/// A function call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Some local servers omit it; the policy then assigns one.
    #[serde(default)]
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
}

/// Name and arguments of a function call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// JSON text, as the model wrote it (possibly malformed). Servers that send an object
    /// instead of a string (some Ollama versions) get it serialized back to text.
    #[serde(default, deserialize_with = "arguments_text")]
    pub arguments: String,
}

fn function_type() -> String {
    "function".to_owned()
}

fn arguments_text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    })
}

/// A chat-completions request.
#[derive(Debug, Clone, Serialize)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    /// Function definitions (`{"type": "function", "function": {...}}`); empty = none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Value>,
    /// Omitted when the config states none: the provider's default applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling seed, where the provider honours one.
    pub seed: u64,
}

/// The assistant's reply to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// Text content, if any.
    pub content: Option<String>,
    /// Function calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Token counts; `None` when the reply reported none (unknown, never 0).
    pub usage: Option<TokenUsage>,
    /// The reply as the model produced it (the `message` object's JSON), for
    /// `deliberation.raw_output`.
    pub raw: String,
}

/// Why one attempt produced no [`Completion`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    #[error("no answer within {} ms", .0.as_millis())]
    Timeout(Duration),
    #[error("cannot reach the provider: {0}")]
    Transport(String),
    #[error("provider answered HTTP {status}: {message}")]
    Status {
        status: u16,
        message: String,
        /// The provider's `Retry-After`, when it sent one.
        retry_after: Option<Duration>,
    },
    #[error("the prompt exceeds the model's context window: {0}")]
    ContextLength(String),
    #[error("provider reply is not a chat completion: {error}")]
    Malformed {
        error: String,
        /// The body as received, for `raw_output`.
        body: String,
    },
}

/// A client of one provider.
#[derive(Debug, Clone)]
pub struct ChatClient {
    http: reqwest::Client,
    config: ProviderConfig,
}

/// Creating the HTTP client failed (TLS setup).
#[derive(Debug, thiserror::Error)]
#[error("cannot create the HTTP client: {0}")]
pub struct ClientError(#[from] reqwest::Error);

impl ChatClient {
    /// A client for `config`.
    pub fn new(config: ProviderConfig) -> Result<ChatClient, ClientError> {
        install_crypto_provider();
        let http = reqwest::Client::builder().build()?;
        Ok(ChatClient { http, config })
    }

    /// The provider settings.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// One chat-completions attempt.
    pub async fn chat(&self, request: &ChatRequest) -> Result<Completion, CallError> {
        let body = self
            .send(self.http.post(self.url("chat/completions")).json(request))
            .await?;
        parse_completion(&body)
    }

    /// The provider's model listing (`GET {base}/models`), as JSON.
    pub async fn models(&self) -> Result<Value, CallError> {
        let body = self.send(self.http.get(self.url("models"))).await?;
        serde_json::from_str(&body).map_err(|e| CallError::Malformed {
            error: e.to_string(),
            body,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.config.base_url.trim_end_matches('/'))
    }

    /// Sends under the timeout; returns the body of a 2xx answer.
    async fn send(&self, request: reqwest::RequestBuilder) -> Result<String, CallError> {
        let request = match &self.config.api_key {
            Some(key) => request.bearer_auth(key.expose_secret()),
            None => request,
        }
        .header("X-Title", "benchstream");
        let attempt = async {
            let response = request.send().await.map_err(transport)?;
            let status = response.status();
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let body = response.text().await.map_err(transport)?;
            if status.is_success() {
                Ok(body)
            } else {
                Err(status_error(status.as_u16(), &body, retry_after))
            }
        };
        tokio::time::timeout(self.config.timeout, attempt)
            .await
            .unwrap_or(Err(CallError::Timeout(self.config.timeout)))
    }
}

/// reqwest with `rustls-no-provider` needs a process-wide crypto provider before the
/// first client is built; ring builds without cmake (aws-lc-rs does not).
fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err = the process installed one already, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

fn transport(e: reqwest::Error) -> CallError {
    // The chain holds the useful part ("connection refused"); the URL is the provider's,
    // which whoever reports the error names once.
    let e = e.without_url();
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        message = format!("{message}: {s}");
        source = s.source();
    }
    CallError::Transport(message)
}

/// The error a provider returned, in the OpenAI shape `{"error": {"message", "code"}}`
/// or as plain text.
fn status_error(status: u16, body: &str, retry_after: Option<Duration>) -> CallError {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let message = error
        .and_then(|e| {
            e.get("message")
                .and_then(Value::as_str)
                .or_else(|| e.as_str())
        })
        .unwrap_or(body)
        .to_owned();
    let code = error
        .and_then(|e| e.get("code"))
        .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned))
        .unwrap_or_default();
    if is_context_overflow(&code, &message) {
        return CallError::ContextLength(message);
    }
    CallError::Status {
        status,
        message,
        retry_after,
    }
}

/// OpenAI sends `code: context_length_exceeded`; vLLM, OpenRouter and Ollama only say so
/// in the message ("maximum context length", "context length").
fn is_context_overflow(code: &str, message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    code == "context_length_exceeded"
        || message.contains("context_length_exceeded")
        || message.contains("maximum context length")
        || message.contains("context length")
        || message.contains("context window")
}

#[derive(Deserialize)]
struct ChatCompletion {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Value,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    message: Value,
}

#[derive(Deserialize)]
struct ReplyMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCall>>,
}

fn parse_completion(body: &str) -> Result<Completion, CallError> {
    let malformed = |error: String| CallError::Malformed {
        error,
        body: body.to_owned(),
    };
    let completion: ChatCompletion =
        serde_json::from_str(body).map_err(|e| malformed(e.to_string()))?;
    // OpenRouter reports some upstream failures as a 200 with an `error` object.
    if let (Some(error), true) = (&completion.error, completion.choices.is_empty()) {
        let status = error
            .get("code")
            .and_then(Value::as_u64)
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or(502);
        return Err(status_error(
            status,
            &serde_json::json!({ "error": error }).to_string(),
            None,
        ));
    }
    let choice = completion
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| malformed("no choices".to_owned()))?;
    let message: ReplyMessage =
        serde_json::from_value(choice.message.clone()).map_err(|e| malformed(e.to_string()))?;
    Ok(Completion {
        content: message.content.filter(|c| !c.is_empty()),
        tool_calls: message.tool_calls.unwrap_or_default(),
        usage: TokenUsage::from_usage(&completion.usage),
        raw: choice.message.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_with_tool_calls_parses() {
        let body = r#"{"choices":[{"message":{"role":"assistant","content":null,
            "tool_calls":[{"id":"c1","type":"function","function":{"name":"view","arguments":"{\"path\":\"a\"}"}},
                          {"function":{"name":"submit","arguments":{}}}]}}],
            "usage":{"prompt_tokens":10,"completion_tokens":5}}"#;
        let c = parse_completion(body).expect("parses");
        assert_eq!(c.content, None);
        assert_eq!(c.tool_calls.len(), 2);
        assert_eq!(c.tool_calls[0].function.arguments, r#"{"path":"a"}"#);
        assert_eq!(
            (
                c.tool_calls[1].id.as_str(),
                c.tool_calls[1].function.arguments.as_str()
            ),
            ("", "{}")
        );
        let usage = c.usage.expect("usage reported");
        assert_eq!((usage.input, usage.output), (10, 5));
    }

    #[test]
    fn broken_bodies_are_malformed() {
        for body in ["{not json", "{\"choices\": []}", "[]"] {
            assert!(
                matches!(parse_completion(body), Err(CallError::Malformed { .. })),
                "{body}"
            );
        }
    }

    #[test]
    fn errors_are_classified() {
        let overflow = r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#;
        assert!(matches!(
            status_error(400, overflow, None),
            CallError::ContextLength(_)
        ));
        let vllm = r#"{"object":"error","message":"x","error":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens"}"#;
        assert!(matches!(
            status_error(400, vllm, None),
            CallError::ContextLength(_)
        ));
        assert!(matches!(
            status_error(429, "slow down", Some(Duration::from_secs(2))),
            CallError::Status {
                status: 429,
                retry_after: Some(_),
                ..
            }
        ));
        let in_200 = r#"{"error":{"message":"upstream overloaded","code":503}}"#;
        assert!(matches!(
            parse_completion(in_200),
            Err(CallError::Status { status: 503, .. })
        ));
    }
}
