//! The runner's error type and the process exit codes (documented in `README.md`).

use std::process::ExitCode;

use crate::policy::PolicyError;
use crate::publish::{DeliveryReport, PublishFailure};
use crate::recorder::RecordError;
use crate::scenario::ScenarioError;
use crate::spool::SpoolError;
use crate::tools::bwrap::SandboxUnavailable;

/// Why a runner command failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error(transparent)]
    Connect(#[from] bench_nats::ConnectError),
    #[error(transparent)]
    Spool(#[from] SpoolError),
    #[error(transparent)]
    Publish(#[from] PublishFailure),
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Sandbox(#[from] SandboxUnavailable),
}

/// Process exit codes of `agent-runner`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Every run ended (solved or not) and every event was acknowledged by JetStream.
    Ok = 0,
    /// Unexpected failure (I/O, artifacts, connection setup).
    Failure = 1,
    /// Bad command line, configuration, scenario or task file.
    Usage = 2,
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
    /// Stopped by SIGINT/SIGTERM (after draining).
    Interrupted = 130,
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
            Error::Scenario(e) => e.exit(),
            Error::Publish(e) => e.exit(),
            Error::Policy(_) | Error::Config(_) | Error::Sandbox(_) => Exit::Usage,
            Error::Spool(_) => Exit::Spool,
            Error::Connect(_) | Error::Record(_) => Exit::Failure,
        }
    }
}

// The errors every command can meet are classified here once; the errors of `sweep`,
// `exec` and `import` wrap them and defer to these.

impl ScenarioError {
    /// The exit code: [`Exit::Pins`] for a pin check, else [`Exit::Usage`] (a bad scenario
    /// or task file).
    pub fn exit(&self) -> Exit {
        if self.is_pin_error() {
            Exit::Pins
        } else {
            Exit::Usage
        }
    }
}

impl PublishFailure {
    /// The exit code: [`Exit::Spool`] when the spool failed, else [`Exit::Failure`].
    pub fn exit(&self) -> Exit {
        match self {
            PublishFailure::Spool(_) => Exit::Spool,
            PublishFailure::Task(_) => Exit::Failure,
        }
    }
}

impl DeliveryReport {
    /// The exit code of a command whose publishing ended with this report:
    /// [`Exit::Undelivered`] while events wait in the spool, else [`Exit::Quarantined`]
    /// when this process quarantined anything, else [`Exit::Ok`].
    pub fn exit(&self) -> Exit {
        if self.left_in_spool > 0 {
            Exit::Undelivered
        } else if self.quarantined > 0 {
            Exit::Quarantined
        } else {
            Exit::Ok
        }
    }
}
