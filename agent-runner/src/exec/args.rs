//! `agent-runner exec` flags and environment → validated [`ExecConfig`]s, one run per
//! task. Nothing here runs anything.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use super::bridge::ExecConfig;
use crate::error::Error;
use crate::flags::{
    resolve_scenario, ExperimentArgs, OptionalEventArgs, PriceTableArgs, ScenarioArgs,
};
use bench_task::{LoadOptions, LoadedScenario};

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
    // This doc is the --help text: `<name>` is a placeholder, not an HTML tag.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long, env = "BENCH_EXEC_POLICY_ID")]
    pub policy_id: Option<String>,
    /// The experiment the runs belong to and their tags.
    #[command(flatten)]
    pub experiment: ExperimentArgs,
    /// Prices per model (`--prices FILE`) for the model calls the agent reports.
    #[command(flatten)]
    pub prices: PriceTableArgs,
    /// Where the scenarios are and how they are loaded.
    #[command(flatten)]
    pub scenarios: ScenarioArgs,
    /// Where the events go (publishing, spool, `events.jsonl`), or `--no-publish`.
    #[command(flatten)]
    pub events: OptionalEventArgs,
    /// A host directory the agent may read (its code, data), besides its task and the
    /// files named on its command line. Repeatable, or comma-separated.
    #[arg(
        value_parser = bench_cli::paths::absolute,
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
    pub fn into_configs(self) -> Result<Vec<ExecConfig>, Error> {
        let sandbox = self.scenarios.sandbox_mode();
        let scenario = resolve_scenario(&self.scenario, &self.scenarios.scenarios_dir);
        let tasks = match self.tasks {
            Some(tasks) => tasks,
            None => {
                let mut loaded = LoadedScenario::load(
                    &scenario,
                    &LoadOptions {
                        tasks: None,
                        allow_unpinned: self.scenarios.allow_unpinned,
                    },
                )?;
                loaded.without_broken();
                loaded.tasks.into_iter().map(|t| t.task.id).collect()
            }
        };
        let (host, publish) = self.events.into_setup()?;
        let experiment = bench_schemas::ExperimentRef {
            planned_runs: u32::try_from(tasks.len()).ok(),
            ..self.experiment.into_experiment()?
        };
        let config = ExecConfig {
            sandbox,
            images: self.scenarios.images,
            read_only: self.sandbox_ro,
            command: self.command,
            scenario,
            task: String::new(),
            allow_unpinned: self.scenarios.allow_unpinned,
            seed: self.seed,
            policy_id: self.policy_id,
            host,
            out_dir: Some(self.scenarios.out),
            publish,
            experiment,
            prices: self.prices.load()?,
        };
        Ok(tasks
            .into_iter()
            .map(|task| ExecConfig {
                task,
                ..config.clone()
            })
            .collect())
    }
}
