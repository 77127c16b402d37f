//! The runner's one error type, the process exit codes (documented in `README.md`), and
//! [`Outcome`]: what a command that ran reports and the exit code it ends with.
//!
//! Every command (`run`, `sweep`, `exec`, `import`, `tail`, `otlp`, `scenarios`, `spool`)
//! fails with [`Error`]; what only one command can meet is a variant holding that
//! command's own error ([`SweepError`], [`ExecError`], [`ImportError`], [`TailError`],
//! and `otlp`'s `bench_otlp::OtlpError`, its crate's). Those but the last are
//! declared here too (and re-exported by their commands), so that this module, which
//! every command uses, uses no command. [`Error::exit`] is the one mapping from errors to
//! exit codes, and [`DeliveryReport::exit`] the one mapping from what a publisher did to
//! an exit code.

use std::fmt;
use std::path::PathBuf;
use std::process::ExitCode;

use bench_cli::Status;
use bench_delivery::{DeliveryReport, PublishFailure, SpoolError, StartError};
use bench_sandbox::{SandboxUnavailable, ScratchError, UnmountablePath};
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
    /// `sweep`: a bad sweep file, or the claims or past results could not be read.
    #[error(transparent)]
    Sweep(#[from] SweepError),
    /// `run --until-decided`: the experiment's outcomes could not be read from
    /// ClickHouse, or did not arrive.
    #[error("reading the experiment's outcomes from clickhouse: {0}")]
    Outcomes(String),
    /// `exec`: the agent program could not be started or waited for.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// `import`: a trajectory could not be read or converted.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// `tail`: the stream could not be read.
    #[error(transparent)]
    Tail(#[from] TailError),
    /// `otlp`: the receiver could not listen or serve.
    #[error(transparent)]
    Otlp(#[from] bench_otlp::OtlpError),
    /// `tasks import`: the instances file or the scenarios directory could not be used.
    #[error(transparent)]
    Tasks(#[from] TasksError),
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

/// What only `tasks import` can meet as a whole; an instance that cannot be imported is a
/// line of its report, not an error.
#[derive(Debug, thiserror::Error)]
pub enum TasksError {
    /// The instances file cannot be read or is neither a JSON array nor JSON lines.
    #[error("{path}: {message}")]
    Instances {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The scenario file cannot be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What only a sweep can meet; everything else a sweep meets is a [`Error`] of its
/// own.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The sweep file cannot be read or parsed.
    #[error("{path}: {message}")]
    File {
        /// The sweep file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The sweep file is not the TOML of a sweep: where, the key and why.
    #[error(transparent)]
    Toml(#[from] bench_cli::TomlError),
    /// The sweep is well-formed but describes no valid run (constraints, matrix values).
    #[error("invalid sweep: {0}")]
    Invalid(String),
    /// The claim bucket could not be opened, read or written.
    #[error("sweep claims: {0}")]
    Claims(String),
    /// Past results could not be read from ClickHouse.
    #[error("reading past results from clickhouse: {0}")]
    ClickHouse(String),
}

/// What only an external-agent run can meet; everything else it meets is a
/// [`Error`] of its own. A misbehaving agent is not an error: its bad lines are
/// skipped and its exit status recorded.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The agent program does not exist or is not executable (checked before anything
    /// is published).
    #[error("agent program {program:?}: {why}")]
    ProgramNotFound {
        /// The program as given.
        program: String,
        /// Why it cannot run.
        why: String,
    },
    /// The agent's exit could not be waited for.
    #[error("cannot wait for the agent: {0}")]
    Wait(std::io::Error),
    /// The agent's scratch copy of the fixture could not be made.
    #[error(transparent)]
    Scratch(#[from] ScratchError),
    /// A path the agent was to read (its program, `--sandbox-ro`) cannot be
    /// made visible in its sandbox.
    #[error(transparent)]
    Unmountable(#[from] UnmountablePath),
    /// The directory with the agent's problem statement (`BENCH_TASK_DIR`) could not be
    /// made.
    #[error("cannot write the task brief: {0}")]
    Brief(std::io::Error),
}

/// What only an import can meet: a trajectory that cannot be read or converted (the file
/// is then skipped, or the import refused when the directory itself cannot be read).
/// Everything else an import meets is a [`Error`] of its own.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A file or directory cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not a SWE-agent trajectory.
    #[error("{path}: not a SWE-agent trajectory: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// An event of a trajectory is too large even after truncation.
    #[error("{path}: event {seq}: {source}")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The event's `seq`.
        seq: u64,
        /// Why.
        source: bench_schemas::truncate::EventTooLarge,
    },
}

/// What only a tail can meet: the stream or its consumer failed. An unreachable broker is
/// a [`Error`] of its own.
#[derive(Debug, thiserror::Error)]
pub enum TailError {
    /// The stream cannot be found or read.
    #[error("stream {stream}: {source}")]
    Stream {
        /// The stream name.
        stream: String,
        /// The server's answer.
        source: async_nats::jetstream::context::GetStreamError,
    },
    /// The tail's consumer cannot be created.
    #[error("cannot create the tail's consumer on stream {stream}: {source}")]
    Consumer {
        /// The stream name.
        stream: String,
        /// The server's answer.
        source: async_nats::jetstream::stream::ConsumerError,
    },
    /// The tail's consumer cannot be read.
    #[error("cannot read from the tail's consumer: {0}")]
    Messages(#[from] async_nats::jetstream::consumer::StreamError),
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
            Error::Scenario(_)
            | Error::Policy(_)
            | Error::Config(_)
            | Error::Sandbox(_)
            | Error::Sweep(
                SweepError::File { .. } | SweepError::Toml(_) | SweepError::Invalid(_),
            )
            | Error::Exec(ExecError::ProgramNotFound { .. } | ExecError::Unmountable(_))
            | Error::Import(
                ImportError::Read { .. } | ImportError::Parse { .. } | ImportError::TooLarge { .. },
            )
            | Error::Tasks(TasksError::Instances { .. }) => Exit::Usage,
            Error::Spool(_) | Error::Publish(PublishFailure::Spool(_)) => Exit::Spool,
            Error::Connect(_)
            | Error::Record(_)
            | Error::Publish(PublishFailure::Task(_))
            | Error::Sweep(SweepError::Claims(_) | SweepError::ClickHouse(_))
            | Error::Outcomes(_)
            | Error::Exec(ExecError::Scratch(_) | ExecError::Wait(_) | ExecError::Brief(_))
            | Error::Tail(_)
            | Error::Otlp(_)
            | Error::Provider(_)
            | Error::Tasks(TasksError::Write { .. }) => Exit::Failure,
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
    use std::io;
    use std::path::PathBuf;

    use super::*;
    use bench_sandbox::TreeError;
    use bench_task::PinError;

    fn io_error() -> io::Error {
        io::Error::new(io::ErrorKind::NotFound, "gone")
    }

    /// A real record error: the run directory cannot be created under a file.
    fn record_error() -> RecordError {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        let sequencer = bench_schemas::RunSequencer::new(
            uuid::Uuid::now_v7(),
            "t",
            "p",
            bench_schemas::sha256_hex(b"cfg"),
            bench_schemas::sha256_hex(b"env"),
            Some(1),
            "h".to_owned(),
        );
        let Err(e) = crate::recorder::RunRecorder::new(sequencer, None, Some(file.path())) else {
            panic!("a run directory under a file")
        };
        e
    }

    /// Every kind of error ends the process with the code `README.md` ("Exit codes")
    /// documents for it.
    #[test]
    fn every_error_maps_to_its_documented_exit_code() {
        let path = || PathBuf::from("x");
        let hash = bench_schemas::sha256_hex(b"x");
        let stream_error = async_nats::jetstream::context::GetStreamError::new(
            async_nats::jetstream::context::GetStreamErrorKind::EmptyName,
        );
        let cases: Vec<(Error, Exit)> = vec![
            (
                ScenarioError::Pin(PinError::NotPinned {
                    what: "task t".into(),
                    pins: path(),
                })
                .into(),
                Exit::Pins,
            ),
            (
                ScenarioError::Pin(PinError::Mismatch {
                    what: "task t".into(),
                    pins: path(),
                    expected: hash.clone(),
                    actual: hash,
                })
                .into(),
                Exit::Pins,
            ),
            (
                ScenarioError::Read {
                    path: path(),
                    source: io_error(),
                }
                .into(),
                Exit::Usage,
            ),
            (
                ScenarioError::Tree(TreeError::Read {
                    path: path(),
                    source: io_error(),
                })
                .into(),
                Exit::Usage,
            ),
            (PolicyError::NoProvider.into(), Exit::Usage),
            (Error::Config("bad".into()), Exit::Usage),
            (SandboxUnavailable("no bwrap".into()).into(), Exit::Usage),
            (
                SweepError::File {
                    path: path(),
                    message: "bad".into(),
                }
                .into(),
                Exit::Usage,
            ),
            (SweepError::Invalid("bad".into()).into(), Exit::Usage),
            (
                ExecError::ProgramNotFound {
                    program: "a".into(),
                    why: "no such file".into(),
                }
                .into(),
                Exit::Usage,
            ),
            (
                ImportError::Read {
                    path: path(),
                    source: io_error(),
                }
                .into(),
                Exit::Usage,
            ),
            (
                ImportError::Parse {
                    path: path(),
                    message: "bad".into(),
                }
                .into(),
                Exit::Usage,
            ),
            (SpoolError::Locked { path: path() }.into(), Exit::Spool),
            (
                PublishFailure::Spool(SpoolError::Io {
                    path: path(),
                    source: io_error(),
                })
                .into(),
                Exit::Spool,
            ),
            (
                PublishFailure::Task("panicked".into()).into(),
                Exit::Failure,
            ),
            (
                bench_nats::ConnectError::CredsFile {
                    path: path(),
                    source: io_error(),
                }
                .into(),
                Exit::Failure,
            ),
            (record_error().into(), Exit::Failure),
            (SweepError::Claims("down".into()).into(), Exit::Failure),
            (SweepError::ClickHouse("down".into()).into(), Exit::Failure),
            (
                ExecError::Scratch(bench_sandbox::ScratchError::Create(io_error())).into(),
                Exit::Failure,
            ),
            (ExecError::Wait(io_error()).into(), Exit::Failure),
            (
                TailError::Stream {
                    stream: "S".into(),
                    source: stream_error,
                }
                .into(),
                Exit::Failure,
            ),
        ];
        for (error, exit) in cases {
            assert_eq!(error.exit(), exit, "{error}");
        }
    }

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
