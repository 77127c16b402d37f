//! `bench-analysis query <name>` prints a shipped query's answer; `bench-analysis compare`
//! compares policies with paired statistics; `bench-analysis report` writes the offline
//! HTML report. All read the database the sink writes, with its
//! connection settings: `--config FILE` (`[clickhouse]`) < `BENCH_CLICKHOUSE_*` env <
//! `--clickhouse-*` flags; see `bench-analysis --help` and event-sink/analysis/README.md.
//! `event-sink query` and `event-sink report` run this binary.
//!
//! Exit status: 0 on success, 2 for unusable settings, an unknown query or a bad
//! `--param`, 1 for anything else (ClickHouse unreachable or refusing, a file not written).

use std::process::ExitCode;

use analysis::command::{self, CommandError, CompareArgs, QueryArgs, ReportArgs};
use bench_cli::{init_tracing, LogFormat};
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    version,
    about = "Shipped queries and the HTML report over benchstream events in ClickHouse"
)]
struct Cli {
    /// Log format on stderr.
    #[arg(long, env = "BENCH_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

/// Each takes only the ClickHouse connection (`--insert-timeout-ms` is accepted but
/// hidden: they insert nothing).
#[derive(Debug, Subcommand)]
enum Command {
    /// Run a shipped query (deploy/clickhouse/queries/; `query list` lists them).
    #[command(mut_arg("insert-timeout-ms", |arg| arg.hide(true)))]
    Query(QueryArgs),
    /// Compare policies on the tasks they share: solve rates with intervals, paired
    /// differences, exact tests, cost, the difference the data could detect.
    #[command(mut_arg("insert-timeout-ms", |arg| arg.hide(true)))]
    Compare(CompareArgs),
    /// Write a self-contained HTML report with tables and charts.
    #[command(mut_arg("insert-timeout-ms", |arg| arg.hide(true)))]
    Report(ReportArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.log_format);
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let status = if e.is_usage() { 2 } else { 1 };
            tracing::error!("{:#}", anyhow::Error::from(e));
            ExitCode::from(status)
        }
    }
}

/// `query` and `compare` print their answer on stdout; `report` writes its file.
#[tokio::main]
async fn run(command: Command) -> Result<(), CommandError> {
    match command {
        Command::Query(args) => print!("{}", command::query(args).await?),
        Command::Compare(args) => print!("{}", command::compare(args).await?),
        Command::Report(args) => {
            let path = command::report(args).await?;
            tracing::info!(path = %path.display(), "report written");
        }
    }
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
