//! `optimizer_update`: a suggestion from the sweep optimizer.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
}
