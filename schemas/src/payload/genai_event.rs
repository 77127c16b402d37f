//! `genai_event`: one OpenTelemetry GenAI event (a log record) received by
//! `agent-runner otlp`: captured prompts and completions, inference details, evaluation
//! results.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `genai_event`: one GenAI event of a run received as OpenTelemetry data, kept as its
/// producer sent it, beside the call it belongs to (never merged into that call's
/// `deliberation`, which was published first). `step_id`: that of the `step` and
/// `deliberation` of the inference span the event names (a UUID derived from its trace
/// and span ids), null when it names no span; `seq` and `seed` null.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GenAiEvent {
    /// The event's name (`gen_ai.client.inference.operation.details`,
    /// `gen_ai.user.message`, `gen_ai.choice`, `gen_ai.evaluation.result`, ...).
    pub name: String,
    /// The trace it belongs to (32 lowercase hex digits).
    pub trace_id: String,
    /// The span it belongs to (16 lowercase hex digits); null when it names none.
    pub span_id: Option<String>,
    /// The record's body as JSON text (`null` when it has none); OTLP's structured
    /// values become JSON arrays and objects.
    pub body: String,
    /// The record's attributes as a JSON object text, as for `body`.
    pub attributes: String,
    /// Whether `body` or `attributes` was cut to its limit (then not valid JSON).
    pub content_truncated: bool,
}
