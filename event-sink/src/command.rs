//! The `event-sink` command line ([`Cli`]) and running what it asks for ([`execute`]):
//! `run` (the default) consumes events into ClickHouse on its own runtime, `migrate` only
//! applies the migrations, `dead-letters replay` publishes dead letters again, and `query`
//! / `report` / `compare` hand the process over to `bench-analysis` (`alias`).
//! `main.rs` only parses, sets up logging and hands off here.
//!
//! Exit status ([`bench_cli::Status`]): 0 after a clean stop, 2 for unusable settings,
//! 1 for anything else (unreachable or refusing servers at start, shutdown drain timed
//! out).

use std::ffi::OsString;

use bench_cli::{LogArgs, Status};
use bench_clickhouse::{ClickHouseConfig, ConnectionArgs};
use clap::{Parser, Subcommand};

use crate::alias::{exec_analysis, AliasError};
use crate::config::{Config, ConfigError, SinkArgs};
use crate::replay::{ReplayError, Selection};
use crate::service::SinkError;

/// `event-sink`.
#[derive(Debug, Parser)]
#[command(
    name = "event-sink",
    version,
    about = "JetStream → ClickHouse sink of benchstream events"
)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// `--log-format`.
    #[command(flatten)]
    pub log: LogArgs,
    /// The subcommand; none is `run`.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Settings of `run`, the default command.
    #[command(flatten)]
    pub settings: SinkArgs,
}

/// Each subcommand takes only its own flags: `run` every sink setting, `migrate` the
/// ClickHouse connection (`--insert-timeout-ms` is accepted there but hidden).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Consume events into ClickHouse until SIGINT/SIGTERM (the default).
    Run(Box<SinkArgs>),
    /// Apply pending ClickHouse migrations and exit.
    #[command(mut_arg("insert-timeout-ms", |arg| arg.hide(true)))]
    Migrate(ConnectionArgs),
    /// Dead letters: `replay` publishes them again once their cause is fixed.
    #[command(subcommand)]
    DeadLetters(DeadLetters),
    /// Alias of `bench-analysis query`: run a shipped query (`query list` lists them).
    #[command(disable_help_flag = true)]
    Query(Passthrough),
    /// Alias of `bench-analysis report`: write the HTML report.
    #[command(disable_help_flag = true)]
    Report(Passthrough),
    /// Alias of `bench-analysis compare`: compare policies with paired statistics.
    #[command(disable_help_flag = true)]
    Compare(Passthrough),
}

/// What can be done with dead letters.
#[derive(Debug, Subcommand)]
pub enum DeadLetters {
    /// Publish dead letters again, through the sink's decode, admission and first write
    /// wins, skipping (with the reason) what still cannot land or is stored already.
    Replay(Box<ReplayArgs>),
}

/// `dead-letters replay`: which dead letters, and the sink's settings.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// Only this `error_class` (e.g. `rejected_by_clickhouse`); default every class.
    #[arg(long)]
    pub class: Option<String>,
    /// Only dead letters received at or after this time: RFC 3339 or `YYYY-MM-DD` (UTC).
    #[arg(long, value_parser = crate::replay::parse_since)]
    pub since: Option<u32>,
    /// Report what would be replayed; publish nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// NATS, stream and ClickHouse: the sink's settings.
    #[command(flatten)]
    pub settings: SinkArgs,
}

/// The arguments of an alias, handed to `bench-analysis` unread.
#[derive(Debug, clap::Args)]
pub struct Passthrough {
    /// Arguments of `bench-analysis query` / `report` / `compare` (`--help` shows them).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<OsString>,
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The sink's settings are unusable.
    #[error("invalid settings")]
    Settings(#[source] ConfigError),
    /// The ClickHouse connection settings of `migrate` are unusable.
    #[error("invalid settings")]
    Connection(#[source] bench_clickhouse::ConfigError),
    /// The tokio runtime could not be built.
    #[error("cannot start the runtime")]
    Runtime(#[source] std::io::Error),
    /// The sink stopped with an error.
    #[error("event-sink")]
    Sink(#[source] SinkError),
    /// Migrating failed.
    #[error("migrate")]
    Migrate(#[source] SinkError),
    /// Replaying dead letters failed.
    #[error("dead-letters replay")]
    Replay(#[source] ReplayError),
    /// An alias could not hand over to `bench-analysis`.
    #[error(transparent)]
    Alias(AliasError),
}

impl CommandError {
    /// The exit status this error ends the process with.
    pub fn status(&self) -> Status {
        match self {
            CommandError::Settings(_) | CommandError::Connection(_) => Status::Usage,
            _ => Status::Failure,
        }
    }
}

/// Runs the command `cli` holds. `log_format_given`: `--log-format` was on the command
/// line (an alias passes it on; the environment and the default are bench-analysis's
/// own).
pub fn execute(cli: Cli, log_format_given: bool) -> Result<(), CommandError> {
    let (alias, args) = match cli.command {
        None => return serve(cli.settings),
        Some(Command::Run(args)) => return serve(*args),
        Some(Command::Migrate(args)) => {
            return migrate(args.load().map_err(CommandError::Connection)?)
        }
        Some(Command::DeadLetters(DeadLetters::Replay(args))) => return replay(*args),
        Some(Command::Query(pass)) => ("query", pass.args),
        Some(Command::Report(pass)) => ("report", pass.args),
        Some(Command::Compare(pass)) => ("compare", pass.args),
    };
    let log_format = log_format_given.then_some(cli.log.log_format);
    Err(CommandError::Alias(exec_analysis(alias, &args, log_format)))
}

/// Runs the sink on `config.worker_threads` threads until SIGINT/SIGTERM. One thread is
/// tokio's current-thread runtime: the whole pipeline on one core, the least CPU per
/// event. More is the multi-thread runtime: the NATS connection, the receiver's decoding
/// and the writer's inserts then run on different cores at once (event-sink/README.md,
/// "Benchmark").
fn serve(args: SinkArgs) -> Result<(), CommandError> {
    let config: Config = args.load().map_err(CommandError::Settings)?;
    let runtime = bench_cli::runtime(Some(config.worker_threads)).map_err(CommandError::Runtime)?;
    runtime.block_on(async {
        let shutdown = bench_cli::cancel_on_signal(Some("draining"));
        crate::run(config, shutdown)
            .await
            .map_err(CommandError::Sink)
    })
}

/// Applies the migrations, on a runtime with a worker per core.
fn migrate(clickhouse: ClickHouseConfig) -> Result<(), CommandError> {
    let runtime = bench_cli::runtime(None).map_err(CommandError::Runtime)?;
    let applied = runtime
        .block_on(crate::migrate(&clickhouse))
        .map_err(CommandError::Migrate)?;
    tracing::info!(?applied, "migrations up to date");
    Ok(())
}

/// Publishes the selected dead letters again, on the calling thread.
fn replay(args: ReplayArgs) -> Result<(), CommandError> {
    let selection = Selection {
        class: args.class,
        since: args.since,
        dry_run: args.dry_run,
    };
    let config = args.settings.load().map_err(CommandError::Settings)?;
    let runtime = bench_cli::runtime(Some(1)).map_err(CommandError::Runtime)?;
    let report = runtime
        .block_on(crate::replay::replay(&config, &selection))
        .map_err(CommandError::Replay)?;
    print!("{report}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
