//! `optimizer_update`: a suggestion from the sweep optimizer.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::config::RunConfig;

/// `optimizer_update`: the next config an optimizer suggests, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OptimizerUpdate {
    pub suggested_config: RunConfig,
    pub confidence: f64,
    pub expected_improvement: f64,
    /// 0 = pure exploitation, 1 = pure exploration.
    pub exploration_vs_exploitation: f64,
    pub reasoning: String,
}
