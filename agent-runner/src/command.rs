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
