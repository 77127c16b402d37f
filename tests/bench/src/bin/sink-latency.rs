//! `sink-latency`: how soon a published event can be queried in ClickHouse, under a
//! steady load.
//!
//! ```sh
//! cargo build --release -p event-sink
//! cargo run --release -p benchstream-bench --bin sink-latency -- [--rate N] [--seconds S] [--sink PATH]
//! ```
//!
//! Starts its own nats-server and ClickHouse and the real `event-sink` binary (default
//! settings), then publishes `--rate` events per second over core NATS (the stream
//! captures them) for `--seconds`. Ten times a second one of them is a probe (task
//! `latency-probe`); a poller looks for the probes in `events_raw` every 50 ms and records
//! publish-to-queryable time. Prints p50, p99 and max of that time, and the sink's
//! flushes per second (one insert per table each, from its `/metrics`), which is what
//! ClickHouse's part count grows with. The servers keep their data in the temporary
//! directory, which it prints (`TMPDIR` moves it, e.g. to `/dev/shm`).
//!
//! A binary of the bench package for the same reason as `sink-bench`: it starts its
//! servers with the test harness.

use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::ensure;
use bench_schemas::{BenchmarkEvent, EventType, SubjectPrefix};
use benchstream_bench::{data_dir_line, percentile, sink_binary};
use benchstream_tests::events::{envelope, fixture, Run};
use benchstream_tests::stream::create_stream;
use benchstream_tests::{free_port, ClickHouseServer, NatsServer};
use clap::Parser;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use uuid::Uuid;

#[derive(Debug, Parser)]
struct Args {
    /// Events published per second, probes included.
    #[arg(long, default_value_t = 10_000)]
    rate: u32,
    /// How long the load lasts, seconds.
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    /// The `event-sink` binary to measure. Default: `event-sink` beside this executable.
    #[arg(long)]
    sink: Option<PathBuf>,
}

/// Task of the probe events, which the poller looks for.
const PROBE_TASK: &str = "latency-probe";
/// Probes per second.
const PROBES_PER_SECOND: u32 = 10;
/// How often the load is published (a share of `--rate` each time).
const TICK: Duration = Duration::from_millis(10);
/// How often `events_raw` is polled for probes.
const POLL: Duration = Duration::from_millis(50);

/// Publish instants of the probes not yet seen, and the latencies of those seen.
#[derive(Default)]
struct Probes {
    pending: HashMap<Uuid, Instant>,
    seen: Vec<Duration>,
}

/// Publishes the load for `duration`, a probe every `1 / PROBES_PER_SECOND`.
async fn publish_load(nats_url: &str, rate: u32, duration: Duration, probes: &Mutex<Probes>) {
    let client = async_nats::connect(nats_url)
        .await
        .expect("connect to nats");
    let templates: Vec<BenchmarkEvent> = EventType::ALL.into_iter().map(fixture).collect();
    let mut run = Run::default();
    let per_tick = f64::from(rate) * TICK.as_secs_f64();
    let probe_every = Duration::from_secs(1) / PROBES_PER_SECOND;
    let started = tokio::time::Instant::now();
    let mut ticker = tokio::time::interval(TICK);
    let (mut published, mut next_probe, mut n) = (0.0f64, Duration::ZERO, 0usize);
    while started.elapsed() < duration {
        ticker.tick().await;
        published += per_tick;
        while published >= 1.0 {
            published -= 1.0;
            let mut event = run.stamp(templates[n % templates.len()].clone());
            n += 1;
            let probe = started.elapsed() >= next_probe;
            if probe {
                next_probe += probe_every;
                event.task_id = PROBE_TASK.to_owned();
            }
            let (subject, headers) = envelope(&event);
            if probe {
                let mut probes = probes.lock().unwrap_or_else(|e| e.into_inner());
                probes.pending.insert(event.event_id, Instant::now());
            }
            client
                .publish_with_headers(subject, headers, event.to_json().into())
                .await
                .expect("publish");
        }
        client.flush().await.expect("flush");
    }
}

