//! External agents: `agent-runner exec -- <command...>` runs any agent program as one run
//! and publishes what it reports, so agents the runner did not write (Python game loops,
//! SWE-agent style agents) join the same pipeline. Protocol:
//! `agent-runner/docs/exec-protocol.md`; example: `scenarios/agents/example_agent.py`.
//!
//! - [`protocol`]: one JSON line → a validated payload and its step, or why not.
//! - [`bridge`]: the run: scratch copy, environment, child process, `run_start` /
//!   `run_stop`, the reading loop ([`run`]).
//! - [`program`]: the agent program, found before anything is published, and the
//!   default `policy_id` it gives.
//! - [`args`]: the `agent-runner exec` flags → [`ExecConfig`]s, one run per task, which
//!   [`run_all`] runs in turn.
//!
//! The agent never writes envelopes: ids, `seq`, `ts`, hashes, seed and host are the
//! runner's, so an agent cannot break the stream's invariants (no gaps, unique ids).

pub(crate) mod args;
pub(crate) mod bridge;
mod error;
pub(crate) mod program;
pub(crate) mod protocol;

pub use args::ExecArgs;
pub use bridge::{run, ExecConfig, ExecReport};
pub use error::ExecError;

use std::fmt;

use bench_delivery::DeliveryReport;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Exit, RunTally};

/// What `agent-runner exec` did, after each run was handed to the caller as it ended.
#[derive(Debug, Clone, Default)]
pub struct ExecOutcome {
    /// What the publishers of the runs did, summed; `None` without publishing.
    pub delivery: Option<DeliveryReport>,
    /// How the runs ended (those whose agent could not get its sandbox,
    /// `exit_environment`, are no results).
    pub runs: RunTally,
}

impl ExecOutcome {
    /// The exit code, as for `run`: events left in the spool give [`Exit::Undelivered`],
    /// quarantined ones [`Exit::Quarantined`], else a run without its sandbox
    /// [`Exit::Environment`].
    pub fn exit(&self) -> Exit {
        crate::error::runs_exit(self.runs, self.delivery.as_ref())
    }
}

/// Runs the agent on each config in turn, handing each run's report to `ended` as soon
/// as it ends; stops early on shutdown.
pub async fn run_all(
    configs: Vec<ExecConfig>,
    shutdown: CancellationToken,
    mut ended: impl FnMut(&ExecReport),
) -> Result<ExecOutcome, Error> {
    let mut outcome = ExecOutcome::default();
    for config in configs {
        if shutdown.is_cancelled() {
            break;
        }
        let report = run(config, shutdown.clone()).await?;
        ended(&report);
        outcome.runs.add(report.summary.result.exit_status);
        if let Some(delivery) = report.delivery {
            outcome
                .delivery
                .get_or_insert_with(Default::default)
                .add(delivery);
        }
    }
    Ok(outcome)
}

/// The one line of a run.
impl fmt::Display for ExecReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.summary.result;
        let (outcome, score, _) = crate::agent::result_words(r);
        write!(
            f,
            "exec {}: {outcome} ({}), score {score}, {} events, {} of {} agent lines skipped, agent exit {}, run {}",
            self.summary.task_id,
            r.exit_status.as_str(),
            self.summary.events,
            self.skipped,
            self.lines,
            match self.agent_exit {
                Some(code) => code.to_string(),
                None if r.exit_status == bench_schemas::ExitStatus::ExitEnvironment => {
                    "none (no sandbox)".to_owned()
                }
                None => "killed".to_owned(),
            },
            self.summary.run_id
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_exits_like_run_for_undelivered_events() {
        let outcome = |left_in_spool, quarantined| ExecOutcome {
            delivery: Some(DeliveryReport {
                left_in_spool,
                quarantined,
                ..DeliveryReport::default()
            }),
            runs: RunTally::default(),
        };
        assert_eq!(ExecOutcome::default().exit(), Exit::Ok);
        assert_eq!(outcome(0, 0).exit(), Exit::Ok);
        assert_eq!(outcome(2, 1).exit(), Exit::Undelivered);
        assert_eq!(outcome(0, 1).exit(), Exit::Quarantined);
    }
}
