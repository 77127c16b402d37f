//! [`ToolOutcome`]: what one tool call returns to the policy and records in its
//! `tool_call` event.

use std::time::Duration;

use bench_sandbox::PathError;
use bench_schemas::{EvidenceFootprint, ExitKind};

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// What the policy sees (tool output, or the error message).
    pub observation: String,
    /// How the call ended.
    pub exit_kind: ExitKind,
    /// Why it failed, for every kind but `ok` and `deterministic`.
    pub message: Option<String>,
    /// What it touched.
    pub footprint: EvidenceFootprint,
    /// The agent submitted: the run ends and is judged.
    pub submitted: bool,
    /// The agent-supplied path that was refused or missing (a `path` failure root).
    pub bad_path: Option<String>,
    /// Attempts beyond the first (retry policy: timeouts).
    pub retries: u32,
    /// Wall time of the call, retries included.
    pub latency: Duration,
}

impl ToolOutcome {
    /// A call that did its job.
    pub fn done(observation: String, footprint: EvidenceFootprint) -> Self {
        ToolOutcome {
            observation,
            exit_kind: ExitKind::Ok,
            message: None,
            footprint,
            submitted: false,
            bad_path: None,
            retries: 0,
            latency: Duration::ZERO,
        }
    }

    /// A failed call; the message is also the observation.
    pub fn failed(kind: ExitKind, message: String) -> Self {
        ToolOutcome {
            observation: format!("error: {message}\n"),
            exit_kind: kind,
            message: Some(message),
            ..ToolOutcome::done(String::new(), EvidenceFootprint::default())
        }
    }

    /// The path was refused by the sandbox.
    pub fn path_error(raw: &str, error: &PathError) -> Self {
        ToolOutcome {
            bad_path: Some(raw.to_owned()),
            ..ToolOutcome::failed(ExitKind::UserError, error.to_string())
        }
    }

    /// The path does not exist.
    pub fn missing_path(raw: &str) -> Self {
        ToolOutcome {
            bad_path: Some(raw.to_owned()),
            ..ToolOutcome::failed(
                ExitKind::UserError,
                format!("{raw}: no such file or directory"),
            )
        }
    }

    /// Whether the call is a tool error: its `exit_kind` is not `ok`, a command exiting
    /// non-zero (`deterministic`) included. The one definition behind the call's
    /// `failure` event, `run_stop.tool_errors` and the `tool_errors` query.
    pub fn is_error(&self) -> bool {
        self.exit_kind != ExitKind::Ok
    }
}
