//! What the runner, llm, fleet and analysis tests share: paths in the repository, runner
//! configs publishing to a test's nats-server, the run's events read back, and the
//! event-sink running in-process into its own ClickHouse. (What the tests of the product
//! binaries and the benchmarks share too is in the library: [`benchstream_tests`].)

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_runner::exec::{ExecConfig, ExecReport};
use agent_runner::RunSummary;
use agent_runner::RunnerConfig;
use bench_clickhouse::ClickHouseArgs;
use bench_delivery::{PublishConfig, PublishSetup, SpoolConfig};
use bench_nats::{NatsArgs, NatsConfig};
use bench_schemas::{BenchmarkEvent, SubjectPrefix};
use bench_task::LoadOptions;
use benchstream_tests::{ClickHouseServer, NatsServer};
use event_sink::config::{BatchArgs, MetricsArgs};
use event_sink::SinkArgs;
use tokio_util::sync::CancellationToken;

pub use benchstream_tests::query::wait_for;
pub use benchstream_tests::stream::{create_stream, jetstream, sorted_seqs, stream_messages};

/// A path in the repository.
pub fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// A scenario of the test fixtures (`tests/fixtures/runner/<name>.toml`).
pub fn fixture_scenario(name: &str) -> PathBuf {
    repo_path(&format!("tests/fixtures/runner/{name}.toml"))
}

/// Publishing to `url` under `prefix`, with the spool in `dir` and short timeouts.
pub fn publish_setup(url: &str, prefix: &SubjectPrefix, dir: &Path) -> PublishSetup {
    PublishSetup {
        nats: NatsConfig::plain(url),
        publish: PublishConfig {
            prefix: prefix.clone(),
            window: 64,
            ack_timeout: Duration::from_secs(1),
            drain_timeout: Duration::from_secs(30),
            spool: SpoolConfig {
                path: dir.join("spool/runner.spool"),
                max_bytes: 64 << 20,
            },
        },
        create_stream: None,
    }
}

/// An `exec` run of `command` as `policy` on `task` of the pinned `scenario`, in the
/// default sandbox, publishing to `nats_url` with its spool and journal under `dir`.
pub fn exec_published(
    command: Vec<OsString>,
    scenario: PathBuf,
    task: &str,
    policy: &str,
    nats_url: &str,
    dir: &Path,
) -> ExecConfig {
    ExecConfig {
        command,
        scenario,
        task: task.to_owned(),
        allow_unpinned: false,
        seed: None,
        policy_id: Some(policy.to_owned()),
        host: "exec-host".to_owned(),
        sandbox: Default::default(),
        images: Default::default(),
        read_only: Vec::new(),
        out_dir: Some(dir.join("runs")),
        publish: Some(publish_setup(nats_url, &SubjectPrefix::default(), dir)),
        experiment: Default::default(),
        prices: None,
    }
}

/// Runs an `exec` config to its end, uncancelled; panics if it does not run.
pub async fn run_exec(config: ExecConfig) -> ExecReport {
    agent_runner::exec::run(config, CancellationToken::new())
        .await
        .expect("exec run")
}

/// [`exec_published`] on the smoke scenario's `sh-ci-exit-status` task.
pub fn exec_smoke(command: Vec<OsString>, policy: &str, nats_url: &str, dir: &Path) -> ExecConfig {
    exec_published(
        command,
        repo_path("scenarios/smoke.toml"),
        "sh-ci-exit-status",
        policy,
        nats_url,
        dir,
    )
}

/// A runner config for `scenario`, artifacts in `dir/runs`.
pub fn runner_config(
    scenario: PathBuf,
    tasks: Option<Vec<String>>,
    allow_unpinned: bool,
    publish: Option<PublishSetup>,
    dir: &Path,
) -> RunnerConfig {
    RunnerConfig {
        scenario,
        load: LoadOptions {
            tasks,
            allow_unpinned,
        },
        concurrency: 2,
        seed: None,
        out_dir: Some(dir.join("runs")),
        host: "test-host".to_owned(),
        output_cap: agent_runner::DEFAULT_OUTPUT_CAP,
        publish,
        llm: None,
        progress: false,
        regrade: 0,
        images: Default::default(),
        sandbox: bench_sandbox::SandboxMode::Required,
        repeats: 1,
        first_repeat: 0,
        overrides: Default::default(),
        experiment: Default::default(),
    }
}

/// Runs `scenario` without publishing, artifacts in a temp dir that the caller keeps
/// alive as long as it reads them.
pub async fn run_offline(
    scenario: PathBuf,
    allow_unpinned: bool,
) -> (tempfile::TempDir, agent_runner::ScenarioReport) {
    run_offline_tasks(scenario, None, allow_unpinned).await
}

