//! `agent-runner`: parse the command line, build a validated config, run it, map the
//! outcome to an exit code (see README.md, "Exit codes").

use std::process::ExitCode;

use agent_runner::cli::{Cli, Command, ScenariosCommand, SpoolCommand};
use agent_runner::exec::ExecError;
use agent_runner::import::ImportError;
use agent_runner::scenario::Pins;
use agent_runner::sweep::SweepError;
use agent_runner::{Error, Exit};
use clap::Parser;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> ExitCode {
    // Colour only on a terminal, and not with NO_COLOR set (https://no-color.org).
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    // Ctrl-C is how a tail ends, not an interruption.
    let interruptible = !matches!(cli.command, Command::Tail(_));
    let shutdown = shutdown_signal(interruptible);
    let exit = match execute(cli.command, shutdown.clone()).await {
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

async fn execute(command: Command, shutdown: CancellationToken) -> Result<Exit, Error> {
    match command {
        Command::Run(args) => {
            let report = agent_runner::run(args.into_config()?, shutdown).await?;
            print!("{report}");
            Ok(report.delivery.as_ref().map_or(Exit::Ok, |d| d.exit()))
        }
        Command::Scenarios { command } => match command {
            ScenariosCommand::Hash(args) => {
                let old = Pins::load(&args.dir)?.unwrap_or_default();
                let new = Pins::compute(&args.dir)?;
                new.write(&args.dir)?;
                for change in new.changes_since(&old) {
                    println!("{change}");
                }
                println!(
                    "pinned {} scenarios and {} tasks",
                    new.scenarios.len(),
                    new.tasks.len()
                );
                Ok(Exit::Ok)
            }
            ScenariosCommand::Check(args) => {
                let pinned = Pins::load(&args.dir)?.unwrap_or_default();
                let changes = Pins::compute(&args.dir)?.changes_since(&pinned);
                for change in &changes {
                    println!("{change}");
                }
                Ok(if changes.is_empty() {
                    Exit::Ok
                } else {
                    Exit::Pins
                })
            }
        },
        Command::Spool { command } => match command {
            SpoolCommand::Flush(args) => {
                let report = agent_runner::flush_spool(&args.into_setup()?).await?;
                println!("{report}");
                Ok(report.exit())
            }
            SpoolCommand::Status(args) => {
                for slot in agent_runner::spool::slot_files(&args.spool) {
                    let status = agent_runner::spool::status(&slot)?;
                    if args.json {
                        let json = serde_json::to_string_pretty(&status)
                            .unwrap_or_else(|e| unreachable!("the status is plain data: {e}"));
                        println!("{json}");
                    } else {
                        print!("{status}");
                    }
                }
                Ok(Exit::Ok)
            }
        },
        Command::Sweep(args) => Ok(or_report(args.execute(shutdown).await, SweepError::exit)),
        Command::Exec(args) => Ok(or_report(args.execute(shutdown).await, ExecError::exit)),
        Command::Import { command } => Ok(or_report(command.execute().await, ImportError::exit)),
        Command::Tail(args) => {
            let config = args.into_config()?;
            let tail = agent_runner::tail::run(config, &mut std::io::stdout(), shutdown).await;
            Ok(or_report(tail.map(|_| Exit::Ok), |_| Exit::Failure))
        }
    }
}

/// The exit of a command with its own error type; an error is printed first.
fn or_report<E>(result: Result<Exit, E>, exit: fn(&E) -> Exit) -> Exit
where
    E: std::error::Error + Send + Sync + 'static,
{
    result.unwrap_or_else(|e| {
        let code = exit(&e);
        eprintln!("agent-runner: {:#}", anyhow::Error::from(e));
        code
    })
}

/// Cancelled on SIGINT or SIGTERM; the runner then stops its runs and drains (said on
/// stderr when `announce`).
fn shutdown_signal(announce: bool) -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot watch SIGTERM");
                    return;
                }
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
