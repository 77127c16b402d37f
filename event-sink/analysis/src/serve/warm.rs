//! Computing ahead, as a live dashboard does: in the background, from the server's start
//! and whenever an experiment's runs change, the viewer computes
//!
//! - the standing (leaderboard and grid) of the newest `--precompute-experiments`
//!   experiments (the ones `/` lists first) and of every experiment whose page was
//!   visited within [`RECENT`];
//! - for each of those, the comparison its page links
//!   (`/compare?experiment=..&baseline=..`, [`Standing::linked_baseline`]);
//! - every comparison visited within [`RECENT`].
//!
//! A change is noticed from the live feed when NATS is on (a `run_start` or `run_stop`
//! of the experiment: it is looked at, with every other experiment changed meanwhile,
//! [`DEBOUNCE`] after the first, and once more [`AGAIN`] later in case the sink had not
//! stored the change yet), and by reading each experiment's [`RunsVersion`] (one cheap
//! query) every `--refresh-poll-ms` either way (the only way without NATS; with NATS it
//! catches what the feed cannot tell, a task validated, the sink storing a run's end
//! after its event was seen). One look at a time: one computation after the other.
//!
//! [`Standing::linked_baseline`]: super::data::Standing::linked_baseline
//! [`RunsVersion`]: super::db::RunsVersion

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::ahead::AheadSettings;
use super::data::{ComparisonKey, DataError};
use super::db;
use super::routes::AppState;

/// A key is computed ahead while a request asked for it within this.
pub const RECENT: Duration = Duration::from_secs(30 * 60);

/// How long after a change seen on the live feed the experiment is looked at (more
/// changes of a sweep arrive meanwhile, and the sink stores the event).
pub const DEBOUNCE: Duration = Duration::from_secs(1);

/// How long after a look at changed experiments they are looked at once more.
pub const AGAIN: Duration = Duration::from_secs(4);

/// Spawns the background: a look at everything at once, then one every `settings.poll`,
/// and a look at the experiments `woken` names [`DEBOUNCE`] after the first of them.
pub fn spawn(
    state: Arc<AppState>,
    mut woken: mpsc::UnboundedReceiver<String>,
    settings: AheadSettings,
    shutdown: CancellationToken,
) {
    tokio::spawn(async move {
        let mut newest = Vec::new();
        let mut poll = tokio::time::interval(settings.poll);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let (again, mut looked_again) = mpsc::unbounded_channel();
        loop {
            let only = tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = poll.tick() => None,
                Some(name) = woken.recv() => {
                    tokio::time::sleep(DEBOUNCE).await;
                    let mut names = BTreeSet::from([name]);
                    while let Ok(more) = woken.try_recv() {
                        names.insert(more);
                    }
                    // Once more a little later: the sink may not have stored the change
                    // the live feed told of yet.
                    let (again, later) = (again.clone(), names.clone());
                    tokio::spawn(async move {
                        tokio::time::sleep(AGAIN).await;
                        let _ = again.send(later);
                    });
                    Some(names)
                }
                Some(names) = looked_again.recv() => Some(names),
            };
            if only.is_none() {
                match db::experiments(&state.client, None).await {
                    Ok(rows) => {
                        newest = rows
                            .into_iter()
                            .take(settings.experiments)
                            .map(|r| r.experiment)
                            .collect();
                    }
                    Err(e) => tracing::warn!(error = %e, "computing ahead: listing experiments"),
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = sweep(&state, &newest, only.as_ref()) => {}
            }
            if only.is_none() {
                state.ahead.swept();
            }
        }
    });
}

/// Brings every key of interest up to date, one after the other: the standings and
/// linked comparisons of `newest` and of the experiments visited, the comparisons
/// visited; only those of the experiments `only` names when given (and the comparisons
/// over every run, which any run changes).
async fn sweep(state: &AppState, newest: &[String], only: Option<&BTreeSet<String>>) {
    let standings = state.standings.visited_since(RECENT);
    let comparisons = state.comparisons.visited_since(RECENT);
    let mut targets: Vec<Option<String>> = Vec::new();
    let named = newest.iter().chain(&standings).cloned().map(Some);
    for target in named.chain(comparisons.iter().map(|(e, _)| e.clone())) {
        let wanted = match (&target, only) {
            (Some(name), Some(only)) => only.contains(name),
            _ => true,
        };
        if wanted && !targets.contains(&target) {
            targets.push(target);
        }
    }
    for target in targets {
        let with_standing = target
            .as_ref()
            .is_some_and(|n| newest.contains(n) || standings.contains(n));
        let asked: Vec<_> = comparisons
            .iter()
            .filter(|(e, _)| *e == target)
            .cloned()
            .collect();
        if let Err(e) = bring_up_to_date(state, &target, with_standing, asked).await {
            tracing::warn!(experiment = ?target, error = %e, "computing ahead");
        }
    }
}

/// Brings `experiment`'s keys up to date: its standing and linked comparison when
/// `with_standing`, and the comparisons `asked`.
async fn bring_up_to_date(
    state: &AppState,
    experiment: &Option<String>,
    with_standing: bool,
    mut asked: Vec<ComparisonKey>,
) -> Result<(), DataError> {
    let client = &state.client;
    let version = db::runs_version(client, experiment.as_deref()).await?;
    if let (Some(name), true) = (experiment, with_standing) {
        let standing = state.standings.fresh(client, name, version).await?;
        if let Some(baseline) = standing.value.linked_baseline() {
            let linked = (Some(name.clone()), Some(baseline));
            if !asked.contains(&linked) {
                asked.insert(0, linked);
            }
        }
    }
    for key in asked {
        if let Err(e) = state.comparisons.fresh(client, key.clone(), version).await {
            tracing::warn!(comparison = ?key, error = %e, "computing ahead");
        }
    }
    Ok(())
}
