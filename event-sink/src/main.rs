//! `event-sink [run]` consumes events into ClickHouse; `event-sink migrate` only applies
//! the ClickHouse migrations; `query` and `report` read the answers back. Settings: `--config FILE` (TOML) < `BENCH_*` env < flags;
//! see `event-sink --help` and event-sink/README.md.
//!
//! Exit status: 0 after a clean stop, 2 for unusable settings, 1 for anything else
//! (unreachable or refusing servers at start, shutdown drain timed out).

use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use event_sink::analysis::command;
use event_sink::{ClickHouseConnectionArgs, SinkArgs};
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

/// Most of the sink's work per event is small, short-lived allocations (message parts,
/// decoded fields); mimalloc serves them in less CPU than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

/// Each subcommand takes only its own flags: `run` every sink setting, the others the
/// ClickHouse connection (`--insert-timeout-ms` is accepted there but hidden: they
/// insert nothing).
#[derive(Debug, Subcommand)]
enum Command {
    /// Consume events into ClickHouse until SIGINT/SIGTERM (the default).
    Run(Box<SinkArgs>),
    /// Apply pending ClickHouse migrations and exit.
    #[command(mut_arg("insert-timeout-ms", |arg| arg.hide(true)))]
    Migrate(ClickHouseConnectionArgs),
    /// Run a shipped query (deploy/clickhouse/queries/; `query list` lists them).
    #[command(mut_arg("insert-timeout-ms", |arg| arg.hide(true)))]
    Query(command::QueryArgs),
    /// Write a self-contained HTML report with tables and charts.
    #[command(mut_arg("insert-timeout-ms", |arg| arg.hide(true)))]
    Report(command::ReportArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.log_format);
    let args = match cli.command {
        None => cli.settings,
        Some(Command::Run(args)) => *args,
        Some(Command::Migrate(args)) => return analyse(Analysis::Migrate(args)),
        Some(Command::Query(args)) => return analyse(Analysis::Query(args)),
        Some(Command::Report(args)) => return analyse(Analysis::Report(args)),
    };
    let config = match args.load() {
        Ok(config) => config,
        Err(e) => {
            tracing::error!("invalid settings: {e}");
            return ExitCode::from(2);
        }
    };
    match serve(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the sink on `config.worker_threads` threads. One thread is tokio's current-thread
/// runtime: the whole pipeline on one core, the least CPU per event. More is the
/// multi-thread runtime: the NATS connection, the receiver's decoding and the writer's
/// inserts then run on different cores at once (event-sink/README.md, "Benchmark").
fn serve(config: event_sink::Config) -> anyhow::Result<()> {
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

/// The subcommands that only talk to ClickHouse.
enum Analysis {
    /// `event-sink migrate`.
    Migrate(ClickHouseConnectionArgs),
    /// `event-sink query`.
    Query(command::QueryArgs),
    /// `event-sink report`.
    Report(command::ReportArgs),
}

/// `migrate` logs what it applied; `query` prints its answer on stdout; `report` writes
/// its file.
#[tokio::main]
async fn analyse(command: Analysis) -> ExitCode {
    let done = match command {
        Analysis::Migrate(args) => migrate(args).await,
        Analysis::Query(args) => command::query(args)
            .await
            .map(|out| print!("{out}"))
            .map_err(Failure::from),
        Analysis::Report(args) => command::report(args)
            .await
            .map(|path| tracing::info!(path = %path.display(), "report written"))
            .map_err(Failure::from),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(e)) => {
            tracing::error!("{e:#}");
            ExitCode::from(2)
        }
        Err(Failure::Other(e)) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Why a ClickHouse-only subcommand failed: the command line (exit 2) or anything else.
enum Failure {
    /// Unusable settings, query name or parameters: exit 2.
    Usage(anyhow::Error),
    /// A server unreachable or refusing, a file not written: exit 1.
    Other(anyhow::Error),
}

impl From<command::CommandError> for Failure {
    fn from(e: command::CommandError) -> Self {
        if e.is_usage() {
            Failure::Usage(e.into())
        } else {
            Failure::Other(e.into())
        }
    }
}

async fn migrate(args: ClickHouseConnectionArgs) -> Result<(), Failure> {
    let clickhouse = args
        .load()
        .map_err(|e| Failure::Usage(anyhow::Error::new(e).context("invalid settings")))?;
    let applied = event_sink::migrate(&clickhouse)
        .await
        .context("migrate")
        .map_err(Failure::Other)?;
    tracing::info!(?applied, "migrations up to date");
    Ok(())
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

fn init_tracing(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colour only on a terminal, and not with NO_COLOR set (https://no-color.org).
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
