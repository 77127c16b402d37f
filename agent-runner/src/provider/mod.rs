//! Model providers: the OpenAI-compatible chat-completions API that OpenRouter, vLLM,
//! LM Studio, Ollama and OpenAI all speak.
//!
//! This module owns the HTTP side of a model call: building the request, one attempt
//! under the per-call timeout, classifying what went wrong, retrying per the run's
//! `retry_policy`, and reading token counts from the reply. It knows nothing of prompts,
//! events or prices; the LLM policy ([`crate::policy::llm`]) turns its results into
//! `deliberation` events and `bench-pricing` prices them (and reads their token counts).
//!
//! - [`client`]: [`ChatClient`] (one attempt: chat completion, model listing), the wire
//!   messages, [`CallError`].
//! - [`check`]: the one call before the first run that tells a wrong URL, key or model.
//! - [`retry`]: [`with_retries`], the one place deciding what is retried.

pub(crate) mod check;
pub(crate) mod client;
pub(crate) mod retry;

pub(crate) use bench_pricing::TokenUsage;
pub use check::{check, CheckError};
pub use client::ProviderConfig;
pub(crate) use client::{
    CallError, ChatClient, ChatRequest, ClientError, Completion, FunctionCall, Message, ToolCall,
    API_KEY_ENV_VARS,
};
pub(crate) use retry::with_retries;
