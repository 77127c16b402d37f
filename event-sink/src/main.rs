//! `event-sink`: parses the command line, sets up logging and hands off to
//! [`event_sink::command`], which says what each subcommand does; prints the error that
//! ends it and maps it to the exit status (0 ok, 1 failure, 2 unusable settings).

use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{CommandFactory as _, FromArgMatches as _};
use event_sink::command::{execute, Cli, CommandError};

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    bench_cli::init_tracing(cli.log.log_format);
    let log_format_given = matches.value_source("log_format") == Some(ValueSource::CommandLine);
    bench_cli::exit_code(execute(cli, log_format_given), CommandError::status)
}
