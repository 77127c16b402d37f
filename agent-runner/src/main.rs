//! `agent-runner`: closes what it inherited in its children, parses the command line, sets
//! up logging and hands off to [`agent_runner::command`], which runs the command, prints
//! its outcome and maps it to an exit code (see README.md, "Exit codes"). Logging,
//! signals, the runtime, the shared exit codes and printing the error are `bench_cli`'s,
//! as in the other binaries.

use std::process::ExitCode;

use agent_runner::cli::Cli;
use agent_runner::command::execute;
use clap::Parser;

fn main() -> ExitCode {
    // Whatever descriptors the runner was started with (a lock, a log, a socket of its
    // parent) are closed in every child it starts: no agent or judge inherits them. The
    // descriptors the sandbox passes on purpose are opened later, by its own commands.
    close_fds::CloseFdsBuilder::new().cloexecfrom(3);
    let cli = Cli::parse();
    // Log fields can hold what an agent wrote: never raw control characters.
    bench_cli::init_tracing_with(cli.log.log_format, bench_sandbox::EscapingFields);
    execute(cli.command).code()
}
