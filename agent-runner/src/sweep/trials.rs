//! The objectives of a `bayes` sweep's finished trials, read from ClickHouse where each
//! trial's proposal stored it with the trial's result (`trial_results.sql`): what
//! [`super::bayes`] is told. Reads only.

use std::collections::HashMap;

use bench_clickhouse::ClickHouseConfig;
use serde::Deserialize;
use uuid::Uuid;

use super::SweepError;

/// The trial results query (`?` = the proposals' stream run ids).
const TRIAL_RESULTS_SQL: &str = include_str!("trial_results.sql");

/// One finished trial, as `optimizer_updates` holds it.
#[derive(Debug, Clone, PartialEq, Deserialize, clickhouse::Row)]
struct TrialResult {
    /// The run id of the trial's proposal stream.
    run_id: String,
    /// The trial's objective; `None` when unknown.
    objective: Option<f64>,
}

/// The objectives ClickHouse holds for the proposals of `streams` (their stream run
/// ids), keyed by stream: `Some(None)` is a stored, unknown objective; a stream absent
/// from the map has not reached ClickHouse yet.
pub async fn read(
    source: &ClickHouseConfig,
    streams: &[Uuid],
) -> Result<HashMap<Uuid, Option<f64>>, SweepError> {
    let ids: Vec<String> = streams.iter().map(Uuid::to_string).collect();
    let rows = source
        .client()
        .query(TRIAL_RESULTS_SQL)
        .bind(ids)
        .fetch_all::<TrialResult>()
        .await
        .map_err(|e| SweepError::ClickHouse(format!("{}: {e}", source.url)))?;
    Ok(rows
        .into_iter()
        .filter_map(|r| Some((Uuid::parse_str(&r.run_id).ok()?, r.objective)))
        .collect())
}
