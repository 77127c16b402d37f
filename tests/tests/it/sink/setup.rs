//! One test's world: servers, a JetStream context with the stream, and a sink running
//! in-process until the test stops it.

use std::time::Duration;

use async_nats::jetstream::{self, consumer};
use bench_schemas::SubjectPrefix;
use benchstream_tests::{ClickHouseServer, NatsServer};
use event_sink::{Config, SinkArgs, SinkError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::common::{create_stream, jetstream, sink_args, wait_for};
use benchstream_tests::events::Run;

/// How long a test waits for rows to land before failing.
pub const LANDING: Duration = Duration::from_secs(30);

/// How long JetStream may take to apply the acks of a sink that has stopped; far below
/// the consumer's ack wait, so a message left unanswered is still pending after it.
const ACKS_APPLIED: Duration = Duration::from_secs(5);

/// Servers and a client for one test.
pub struct World {
    pub nats: NatsServer,
    pub clickhouse: ClickHouseServer,
    pub js: jetstream::Context,
}

impl World {
    /// Starts both servers (side by side) and creates the stream.
    pub async fn start() -> World {
        let (nats, clickhouse) = tokio::task::spawn_blocking(|| {
            let clickhouse = std::thread::spawn(ClickHouseServer::start);
            let nats = NatsServer::start();
            (nats, clickhouse.join().expect("clickhouse start"))
        })
        .await
        .expect("servers start");
        create_stream(&nats.url(), &SubjectPrefix::default()).await;
        let js = jetstream(&nats.url()).await;
        World {
            nats,
            clickhouse,
            js,
        }
    }

    /// Sink settings for these servers: short flush interval and retry delays, no
    /// metrics endpoint.
    pub fn args(&self) -> SinkArgs {
        let mut args = sink_args(&self.nats.url(), &self.clickhouse.http_url());
        args.batch.retry_max_ms = Some(1000);
        args
    }

    /// `SELECT` through the harness (blocking), trimmed.
    pub fn query(&self, sql: &str) -> String {
        self.clickhouse.query(sql).trim().to_owned()
    }

    /// Waits until `events_raw` holds `count` distinct events of `run` (read with
    /// FINAL, so each counts once). Blocking, like [`wait_for`].
    pub fn wait_landed(&self, run: &Run, count: usize) {
        let sql = format!(
            "SELECT count() FROM benchstream.events_raw FINAL WHERE run_id = '{}'",
            run.run_id
        );
        wait_for(&self.clickhouse, &sql, &count.to_string(), LANDING);
    }

    /// The sink's durable consumer as JetStream sees it now.
    pub async fn consumer_info(&self) -> consumer::Info {
        self.try_consumer_info().await.expect("consumer info")
    }

    /// The consumer, or an error while the sink has not created it yet.
    async fn try_consumer_info(&self) -> Result<consumer::Info, async_nats::Error> {
        sink_consumer(&self.js).await
    }
}

/// The sink's durable consumer on `BENCH_EVENTS`, or an error while the sink has not
/// created it yet.
pub(crate) async fn sink_consumer(
    js: &jetstream::Context,
) -> Result<consumer::Info, async_nats::Error> {
    let stream = js.get_stream("BENCH_EVENTS").await?;
    Ok(stream.consumer_info("event-sink").await?)
}

/// Waits until the sink consumer's ack floor reaches stream sequence `seq` (everything up
/// to it was inserted and acked); panics after `within`.
pub(crate) async fn wait_ack_floor(js: &jetstream::Context, seq: u64, within: Duration) {
    let start = std::time::Instant::now();
    loop {
        let floor = sink_consumer(js)
            .await
            .map_or(0, |info| info.ack_floor.stream_sequence);
        if floor >= seq {
            return;
        }
        assert!(
            start.elapsed() < within,
            "ack floor {floor} after {within:?}, expected {seq}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

impl World {
    /// The consumer once the acks a stopped sink sent have been applied: JetStream
    /// processes acks asynchronously, after the sink's final flush was answered, so a
    /// read right after the stop can still count some as pending. A message the sink
    /// never answered stays pending, and the info then shows it.
    pub async fn settled_consumer_info(&self) -> consumer::Info {
        let start = std::time::Instant::now();
        loop {
            let info = self.consumer_info().await;
            if info.num_ack_pending == 0 || start.elapsed() > ACKS_APPLIED {
                return info;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the consumer's ack floor reaches stream sequence `seq`: everything up
    /// to it was inserted and acked.
    pub async fn wait_acked(&self, seq: u64) {
        wait_ack_floor(&self.js, seq, LANDING).await;
    }
}

/// A sink running in-process.
pub struct RunningSink {
    shutdown: CancellationToken,
    task: JoinHandle<Result<(), SinkError>>,
}

impl RunningSink {
    /// Starts `event_sink::run` with `config`.
    pub fn start(config: Config) -> RunningSink {
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(event_sink::run(config, shutdown.clone()));
        RunningSink { shutdown, task }
    }

    /// Starts a sink with the world's default settings.
    pub fn start_in(world: &World) -> RunningSink {
        RunningSink::start(world.args().resolve().expect("valid settings"))
    }

    /// Waits until the sink has started: migrated ClickHouse and created its consumer,
    /// which is when it takes its first message. Start-up is bounded separately from the
    /// landing of rows because it grows with the number of migrations and, on a cluster,
    /// with the `ON CLUSTER` round trips of each one.
    ///
    /// # Panics
    ///
    /// With the sink's own error when it ended during start-up, or after `within`.
    pub async fn started(&mut self, js: &jetstream::Context, within: Duration) {
        let start = std::time::Instant::now();
        while sink_consumer(js).await.is_err() {
            if self.task.is_finished() {
                let ended = (&mut self.task).await.expect("sink task");
                panic!("the sink ended during start-up: {ended:?}");
            }
            assert!(
                start.elapsed() < within,
                "the sink has not started (migrated and created its consumer) after {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Cancels it (as SIGTERM does) and returns how `run` ended.
    pub async fn stop(self) -> Result<(), SinkError> {
        self.shutdown.cancel();
        self.task.await.expect("sink task")
    }
}

/// `GET path` on 127.0.0.1:`port`, returning the body.
pub(crate) async fn http_get(port: u16, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect to metrics endpoint");
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    assert!(response.starts_with("HTTP/1.0 200"), "{response}");
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default()
}

/// The value of one sample line of the metrics text.
pub(crate) fn sample(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no sample {name} in\n{metrics}"))
}
