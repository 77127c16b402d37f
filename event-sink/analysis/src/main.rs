//! `bench-analysis`: parses the command line, sets up logging and hands off to
//! [`bench_analysis::command`]: `query <name>` prints a shipped query's answer, `compare`
//! compares policies with paired statistics, `report` writes the offline HTML report. All
//! read the database the sink writes, with its connection settings: `--config FILE`
//! (`[clickhouse]`) < `BENCH_CLICKHOUSE_*` env < `--clickhouse-*` flags; see
//! `bench-analysis --help` and event-sink/analysis/README.md. `event-sink query` and
//! `event-sink report` run this binary.
//!
//! Exit status: 0 on success, 2 for unusable settings, an unknown query or a bad
//! `--param`, 1 for anything else (ClickHouse unreachable or refusing, a file not written).

use std::process::ExitCode;

use bench_analysis::command::{execute, Cli};
use bench_cli::Status;
use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    bench_cli::init_tracing(cli.log.log_format);
    match execute(cli.command).await {
        Ok(()) => Status::Ok.into(),
        Err(e) => {
            bench_cli::report(&e);
            e.status().into()
        }
    }
}