/// Polls `events_raw` for probes until `done` and none is pending (or 60 s after).
fn poll_probes(clickhouse: &ClickHouseServer, probes: &Mutex<Probes>, done: &Mutex<bool>) {
    let mut stopped_at = None;
    loop {
        std::thread::sleep(POLL);
        let found = clickhouse.query(&format!(
            "SELECT toString(event_id) FROM benchstream.events_raw WHERE task_id = '{PROBE_TASK}'"
        ));
        let now = Instant::now();
        let mut probes = probes.lock().unwrap_or_else(|e| e.into_inner());
        for id in found.lines().filter_map(|l| Uuid::parse_str(l.trim()).ok()) {
            if let Some(at) = probes.pending.remove(&id) {
                probes.seen.push(now - at);
            }
        }
        if *done.lock().unwrap_or_else(|e| e.into_inner()) {
            let at = *stopped_at.get_or_insert(now);
            if probes.pending.is_empty() || now - at > Duration::from_secs(60) {
                return;
            }
        }
    }
}

/// The sink's flushes so far, from the count of its batch duration histogram.
fn flushes(metrics_port: u16) -> u64 {
    let mut text = String::new();
    if let Ok(mut conn) = TcpStream::connect(("127.0.0.1", metrics_port)) {
        let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = conn.write_all(b"GET /metrics HTTP/1.0\r\n\r\n");
        let _ = conn.read_to_string(&mut text);
    }
    text.lines()
        .find_map(|l| l.strip_prefix("bench_sink_batch_duration_seconds_count "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(
        args.rate >= PROBES_PER_SECOND,
        "--rate must be at least {PROBES_PER_SECOND}"
    );
    let sink_binary = sink_binary(args.sink.as_deref())?;
    let nats = NatsServer::start();
    let clickhouse = ClickHouseServer::start();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(create_stream(&nats.url(), &SubjectPrefix::default()));

    let metrics_port = free_port();
    let mut sink: Child = Command::new(&sink_binary)
        .args(["--nats-url", &nats.url()])
        .args(["--clickhouse-url", &clickhouse.http_url()])
        .args(["--metrics-listen", &format!("127.0.0.1:{metrics_port}")])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("start event-sink");
    // Ready once its migrations made the table it writes.
    while clickhouse
        .try_query("SELECT count() FROM benchstream.events_raw")
        .is_err()
    {
        assert!(
            sink.try_wait().expect("wait").is_none(),
            "event-sink exited"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    println!("{}", data_dir_line());
    println!(
        "measuring {}: {} events/s for {} s, {PROBES_PER_SECOND} probes/s",
        sink_binary.display(),
        args.rate,
        args.seconds
    );

    let probes = Mutex::new(Probes::default());
    let done = Mutex::new(false);
    let flushes_during = std::thread::scope(|scope| {
        scope.spawn(|| poll_probes(&clickhouse, &probes, &done));
        let flushes_before = flushes(metrics_port);
        let duration = Duration::from_secs(args.seconds);
        runtime.block_on(publish_load(&nats.url(), args.rate, duration, &probes));
        let during = flushes(metrics_port).saturating_sub(flushes_before);
        *done.lock().unwrap_or_else(|e| e.into_inner()) = true;
        during
    });

    kill(Pid::from_raw(sink.id() as i32), Signal::SIGTERM).expect("SIGTERM");
    let status = sink.wait().expect("event-sink exit");
    assert!(status.success(), "event-sink: {status}");

    let probes = probes.into_inner().unwrap_or_else(|e| e.into_inner());
    ensure!(!probes.seen.is_empty(), "no probe reached ClickHouse");
    let mut seen = probes.seen;
    seen.sort_unstable();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "publish to queryable ({} probes, {} never seen): p50 {:.0} ms  p99 {:.0} ms  max {:.0} ms",
        seen.len(),
        probes.pending.len(),
        ms(percentile(&seen, 0.50)),
        ms(percentile(&seen, 0.99)),
        ms(percentile(&seen, 1.0)),
    );
    println!(
        "flushes: {:.1}/s (one insert per table each)",
        flushes_during as f64 / args.seconds as f64
    );
    Ok(())
}
