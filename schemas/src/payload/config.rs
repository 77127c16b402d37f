//! The run config: every knob that defines "one config" (its canonical JSON is `cfg_hash`):
//! the model, where it is called and how (endpoint, temperature, max tokens, prompt and
//! tool definitions by hash), the strategy and its parameters, the tools and the limits.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::canonical::Hash256;

/// The configuration a run executes under. `run_start` carries it (plus replay metadata) and
/// `optimizer_update` suggests one. `cfg_hash` is the SHA-256 of its canonical JSON.
///
/// A setting the producer did not state is null: a run this runner did not configure (an
/// imported trajectory, a run received as a trace) has null `strategy`, `max_iterations`,
/// `temperature`, `context_window`, `tool_timeout_ms`, `docker_image` and
/// `sandbox_limits.memory_mb` unless its producer states them. A scenario states every
/// one (`agent-runner` refuses a scenario without them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunConfig {
    /// Model name as the provider knows it, e.g. `openai/gpt-4o-mini`; `scripted` for
    /// scripted policies.
    pub model: String,
    /// Provider name, e.g. `openrouter`, `vllm`, `local`.
    pub provider: String,
    /// Context-management strategy (how the history sent to the model is kept small);
    /// null when not stated.
    pub strategy: Option<ContextStrategy>,
    /// The strategy's hyper-parameters; absent = none set.
    #[serde(default)]
    pub strategy_params: StrategyParams,
    /// Maximum agent iterations (turns) before the run is stopped; null when not stated.
    pub max_iterations: Option<u32>,
    /// Sampling temperature of the model; null when not stated.
    pub temperature: Option<f64>,
    /// Context window of the model, in tokens; null when not stated.
    pub context_window: Option<u32>,
    /// Fraction of the context window at which pruning starts (0..1).
    pub pruning_threshold: f64,
    /// Planner look-ahead depth (0 = no planner).
    pub planner_depth: u32,
    /// Debate rounds between agents (0 = no debate).
    pub debate_rounds: u32,
    /// Names of the tools the agent may call.
    pub available_tools: Vec<String>,
    /// Per tool call timeout, ms; null when not stated.
    pub tool_timeout_ms: Option<u64>,
    /// How failed calls are retried.
    pub retry_policy: RetryPolicy,
    /// Wall-clock limit of the whole run, ms.
    pub execution_timeout_ms: u64,
    /// Stop after this many consecutive judge runs without fewer failing tests.
    pub failing_tests_patience: u32,
    /// Stop when no file changed for this long, ms.
    pub no_progress_timeout_ms: u64,
    /// Sandbox image (or `local` for a scratch directory on the host); null when not
    /// stated.
    pub docker_image: Option<String>,
    /// Commit of the tool implementations.
    pub tools_commit: String,
    /// Resource limits of the sandbox.
    pub sandbox_limits: SandboxLimits,
    /// Cost limit of one run, USD; the run ends with `exit_cost` past it. Absent = no
    /// limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_limit_usd: Option<f64>,
    /// The endpoint the model calls go to: the provider's base URL with scheme and host
    /// lower-cased, the default port added and a trailing `/` trimmed
    /// (`http://127.0.0.1:8000/v1`); the host is kept as written, never resolved, so
    /// `localhost` and `127.0.0.1` differ. Absent for a policy that calls no model and
    /// when not known (an imported or traced run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// `max_tokens` of each completion; absent when the provider's default applies (and
    /// for a policy that calls no model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// SHA-256 of the system prompt text the model is given; absent for a policy that
    /// calls no model and when not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt_sha256: Option<Hash256>,
    /// SHA-256 of the tool definitions the model is given (their JSON, as sent); absent
    /// for a policy that calls no model and when not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_definitions_sha256: Option<Hash256>,
}

/// How failed tool and model calls are retried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RetryPolicy {
    /// Retries after the first attempt of one call (0 = never retry).
    pub max_retries: u32,
    /// Delay before the first retry, ms.
    pub backoff_ms: u64,
    /// Whether the delay doubles with every further retry.
    pub exponential_backoff: bool,
    /// Whether a failure that may pass on retry (a `flake`) is retried.
    pub retry_on_flake: bool,
    /// Whether a call that timed out is retried.
    pub retry_on_timeout: bool,
}

