//! `agent-runner otlp` end to end: OpenTelemetry traces sent by real clients (the Python
//! SDK and its OTLP/HTTP exporter, `tests/fixtures/otlp/agent_trace.py`; plain HTTP for
//! the bodies an exporter would never send) through the receiver, JetStream and the sink,
//! read back from ClickHouse.

mod grpc;
mod http;
mod instrumented;
mod otel;
mod runs;
mod sdk;

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use agent_runner::cli::{Cli, Command as RunnerCommand};
use agent_runner::otlp::OtlpReport;
use benchstream_tests::free_port;
use clap::Parser;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::common::repo_path;

/// The receiver running in-process, configured from a command line as an operator
/// would write it.
struct Receiver {
    /// `http://127.0.0.1:<port>/v1/traces`.
    endpoint: String,
    /// `http://127.0.0.1:<port>`.
    base: String,
    shutdown: CancellationToken,
    task: JoinHandle<Result<OtlpReport, agent_runner::Error>>,
}

impl Receiver {
    /// `agent-runner otlp` publishing to `nats_url`, spooling under `dir`, with `extra`
    /// flags; returns once it accepts connections.
    async fn start(nats_url: &str, dir: &std::path::Path, extra: &[&str]) -> Receiver {
        let port = free_port();
        let listen = format!("127.0.0.1:{port}");
        let spool = dir.join("spool/otlp.spool");
        let mut argv = vec![
            "agent-runner",
            "otlp",
            "--listen",
            &listen,
            "--nats-url",
            nats_url,
            "--host",
            "otlp-test",
            "--spool",
            spool.to_str().expect("utf-8 path"),
        ];
        argv.extend_from_slice(extra);
        let RunnerCommand::Otlp(args) = Cli::try_parse_from(argv).expect("valid flags").command
        else {
            panic!("not the otlp command");
        };
        let config = args.into_config().expect("valid config");
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(agent_runner::otlp::run(config, shutdown.clone()));
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "receiver never listened");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Receiver {
            endpoint: format!("http://{listen}/v1/traces"),
            base: format!("http://{listen}"),
            shutdown,
            task,
        }
    }

    /// Stops a receiver whose publisher failed for good (its spool full): it must end
    /// with that failure.
    async fn stop_failed(self) {
        self.shutdown.cancel();
        let outcome = self.task.await.expect("receiver task");
        let error = outcome.expect_err("the receiver ends with the publisher's failure");
        assert!(
            error.to_string().to_ascii_lowercase().contains("spool"),
            "{error}"
        );
    }

    /// Stops it: it answers what is under way and drains its publisher.
    async fn stop(self) -> OtlpReport {
        self.shutdown.cancel();
        self.task
            .await
            .expect("receiver task")
            .expect("receiver stops cleanly")
    }
}

/// Flags of a receiver whose spool has room for no event: with the broker away, the
/// first event fills it and the publisher stops.
const FULL_SPOOL: &[&str] = &["--ack-timeout-ms", "500", "--spool-max-bytes", "64"];

/// Runs the fixture's exporter script (`twice` or `stream N`) against `endpoint` with
/// `env`; its output lines, parsed. Panics unless it exits 0.
async fn export(endpoint: &str, args: &[&str], env: &[(&str, &str)]) -> Vec<serde_json::Value> {
    let mut argv = vec![endpoint];
    argv.extend_from_slice(args);
    python("agent_trace.py", &argv, env).await
}

/// Runs `tests/fixtures/otlp/<script>` with `args` and `env`; its output lines, parsed.
/// Panics unless it exits 0.
async fn python(script: &str, args: &[&str], env: &[(&str, &str)]) -> Vec<serde_json::Value> {
    let mut command = Command::new("python3");
    command
        .arg(repo_path(&format!("tests/fixtures/otlp/{script}")))
        .args(args)
        .envs(env.iter().copied());
    let out =
        tokio::task::spawn_blocking(move || benchstream_tests::cli::run_to_exit(&mut command))
            .await
            .expect("exporter thread");
    assert!(
        out.status.success(),
        "exporter failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("exporter prints JSON lines"))
        .collect()
}

/// `SELECT` one answer from ClickHouse, blocking in place (multi-thread runtime only).
fn query(clickhouse: &benchstream_tests::ClickHouseServer, sql: &str) -> String {
    tokio::task::block_in_place(|| clickhouse.query(sql))
        .trim()
        .to_owned()
}
