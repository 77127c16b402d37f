//! `agent-runner exec` flags and environment → a validated [`ExecConfig`], and the
//! command's output: one run per task. Nothing here reads agent output.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;
use tokio_util::sync::CancellationToken;

use super::bridge::{self, ExecConfig, ExecReport};
use super::ExecError;
use crate::cli::{host_or_default, PublishArgs, ScenarioArgs};
use crate::error::Exit;
use crate::scenario::{LoadOptions, LoadedScenario};

/// `agent-runner exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Scenario file, or the name of one in --scenarios-dir: gives the run config.
    #[arg(long, env = "BENCH_EXEC_SCENARIO", default_value = "smoke")]
    pub scenario: String,
    /// The tasks (comma-separated ids of the scenario), one run each, in turn; each
    /// task's fixture is copied to the agent's workdir. Default: every task of the
    /// scenario.
    #[arg(
        long = "task",
        visible_alias = "tasks",
        env = "BENCH_EXEC_TASKS",
        value_delimiter = ','
    )]
    pub tasks: Option<Vec<String>>,
    /// Seed of the runs, instead of the scenario's.
    #[arg(long, env = "BENCH_RUNNER_SEED")]
    pub seed: Option<u64>,
    /// `policy_id` of the runs. Default: exec:<script file name> for an interpreter
    /// (python3 my_agent.py -> exec:my_agent.py), else exec:<program file name>.
    #[arg(long, env = "BENCH_EXEC_POLICY_ID")]
    pub policy_id: Option<String>,
    #[command(flatten)]
    pub scenarios: ScenarioArgs,
    /// `host` on every event. Default: the host name.
    #[arg(long, env = "BENCH_RUNNER_HOST")]
    pub host: Option<String>,
    /// Do not publish: local artifacts only.
    #[arg(long, env = "BENCH_RUNNER_NO_PUBLISH")]
    pub no_publish: bool,
    #[command(flatten)]
    pub publish: PublishArgs,
    /// A host directory the agent may read (its code, data), besides its task and the
    /// files named on its command line. Repeatable, or comma-separated.
    #[arg(
        long = "sandbox-ro",
        env = "BENCH_EXEC_SANDBOX_RO",
        value_delimiter = ','
    )]
    pub sandbox_ro: Vec<PathBuf>,
    /// The agent program and its arguments (after `--`).
    #[arg(last = true, required = true)]
    pub command: Vec<OsString>,
}

impl ExecArgs {
    /// The validated config of every run, in order: one per task.
    pub fn into_configs(self) -> Result<Vec<ExecConfig>, ExecError> {
        let sandbox = self.scenarios.sandbox_mode();
        let scenario = crate::cli::resolve_scenario(&self.scenario, &self.scenarios.scenarios_dir);
        let tasks = match self.tasks {
            Some(tasks) => tasks,
            None => {
                LoadedScenario::load(
                    &scenario,
                    &LoadOptions {
                        tasks: None,
                        allow_unpinned: self.scenarios.allow_unpinned,
                    },
                )?
                .scenario
                .tasks
            }
        };
        let config = ExecConfig {
            sandbox,
            read_only: self.sandbox_ro,
            command: self.command,
            scenario,
            task: String::new(),
            allow_unpinned: self.scenarios.allow_unpinned,
            seed: self.seed,
            policy_id: self.policy_id,
            host: host_or_default(self.host),
            out_dir: Some(self.scenarios.out),
            publish: self.publish.into_setup_unless(self.no_publish)?,
        };
        Ok(tasks
            .into_iter()
            .map(|task| ExecConfig {
                task,
                ..config.clone()
            })
            .collect())
    }

    /// Runs the agent on each task in turn, printing one line per run; stops early on
    /// shutdown.
    pub async fn execute(self, shutdown: CancellationToken) -> Result<Exit, ExecError> {
        let mut exit = Exit::Ok;
        for config in self.into_configs()? {
            if shutdown.is_cancelled() {
                break;
            }
            let report = bridge::run(config, shutdown.clone()).await?;
            print_report(&report);
            if report.delivery.is_some_and(|d| d.left_in_spool > 0) {
                exit = Exit::Undelivered;
            }
        }
        Ok(exit)
    }
}

/// The one line of a run.
fn print_report(report: &ExecReport) {
    let r = &report.summary.result;
    let (outcome, score, _) = crate::agent::result_words(r);
    println!(
        "exec {}: {outcome} ({}), score {score}, {} events, {} of {} agent lines skipped, agent exit {}, run {}",
        report.summary.task_id,
        r.exit_status.as_str(),
        report.summary.events,
        report.skipped,
        report.lines,
        report
            .agent_exit
            .map_or_else(|| "killed".to_owned(), |c| c.to_string()),
        report.summary.run_id
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn configs(args: &[&str]) -> Vec<ExecConfig> {
        let scenarios = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios");
        let cli = Cli::try_parse_from(
            [
                "agent-runner",
                "exec",
                "--scenarios-dir",
                scenarios,
                "--no-publish",
            ]
            .iter()
            .chain(args),
        )
        .expect("valid flags");
        let Command::Exec(args) = cli.command else {
            panic!("not exec")
        };
        args.into_configs().expect("valid config")
    }

    #[test]
    fn without_scenario_and_task_every_smoke_task_runs() {
        let runs = configs(&["--", "python3", "my_agent.py"]);
        let smoke =
            LoadedScenario::load(&runs[0].scenario, &LoadOptions::default()).expect("smoke loads");
        assert!(runs[0].scenario.ends_with("scenarios/smoke.toml"));
        let tasks: Vec<&str> = runs.iter().map(|r| r.task.as_str()).collect();
        assert_eq!(tasks, smoke.scenario.tasks);
        assert_eq!(tasks.len(), 8);
    }

    #[test]
    fn task_picks_the_runs() {
        let runs = configs(&["--task", "sh-ci-exit-status,py-slugify-unicode", "--", "a"]);
        let tasks: Vec<&str> = runs.iter().map(|r| r.task.as_str()).collect();
        assert_eq!(tasks, ["sh-ci-exit-status", "py-slugify-unicode"]);
    }
}