/// Resource limits of the sandbox a run executes in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxLimits {
    /// Memory (address space) of each sandboxed process, MiB; null when not stated.
    pub memory_mb: Option<u64>,
    /// CPU cores granted; the CPU-time limit is the run's execution time times this.
    pub cpu_cores: f64,
    /// Largest file a sandboxed process may write, MiB.
    pub disk_mb: u64,
    /// Whether sandboxed processes may reach the network.
    pub network_enabled: bool,
    /// Wall-clock limit of what runs in the sandbox, ms.
    pub execution_timeout_ms: u64,
}

/// Context-management strategies (as compared in studies of SWE-agent context management).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContextStrategy {
    /// Send the whole history.
    Raw,
    /// Keep the last M observations verbatim, replace older ones with a placeholder.
    ObservationMasking,
    /// Every N turns summarise older history with a model call, keep the last K turns.
    LlmSummary,
    /// Both of the above.
    Hybrid,
}

impl ContextStrategy {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            ContextStrategy::Raw => "raw",
            ContextStrategy::ObservationMasking => "observation_masking",
            ContextStrategy::LlmSummary => "llm_summary",
            ContextStrategy::Hybrid => "hybrid",
        }
    }

    /// Whether the strategy masks old observations (and reads `observation_window`).
    pub const fn masks(self) -> bool {
        matches!(
            self,
            ContextStrategy::ObservationMasking | ContextStrategy::Hybrid
        )
    }

    /// Whether the strategy summarises old turns (and reads `summary_interval`,
    /// `summary_keep` and `summarizer_model`).
    pub const fn summarises(self) -> bool {
        matches!(self, ContextStrategy::LlmSummary | ContextStrategy::Hybrid)
    }
}

impl RunConfig {
    /// The config of a run this runner did not configure (an imported trajectory, a run
    /// received as a trace): the model, provider and tools commit its producer stated,
    /// the settings that can be null null, every other setting at its "not applicable"
    /// value (0, false, empty), so that its `cfg_hash` changes only with what was stated.
    /// Callers set the settings their producer does state.
    pub fn unstated(model: String, provider: String, tools_commit: String) -> RunConfig {
        RunConfig {
            model,
            provider,
            strategy: None,
            strategy_params: StrategyParams::default(),
            max_iterations: None,
            temperature: None,
            context_window: None,
            pruning_threshold: 0.0,
            planner_depth: 0,
            debate_rounds: 0,
            available_tools: Vec::new(),
            tool_timeout_ms: None,
            retry_policy: RetryPolicy {
                max_retries: 0,
                backoff_ms: 0,
                exponential_backoff: false,
                retry_on_flake: false,
                retry_on_timeout: false,
            },
            execution_timeout_ms: 0,
            failing_tests_patience: 0,
            no_progress_timeout_ms: 0,
            docker_image: None,
            tools_commit,
            sandbox_limits: SandboxLimits {
                memory_mb: None,
                cpu_cores: 0.0,
                disk_mb: 0,
                network_enabled: false,
                execution_timeout_ms: 0,
            },
            cost_limit_usd: None,
            endpoint: None,
            max_tokens: None,
            system_prompt_sha256: None,
            tool_definitions_sha256: None,
        }
    }
}

/// Hyper-parameters of the context strategy; absent ones do not apply to the strategy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StrategyParams {
    /// `observation_masking`/`hybrid`: observations kept verbatim (M); absent when the
    /// strategy has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation_window: Option<u32>,
    /// `llm_summary`/`hybrid`: summarise every N turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_interval: Option<u32>,
    /// `llm_summary`/`hybrid`: turns kept verbatim after a summary (K < N).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_keep: Option<u32>,
    /// Model used for summaries; absent when it is the agent's own model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer_model: Option<String>,
}
