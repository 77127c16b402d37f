//! `failure`: root cause analysis of a failure and the recoveries tried.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `failure`: what went wrong first, and what was tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Failure {
    /// The first root cause found.
    pub first_failure_root: FailureRoot,
    /// Recoveries tried, in order; empty when none was.
    pub recovery_attempts: Vec<RecoveryAttempt>,
    /// Where the failure left the run.
    pub final_error_state: FinalErrorState,
    /// Other circumstances that contributed, as text; may be empty.
    pub contributing_factors: Vec<String>,
    /// What could fix it, as text; may be empty.
    pub remediation_suggestions: Vec<String>,
}

/// The first root cause, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[schemars(transform = super::describe_tags("kind", None))]
pub enum FailureRoot {
    /// Building or compiling failed.
    Build {
        /// Class of the build error, e.g. a compiler error code.
        error_type: String,
        /// The command that failed.
        command: String,
    },
    /// A module or dependency could not be imported.
    Import {
        /// The module that was missing.
        missing_module: String,
        /// How it could be made available.
        suggested_fix: String,
    },
    /// A path did not exist or was outside what the agent may touch.
    Path {
        /// The path used.
        invalid_path: String,
        /// Where the file actually is or should be.
        expected_location: String,
    },
    /// A test fails only some of the time.
    Flake {
        /// The flaky test.
        flaky_test: String,
        /// Fraction of its runs that failed, 0..1.
        failure_rate: f64,
    },
    /// The change is wrong: the judge's tests fail after the submission.
    Semantic {
        /// What is wrong.
        logic_error: String,
        /// Evidence, e.g. the failing tests.
        context: String,
    },
    /// The agent's plan went wrong, e.g. it stopped before submitting.
    Planning {
        /// What went wrong.
        reasoning_error: String,
        /// The turn at which it showed.
        step_number: u32,
    },
    /// Needed information was missing from the context.
    Context {
        /// What was missing.
        missing_info: String,
        /// How pruning lost it.
        pruning_error: String,
    },
    /// A tool call failed.
    Tool {
        /// The tool.
        tool_name: String,
        /// Its error message.
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
    /// What was tried, e.g. `retry x2 (retry_policy)`.
    pub strategy: String,
    /// Whether it recovered.
    pub success: bool,
    /// Time it took, ms.
    pub time_spent_ms: u64,
    /// What else it changed, as text; may be empty.
    pub side_effects: Vec<String>,
}

/// Where the failure left the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FinalErrorState {
    /// Whether the run could go on after it.
    pub recoverable: bool,
    /// Short class of the error, e.g. `timeout`, `wrong_fix`, `early_stop`.
    pub error_category: String,
    /// Confidence in this analysis, 0..1 (1 when the runner observed it directly).
    pub confidence: f64,
    /// Earlier failures of the same kind in the run.
    pub similar_failures: u32,
}
