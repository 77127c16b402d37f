//! `agent-runner exec` flags and environment → a validated [`ExecConfig`], and the
//! command's output. Nothing here reads agent output.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;
use tokio_util::sync::CancellationToken;

use super::bridge::{self, ExecConfig};
use super::ExecError;
use crate::cli::{host_or_default, PublishArgs, ScenarioArgs};
use crate::error::Exit;

/// `agent-runner exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Scenario file, or the name of one in --scenarios-dir: gives the run config.
    #[arg(long)]
    pub scenario: String,
    /// The task (one of the scenario's); its fixture is copied to the agent's workdir.
    #[arg(long)]
    pub task: String,
    /// Seed of the run, instead of the scenario's.
    #[arg(long)]
    pub seed: Option<u64>,
    /// `policy_id` of the run. Default: exec:<program file name>.
    #[arg(long)]
    pub policy_id: Option<String>,
    #[command(flatten)]
    pub scenarios: ScenarioArgs,
    /// `host` on every event. Default: the host name.
    #[arg(long, env = "BENCH_RUNNER_HOST")]
    pub host: Option<String>,
    /// Do not publish: local artifacts only.
    #[arg(long)]
    pub no_publish: bool,
    #[command(flatten)]
    pub publish: PublishArgs,
    /// A host directory the agent may read (its code, data), besides its task and the
    /// files named on its command line. Repeatable.
    #[arg(long = "sandbox-ro")]
    pub sandbox_ro: Vec<PathBuf>,
    /// The agent program and its arguments (after `--`).
    #[arg(last = true, required = true)]
    pub command: Vec<OsString>,
}

impl ExecArgs {
    /// The validated config.
    pub fn into_config(self) -> Result<ExecConfig, ExecError> {
        let sandbox = self.scenarios.sandbox_mode();
        Ok(ExecConfig {
            sandbox,
            read_only: self.sandbox_ro,
            command: self.command,
            scenario: crate::cli::resolve_scenario(&self.scenario, &self.scenarios.scenarios_dir),
            task: self.task,
            allow_unpinned: self.scenarios.allow_unpinned,
            seed: self.seed,
            policy_id: self.policy_id,
            host: host_or_default(self.host),
            out_dir: Some(self.scenarios.out),
            publish: self.publish.into_setup_unless(self.no_publish)?,
        })
    }

    /// Runs the command and prints its report.
    pub async fn execute(self, shutdown: CancellationToken) -> Result<Exit, ExecError> {
        let report = bridge::run(self.into_config()?, shutdown).await?;
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
        Ok(match report.delivery {
            Some(d) if d.left_in_spool > 0 => Exit::Undelivered,
            _ => Exit::Ok,
        })
    }
}
