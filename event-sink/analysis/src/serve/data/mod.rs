//! What each page shows, as serializable structs: the JSON API sends them as they are,
//! the pages render them ([`super::pages`]). Built from the viewer's reads ([`super::db`])
//! and from `compare`'s computation.

mod error;
mod kept;
pub mod run;
pub mod standing;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use clickhouse::Client;
use serde::Serialize;

use crate::compare::request::{self, Request};
use crate::compare::{self, Comparison, Filters};
pub use error::DataError;
pub use standing::{Standing, StandingCache};

use crate::compare::decisions::StoredDecision;
use crate::serve::db::{self, DbError, ExperimentRow, RunRow, RunsOf, RunsVersion};
use kept::Kept;

/// Runs a list shows at most; the page says how many more there are.
pub const RUNS_SHOWN: u32 = 200;

/// An experiment's progress: the home page's row.
#[derive(Debug, Clone, Serialize)]
pub struct Progress {
    /// Its name.
    pub experiment: String,
    /// The sweep, when it is one.
    pub sweep: Option<String>,
    /// Distinct policies.
    pub policies: u64,
    /// Runs planned; `None` when no run says.
    pub planned_runs: Option<u64>,
    /// Runs started.
    pub started: u64,
    /// Runs finished (a `run_stop` stored).
    pub done: u64,
    /// Runs started and not finished.
    pub running: u64,
    /// Finished runs that were infrastructure failures (no result).
    pub infrastructure_failures: u64,
    /// Finished, judged, not infrastructure failures: the `n` of the rate.
    pub judged: u64,
    /// Of those, solved.
    pub solved: u64,
    /// solved / judged; `None` before any.
    pub success_rate: Option<f64>,
    /// Its 95 % Wilson interval.
    pub success_ci: Option<(f64, f64)>,
    /// Summed cost of the finished runs whose cost is known, USD.
    pub cost_usd: f64,
    /// Finished runs of unknown cost (not in `cost_usd`).
    pub unpriced_runs: u64,
    /// Seconds until `planned_runs` are done at the rate so far; `None` when unknown.
    pub eta_seconds: Option<u64>,
    /// Unix seconds of its first run's start.
    pub first_start: u64,
}

impl Progress {
    fn new(row: ExperimentRow, now: u64) -> Progress {
        let rate = (row.judged > 0).then(|| row.solved as f64 / row.judged as f64);
        let ci = compare::stats::wilson(row.solved, row.judged).map(|i| (i.low, i.high));
        let elapsed = now.saturating_sub(row.first_start).max(1);
        let eta_seconds = row
            .planned
            .filter(|&planned| row.done > 0 && planned > row.done)
            .map(|planned| (planned - row.done) * elapsed / row.done);
        Progress {
            running: row.started.saturating_sub(row.done),
            experiment: row.experiment,
            sweep: row.sweep,
            policies: row.policies,
            planned_runs: row.planned,
            started: row.started,
            done: row.done,
            infrastructure_failures: row.infrastructure,
            judged: row.judged,
            solved: row.solved,
            success_rate: rate,
            success_ci: ci,
            cost_usd: row.cost_usd,
            unpriced_runs: row.unpriced,
            eta_seconds,
            first_start: row.first_start,
        }
    }
}

fn now() -> u64 {
    u64::try_from(chrono::Utc::now().timestamp()).unwrap_or(0)
}

/// `/`: every experiment, newest first.
pub async fn experiments(client: &Client) -> Result<Vec<Progress>, DataError> {
    let now = now();
    Ok(db::experiments(client, None)
        .await?
        .into_iter()
        .map(|row| Progress::new(row, now))
        .collect())
}

/// The runs of a policy on a task, counted (see `paired_outcomes`).
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Counted runs.
    pub runs: u64,
    /// Solved among them.
    pub solved: u64,
}

/// `/experiments/{name}`.
#[derive(Debug, Clone, Serialize)]
pub struct ExperimentPage {
    /// Its progress.
    pub progress: Progress,
    /// Its leaderboard and grid.
    #[serde(flatten)]
    pub standing: Standing,
    /// The latest runs, newest first (at most [`RUNS_SHOWN`]).
    pub runs: Vec<RunRow>,
    /// Runs not listed.
    pub runs_left_out: u64,
    /// The latest decision of each pair, when the experiment was run until decided
    /// (`agent-runner run --until-decided`); empty otherwise.
    pub decisions: Vec<StoredDecision>,
}

