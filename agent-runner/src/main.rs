//! `agent-runner`: close what it inherited in its children, parse the command line, build
//! a validated config, run it, print its outcome and map it to an exit code (see
//! README.md, "Exit codes"). Logging, signals,
//! the shared exit codes and printing the error are `bench_cli`'s, as in the other
//! binaries. The commands that run agents first enter a mount namespace of the runner's
//! own, which must happen while the process has one thread: the async runtime is built
//! afterwards, here rather than by `#[tokio::main]`.

use std::io;
use std::process::ExitCode;

use agent_runner::cli::{Cli, Command, ScenariosCommand as Scenarios, SpoolCommand as Spool};
use agent_runner::{
    exec, import, otlp, pin_report, spool_report, sweep, tail, tasks, Error, Exit, Outcome,
};
use clap::Parser;
use tokio_util::sync::CancellationToken;

fn main() -> ExitCode {
    // Whatever descriptors the runner was started with (a lock, a log, a socket of its
    // parent) are closed in every child it starts: no agent or judge inherits them. The
    // descriptors the sandbox passes on purpose are opened later, by its own commands.
    close_fds::CloseFdsBuilder::new().cloexecfrom(3);
    let cli = Cli::parse();
    // Log fields can hold what an agent wrote: never raw control characters.
    bench_cli::init_tracing_with(cli.log.log_format, agent_runner::terminal::EscapingFields);
    let command = cli.command;
    // Before any thread exists: the namespace is entered by the calling thread alone.
    if runs_agents(&command) {
        match agent_runner::tools::enter_mount_namespace() {
            Ok(namespace) => tracing::debug!(?namespace, "workspace mounts are the runner's own"),
            Err(e) => {
                tracing::warn!(error = %e, "workspace mounts are made in the host's mount namespace, if at all")
            }
        }
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            bench_cli::report(&e);
            return Exit::Failure.code();
        }
    };
    runtime.block_on(serve(command))
}

/// Whether `command` can start agent or judge processes, whose workspaces the runner
/// mounts ([`agent_runner::tools::enter_mount_namespace`]).
fn runs_agents(command: &Command) -> bool {
    !matches!(
        command,
        Command::Tail(_) | Command::Otlp(_) | Command::Scenarios(_) | Command::Spool(_)
    )
}

/// Runs `command` until it ends or a signal stops it; its exit code.
async fn serve(command: Command) -> ExitCode {
    // Ctrl-C is how a tail or a receiver ends, not an interruption.
    let interruptible = !matches!(command, Command::Tail(_) | Command::Otlp(_));
    let shutdown =
        bench_cli::cancel_on_signal(interruptible.then_some("stopping runs, draining events"));
    let exit = match execute(command, shutdown.clone()).await {
        Ok(_) if interruptible && shutdown.is_cancelled() => Exit::Interrupted,
        Ok(exit) => exit,
        Err(e) => {
            bench_cli::report(&e);
            e.exit()
        }
    };
    exit.code()
}

/// Runs `command` and prints its outcome: on stdout, but on stderr for `import`, whose
/// stdout carries the events with `--no-publish`.
async fn execute(command: Command, shutdown: CancellationToken) -> Result<Exit, Error> {
    Ok(match command {
        Command::Run(a) if a.until_decided => {
            print(agent_runner::decide::run_until_decided(a.into_decide_config()?, shutdown).await?)
        }
        Command::Run(a) => print(agent_runner::run(a.into_config()?, shutdown).await?),
        Command::Scenarios(Scenarios::Hash(a)) => print(pin_report::repin(&a.dir)?),
        Command::Scenarios(Scenarios::Check(a)) => print(pin_report::check_pins(&a.dir)?),
        Command::Spool(Spool::Flush(a)) => print(spool_report::flush(&a.into_setup()?).await?),
        Command::Spool(Spool::Status(a)) => print(spool_report::spool_status(&a.spool, a.json)?),
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
