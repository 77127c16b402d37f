//! `agent-runner sweep` flags and environment → a validated [`SweepConfig`], or the
//! [`Plan`] of `--dry-run`. Nothing here runs anything.

use std::path::PathBuf;
use std::time::Duration;

use bench_clickhouse::{ClickHouseArgs, ClickHouseConfig};
use clap::Args;
use secrecy::SecretString;

use super::claim::{ClaimSettings, DEFAULT_BUCKET};
use super::worker::{Plan, SweepConfig};
use crate::error::Error;
use crate::flags::{EventArgs, LlmArgs, ScenarioArgs};
use crate::tools::DEFAULT_OUTPUT_CAP;

/// `agent-runner sweep`.
#[derive(Debug, Args)]
#[command(mut_arg("host", |a| a.help(
    "`host` on every event and owner of this worker's claims. Default: the host name"
)))]
pub struct SweepArgs {
    /// The sweep file (TOML; format in agent-runner/docs/sweeps.md).
    #[arg(value_parser = bench_cli::paths::absolute)]
    pub file: PathBuf,
    /// Configurations this worker runs at most. Default: until none is left.
    #[arg(long, env = "BENCH_SWEEP_COUNT")]
    pub count: Option<usize>,
    /// Print the expansion (configs, counts) and exit without running or connecting.
    #[arg(long, env = "BENCH_SWEEP_DRY_RUN")]
    pub dry_run: bool,
    /// Where the scenarios are and how they are loaded.
    #[command(flatten)]
    pub scenarios: ScenarioArgs,
    /// Observation bytes kept per tool call.
    #[arg(long, env = "BENCH_RUNNER_OUTPUT_CAP", default_value_t = DEFAULT_OUTPUT_CAP)]
    pub output_cap: usize,
    /// Where the claims live and how long one holds.
    #[command(flatten)]
    pub claims: ClaimArgs,
    /// The ClickHouse that holds past results (`adaptive` and `bayes` methods).
    #[command(flatten)]
    pub clickhouse: PastResultsArgs,
    /// Where the events go: NATS, subject prefix, spool.
    #[command(flatten)]
    pub events: EventArgs,
    /// The LLM provider of `llm` policies.
    #[command(flatten)]
    pub llm: LlmArgs,
}

/// Where the claims of the workers sharing a sweep (`sweep`) or an experiment run until
/// decided (`run --until-decided`) live, and how long one holds.
#[derive(Debug, Args)]
pub struct ClaimArgs {
    /// JetStream KV bucket holding the claims of every sweep and of every experiment run
    /// until decided.
    #[arg(long, env = "BENCH_SWEEP_BUCKET", default_value = DEFAULT_BUCKET)]
    pub sweep_bucket: String,
    /// Replicas of the claim bucket when this worker creates it (3 on a cluster).
    #[arg(long, env = "BENCH_SWEEP_BUCKET_REPLICAS", default_value_t = 1)]
    pub sweep_bucket_replicas: usize,
    /// Age after which a claim not marked done is taken over, ms. Default: the
    /// scenario's execution_timeout_ms plus 10 minutes, per run the claim holds.
    #[arg(long, env = "BENCH_SWEEP_CLAIM_LEASE_MS")]
    pub claim_lease_ms: Option<u64>,
}

impl ClaimArgs {
    /// The validated settings.
    pub(crate) fn settings(&self) -> Result<ClaimSettings, Error> {
        if self.sweep_bucket_replicas == 0 {
            return Err(Error::Config(
                "--sweep-bucket-replicas must be at least 1".into(),
            ));
        }
        if self.claim_lease_ms == Some(0) {
            return Err(Error::Config("--claim-lease-ms must be at least 1".into()));
        }
        Ok(ClaimSettings {
            bucket: self.sweep_bucket.clone(),
            replicas: self.sweep_bucket_replicas,
            lease: self.claim_lease_ms.map(Duration::from_millis),
        })
    }
}

/// Where the `adaptive` and `bayes` methods (and `run --until-decided`) read past
/// results (the sink's database).
/// The flags and environment variables of the sink's connection, declared here with the
/// sweep's own help and defaults (no URL means no ClickHouse), then checked and turned
/// into a client by `bench_clickhouse` like the sink's.
#[derive(Debug, Args)]
pub struct PastResultsArgs {
    /// ClickHouse HTTP URL, e.g. http://127.0.0.1:8123 (needed by sweep methods adaptive
    /// and bayes, and by run --until-decided).
    #[arg(long, env = "BENCH_CLICKHOUSE_URL")]
    pub clickhouse_url: Option<String>,
    /// ClickHouse user.
    #[arg(long, env = "BENCH_CLICKHOUSE_USER", default_value = "default")]
    pub clickhouse_user: String,
    /// ClickHouse password.
    #[arg(
        long,
        env = "BENCH_CLICKHOUSE_PASSWORD",
        default_value = "",
        hide_env_values = true
    )]
    pub clickhouse_password: SecretString,
    /// Database of the sink's tables.
    #[arg(long, env = "BENCH_CLICKHOUSE_DATABASE", default_value = "benchstream")]
    pub clickhouse_database: String,
}

impl PastResultsArgs {
    /// The validated connection; `None` without a URL.
    pub(crate) fn resolve(&self) -> Result<Option<ClickHouseConfig>, Error> {
        let Some(url) = self.clickhouse_url.clone() else {
            return Ok(None);
        };
        ClickHouseArgs {
            url: Some(url),
            user: Some(self.clickhouse_user.clone()),
            password: Some(self.clickhouse_password.clone()),
            database: Some(self.clickhouse_database.clone()),
            ..ClickHouseArgs::default()
        }
        .resolve()
        .map(Some)
        .map_err(|e| Error::Config(e.to_string()))
    }
}

impl SweepArgs {
    /// The validated sweep config.
    pub fn into_config(self) -> Result<SweepConfig, Error> {
        if self.count == Some(0) {
            return Err(Error::Config("--count must be at least 1".into()));
        }
        let claims = self.claims.settings()?;
        let clickhouse = self.clickhouse.resolve()?;
        let sandbox = self.scenarios.sandbox_mode();
        let (worker, publish) = self.events.into_setup()?;
        Ok(SweepConfig {
            sandbox,
            images: self.scenarios.images,
            file: self.file,
            scenarios_dir: self.scenarios.scenarios_dir,
            allow_unpinned: self.scenarios.allow_unpinned,
            count: self.count.unwrap_or(usize::MAX),
            worker,
            out_dir: Some(self.scenarios.out),
            output_cap: self.output_cap,
            publish,
            llm: self.llm.into_config()?,
            claims,
            clickhouse,
        })
    }

    /// The plan `--dry-run` prints: the sweep file, its scenario and its expansion,
    /// without connecting to anything.
    pub fn plan(&self) -> Result<Plan, Error> {
        Plan::load(
            &self.file,
            &self.scenarios.scenarios_dir,
            self.scenarios.allow_unpinned,
            self.llm.clone().into_config()?.as_ref(),
        )
    }
}