/// `/experiments/{name}`'s data, its standing from `cache` when its runs are the same.
pub async fn experiment(
    client: &Client,
    cache: &StandingCache,
    name: &str,
) -> Result<ExperimentPage, DataError> {
    let row = db::experiments(client, Some(name))
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| DataError::NotFound(format!("no run of experiment {name:?} is stored")))?;
    let progress = Progress::new(row, now());
    let standing = cache
        .get(client, name, (progress.started, progress.done))
        .await?;
    let runs = db::runs(client, RunsOf::Experiment(name), RUNS_SHOWN).await?;
    let decisions = compare::decisions::latest(client, &[name.to_owned()])
        .await
        .map_err(DbError::from)?;
    Ok(ExperimentPage {
        decisions,
        runs_left_out: progress.started.saturating_sub(runs.len() as u64),
        progress,
        standing,
        runs,
    })
}

/// Longest a comparison is kept: the version it is kept by sees runs started and
/// finished and tasks validated, not an event that reaches the store after its run's
/// `run_stop` (which can fill or open a seq gap, and so count or exclude the run).
pub const COMPARISON_MAX_AGE: Duration = Duration::from_secs(300);

/// The comparisons computed, per experiment (`None`: every run) and baseline, each
/// with the [`RunsVersion`] of the experiment it was computed at.
#[derive(Debug)]
pub struct ComparisonCache(Kept<(Option<String>, Option<String>), RunsVersion, Comparison>);

impl Default for ComparisonCache {
    fn default() -> Self {
        ComparisonCache(Kept::new(COMPARISON_MAX_AGE))
    }
}

/// `/compare?experiment=..&baseline=..`: `compare`'s answer over one experiment's runs
/// (every experiment without one), every other policy against the baseline (every pair
/// without one); the one kept in `cache` while the experiment's runs are as they were
/// (one cheap read), else computed and kept.
pub async fn comparison(
    client: &Client,
    cache: &ComparisonCache,
    experiment: Option<String>,
    baseline: Option<String>,
) -> Result<Arc<Comparison>, DataError> {
    let version = db::runs_version(client, experiment.as_deref()).await?;
    let filters = Filters {
        experiments: experiment.iter().cloned().collect(),
        ..Filters::default()
    };
    let compute = async {
        Ok(request::answer(client, Request::every_policy(filters, baseline.clone())).await?)
    };
    cache
        .0
        .get((experiment.clone(), baseline.clone()), version, compute)
        .await
}

/// `/tasks/{task_id}`: its runs grouped by policy, and two of them side by side.
#[derive(Debug, Clone, Serialize)]
pub struct TaskPage {
    /// The task.
    pub task_id: String,
    /// Its latest runs (at most [`RUNS_SHOWN`]) by policy id, each newest first.
    pub policies: BTreeMap<String, Vec<RunRow>>,
    /// `?a=&b=`: the two runs side by side.
    pub side_by_side: Option<run::SideBySide>,
}

/// `/tasks/{task_id}`'s data; with `pair`, those two runs side by side.
pub async fn task(
    client: &Client,
    task_id: &str,
    pair: Option<(uuid::Uuid, uuid::Uuid)>,
) -> Result<TaskPage, DataError> {
    let runs = db::runs(client, RunsOf::Task(task_id), RUNS_SHOWN).await?;
    if runs.is_empty() {
        return Err(DataError::NotFound(format!(
            "no run of task {task_id:?} is stored"
        )));
    }
    let mut policies: BTreeMap<String, Vec<RunRow>> = BTreeMap::new();
    for run in runs {
        policies.entry(run.policy_id.clone()).or_default().push(run);
    }
    let side_by_side = match pair {
        Some((a, b)) => Some(run::side_by_side(client, a, b).await?),
        None => None,
    };
    Ok(TaskPage {
        task_id: task_id.to_owned(),
        policies,
        side_by_side,
    })
}
