//! `event-sink [run]` consumes events into ClickHouse; `event-sink migrate` only applies
//! the ClickHouse migrations; `event-sink dead-letters replay` publishes dead letters
//! again ([`event_sink::replay`]). Settings: `--config FILE` (TOML) < `BENCH_*` env < flags;
//! see `event-sink --help` and event-sink/README.md. `event-sink query` and `event-sink
//! report` and `event-sink compare` run `bench-analysis query` / `report` / `compare`
//! ([`event_sink::alias`]).
//!
//! Exit status: 0 after a clean stop, 2 for unusable settings, 1 for anything else
//! (unreachable or refusing servers at start, shutdown drain timed out).

use std::ffi::OsString;
use std::process::ExitCode;

use anyhow::Context;
use bench_cli::{init_tracing, LogFormat};
use bench_clickhouse::{ClickHouseConfig, ConnectionArgs};
use clap::parser::ValueSource;
use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use event_sink::alias::exec_analysis;
use event_sink::SinkArgs;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Parser)]
#[command(version, about = "JetStream → ClickHouse sink of benchstream events")]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    /// Log format on stderr.
    #[arg(long, env = "BENCH_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Option<Command>,
    /// Settings of `run`, the default command.
    #[command(flatten)]
    settings: SinkArgs,
}

/// Each subcommand takes only its own flags: `run` every sink setting, `migrate` the
/// ClickHouse connection (`--insert-timeout-ms` is accepted there but hidden).
#[derive(Debug, Subcommand)]
enum Command {
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
enum DeadLetters {
    /// Publish dead letters again, through the sink's decode, admission and first write
    /// wins, skipping (with the reason) what still cannot land or is stored already.
    Replay(Box<ReplayArgs>),
}

/// `dead-letters replay`: which dead letters, and the sink's settings.
#[derive(Debug, clap::Args)]
struct ReplayArgs {
    /// Only this `error_class` (e.g. `rejected_by_clickhouse`); default every class.
    #[arg(long)]
    class: Option<String>,
    /// Only dead letters received at or after this time: RFC 3339 or `YYYY-MM-DD` (UTC).
    #[arg(long, value_parser = event_sink::replay::parse_since)]
    since: Option<u32>,
    /// Report what would be replayed; publish nothing.
    #[arg(long)]
    dry_run: bool,
    /// NATS, stream and ClickHouse: the sink's settings.
    #[command(flatten)]
    settings: SinkArgs,
}

/// The arguments of an alias, handed to `bench-analysis` unread.
#[derive(Debug, clap::Args)]
struct Passthrough {
    /// Arguments of `bench-analysis query` / `report` / `compare` (`--help` shows them).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    init_tracing(cli.log_format);
    let (alias, args) = match cli.command {
        None => return serve(cli.settings),
        Some(Command::Run(args)) => return serve(*args),
        Some(Command::Migrate(args)) => return migrate(args),
        Some(Command::DeadLetters(DeadLetters::Replay(args))) => return replay(*args),
        Some(Command::Query(pass)) => ("query", pass.args),
        Some(Command::Report(pass)) => ("report", pass.args),
        Some(Command::Compare(pass)) => ("compare", pass.args),
    };
    // A `--log-format` the sink read off its command line goes on; env and default are
    // bench-analysis's own.
    let given = matches.value_source("log_format") == Some(ValueSource::CommandLine);
    let error = exec_analysis(alias, &args, given.then_some(cli.log_format));
    tracing::error!("{error}");
    ExitCode::FAILURE
}

fn serve(args: SinkArgs) -> ExitCode {
    match args.load() {
        Ok(config) => exit_status(consume(config)),
        Err(e) => {
            tracing::error!("invalid settings: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs the sink on `config.worker_threads` threads. One thread is tokio's current-thread
/// runtime: the whole pipeline on one core, the least CPU per event. More is the
/// multi-thread runtime: the NATS connection, the receiver's decoding and the writer's
/// inserts then run on different cores at once (event-sink/README.md, "Benchmark").
fn consume(config: event_sink::Config) -> anyhow::Result<()> {
    let runtime = match config.worker_threads {
        1 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        threads => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build(),
    }
    .context("cannot start the runtime")?;
    runtime.block_on(async {
        let shutdown = CancellationToken::new();
        tokio::spawn(cancel_on_signal(shutdown.clone()));
        event_sink::run(config, shutdown)
            .await
            .context("event-sink")
    })
}

fn migrate(args: ConnectionArgs) -> ExitCode {
    match args.load() {
        Ok(clickhouse) => exit_status(apply_migrations(clickhouse)),
        Err(e) => {
            tracing::error!("{:#}", anyhow::Error::new(e).context("invalid settings"));
            ExitCode::from(2)
        }
    }
}

#[tokio::main]
async fn apply_migrations(clickhouse: ClickHouseConfig) -> anyhow::Result<()> {
    let applied = event_sink::migrate(&clickhouse).await.context("migrate")?;
    tracing::info!(?applied, "migrations up to date");
    Ok(())
}

fn replay(args: ReplayArgs) -> ExitCode {
    let selection = event_sink::replay::Selection {
        class: args.class,
        since: args.since,
        dry_run: args.dry_run,
    };
    match args.settings.load() {
        Ok(config) => exit_status(replay_dead_letters(config, selection)),
        Err(e) => {
            tracing::error!("invalid settings: {e}");
            ExitCode::from(2)
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn replay_dead_letters(
    config: event_sink::Config,
    selection: event_sink::replay::Selection,
) -> anyhow::Result<()> {
    let report = event_sink::replay::replay(&config, &selection)
        .await
        .context("dead-letters replay")?;
    print!("{report}");
    Ok(())
}

fn exit_status(done: anyhow::Result<()>) -> ExitCode {
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Cancels `shutdown` on the first SIGINT or SIGTERM.
async fn cancel_on_signal(shutdown: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; stop with SIGKILL");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: draining"),
        _ = int.recv() => tracing::info!("SIGINT: draining"),
    }
    shutdown.cancel();
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
