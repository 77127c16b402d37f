//! The SWE-agent trajectory file (`<instance_id>.traj`, JSON), as far as the importer
//! reads it. Lenient: SWE-agent versions differ in which keys they write, so every field
//! has a default and unknown keys are ignored; only "not a JSON object with a
//! `trajectory` array" is an error.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A whole `.traj` file.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Trajectory {
    /// One entry per agent step, in order.
    pub trajectory: Vec<TrajStep>,
    /// The chat messages exchanged with the model (system, user, assistant, tool).
    #[serde(default)]
    pub history: Vec<HistoryMessage>,
    /// Totals and the outcome.
    #[serde(default)]
    pub info: Info,
    /// The config SWE-agent ran with: a JSON string (1.x) or an object.
    #[serde(default)]
    pub replay_config: Option<Value>,
    /// The environment name SWE-agent ran in.
    #[serde(default, deserialize_with = "null_default")]
    pub environment: String,
}

/// One agent step.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TrajStep {
    /// The command the agent ran, e.g. `find_file "validators.py"`.
    #[serde(default, deserialize_with = "null_default")]
    pub action: String,
    /// What the environment answered.
    #[serde(default, deserialize_with = "null_default")]
    pub observation: String,
    /// The model's reasoning before the action.
    #[serde(default, deserialize_with = "null_default")]
    pub thought: String,
    /// Seconds the action took in the environment; `None` when the step does not say
    /// (absent or null).
    #[serde(default)]
    pub execution_time: Option<f64>,
}

/// One chat message of `history`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct HistoryMessage {
    /// `system`, `user`, `assistant` or `tool`.
    #[serde(default, deserialize_with = "null_default")]
    pub role: String,
}

/// `info`: totals and outcome.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Info {
    #[serde(default)]
    pub model_stats: ModelStats,
    /// e.g. `submitted`, `exit_cost`, `submitted (exit_context)`.
    #[serde(default, deserialize_with = "null_default")]
    pub exit_status: String,
    /// The patch the agent submitted (a unified diff), if any.
    #[serde(default, deserialize_with = "null_default")]
    pub submission: String,
    #[serde(default, deserialize_with = "null_default")]
    pub swe_agent_version: String,
}

/// `info.model_stats`: totals over the run's model calls; `None` where the file has no
/// value (absent or `null`), which stays unknown rather than 0.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ModelStats {
    /// USD spent on model calls.
    #[serde(default)]
    pub instance_cost: Option<f64>,
    /// Prompt tokens sent.
    #[serde(default)]
    pub tokens_sent: Option<u64>,
    /// Completion tokens received.
    #[serde(default)]
    pub tokens_received: Option<u64>,
    /// Model calls.
    #[serde(default)]
    pub api_calls: Option<u32>,
}

impl ModelStats {
    /// Tokens sent plus received over a run of `api_calls` model calls (`None`:
    /// unknown); `None` unless the file gives both, and when it gives 0 sent for a run
    /// that may have made calls: no call sends an empty prompt, so SWE-agent did not count
    /// them.
    pub fn total_tokens(&self, api_calls: Option<u32>) -> Option<u64> {
        let sent = self
            .tokens_sent
            .filter(|&t| t > 0 || api_calls == Some(0))?;
        Some(sent.saturating_add(self.tokens_received?))
    }

    /// USD spent over a run of `api_calls` model calls (`None`: unknown); `None` when the
    /// file has no cost, and when it says $0 for a run that may have made calls:
    /// SWE-agent writes 0 for a model it has no price for, which is an unknown cost, not
    /// a free one.
    pub fn cost_usd(&self, api_calls: Option<u32>) -> Option<f64> {
        self.instance_cost
            .filter(|&c| c > 0.0 || api_calls == Some(0))
    }
}

impl Trajectory {
    /// `replay_config` as an object (`agent.model.name`, `env.deployment.image`, ...), if
    /// present and readable.
    pub fn replay_config(&self) -> Option<Value> {
        match &self.replay_config {
            Some(Value::String(text)) => serde_json::from_str::<Value>(text).ok(),
            Some(other) => Some(other.clone()),
            None => None,
        }
    }

    /// Model calls: `model_stats.api_calls` when it counts some, else the assistant
    /// messages of `history` when there are any, else a stated 0 for a run that took no
    /// step; `None` (unknown) otherwise: a run that took steps made calls nobody counted.
    pub fn api_calls(&self) -> Option<u32> {
        let answered = self
            .history
            .iter()
            .filter(|m| m.role == "assistant")
            .count();
        match self.info.model_stats.api_calls {
            Some(n) if n > 0 => Some(n),
            _ if answered > 0 => Some(u32::try_from(answered).unwrap_or(u32::MAX)),
            stated if self.trajectory.is_empty() => stated,
            _ => None,
        }
    }
}

/// `null` reads as the type's default (SWE-agent writes `null` for absent values).
fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}
