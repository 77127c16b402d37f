//! Running what the command line asks for ([`execute`]): the runner's own mount namespace
//! for the commands that run agents (entered while the process has one thread), the
//! runtime, the shutdown token, the subcommand, its outcome printed and its exit code.
//! `main.rs` only closes what it inherited, parses, sets up logging and hands off here,
//! as the other binaries do.

use std::io;

use tokio_util::sync::CancellationToken;

use crate::cli::{Command, ScenariosCommand as Scenarios, SpoolCommand as Spool};
use crate::{
    exec, otlp, pin_report, run_import, spool_report, sweep, tail, tasks, Error, Exit, Outcome,
};

/// Runs `command` to its end: its exit code, its outcome printed and an error that ends
/// it reported. Call it while the process has one thread (before any runtime exists).
pub fn execute(command: Command) -> Exit {
    // Before any thread exists: the namespace is entered by the calling thread alone.
    if runs_agents(&command) {
        match bench_sandbox::enter_mount_namespace() {
            Ok(namespace) => tracing::debug!(?namespace, "workspace mounts are the runner's own"),
            Err(e) => {
                tracing::warn!(error = %e, "workspace mounts are made in the host's mount namespace, if at all")
            }
        }
    }
    match bench_cli::runtime(None) {
        Ok(runtime) => runtime.block_on(serve(command)),
        Err(e) => {
            bench_cli::report(&e);
            Exit::Failure
        }
    }
}

/// Whether `command` can start agent or judge processes, whose workspaces the runner
/// mounts ([`bench_sandbox::enter_mount_namespace`]).
fn runs_agents(command: &Command) -> bool {
    !matches!(
        command,
        Command::Tail(_) | Command::Otlp(_) | Command::Scenarios(_) | Command::Spool(_)
    )
}

/// Runs `command` until it ends or a signal stops it; its exit code.
async fn serve(command: Command) -> Exit {
    // Ctrl-C is how a tail or a receiver ends, not an interruption.
    let interruptible = !matches!(command, Command::Tail(_) | Command::Otlp(_));
    let shutdown =
        bench_cli::cancel_on_signal(interruptible.then_some("stopping runs, draining events"));
    let exit = match dispatch(command, shutdown.clone()).await {
        Ok(_) if interruptible && shutdown.is_cancelled() => Exit::Interrupted,
        Ok(exit) => exit,
        Err(e) => {
            bench_cli::report(&e);
            e.exit()
        }
    };
    exit
}

/// Runs `command` and prints its outcome: on stdout, but on stderr for `import`, whose
/// stdout carries the events with `--no-publish`.
async fn dispatch(command: Command, shutdown: CancellationToken) -> Result<Exit, Error> {
    Ok(match command {
        Command::Run(a) if a.until_decided => {
            print(crate::decide::run_until_decided(a.into_decide_config()?, shutdown).await?)
        }
        Command::Run(a) => print(crate::run(a.into_config()?, shutdown).await?),
        Command::Scenarios(Scenarios::Hash(a)) => print(pin_report::repin(&a.dir)?),
        Command::Scenarios(Scenarios::Check(a)) => print(pin_report::check_pins(&a.dir)?),
        Command::Spool(Spool::Flush(a)) => print(spool_report::flush(&a.into_setup()?).await?),
        Command::Spool(Spool::Status(a)) => print(spool_report::spool_status(&a.spool, a.json)?),
        Command::Sweep(a) if a.dry_run => print(a.plan()?),
        Command::Sweep(a) => print(sweep::run(a.into_config()?, shutdown).await?),
        Command::Exec(a) => exec::run_all(a.into_configs()?, shutdown, |r| println!("{r}"))
            .await?
            .exit(),
        Command::Import(a) => {
            let report = run_import::run(a.into_config()?, &mut io::stdout()).await?;
            eprint!("{report}");
            report.exit()
        }
        Command::Tasks(a) => match a.into_config()? {
            tasks::TasksConfig::Import(c) => print(tasks::import_swe_bench(&c)?),
            tasks::TasksConfig::Validate(c) => print(tasks::validate(&c).await?),
        },
        Command::Otlp(a) => print(otlp::run(a.into_config()?, shutdown).await?),
        Command::Tail(a) => {
            tail::run(a.into_config()?, &mut io::stdout(), shutdown).await?;
            Exit::Ok
        }
    })
}

/// Prints `outcome` on stdout; its exit code.
fn print(outcome: impl Outcome) -> Exit {
    print!("{outcome}");
    outcome.exit()
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::path::PathBuf;

    use bench_delivery::{PublishFailure, SpoolError};
    use bench_sandbox::{SandboxUnavailable, TreeError};
    use bench_task::{PinError, ScenarioError};

    use crate::error::{Error, Exit};
    use crate::exec::ExecError;
    use crate::policy::PolicyError;
    use crate::recorder::RecordError;
    use crate::run_import::ImportError;
    use crate::sweep::SweepError;
    use crate::tail::TailError;

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
}
