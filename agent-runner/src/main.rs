//! `agent-runner`: parse the command line, build a validated config, run it, print its
//! outcome and map it to an exit code (see README.md, "Exit codes").

use std::io;
use std::process::ExitCode;

use agent_runner::cli::{Cli, Command, ScenariosCommand as Scenarios, SpoolCommand as Spool};
use agent_runner::{exec, import, maintenance, otlp, sweep, tail, tasks, Error, Exit, Outcome};
use clap::Parser;
use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> ExitCode {
    // Colour only on a terminal, and not with NO_COLOR set (https://no-color.org).
    let colour = io::IsTerminal::is_terminal(&io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        // Log fields can hold what an agent wrote: never raw control characters.
        .fmt_fields(agent_runner::terminal::EscapingFields)
        .with_ansi(colour)
        .with_writer(io::stderr)
        .init();
    let command = Cli::parse().command;
    // Ctrl-C is how a tail or a receiver ends, not an interruption.
    let interruptible = !matches!(command, Command::Tail(_) | Command::Otlp(_));
    let shutdown = shutdown_signal(interruptible);
    let exit = match execute(command, shutdown.clone()).await {
        Ok(_) if interruptible && shutdown.is_cancelled() => Exit::Interrupted,
        Ok(exit) => exit,
        Err(e) => {
            let exit = e.exit();
            eprintln!("agent-runner: {:#}", anyhow::Error::from(e));
            exit
        }
    };
    exit.code()
}

/// Runs `command` and prints its outcome: on stdout, but on stderr for `import`, whose
/// stdout carries the events with `--no-publish`.
async fn execute(command: Command, shutdown: CancellationToken) -> Result<Exit, Error> {
    Ok(match command {
        Command::Run(a) => print(agent_runner::run(a.into_config()?, shutdown).await?),
        Command::Scenarios(Scenarios::Hash(a)) => print(maintenance::repin(&a.dir)?),
        Command::Scenarios(Scenarios::Check(a)) => print(maintenance::check_pins(&a.dir)?),
        Command::Spool(Spool::Flush(a)) => print(maintenance::flush(&a.into_setup()?).await?),
        Command::Spool(Spool::Status(a)) => print(maintenance::spool_status(&a.spool, a.json)?),
        Command::Sweep(a) if a.dry_run => print(a.plan()?),
        Command::Sweep(a) => print(sweep::run(a.into_config()?, shutdown).await?),
        Command::Exec(a) => exec::run_all(a.into_configs()?, shutdown, |r| println!("{r}"))
            .await?
            .exit(),
        Command::Import(a) => {
            let report = import::run(a.into_config()?, &mut io::stdout()).await?;
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

/// Cancelled on SIGINT or SIGTERM; the runner then stops its runs and drains (said on
/// stderr when `announce`).
fn shutdown_signal(announce: bool) -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        let mut term = match signal(SignalKind::terminate()) {
            Ok(term) => term,
            Err(e) => return tracing::warn!(error = %e, "cannot watch SIGTERM"),
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        if announce {
            tracing::warn!("shutting down: stopping runs, draining events");
        }
        cancel.cancel();
    });
    token
}
