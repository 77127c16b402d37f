//! agent-runner end to end, in process, against a real nats-server: scenarios from
//! `scenarios/` and `tests/fixtures/runner/` run through [`agent_runner::run`], and the
//! events are read back from the JetStream stream. Process-level tests (the runner binary
//! killed with SIGKILL) live in `agent-runner/tests/`.

mod events;
mod limits;
mod outage;
mod pins;
mod reference;
mod tools;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_runner::publish::PublishConfig;
use agent_runner::scenario::LoadOptions;
use agent_runner::spool::SpoolConfig;
use agent_runner::{PublishSetup, RunnerConfig};
use async_nats::HeaderMap;
use bench_nats::{NatsArgs, NatsConfig, StreamSpec};
use benchstream_tests::ClickHouseServer;
use bytes::Bytes;
use event_sink::config::{BatchArgs, ClickHouseArgs, MetricsArgs};
use event_sink::SinkArgs;
use schemas::{BenchmarkEvent, SubjectPrefix};
use tokio_util::sync::CancellationToken;

/// A path in the repository.
pub(crate) fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// A scenario of the test fixtures (`tests/fixtures/runner/<name>.toml`).
pub(crate) fn fixture_scenario(name: &str) -> PathBuf {
    repo_path(&format!("tests/fixtures/runner/{name}.toml"))
}

/// Publishing to `url` under `prefix`, with the spool in `dir` and short timeouts.
pub(crate) fn publish_setup(url: &str, prefix: &SubjectPrefix, dir: &Path) -> PublishSetup {
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

/// A runner config for `scenario`, artifacts in `dir/runs`.
pub(crate) fn runner_config(
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
        output_cap: agent_runner::tools::DEFAULT_OUTPUT_CAP,
        publish,
        llm: None,
        progress: false,
    }
}

/// The stream of `prefix`, created on the server at `url`.
pub(crate) async fn create_stream(url: &str, prefix: &SubjectPrefix) -> StreamSpec {
    let spec = StreamSpec {
        prefix: prefix.clone(),
        ..StreamSpec::default()
    };
    let client = bench_nats::connect(&NatsConfig::plain(url), false)
        .await
        .expect("connect to nats");
    spec.ensure(&async_nats::jetstream::new(client), true)
        .await
        .expect("create stream");
    spec
}

/// The event-sink running in-process into its own ClickHouse, for the guarantees that
/// end in query results.
pub(crate) struct SinkToClickHouse {
    pub clickhouse: ClickHouseServer,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), event_sink::SinkError>>,
}

impl SinkToClickHouse {
    /// Starts ClickHouse (already started servers can be passed in) and the sink reading
    /// the default stream of the nats-server at `nats_url`.
    pub(crate) fn start(clickhouse: ClickHouseServer, nats_url: &str) -> Self {
        let args = SinkArgs {
            nats: NatsArgs {
                url: Some(nats_url.to_owned()),
                ..NatsArgs::default()
            },
            clickhouse: ClickHouseArgs {
                url: Some(clickhouse.http_url()),
                ..ClickHouseArgs::default()
            },
            batch: BatchArgs {
                flush_interval_ms: Some(200),
                ..BatchArgs::default()
            },
            metrics: MetricsArgs {
                listen: Some("off".into()),
            },
            ..SinkArgs::default()
        };
        let shutdown = CancellationToken::new();
        let config = args.resolve().expect("valid sink settings");
        let task = tokio::spawn(event_sink::run(config, shutdown.clone()));
        SinkToClickHouse {
            clickhouse,
            shutdown,
            task,
        }
    }

    /// Polls `sql` until it answers `expected` (trimmed); panics after 60 s.
    pub(crate) async fn wait_for(&self, sql: &str, expected: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let answer = tokio::task::block_in_place(|| self.clickhouse.try_query(sql))
                .map(|a| a.trim().to_owned())
                .unwrap_or_else(|e| e.to_string());
            if answer == expected {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{sql}\nanswers {answer:?}, expected {expected:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Stops the sink; it must end cleanly.
    pub(crate) async fn stop(self) {
        self.shutdown.cancel();
        self.task
            .await
            .expect("sink task")
            .expect("sink stops cleanly");
    }
}

/// One message of the stream.
#[derive(Debug)]
pub(crate) struct Received {
    pub subject: String,
    pub headers: HeaderMap,
    pub payload: Bytes,
    pub event: BenchmarkEvent,
}

impl Received {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.as_str())
    }
}

/// Every message of the stream, in stream order.
pub(crate) async fn stream_messages(url: &str, spec: &StreamSpec) -> Vec<Received> {
    let client = bench_nats::connect(&NatsConfig::plain(url), false)
        .await
        .expect("connect to nats");
    let js = async_nats::jetstream::new(client);
    let mut stream = js.get_stream(&spec.name).await.expect("stream exists");
    let state = stream.info().await.expect("stream info").state.clone();
    let mut out = Vec::new();
    if state.messages == 0 {
        return out;
    }
    for seq in state.first_sequence..=state.last_sequence {
        let m = stream.get_raw_message(seq).await.expect("stored message");
        let event = schemas::decode(&m.payload).expect("stored events are valid");
        out.push(Received {
            subject: m.subject.to_string(),
            headers: m.headers,
            payload: m.payload,
            event,
        });
    }
    out
}