/// [`run_offline`] of the scenario's `tasks` only (`None`: all).
pub async fn run_offline_tasks(
    scenario: PathBuf,
    tasks: Option<Vec<String>>,
    allow_unpinned: bool,
) -> (tempfile::TempDir, agent_runner::ScenarioReport) {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = runner_config(scenario, tasks, allow_unpinned, None, dir.path());
    let report = agent_runner::run(config, CancellationToken::new())
        .await
        .expect("scenario runs");
    (dir, report)
}

/// A run of `tests/fixtures/runner/slow-steps.toml` (unpinned; slow enough to lose the
/// broker, or a cluster node, mid-run) publishing through `publish`, artifacts in
/// `dir/runs`.
pub fn slow_steps_config(publish: PublishSetup, dir: &Path) -> RunnerConfig {
    runner_config(
        fixture_scenario("slow-steps"),
        None,
        true,
        Some(publish),
        dir,
    )
}

/// The events of `run`'s `events.jsonl`, decoded.
pub fn journal_events(run: &RunSummary) -> Vec<BenchmarkEvent> {
    benchstream_tests::runs::journal_events(run.artifacts.as_deref().expect("artifacts kept"))
}

/// Settings of a sink reading the default stream at `nats_url` into the ClickHouse at
/// `clickhouse_url`: rows flushed within 200 ms, no metrics endpoint (tests run side by
/// side).
pub fn sink_args(nats_url: &str, clickhouse_url: &str) -> SinkArgs {
    SinkArgs {
        nats: NatsArgs {
            url: Some(nats_url.to_owned()),
            ..NatsArgs::default()
        },
        clickhouse: ClickHouseArgs {
            url: Some(clickhouse_url.to_owned()),
            ..ClickHouseArgs::default()
        },
        batch: BatchArgs {
            flush_interval_ms: Some(200),
            ..BatchArgs::default()
        },
        metrics: MetricsArgs {
            listen: Some("off".into()),
            ..MetricsArgs::default()
        },
        ..SinkArgs::default()
    }
}

/// A nats-server with the default stream, and the sink storing that stream in its own
/// ClickHouse: everything downstream of a runner. ClickHouse, the slower to start,
/// starts beside the nats-server.
pub async fn start_pipeline() -> (NatsServer, SinkToClickHouse) {
    let clickhouse = tokio::task::spawn_blocking(ClickHouseServer::start);
    let nats = tokio::task::spawn_blocking(NatsServer::start)
        .await
        .expect("nats starts");
    create_stream(&nats.url(), &SubjectPrefix::default()).await;
    let clickhouse = clickhouse.await.expect("clickhouse starts");
    let sink = SinkToClickHouse::start(clickhouse, &nats.url());
    (nats, sink)
}

/// The event-sink running in-process into its own ClickHouse, for the guarantees that
/// end in query results.
pub struct SinkToClickHouse {
    pub clickhouse: ClickHouseServer,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), event_sink::SinkError>>,
}

impl SinkToClickHouse {
    /// Starts the sink writing into `clickhouse` and reading the default stream of the
    /// nats-server at `nats_url`.
    pub fn start(clickhouse: ClickHouseServer, nats_url: &str) -> Self {
        let args = sink_args(nats_url, &clickhouse.http_url());
        let shutdown = CancellationToken::new();
        let config = args.resolve().expect("valid sink settings");
        let task = tokio::spawn(event_sink::run(config, shutdown.clone()));
        SinkToClickHouse {
            clickhouse,
            shutdown,
            task,
        }
    }

    /// Polls `sql` until it answers `expected` (trimmed); panics after 60 s. Needs the
    /// multi-thread runtime.
    pub async fn wait_for(&self, sql: &str, expected: &str) {
        tokio::task::block_in_place(|| {
            wait_for(&self.clickhouse, sql, expected, Duration::from_secs(60));
        });
    }

    /// Waits until `events_raw` holds every event of the run `summary` describes (read
    /// with FINAL, so each counts once).
    pub async fn wait_for_run(&self, summary: &RunSummary) {
        self.wait_for(
            &format!(
                "SELECT count() FROM benchstream.events_raw FINAL WHERE run_id = '{}'",
                summary.run_id
            ),
            &summary.events.to_string(),
        )
        .await;
    }

    /// Stops the sink; it must end cleanly.
    pub async fn stop(self) {
        self.shutdown.cancel();
        self.task
            .await
            .expect("sink task")
            .expect("sink stops cleanly");
    }
}
