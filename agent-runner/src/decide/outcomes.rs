//! What the sink stored of an experiment run until decided: waiting for a round's runs
//! to reach ClickHouse, then reading the experiment's counted runs up to that round.

use std::collections::BTreeMap;
use std::time::Duration;

use bench_analysis::compare::sequential::{self, Outcomes};
use bench_analysis::queries::{ParamValues, Query};
use bench_clickhouse::ClickHouseConfig;
use uuid::Uuid;

use crate::error::Error;

/// How long the runs of a round may take to reach ClickHouse (the sink's delay).
const STORED_WAIT: Duration = Duration::from_secs(60);

/// Between two reads while waiting for them.
const STORED_POLL: Duration = Duration::from_millis(250);

/// The runs of the round among the ids bound (`?`) that the sink has stored.
const STORED_SQL: &str = "SELECT count() FROM run_stops FINAL WHERE has(?, toString(run_id))";

/// Waits until the sink has stored the `run_stop` of every run of `ids`.
pub(super) async fn wait_stored(source: &ClickHouseConfig, ids: &[Uuid]) -> Result<(), Error> {
    let ids: Vec<String> = ids.iter().map(Uuid::to_string).collect();
    let deadline = tokio::time::Instant::now() + STORED_WAIT;
    loop {
        let stored = source
            .client()
            .query(STORED_SQL)
            .bind(&ids)
            .fetch_one::<u64>()
            .await
            .map_err(|e| Error::Outcomes(format!("{}: {e}", source.url)))?;
        if stored >= ids.len() as u64 {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::Outcomes(format!(
                "{stored} of the round's {} runs reached clickhouse within {}s; is the sink running?",
                ids.len(),
                STORED_WAIT.as_secs()
            )));
        }
        tokio::time::sleep(STORED_POLL).await;
    }
}

/// The counted runs of `experiment` (`run_outcomes`) of rounds `0..=round`, per policy
/// and task, in round order: a task's k-th run of a policy, by `repeat` (which the
/// rounds set), is round k. Runs of later rounds (another worker may already run the
/// next one) and runs without a repeat are left out, so every worker reads the same
/// outcomes after a round, whenever it reads them.
pub(super) async fn read_outcomes(
    source: &ClickHouseConfig,
    experiment: &str,
    round: u32,
) -> Result<BTreeMap<String, Outcomes>, Error> {
    let mut params = ParamValues::new();
    params.insert("experiment".to_owned(), experiment.to_owned());
    let mut table = Query::find("run_outcomes")
        .map_err(|e| Error::Outcomes(e.to_string()))?
        .run(&source.client(), &params)
        .await
        .map_err(|e| Error::Outcomes(format!("{}: {e}", source.url)))?;
    let kept: Vec<bool> = (0..table.rows.len())
        .map(|row| {
            table
                .get(row, "repeat")
                .and_then(|r| r.parse::<u32>().ok())
                .is_some_and(|r| r <= round)
        })
        .collect();
    let mut keep = kept.into_iter();
    table.rows.retain(|_| keep.next().unwrap_or(false));
    sequential::outcomes_by_policy_id(&table).map_err(|e| Error::Outcomes(e.to_string()))
}
