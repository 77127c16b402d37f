//! `optimizer_update`: a suggestion from the sweep optimizer.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use uuid::Uuid;

use super::config::RunConfig;

/// `optimizer_update`: the next config an optimizer suggests, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OptimizerUpdate {
    /// The config to run next.
    pub suggested_config: RunConfig,
    /// The optimizer's confidence in its estimate for the suggested config, 0..1.
    pub confidence: f64,
    /// Expected gain of the optimizer's objective (reward) over the best config so far, ≥ 0.
    pub expected_improvement: f64,
    /// 0 = pure exploitation, 1 = pure exploration.
    pub exploration_vs_exploitation: f64,
    /// Why this config, as text.
    pub reasoning: String,
    /// The bayes trial this proposal is, numbered from 0 as its run's `sweep.trial`: what
    /// links a proposal to the run it produced. Absent for other optimizers' updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u64>,
    /// A bayes trial's result, sent with its proposal once the trial's runs ended: the
    /// objective the optimizer is told and its parts. Absent for other optimizers'
    /// updates and for proposals sent before trials had results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<TrialOutcome>,
}

/// What a bayes trial's runs gave: the proposed config on every task of the sweep with
/// every seed, so two trials' objectives compare configs on the same work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrialOutcome {
    /// The trial's runs (one per task and seed), in the order they ran.
    pub run_ids: Vec<Uuid>,
    /// Runs that solved their task; null when some run has no verdict (nobody judged it,
    /// or an infrastructure failure, which is no result).
    pub solved: Option<u32>,
    /// USD spent by all its runs; null when some run's cost is unknown.
    pub cost_usd: Option<f64>,
    /// Tokens of all its runs; null when some run's count is unknown.
    pub total_tokens: Option<u64>,
    /// Wall time of all its runs, ms; null when some run's is unknown.
    pub wall_time_ms: Option<u64>,
    /// The sweep's objective: the mean over the runs of
    /// `success - cost_weight * cost_usd - token_weight * total_tokens / 1e6 - time_weight * wall_time_ms / 60000`;
    /// null when a part it weighs (success always) is unknown. A null objective is not
    /// told to the optimizer.
    pub objective: Option<f64>,
}
