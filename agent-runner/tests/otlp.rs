//! `agent-runner otlp` as an operator runs it, killed with SIGKILL while the OpenTelemetry
//! Python SDK's exporter streams traces at it: the exporter retries what got no answer,
//! the restarted receiver takes it, and the stream holds every event of every trace once.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bench_schemas::SubjectPrefix;
use benchstream_tests::stream::{create_stream, stream_messages};
use benchstream_tests::{free_port, NatsServer};

const RUNNER: &str = env!("CARGO_BIN_EXE_agent-runner");
/// Events of one trace of the fixture script (see tests/tests/it/otlp/sdk.rs).
const EVENTS_PER_TRACE: usize = 9;
const TRACES: usize = 30;

/// `agent-runner otlp` on `port`, publishing to `url`, spooling to `spool`.
fn spawn_receiver(port: u16, url: &str, spool: &Path, log: &Path) -> Child {
    let log = std::fs::File::create(log).expect("log file");
    let child = Command::new(RUNNER)
        .args(["otlp", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--nats-url", url, "--host", "otlp-kill"])
        .arg("--spool")
        .arg(spool)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start agent-runner otlp");
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "receiver never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receiver_killed_mid_stream_loses_nothing_and_doubles_nothing() {
    let nats = tokio::task::spawn_blocking(NatsServer::start)
        .await
        .expect("nats starts");
    let spec = create_stream(&nats.url(), &SubjectPrefix::default()).await;
    let dir = tempfile::tempdir().expect("dir");
    let spool = dir.path().join("spool/otlp.spool");
    let port = free_port();
    let log = dir.path().join("receiver.log");
    let mut receiver = spawn_receiver(port, &nats.url(), &spool, &log);

    let script = format!(
        "{}/../tests/fixtures/otlp/agent_trace.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let exporter_log = dir.path().join("exporter.log");
    let mut exporter = Command::new("python3")
        .arg(script)
        .arg(format!("http://127.0.0.1:{port}/v1/traces"))
        .args(["stream", &TRACES.to_string()])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&exporter_log).expect("log file"))
        .spawn()
        .expect("start the exporter");
    let stdout = exporter.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });

    let mut lines = Vec::new();
    let mut killed = false;
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(120)) {
        lines.push(line);
        if lines.len() == 5 && !killed {
            // Mid-stream: the next export is under way or about to be.
            receiver.kill().expect("SIGKILL");
            receiver.wait().expect("reaped");
            killed = true;
            std::thread::sleep(Duration::from_millis(300));
            receiver = spawn_receiver(port, &nats.url(), &spool, &log);
        }
    }
    assert!(exporter.wait().expect("exporter exits").success());
    let results: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(results.len(), TRACES);
    assert!(
        results.iter().all(|r| r["result"] == "SUCCESS"),
        "every export answered 200 in the end: {results:?}"
    );
    let retries = std::fs::read_to_string(&exporter_log).unwrap_or_default();
    assert!(
        retries.contains("retrying"),
        "the exporter met the dead receiver and retried: {retries}"
    );
    let pid = nix::unistd::Pid::from_raw(i32::try_from(receiver.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    assert!(receiver.wait().expect("receiver exits").success());

    let stored = stream_messages(&nats.url(), &spec).await;
    let ids: BTreeSet<uuid::Uuid> = stored.iter().map(|m| m.event.event_id).collect();
    assert_eq!(stored.len(), ids.len(), "no event doubled");
    let mut per_run: BTreeMap<uuid::Uuid, usize> = BTreeMap::new();
    for m in &stored {
        *per_run.entry(m.event.run_id).or_default() += 1;
    }
    assert_eq!(per_run.len(), TRACES, "every trace is a run");
    assert!(
        per_run.values().all(|&n| n == EVENTS_PER_TRACE),
        "no event lost: {per_run:?}"
    );
}
