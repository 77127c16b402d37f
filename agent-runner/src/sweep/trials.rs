//! The results of a `bayes` sweep's finished trials, read from ClickHouse by run id
//! (`trial_results.sql`): what [`super::bayes`] is told. Reads only.

use std::collections::HashMap;

use bench_clickhouse::ClickHouseConfig;
use serde::Deserialize;
use uuid::Uuid;

use super::file::RewardWeights;
use super::SweepError;

/// The trial results query (`?` = run ids).
const TRIAL_RESULTS_SQL: &str = include_str!("trial_results.sql");

/// One finished run, as `run_stops` holds it.
#[derive(Debug, Clone, PartialEq, Deserialize, clickhouse::Row)]
pub struct TrialResult {
    /// The run's id.
    pub run_id: String,
    /// 1 when solved; `None` when nobody judged the run.
    pub success: Option<u8>,
    /// Its cost; `None` when the price was unknown.
    pub cost_usd: Option<f64>,
    /// Tokens it used; `None` when unknown.
    pub total_tokens: Option<u64>,
    /// Its wall time, ms; `None` when nobody measured it.
    pub wall_time_ms: Option<u64>,
}

impl TrialResult {
    /// Its reward under `weights`; `None` when unknown: an unjudged run, or an unknown
    /// cost, token count or wall time that weighs in (see [`RewardWeights::reward`]).
    pub fn reward(&self, weights: &RewardWeights) -> Option<f64> {
        weights.reward(
            f64::from(self.success?),
            self.cost_usd,
            self.total_tokens.map(|tokens| tokens as f64),
            self.wall_time_ms.map(|ms| ms as f64),
        )
    }
}

/// The results ClickHouse holds for `run_ids`, keyed by run id.
pub async fn read(
    source: &ClickHouseConfig,
    run_ids: &[Uuid],
) -> Result<HashMap<Uuid, TrialResult>, SweepError> {
    let ids: Vec<String> = run_ids.iter().map(Uuid::to_string).collect();
    let rows = source
        .client()
        .query(TRIAL_RESULTS_SQL)
        .bind(ids)
        .fetch_all::<TrialResult>()
        .await
        .map_err(|e| SweepError::ClickHouse(format!("{}: {e}", source.url)))?;
    Ok(rows
        .into_iter()
        .filter_map(|r| Some((Uuid::parse_str(&r.run_id).ok()?, r)))
        .collect())
}
