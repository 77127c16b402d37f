//! The limits that end a run early, read from its config, and the exit status each one
//! records (`scenarios/README.md` has the table). A limit of 0 is "no limit".
//!
//! | limit | `exit_status` | `early_stop_reason` |
//! |---|---|---|
//! | `max_iterations` turns done | `exit_forfeit` | `max_iterations` |
//! | `execution_timeout_ms` wall time | `exit_timeout` | `execution_timeout` |
//! | `no_progress_timeout_ms` without a file change | `exit_timeout` | `no_progress_timeout` |
//! | `cost_limit_usd` reached | `exit_cost` | `cost_limit` |
//! | `failing_tests_patience` judge probes without fewer failing tests | `exit_forfeit` | `failing_tests_patience` |

use std::time::{Duration, Instant};

use bench_schemas::{ExitStatus, FailureRoot, RunConfig};

use crate::recorder::Usage;

/// Stand-in for "no limit" where a duration is needed.
const NO_LIMIT: Duration = Duration::from_secs(365 * 86_400);

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEnd {
    /// `run_stop.exit_status`.
    pub status: ExitStatus,
    /// `run_stop.early_stop_reason`; `None` for a submission.
    pub reason: Option<String>,
    /// The root of the run's `failure` when whoever ended the run knows it (the
    /// provider's, for `exit_api`); `None` = the runner reads it from how the run ended.
    pub root: Option<FailureRoot>,
}

impl RunEnd {
    /// The agent submitted.
    pub fn submitted() -> Self {
        RunEnd {
            status: ExitStatus::Submitted,
            reason: None,
            root: None,
        }
    }

    /// Stopped before a submission.
    pub fn early(status: ExitStatus, reason: impl Into<String>) -> Self {
        RunEnd {
            status,
            reason: Some(reason.into()),
            root: None,
        }
    }

    /// Whether the run was cut short.
    pub fn early_stopped(&self) -> bool {
        self.reason.is_some()
    }

    /// Whether the run is an **infrastructure failure**: it ended because the
    /// environment or the provider failed, so it is no result of the policy. This is the
    /// one definition; everything else reads it back from `run_stop` (`success` null with
    /// `exit_environment` or `exit_api`):
    ///
    /// - `exit_environment`: the run's sandbox could not be set up, so no agent command
    ///   ran;
    /// - `exit_api`: the provider failed (HTTP errors or timeouts after the retry policy,
    ///   connection or key refused), whether or not it had answered earlier calls. The
    ///   model did not fail the task: its provider stopped answering.
    ///
    /// Such a run is not judged and its `success` is null, never `false`.
    pub fn is_infrastructure_failure(&self) -> bool {
        matches!(
            self.status,
            ExitStatus::ExitEnvironment | ExitStatus::ExitApi
        )
    }
}

/// A run's limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// `None`: unstated, no turn limit (a scenario always states one).
    max_iterations: Option<u32>,
    execution_timeout: Option<Duration>,
    no_progress_timeout: Option<Duration>,
    cost_limit_usd: Option<f64>,
    failing_tests_patience: u32,
}

impl Limits {
    /// The limits `config` sets.
    pub fn from_config(config: &RunConfig) -> Self {
        let ms = |v: u64| (v > 0).then(|| Duration::from_millis(v));
        Limits {
            max_iterations: config.max_iterations,
            execution_timeout: ms(config.execution_timeout_ms),
            no_progress_timeout: ms(config.no_progress_timeout_ms),
            cost_limit_usd: config.cost_limit_usd.filter(|c| *c > 0.0),
            failing_tests_patience: config.failing_tests_patience,
        }
    }

    /// Execution time left (a year when unlimited).
    pub fn remaining(&self, started: Instant) -> Duration {
        self.execution_timeout
            .map_or(NO_LIMIT, |t| t.saturating_sub(started.elapsed()))
    }

    /// The limit that ends the run before turn `turns` (0-based), if any.
    pub fn check(
        &self,
        turns: u32,
        started: Instant,
        last_change: Instant,
        usage: &Usage,
    ) -> Option<RunEnd> {
        if self
            .execution_timeout
            .is_some_and(|t| started.elapsed() >= t)
        {
            return Some(RunEnd::early(ExitStatus::ExitTimeout, "execution_timeout"));
        }
        // The known spend: a lower bound of the run's cost when some call's is unknown.
        if let Some(limit) = self.cost_limit_usd {
            if usage.known_cost.to_number() >= limit {
                return Some(RunEnd::early(ExitStatus::ExitCost, "cost_limit"));
            }
        }
        if self
            .no_progress_timeout
            .is_some_and(|t| last_change.elapsed() >= t)
        {
            return Some(RunEnd::early(
                ExitStatus::ExitTimeout,
                "no_progress_timeout",
            ));
        }
        if self.max_iterations.is_some_and(|max| turns >= max) {
            return Some(RunEnd::early(ExitStatus::ExitForfeit, "max_iterations"));
        }
        None
    }

    /// Whether judge probes are on (`failing_tests_patience` > 0).
    pub fn probes_tests(&self) -> bool {
        self.failing_tests_patience > 0
    }

    /// Records a judge probe's failing count; returns the end of the run when patience
    /// is exhausted.
    pub fn observe_failing(&self, patience: &mut Patience, failing: u32) -> Option<RunEnd> {
        match patience.best {
            Some(best) if failing >= best => patience.misses += 1,
            _ => {
                patience.best = Some(failing);
                patience.misses = 0;
            }
        }
        (patience.misses >= self.failing_tests_patience)
            .then(|| RunEnd::early(ExitStatus::ExitForfeit, "failing_tests_patience"))
    }
}

/// Progress of the failing-test count across judge probes.
#[derive(Debug, Clone, Default)]
pub struct Patience {
    best: Option<u32>,
    misses: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_pricing::Usd;

    fn limits(patience: u32) -> Limits {
        Limits {
            max_iterations: Some(3),
            execution_timeout: None,
            no_progress_timeout: None,
            cost_limit_usd: Some(1.0),
            failing_tests_patience: patience,
        }
    }

    #[test]
    fn iterations_and_cost_end_the_run() {
        let l = limits(0);
        let now = Instant::now();
        assert_eq!(l.check(2, now, now, &Usage::default()), None);
        assert_eq!(
            l.check(3, now, now, &Usage::default()).map(|e| e.status),
            Some(ExitStatus::ExitForfeit)
        );
        let spent = Usage {
            known_cost: Usd::from_number(1.5).expect("a cost"),
            cost_unknown: true,
            ..Usage::default()
        };
        assert_eq!(
            l.check(0, now, now, &spent).map(|e| e.status),
            Some(ExitStatus::ExitCost)
        );
    }

    #[test]
    fn patience_counts_probes_without_improvement() {
        let l = limits(2);
        let mut p = Patience::default();
        assert_eq!(l.observe_failing(&mut p, 5), None);
        assert_eq!(l.observe_failing(&mut p, 3), None);
        assert_eq!(l.observe_failing(&mut p, 3), None);
        assert!(l.observe_failing(&mut p, 4).is_some());
    }
}
