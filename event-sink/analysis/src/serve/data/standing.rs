//! An experiment's standing: the leaderboard and the task × policy grid of its page,
//! `compare`'s per-policy figures over the runs that count. Computing it reads every run
//! of the experiment (`paired_outcomes`), so it is kept per experiment
//! ([`StandingCache`]) until the experiment's runs change (runs started or finished) or
//! [`MAX_AGE`] passes (events that arrive after a run's `run_stop` change no count).

use std::collections::BTreeSet;
use std::time::Duration;

use clickhouse::Client;
use serde::Serialize;

use super::kept::Kept;
use super::{Cell, DataError};
use crate::compare::request::Request;
use crate::compare::{self, Dimension, Experiments, Filters, PolicyRuns, PolicySummary};

/// Longest a standing is kept.
pub const MAX_AGE: Duration = Duration::from_secs(30);

/// The leaderboard and the grid.
#[derive(Debug, Clone, Serialize)]
pub struct Standing {
    /// Each policy over its counted runs, best solve rate first.
    pub leaderboard: Vec<PolicySummary>,
    /// The tasks of the grid, sorted.
    pub tasks: Vec<String>,
    /// Per policy (the leaderboard's order), the cell of each task (`None`: no counted run).
    pub grid: Vec<Vec<Option<Cell>>>,
}

/// What a kept standing was computed from: runs started and finished.
type Key = (u64, u64);

/// The standings computed, per experiment.
#[derive(Debug)]
pub struct StandingCache(Kept<String, Key, Standing>);

impl Default for StandingCache {
    fn default() -> Self {
        StandingCache(Kept::new(MAX_AGE))
    }
}

impl StandingCache {
    /// The standing of `name` whose runs are `key`: kept, or computed and kept.
    pub async fn get(&self, client: &Client, name: &str, key: Key) -> Result<Standing, DataError> {
        let kept = self
            .0
            .get(name.to_owned(), key, standing(client, name))
            .await?;
        Ok(Standing::clone(&kept))
    }
}

/// Computes the standing of experiment `name`.
async fn standing(client: &Client, name: &str) -> Result<Standing, DataError> {
    let filters = Filters {
        experiments: vec![name.to_owned()],
        ..Filters::default()
    };
    let policies =
        compare::load(client, &filters, &[Dimension::Policy], Experiments::Apart).await?;
    let settings = Request::every_policy(filters, None).settings;
    let mut order: Vec<(PolicySummary, &PolicyRuns)> =
        compare::analyze::summarize_all(&policies, &settings)
            .into_iter()
            .zip(&policies)
            .collect();
    order.sort_by(|(a, _), (b, _)| {
        b.rate
            .unwrap_or(-1.0)
            .total_cmp(&a.rate.unwrap_or(-1.0))
            .then_with(|| a.policy_id.cmp(&b.policy_id))
    });
    let tasks: Vec<String> = policies
        .iter()
        .flat_map(|p| p.tasks.keys().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let grid = order
        .iter()
        .map(|(_, p)| {
            let cell = |t: &String| {
                p.tasks.get(t).map(|r| Cell {
                    runs: r.runs,
                    solved: r.successes,
                })
            };
            tasks.iter().map(cell).collect()
        })
        .collect();
    Ok(Standing {
        leaderboard: order.into_iter().map(|(s, _)| s).collect(),
        tasks,
        grid,
    })
}
