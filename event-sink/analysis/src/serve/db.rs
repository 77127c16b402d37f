//! The viewer's own reads. Every value from a request is bound with the client's `?`
//! placeholders (run ids go through `toUUID(?)`), never written into the SQL; every
//! table is read with `FINAL`, so each event counts once however often it was delivered.
//! Answers come as JSONEachRow (64-bit integers as numbers) into serde structs. The SQL
//! is in `sql/` (`deploy/clickhouse/chdb_check.py` runs it on current ClickHouse too).

use clickhouse::Client;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Why a read failed.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// ClickHouse refused the query or could not be reached.
    #[error("ClickHouse: {0}")]
    ClickHouse(#[from] clickhouse::error::Error),
    /// A row of the answer was not what the query selects.
    #[error("unreadable row: {0}")]
    Row(#[from] serde_json::Error),
}

/// `sql/experiments.sql`: experiments with their progress.
const EXPERIMENTS: &str = include_str!("sql/experiments.sql");
/// `sql/runs.sql`: the latest runs of an experiment or a task.
const RUNS: &str = include_str!("sql/runs.sql");
/// `sql/run_events.sql`: a run's events.
const RUN_EVENTS: &str = include_str!("sql/run_events.sql");
/// `sql/run_experiment.sql`: a run's experiment.
const RUN_EXPERIMENT: &str = include_str!("sql/run_experiment.sql");
/// `sql/runs_version.sql`: how far an experiment's runs have come.
const RUNS_VERSION: &str = include_str!("sql/runs_version.sql");

/// The rows `query` answers, each a `T`.
async fn rows<T: DeserializeOwned>(query: clickhouse::query::Query) -> Result<Vec<T>, DbError> {
    let bytes = query.fetch_bytes("JSONEachRow")?.collect().await?;
    bytes
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).map_err(DbError::from))
        .collect()
}

/// `client` with the settings every read here needs.
fn reader(client: &Client) -> Client {
    client
        .clone()
        .with_setting("output_format_json_quote_64bit_integers", "0")
        .with_setting("distributed_product_mode", "global")
}

/// One experiment (or sweep) with its progress so far.
#[derive(Debug, Clone, Deserialize)]
pub struct ExperimentRow {
    /// `run_start.experiment` (a sweep's runs carry the sweep's name).
    pub experiment: String,
    /// The sweep's name when its runs are a sweep's.
    pub sweep: Option<String>,
    /// Distinct policies.
    pub policies: u64,
    /// Runs started.
    pub started: u64,
    /// Runs with a `run_stop`.
    pub done: u64,
    /// Finished runs that are infrastructure failures.
    pub infrastructure: u64,
    /// Finished runs judged (success known), infrastructure failures left out.
    pub judged: u64,
    /// Of those, solved.
    pub solved: u64,
    /// Summed cost of the finished runs whose cost is known, USD.
    pub cost_usd: f64,
    /// Finished runs whose cost is unknown.
    pub unpriced: u64,
    /// Runs planned (`planned_runs`, the largest any run states); `None` when none says.
    pub planned: Option<u64>,
    /// Unix seconds of the first run start.
    pub first_start: u64,
}

/// Experiments, newest first; only `name` when given.
pub async fn experiments(
    client: &Client,
    name: Option<&str>,
) -> Result<Vec<ExperimentRow>, DbError> {
    let name = name.unwrap_or_default();
    rows(reader(client).query(EXPERIMENTS).bind(name).bind(name)).await
}

/// One run, as lists of runs show it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRow {
    /// The run (`id` in the query: 18.16 would take an alias `run_id` for the JOIN key).
    #[serde(rename(deserialize = "id"))]
    pub run_id: String,
    /// Its task.
    pub task_id: String,
    /// Its policy.
    pub policy_id: String,
    /// Its experiment; `None` outside any.
    pub experiment: Option<String>,
    /// Unix seconds of its start.
    pub started: u64,
    /// Whether it has a `run_stop`.
    pub stopped: u8,
    /// `run_stop.exit_status`; empty while running.
    pub exit_status: String,
    /// Solved; `None` while running or unjudged.
    pub success: Option<u8>,
    /// Its cost, USD; `None` while running or unpriced.
    pub cost_usd: Option<f64>,
}

/// Which runs [`runs`] lists.
#[derive(Debug, Clone, Copy)]
pub enum RunsOf<'a> {
    /// The runs of an experiment.
    Experiment(&'a str),
    /// The runs of a task.
    Task(&'a str),
}

/// The latest `limit` runs of `of`, newest first.
pub async fn runs(client: &Client, of: RunsOf<'_>, limit: u32) -> Result<Vec<RunRow>, DbError> {
    let (kind, value) = match of {
        RunsOf::Experiment(name) => ("experiment", name),
        RunsOf::Task(task) => ("task", task),
    };
    rows(
        reader(client)
            .query(RUNS)
            .bind(kind)
            .bind(value)
            .bind(limit),
    )
    .await
}

/// One stored event of a run.
#[derive(Debug, Clone, Deserialize)]
pub struct EventRow {
    /// Its sequence number in the run.
    pub seq: u64,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: String,
    /// The event as received.
    pub raw: String,
}

/// Every event of `run_id` in `seq` order (one row per event however often delivered).
pub async fn run_events(client: &Client, run_id: &uuid::Uuid) -> Result<Vec<EventRow>, DbError> {
    rows(reader(client).query(RUN_EVENTS).bind(run_id.to_string())).await
}

/// The experiment `run_id` belongs to: `Some(None)` for a run outside any, `None` when
/// no `run_start` of it is stored.
pub async fn run_experiment(
    client: &Client,
    run_id: &uuid::Uuid,
) -> Result<Option<Option<String>>, DbError> {
    #[derive(Deserialize)]
    struct Row {
        experiment: Option<String>,
    }
    let found: Vec<Row> = rows(
        reader(client)
            .query(RUN_EXPERIMENT)
            .bind(run_id.to_string()),
    )
    .await?;
    Ok(found.into_iter().next().map(|row| row.experiment))
}

/// How far the runs of an experiment (every run: `None`) have come: what a comparison
/// kept for it was computed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct RunsVersion {
    /// Runs started.
    pub started: u64,
    /// Runs finished.
    pub finished: u64,
    /// Unix seconds the latest `run_stop` of them was received.
    pub last_stop: u64,
    /// Unix seconds the latest task validation of any task was received.
    pub last_validation: u64,
}

/// The [`RunsVersion`] of `experiment` (every run: `None`) now.
pub async fn runs_version(
    client: &Client,
    experiment: Option<&str>,
) -> Result<RunsVersion, DbError> {
    let name = experiment.unwrap_or_default();
    let query = reader(client)
        .query(RUNS_VERSION)
        .bind(name)
        .bind(name)
        .bind(name)
        .bind(name);
    let found: Vec<RunsVersion> = rows(query).await?;
    // One row, always (aggregates without GROUP BY).
    Ok(found.into_iter().next().unwrap_or(RunsVersion {
        started: 0,
        finished: 0,
        last_stop: 0,
        last_validation: 0,
    }))
}
