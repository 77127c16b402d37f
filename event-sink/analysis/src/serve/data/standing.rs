//! An experiment's standing: the leaderboard and the task × policy grid of its page,
//! `compare`'s per-policy figures over the runs that count. Computing it reads every run
//! of the experiment (`paired_outcomes`), so it is kept per experiment
//! ([`StandingCache`]) with the experiment's [`RunsVersion`] it was computed at, and
//! computed again (in the background, the kept one served meanwhile marked stale) when
//! that changes or [`super::MAX_AGE`] passes.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use clickhouse::Client;
use serde::Serialize;

use super::kept::{Answer, Got, Kept};
use super::{Cell, DataError};
use crate::compare::request::Request;
use crate::compare::{self, Dimension, Experiments, Filters, PolicyRuns, PolicySummary};
use crate::serve::db::RunsVersion;

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

impl Standing {
    /// The baseline the experiment page's comparison link names (and the one computed
    /// ahead): the first policy id in sort order, which stays the same as runs arrive
    /// (the leader would not). `None` before any counted run.
    pub fn linked_baseline(&self) -> Option<String> {
        self.leaderboard.iter().map(|s| s.policy_id.clone()).min()
    }
}

/// The standings computed, per experiment, with the [`RunsVersion`] of the experiment
/// they were computed at.
#[derive(Debug)]
pub struct StandingCache(pub(super) Kept<String, RunsVersion, Standing>);

impl StandingCache {
    /// An empty cache of at most `capacity` experiments.
    pub fn new(capacity: usize) -> Self {
        StandingCache(Kept::new(capacity, super::MAX_AGE))
    }

    /// For a request: the standing of `name` at `version`, kept, or kept and stale (a
    /// fresh one computed in the background), or computed (single flight) and awaited at
    /// most `wait` (`None`: until it ends; past it, `None`, and it goes on).
    pub async fn get(
        &self,
        client: &Client,
        name: &str,
        version: RunsVersion,
        wait: Option<Duration>,
    ) -> Result<Option<Got<RunsVersion, Standing>>, DataError> {
        let (client, owned) = (client.clone(), name.to_owned());
        let compute = move || standing(client, owned);
        match wait {
            Some(wait) => {
                self.0
                    .get_within(name.to_owned(), version, compute, wait)
                    .await
            }
            None => self
                .0
                .get(name.to_owned(), version, compute)
                .await
                .map(Some),
        }
    }

    /// For the background: the fresh standing of `name` at `version`.
    pub async fn fresh(
        &self,
        client: &Client,
        name: &str,
        version: RunsVersion,
    ) -> Result<Arc<Answer<RunsVersion, Standing>>, DataError> {
        let (client, owned) = (client.clone(), name.to_owned());
        self.0
            .fresh(name.to_owned(), version, move || standing(client, owned))
            .await
    }

    /// The experiments whose standing a request asked for within `within`.
    pub fn visited_since(&self, within: Duration) -> Vec<String> {
        self.0.visited_since(within)
    }
}

/// Computes the standing of experiment `name`.
async fn standing(client: Client, name: String) -> Result<Standing, DataError> {
    let filters = Filters {
        experiments: vec![name],
        ..Filters::default()
    };
    let policies =
        compare::load(&client, &filters, &[Dimension::Policy], Experiments::Apart).await?;
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
