//! `tool_call`: one tool invocation and its footprint.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::canonical::Hash256;

/// `tool_call`: one tool invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    /// The tool, e.g. `bash`, `view`, `str_replace`.
    pub tool_name: String,
    /// The id the model or the agent gave the call, which its result answers (an
    /// OpenAI-style `tool_call_id`, OpenTelemetry's `gen_ai.tool.call.id`); absent when
    /// the call had none (a scripted action, an imported trajectory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// SHA-256 of the canonical JSON of the arguments.
    pub tool_args_hash: Hash256,
    /// Wall time of the call, retries included, ms. Null (or absent) when the producer
    /// did not time the call: an imported trajectory step without an execution time, an
    /// `exec` agent that sends none.
    #[serde(default)]
    pub latency_ms: Option<u64>,
    /// Retries after the first attempt. Null (or absent) when the producer did not count
    /// them: an `exec` agent that sends none, an imported trajectory, a trace (a span does
    /// not say how often the tool was tried).
    #[serde(default)]
    pub retries: Option<u32>,
    /// How the call ended.
    pub exit_kind: ExitKind,
    /// Why the call failed, at most 4096 chars; required for every `exit_kind` except `ok`
    /// and `deterministic`, optional for those.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_message: Option<String>,
    /// What the call read and changed.
    pub evidence_footprint: EvidenceFootprint,
    /// A user's rating of the call; absent when nobody rated it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_feedback_score: Option<f64>,
    /// How well the call did what the agent meant, 0..1; absent when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent_accuracy: Option<f64>,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExitKind {
    /// Succeeded.
    Ok,
    /// Failed, and would fail the same way again (e.g. a command exiting non-zero).
    Deterministic,
    /// Failed in a way that may pass on retry.
    Flake,
    /// Killed for memory.
    Oom,
    /// Killed for time.
    Timeout,
    /// Bad arguments from the agent.
    UserError,
    /// The tool itself broke.
    SystemError,
}

impl ExitKind {
    /// Whether the wire format requires an `exit_message` with this kind.
    pub const fn needs_message(self) -> bool {
        !matches!(self, ExitKind::Ok | ExitKind::Deterministic)
    }

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            ExitKind::Ok => "ok",
            ExitKind::Deterministic => "deterministic",
            ExitKind::Flake => "flake",
            ExitKind::Oom => "oom",
            ExitKind::Timeout => "timeout",
            ExitKind::UserError => "user_error",
            ExitKind::SystemError => "system_error",
        }
    }
}

/// What a tool call touched.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EvidenceFootprint {
    /// Paths read, relative to the task root.
    pub files_read: Vec<String>,
    /// Paths created, changed or deleted, relative to the task root.
    pub files_modified: Vec<String>,
    /// Lines added plus lines removed.
    pub lines_changed: u64,
    /// Test files created.
    pub tests_added: u32,
    /// Existing test files changed.
    pub tests_modified: u32,
    /// Bytes read from files.
    pub bytes_read: u64,
    /// Bytes written to files.
    pub bytes_written: u64,
}
