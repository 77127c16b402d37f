//! `tool_call`: one tool invocation and its footprint.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::envelope::Hash256;

/// `tool_call`: one tool invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    pub tool_name: String,
    /// SHA-256 of the canonical JSON of the arguments.
    pub tool_args_hash: Hash256,
    pub latency_ms: u64,
    pub retries: u32,
    pub exit_kind: ExitKind,
    /// Why the call failed; present for every `exit_kind` except `ok` and `deterministic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_message: Option<String>,
    pub evidence_footprint: EvidenceFootprint,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_feedback_score: Option<f64>,
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
    pub files_read: Vec<String>,
    pub files_modified: Vec<String>,
    pub lines_changed: u64,
    pub tests_added: u32,
    pub tests_modified: u32,
    pub bytes_read: u64,
    pub bytes_written: u64,
}
