//! `failure`: root cause analysis of a failure and the recoveries tried.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `failure`: what went wrong first, and what was tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Failure {
    pub first_failure_root: FailureRoot,
    pub recovery_attempts: Vec<RecoveryAttempt>,
    pub final_error_state: FinalErrorState,
    pub contributing_factors: Vec<String>,
    pub remediation_suggestions: Vec<String>,
}

/// The first root cause, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FailureRoot {
    Build {
        error_type: String,
        command: String,
    },
    Import {
        missing_module: String,
        suggested_fix: String,
    },
    Path {
        invalid_path: String,
        expected_location: String,
    },
    Flake {
        flaky_test: String,
        failure_rate: f64,
    },
    Semantic {
        logic_error: String,
        context: String,
    },
    Planning {
        reasoning_error: String,
        step_number: u32,
    },
    Context {
        missing_info: String,
        pruning_error: String,
    },
    Tool {
        tool_name: String,
        usage_error: String,
    },
    /// The model provider failed the run: an HTTP error or an unreachable endpoint that
    /// outlasted the retries, or too many calls in a row without an answer.
    Provider {
        /// The run's `provider` (as in `run_start` and `deliberation`).
        provider: String,
        /// What the last failed call got (`HTTP 500 ...`, `no answer within 300 ms`).
        api_error: String,
        /// Failed calls in a row when the run ended.
        failed_calls: u32,
    },
}

impl FailureRoot {
    /// The `kind` tag.
    pub const fn kind(&self) -> &'static str {
        match self {
            FailureRoot::Build { .. } => "build",
            FailureRoot::Import { .. } => "import",
            FailureRoot::Path { .. } => "path",
            FailureRoot::Flake { .. } => "flake",
            FailureRoot::Semantic { .. } => "semantic",
            FailureRoot::Planning { .. } => "planning",
            FailureRoot::Context { .. } => "context",
            FailureRoot::Tool { .. } => "tool",
            FailureRoot::Provider { .. } => "provider",
        }
    }
}

/// One attempt to recover.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecoveryAttempt {
    pub strategy: String,
    pub success: bool,
    pub time_spent_ms: u64,
    pub side_effects: Vec<String>,
}

/// Where the failure left the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FinalErrorState {
    pub recoverable: bool,
    pub error_category: String,
    pub confidence: f64,
    pub similar_failures: u32,
}
