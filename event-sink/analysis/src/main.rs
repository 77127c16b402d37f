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

use bench_analysis::command::{execute, Cli, CommandError};
use clap::Parser;

fn main() -> ExitCode {
    let cli = Cli::parse();
    bench_cli::init_tracing(cli.log.log_format);
    bench_cli::exit_code(execute(cli.command), CommandError::status)
}
