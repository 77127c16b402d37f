//! What each page shows, as serializable structs: the JSON API sends them as they are,
//! the pages render them ([`super::pages`]). Built from the viewer's reads ([`super::db`])
//! and from `compare`'s computation.

mod error;
pub(crate) mod kept;
pub mod run;
pub mod standing;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use clickhouse::Client;
use serde::Serialize;

use crate::compare::request::{self, Request};
use crate::compare::{self, Comparison, Filters};
pub use error::DataError;
pub use standing::{Standing, StandingCache};

use crate::compare::decisions::StoredDecision;
use crate::serve::db::{self, DbError, ExperimentRow, RunRow, RunsOf, RunsVersion};
use kept::{Answer, Got, Kept};

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
    /// Its leaderboard and grid; `None` (absent from the JSON, which waits for them)
    /// while a page's first computation of them takes longer than `--page-wait-ms`.
    #[serde(flatten)]
    pub standing: Option<Standing>,
    /// When the leaderboard and grid were computed, over which runs, and whether they
    /// are being computed again (the progress and the runs are read fresh); `None` with
    /// `standing`.
    pub freshness: Option<Freshness>,
    /// The baseline of the comparison the page links (see [`Standing::linked_baseline`]).
    pub compare_baseline: Option<String>,
    /// The latest runs, newest first (at most [`RUNS_SHOWN`]).
    pub runs: Vec<RunRow>,
    /// Runs not listed.
    pub runs_left_out: u64,
    /// The latest decision of each pair, when the experiment was run until decided
    /// (`agent-runner run --until-decided`); empty otherwise.
    pub decisions: Vec<StoredDecision>,
}

/// `/experiments/{name}`'s data, its standing from `cache` (see [`StandingCache::get`]),
/// a first computation of it awaited at most `wait` (`None`: until it ends).
pub async fn experiment(
    client: &Client,
    cache: &StandingCache,
    name: &str,
    wait: Option<Duration>,
) -> Result<ExperimentPage, DataError> {
    // The page's reads at once, and only then the standing: when it is stale, its
    // computation (started in the background) does not slow them.
    let names = [name.to_owned()];
    let (rows, version, runs, decisions) = tokio::join!(
        db::experiments(client, Some(name)),
        db::runs_version(client, Some(name)),
        db::runs(client, RunsOf::Experiment(name), RUNS_SHOWN),
        compare::decisions::latest(client, &names)
    );
    let row = rows?
        .into_iter()
        .next()
        .ok_or_else(|| DataError::NotFound(format!("no run of experiment {name:?} is stored")))?;
    let (version, runs) = (version?, runs?);
    let decisions = decisions.map_err(DbError::from)?;
    let progress = Progress::new(row, now());
    let got = cache.get(client, name, version, wait).await?;
    let freshness = got.as_ref().map(|got| Freshness::new(got, &version));
    let standing = got.map(|got| Standing::clone(&got.answer.value));
    Ok(ExperimentPage {
        compare_baseline: standing.as_ref().and_then(Standing::linked_baseline),
        freshness,
        decisions,
        runs_left_out: progress.started.saturating_sub(runs.len() as u64),
        progress,
        standing,
        runs,
    })
}

/// Longest a standing or a comparison is fresh: the version it is kept by sees runs
/// started and finished and tasks validated, not an event that reaches the store after
/// its run's `run_stop` (which can fill or open a seq gap, and so count or exclude the
/// run).
pub const MAX_AGE: Duration = Duration::from_secs(300);

/// How a kept answer stands: when it was computed, over which runs, and whether a fresh
/// one is being computed because runs started or finished since (or it grew too old).
#[derive(Debug, Clone, Serialize)]
pub struct Freshness {
    /// Unix seconds its computation ended.
    pub computed_at: u64,
    /// Runs of the experiment started when it was computed.
    pub runs_started: u64,
    /// Runs of the experiment finished when it was computed.
    pub runs_finished: u64,
    /// The experiment's runs changed since (or it is older than [`MAX_AGE`]): this is
    /// the last answer kept, and the fresh one is being computed in the background.
    pub stale: bool,
    /// Runs started since it was computed.
    pub runs_started_since: u64,
    /// Runs finished since it was computed.
    pub runs_finished_since: u64,
}

