//! `bench-analysis compare`: are two policies different on the same tasks, and by how
//! much, with intervals, exact paired tests and sample sizes.
//!
//! # Layout
//!
//! - [`outcomes`]: the rows of the shipped `paired_outcomes` query (which runs count is
//!   decided there, in SQL, in one place) grouped into the policies compared (`--by`),
//!   split by scoring version.
//! - [`analyze`]: per policy and per pair, the statistics; the JSON shape.
//! - [`stats`]: Wilson, exact binomial / McNemar, Holm, pass@k, detectable difference.
//! - [`resample`]: the seeded paired bootstrap.
//! - [`render`]: JSON, table and CSV output.
//! - [`request`]: a comparison asked for and its answer read from ClickHouse (what
//!   `compare` prints and the viewer shows).
//! - [`sequential`]: `--sequential`, the anytime-valid confidence sequence of each pair
//!   over the `run_outcomes` query's runs in rounds.
//! - [`decisions`]: the latest decisions stored by experiments run until decided, attached
//!   to the pairs they decided; [`stored_decision`]: one of them.
//!
//! Only [`load`] talks to ClickHouse; everything after it is pure and tested without a
//! server.

pub mod analyze;
pub mod decisions;
pub mod outcomes;
pub mod render;
pub mod request;
pub mod resample;
pub mod sequential;
pub mod stats;
pub mod stored_decision;

use clickhouse::Client;

use crate::queries::{ParamValues, Query, QueryError};

pub use analyze::{compare, Comparison, PairComparison, PolicySummary, Settings};
pub use outcomes::{group, parse_by, Dimension, Experiments, PolicyRuns};

/// Which runs to read: the filters of `paired_outcomes`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    /// Runs started at or after / before (any form `--param since=` takes).
    pub since: Option<String>,
    /// Runs started before this time.
    pub until: Option<String>,
    /// Only runs of these scenarios (names); empty = every scenario.
    pub scenarios: Vec<String>,
    /// Only runs of these experiments; empty = every run.
    pub experiments: Vec<String>,
    /// Only runs of these sweeps; empty = every run.
    pub sweeps: Vec<String>,
    /// Only these task ids; empty = every task.
    pub tasks: Vec<String>,
}

/// Why `compare` failed.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The query was refused or its parameters bad.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// A row of its answer could not be read.
    #[error(transparent)]
    Row(#[from] outcomes::RowError),
    /// A row of the `run_outcomes` answer could not be read (`--sequential`).
    #[error("run_outcomes row {row}: {reason}")]
    RunRow {
        /// The row, from 0.
        row: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// `--by` names an unknown key.
    #[error("--by: {0}")]
    BadKeys(String),
    /// A value that a comma-separated list cannot carry.
    #[error("{0} {1:?} holds a comma")]
    WithComma(&'static str, String),
    /// `--policy` or `--baseline` names no policy with counted or excluded runs.
    #[error("no runs of {name:?} (grouped by {by}); policies seen: {known}")]
    UnknownPolicy {
        /// The label asked for.
        name: String,
        /// The grouping keys.
        by: String,
        /// The labels seen, comma-separated.
        known: String,
    },
}

impl Filters {
    /// The parameters of a shipped query that select these runs (`since`, `until`, and
    /// the lists comma-separated); `tasks` only when `with_tasks`.
    pub fn params(&self, with_tasks: bool) -> Result<ParamValues, CompareError> {
        let mut values = ParamValues::new();
        for (name, value) in [("since", &self.since), ("until", &self.until)] {
            if let Some(value) = value {
                values.insert(name.to_owned(), value.clone());
            }
        }
        let tasks = if with_tasks { &self.tasks[..] } else { &[] };
        for (name, what, list) in [
            ("scenario", "scenario", &self.scenarios[..]),
            ("experiment", "experiment", &self.experiments[..]),
            ("sweep", "sweep", &self.sweeps[..]),
            ("tasks", "task id", tasks),
        ] {
            if let Some(bad) = list.iter().find(|v| v.contains(',')) {
                return Err(CompareError::WithComma(what, bad.clone()));
            }
            if !list.is_empty() {
                values.insert(name.to_owned(), list.join(","));
            }
        }
        Ok(values)
    }
}

/// Reads the runs `filters` select and groups them into policies by `by`, keeping runs
/// of different experiments apart unless `experiments` pools them.
pub async fn load(
    client: &Client,
    filters: &Filters,
    by: &[Dimension],
    experiments: Experiments,
) -> Result<Vec<PolicyRuns>, CompareError> {
    let query = Query::find("paired_outcomes")?;
    let table = query.run(client, &filters.params(true)?).await?;
    Ok(group(&table, by, experiments)?)
}

/// Checks that every name in `wanted` (the `--policy` values and the `--baseline`) is a
/// policy of `found`.
pub fn check_named(
    found: &[PolicyRuns],
    wanted: &[&String],
    by: &[Dimension],
) -> Result<(), CompareError> {
    match wanted
        .iter()
        .find(|name| !found.iter().any(|p| &&p.group == *name))
    {
        None => Ok(()),
        Some(name) => Err(CompareError::UnknownPolicy {
            name: (*name).clone(),
            by: by.iter().map(Dimension::name).collect::<Vec<_>>().join(","),
            known: found
                .iter()
                .map(|p| p.group.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}
