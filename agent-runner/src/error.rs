//! The runner's one error type, the process exit codes (documented in `README.md`), and
//! [`Outcome`]: what a command that ran reports and the exit code it ends with.
//!
//! Every command (`run`, `sweep`, `exec`, `import`, `tail`, `otlp`, `scenarios`, `spool`)
//! fails with [`Error`]. What only one command can meet is that command's own error,
//! declared in its module with the exit code of each of its kinds (`sweep::SweepError`,
//! `exec::ExecError`, `run_import::ImportError`, `tail::TailError`, `tasks::TasksError`,
//! each a [`CommandError`]) and held by [`Error::Command`]: this module, which every
//! command uses, uses no command; `otlp`'s is `bench_otlp::OtlpError`, its crate's. [`Error::exit`]
//! maps errors to exit codes (a command's own error by its [`CommandError::exit`]), and
//! [`DeliveryReport::exit`] is the one mapping from what a publisher did to an exit code.

use std::fmt;
use std::process::ExitCode;

use bench_cli::Status;
use bench_delivery::{DeliveryReport, PublishFailure, SpoolError, StartError};
use bench_sandbox::SandboxUnavailable;
use bench_schemas::ExitStatus;

use crate::policy::PolicyError;
use crate::recorder::RecordError;
use bench_task::ScenarioError;