impl Freshness {
    /// How `got` stands against the experiment's runs `now`.
    pub fn new<V>(got: &Got<RunsVersion, V>, now: &RunsVersion) -> Freshness {
        let then = &got.answer.version;
        Freshness {
            computed_at: got
                .answer
                .computed_at
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            runs_started: then.started,
            runs_finished: then.finished,
            stale: got.stale,
            runs_started_since: now.started.saturating_sub(then.started),
            runs_finished_since: now.finished.saturating_sub(then.finished),
        }
    }
}

/// A comparison asked for: the experiment (`None`: every run) and the baseline (`None`:
/// every pair).
pub type ComparisonKey = (Option<String>, Option<String>);

/// The comparisons computed, per [`ComparisonKey`], each with the [`RunsVersion`] of the
/// experiment it was computed at.
#[derive(Debug)]
pub struct ComparisonCache(Kept<ComparisonKey, RunsVersion, Comparison>);

impl ComparisonCache {
    /// An empty cache of at most `capacity` comparisons.
    pub fn new(capacity: usize) -> Self {
        ComparisonCache(Kept::new(capacity, MAX_AGE))
    }

    /// For the background: the fresh comparison `key` at `version`.
    pub async fn fresh(
        &self,
        client: &Client,
        key: ComparisonKey,
        version: RunsVersion,
    ) -> Result<Arc<Answer<RunsVersion, Comparison>>, DataError> {
        let compute = computation(client, &key);
        self.0.fresh(key, version, compute).await
    }

    /// The comparisons a request asked for within `within`.
    pub fn visited_since(&self, within: Duration) -> Vec<ComparisonKey> {
        self.0.visited_since(within)
    }
}

/// What computes the comparison `key`.
fn computation(
    client: &Client,
    (experiment, baseline): &ComparisonKey,
) -> impl FnOnce() -> futures::future::BoxFuture<'static, Result<Comparison, DataError>> {
    let client = client.clone();
    let filters = Filters {
        experiments: experiment.iter().cloned().collect(),
        ..Filters::default()
    };
    let request = Request::every_policy(filters, baseline.clone());
    move || Box::pin(async move { Ok(request::answer(&client, request).await?) })
}

/// `/compare?experiment=..&baseline=..`'s data: the comparison and how it stands.
#[derive(Debug)]
pub struct Compared {
    /// The answer kept.
    pub answer: Arc<Answer<RunsVersion, Comparison>>,
    /// How it stands.
    pub freshness: Freshness,
}

/// `/compare?experiment=..&baseline=..`: `compare`'s answer over one experiment's runs
/// (every experiment without one), every other policy against the baseline (every pair
/// without one): the one kept in `cache` while the experiment's runs are as they were
/// (one cheap read), the one kept marked stale while a fresh one is computed, or (never
/// computed) computed and kept, awaited at most `wait` (`None`: until it ends; past it,
/// `None`, and the computation goes on).
pub async fn comparison(
    client: &Client,
    cache: &ComparisonCache,
    experiment: Option<String>,
    baseline: Option<String>,
    wait: Option<Duration>,
) -> Result<Option<Compared>, DataError> {
    let version = db::runs_version(client, experiment.as_deref()).await?;
    let key = (experiment, baseline);
    let compute = computation(client, &key);
    let got = match wait {
        Some(wait) => cache.0.get_within(key, version, compute, wait).await?,
        None => Some(cache.0.get(key, version, compute).await?),
    };
    Ok(got.map(|got| Compared {
        freshness: Freshness::new(&got, &version),
        answer: got.answer,
    }))
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