/// Why a runner command failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A scenario, task or fixture could not be loaded, or differs from its pin.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A policy could not be built (an `llm` policy without a provider, ...).
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The broker could not be reached when it had to be.
    #[error(transparent)]
    Connect(#[from] bench_nats::ConnectError),
    /// The spool could not be opened or used.
    #[error(transparent)]
    Spool(#[from] SpoolError),
    /// The publisher failed for good.
    #[error(transparent)]
    Publish(#[from] PublishFailure),
    /// A run's events could not be recorded locally.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A flag or setting is invalid.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The agent sandbox is required but not available on this host.
    #[error(transparent)]
    Sandbox(#[from] SandboxUnavailable),
    /// `run --until-decided`: the experiment's outcomes could not be read from
    /// ClickHouse, or did not arrive.
    #[error("reading the experiment's outcomes from clickhouse: {0}")]
    Outcomes(String),
    /// `otlp`: the receiver could not listen or serve.
    #[error(transparent)]
    Otlp(#[from] bench_otlp::OtlpError),
    /// What only one command can meet, declared beside it with the exit code of each of
    /// its kinds: `sweep::SweepError`, `exec::ExecError`, `run_import::ImportError`,
    /// `tail::TailError`, `tasks::TasksError`.
    #[error(transparent)]
    Command(CommandFailure),
    /// `run`, `sweep`: the provider of an `llm` policy failed its check before the first
    /// run (unreachable, a refused key, a model it does not serve).
    #[error(transparent)]
    Provider(#[from] crate::provider::CheckError),
    /// A task's image could not be had, is not the pinned one, or cannot run here.
    #[error(transparent)]
    Image(#[from] crate::task_image::TaskImageError),
}

/// A publisher that could not start fails its command as the connection or the spool.
impl From<StartError> for Error {
    fn from(e: StartError) -> Error {
        match e {
            StartError::Connect(e) => Error::Connect(e),
            StartError::Spool(e) => Error::Spool(e),
        }
    }
}

/// The error of one command, declared in that command's module: its own kinds of failure
/// and the exit code each ends the process with. It becomes an [`Error`]
/// ([`Error::Command`]) where the command meets it.
pub trait CommandError: std::error::Error + Send + Sync + 'static {
    /// The exit code this error ends the process with.
    fn exit(&self) -> Exit;
}

/// A command's own error as an [`Error`]: its text and causes are the command error's.
#[derive(Debug)]
pub struct CommandFailure(Box<dyn CommandError>);

impl<E: CommandError> From<E> for CommandFailure {
    fn from(e: E) -> CommandFailure {
        CommandFailure(Box::new(e))
    }
}

impl fmt::Display for CommandFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for CommandFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Process exit codes of `agent-runner`: the four every benchstream binary shares
/// ([`Status`]), and the runner's own between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// Every run ended (solved or not) and every event was acknowledged by JetStream.
    Ok = Status::Ok.code(),
    /// Unexpected failure (I/O, artifacts, connection setup).
    Failure = Status::Failure.code(),
    /// Bad command line, configuration, scenario or task file.
    Usage = Status::Usage.code(),
    /// A scenario file, task file or fixture differs from `pins.toml` (or is unpinned).
    Pins = 3,
    /// Runs ended, but some events are still in the spool (broker unreachable): they are
    /// replayed by the next start or `agent-runner spool flush`.
    Undelivered = 4,
    /// The spool is full or unusable (locked by another runner, I/O error): events may
    /// exist only in `events.jsonl`.
    Spool = 5,
    /// Something was moved to the spool's quarantine file (never deliverable: no stream
    /// for its subject, refused by the server, damaged bytes); `agent-runner spool status`
    /// lists it. Everything else was delivered.
    Quarantined = 6,
    /// Every event was delivered, but some run could not get its agent sandbox (a bwrap
    /// failure, a namespace or process limit, a cgroup that could not be made): it ended
    /// `exit_environment` and is no result; the log says why.
    Environment = 7,
    /// Every event was delivered, but every run was an infrastructure failure (its
    /// sandbox could not be set up, `exit_environment`, or its provider failed,
    /// `exit_api`): the command produced no result at all.
    Infrastructure = 8,
    /// Stopped by SIGINT/SIGTERM (after draining).
    Interrupted = Status::Interrupted.code(),
}

impl Exit {
    /// The process exit code.
    pub fn code(self) -> ExitCode {
        ExitCode::from(self as u8)
    }
}

impl Error {
    /// The exit code this error ends the process with.
    pub fn exit(&self) -> Exit {
        match self {
            Error::Scenario(e) if e.is_pin_error() => Exit::Pins,
            Error::Image(e) if e.is_pin_error() => Exit::Pins,
            Error::Image(_) => Exit::Environment,
            Error::Scenario(_) | Error::Policy(_) | Error::Config(_) | Error::Sandbox(_) => {
                Exit::Usage
            }
            Error::Spool(_) | Error::Publish(PublishFailure::Spool(_)) => Exit::Spool,
            Error::Connect(_)
            | Error::Record(_)
            | Error::Publish(PublishFailure::Task(_))
            | Error::Outcomes(_)
            | Error::Otlp(_)
            | Error::Provider(_) => Exit::Failure,
            Error::Command(e) => e.0.exit(),
        }
    }
}

/// The exit code of a command whose publishing ended with this report:
/// [`Exit::Undelivered`] while events wait in the spool, else [`Exit::Quarantined`]
/// when this process quarantined anything, else [`Exit::Ok`].
impl Outcome for DeliveryReport {
    fn exit(&self) -> Exit {
        if self.left_in_spool > 0 {
            Exit::Undelivered
        } else if self.quarantined > 0 {
            Exit::Quarantined
        } else {
            Exit::Ok
        }
    }
}

/// How the runs of a command ended, as far as its exit code cares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunTally {
    /// Runs that ended.
    pub runs: usize,
    /// Of them, runs that could not get their sandbox (`exit_environment`).
    pub no_sandbox: usize,
    /// Of them, infrastructure failures (`exit_environment`, `exit_api`).
    pub infrastructure: usize,
}

impl RunTally {
    /// The tally of runs that ended with `statuses`.
    pub fn of(statuses: impl IntoIterator<Item = ExitStatus>) -> RunTally {
        let mut tally = RunTally::default();
        for status in statuses {
            tally.add(status);
        }
        tally
    }

    /// Counts one more run, ended with `status`.
    pub fn add(&mut self, status: ExitStatus) {
        self.runs += 1;
        self.no_sandbox += usize::from(status == ExitStatus::ExitEnvironment);
        self.infrastructure += usize::from(matches!(
            status,
            ExitStatus::ExitEnvironment | ExitStatus::ExitApi
        ));
    }
}

/// The exit code of a command whose runs ended as `tally` says and whose publishing
/// ended with `delivery` (`None`: none): the delivery's when it is not [`Exit::Ok`]
/// (events left in the spool must be flushed whatever the runs were), else
/// [`Exit::Infrastructure`] when every run was an infrastructure failure, else
/// [`Exit::Environment`] when a run had no sandbox.
pub fn runs_exit(tally: RunTally, delivery: Option<&DeliveryReport>) -> Exit {
    match delivery.map_or(Exit::Ok, DeliveryReport::exit) {
        Exit::Ok if tally.runs > 0 && tally.infrastructure == tally.runs => Exit::Infrastructure,
        Exit::Ok if tally.no_sandbox > 0 => Exit::Environment,
        exit => exit,
    }
}

/// What a command that ran to its end reports: its text for the user (every line ends
/// with a newline) and the exit code it ends with.
pub trait Outcome: fmt::Display {
    /// The exit code.
    fn exit(&self) -> Exit;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events left in the spool outweigh quarantined ones; a clean delivery is 0.
    #[test]
    fn delivery_maps_to_its_exit_code() {
        let report = |left_in_spool, quarantined| DeliveryReport {
            left_in_spool,
            quarantined,
            ..DeliveryReport::default()
        };
        assert_eq!(report(0, 0).exit(), Exit::Ok);
        assert_eq!(report(3, 0).exit(), Exit::Undelivered);
        assert_eq!(report(3, 1).exit(), Exit::Undelivered);
        assert_eq!(report(0, 1).exit(), Exit::Quarantined);
    }

    /// A run without its sandbox is no result: the runner exits non-zero, after what
    /// the spool needs; a command whose every run was an infrastructure failure has a
    /// code of its own.
    #[test]
    fn a_run_without_its_sandbox_exits_non_zero() {
        use ExitStatus::{ExitApi, ExitEnvironment, Submitted};
        let clean = DeliveryReport::default();
        assert_eq!(runs_exit(RunTally::default(), Some(&clean)), Exit::Ok);
        assert_eq!(runs_exit(RunTally::of([Submitted]), Some(&clean)), Exit::Ok);
        let one_without = RunTally::of([Submitted, ExitEnvironment]);
        assert_eq!(runs_exit(one_without, Some(&clean)), Exit::Environment);
        assert_eq!(runs_exit(one_without, None), Exit::Environment);
        assert_eq!(
            runs_exit(RunTally::of([Submitted, ExitApi]), None),
            Exit::Ok,
            "a provider failure among results is counted, not fatal"
        );
        let all = RunTally::of([ExitApi, ExitEnvironment, ExitApi]);
        assert_eq!(runs_exit(all, Some(&clean)), Exit::Infrastructure);
        let spooled = DeliveryReport {
            left_in_spool: 1,
            ..DeliveryReport::default()
        };
        assert_eq!(runs_exit(all, Some(&spooled)), Exit::Undelivered);
    }
}
