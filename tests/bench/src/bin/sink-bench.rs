//! `sink-bench`: throughput of the sink against ClickHouse's own ingest rate.
//!
//! ```sh
//! cargo build --release -p event-sink
//! cargo run --release -p benchstream-bench --bin sink-bench -- [--events N] [--sinks N] [--worker-threads N] [--sink PATH]
//! ```
//!
//! Starts its own nats-server and ClickHouse, pre-fills the stream with mixed, realistic
//! events of about 1.2 KB (500 000 by default), then:
//!
//! 1. migrates the sink's database (not timed), runs the real `event-sink` binary
//!    (`--sinks` processes of `--worker-threads` threads sharing the durable consumer)
//!    until every event is in ClickHouse, and reads each process's peak RSS
//!    (`VmHWM`) and CPU time before stopping it with SIGTERM;
//! 2. sends the same rows (every `events_raw` row and every typed row) to a second
//!    database as `INSERT ... FORMAT JSONEachRow` over HTTP, 20 000 events at a time,
//!    one concurrent insert per table, which is what ClickHouse ingests without any
//!    sink in front;
//!
//! 3. drains the stream once more (a consumer of its own) with nothing but the NATS
//!    client on one thread: the sink's pull requests, each message taken apart as the
//!    sink does and acked. Its CPU per event is what the sink pays before any work of
//!    its own;
//!
//! and prints events/s, MB/s (of event JSON), the sink's CPU per event against the NATS
//! client's alone, the CPU the sink, ClickHouse and nats-server used during the drain
//! (they share the machine's cores), and the ratio sink / ClickHouse.
//!
//! With `--cluster` it also starts the 2 shards × 2 replicas cluster of
//! `deploy/clickhouse/cluster/` and drains the same stream (a second consumer) with one
//! sink into it (`--cluster benchstream`: Replicated tables under Distributed ones,
//! synchronous distributed inserts), and prints that next to the one-server drain.
//!
//! It lives in the bench package (`tests/bench/`), not in event-sink, because it starts
//! its servers with the test harness, which the sink must not depend on. Cargo builds no
//! binary of a dependency, hence the separate `cargo build` of the sink; by default the
//! bench runs the `event-sink` beside its own executable (`target/release/`).
//!
//! The servers keep their data in the temporary directory, which it prints (`TMPDIR`
//! moves it): every insert is a new part there, so that disk is part of the measure.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::ensure;
use async_nats::jetstream::AckKind;
use bench_schemas::{BenchmarkEvent, EventType, Payload, SubjectPrefix};
use benchstream_bench::{data_dir_line, peak_rss, sink_binary};
use benchstream_tests::events::{fixture, publish_all};
use benchstream_tests::stream::{create_stream, jetstream};
use benchstream_tests::{ClickHouseCluster, ClickHouseServer, NatsServer};
use clap::Parser;
use event_sink::config::ConsumerConfig;
use event_sink::consumer::{self, Delivery};
use event_sink::rows::{typed_table, Arrival, EventRawRow, RawEnvelope, TypedRow};
use event_sink::SinkArgs;
use futures::StreamExt;
use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use uuid::Uuid;

#[derive(Debug, Parser)]
struct Args {
    /// Events to pre-fill the stream with (and to insert for reference).
    #[arg(long, default_value_t = 500_000)]
    events: usize,
    /// The `event-sink` binary to measure. Default: `event-sink` beside this executable.
    #[arg(long)]
    sink: Option<PathBuf>,
    /// Also drain the same events into a local 2 × 2 ClickHouse cluster.
    #[arg(long)]
    cluster: bool,
    /// Sink processes sharing the durable consumer.
    #[arg(long, default_value_t = 1)]
    sinks: usize,
    /// Worker threads of each sink process (its `--worker-threads`).
    #[arg(long, default_value_t = 1)]
    worker_threads: usize,
}

/// Events of one run.
const RUN_LENGTH: usize = 200;
/// Events per reference INSERT (and the sink's default batch of 20 000 rows).
const REFERENCE_BATCH: usize = 20_000;

/// Text to cut step contents and model outputs from.
const PROSE: &str = "The failing test expects slugify to transliterate non-ASCII letters; \
    the current implementation drops them. Reading slugify.py shows a regex that keeps only \
    [a-z0-9-]. Plan: normalise with unicodedata.normalize('NFKD'), drop combining marks, \
    then lower-case and collapse runs of separators. Edge cases: empty input, leading and \
    trailing separators, \"quoted\" words, emoji 😀 and CJK text which has no ASCII form. \
    Running `python3 -m pytest -q tests/test_slugify.py` after the change: 14 passed. ";

/// Event `i` of the benchmark: deterministic, so both measurements see the same data.
/// Mix per run: 1 run_start, 1 run_stop, and in between steps (40%), deliberations (20%),
/// tool calls (20%), context decisions (15%), failures and optimizer updates.
fn event(i: usize) -> BenchmarkEvent {
    let run = i / RUN_LENGTH;
    let seq = i % RUN_LENGTH;
    let event_type = match seq {
        0 => EventType::RunStart,
        s if s == RUN_LENGTH - 1 => EventType::RunStop,
        s => match s % 20 {
            0..=7 => EventType::Step,
            8..=11 => EventType::Deliberation,
            12..=15 => EventType::ToolCall,
            16..=18 => EventType::ContextDecision,
            _ if s % 40 == 19 => EventType::Failure,
            _ => EventType::OptimizerUpdate,
        },
    };
    let mut event = fixture(event_type);
    event.run_id = Uuid::from_u64_pair(0x0193_a5c2_7e1f_7000 | run as u64, 0x8000_0000_0000_0000);
    event.event_id = Uuid::from_u64_pair(0x0193_a5c2_7e20_7000, 0x8000_0000_0000_0000 | i as u64);
    event.seq = Some(seq as u64);
    event.ts += chrono::Duration::milliseconds(i as i64);
    let start = (i * 7) % 200;
    match &mut event.payload {
        Payload::Step(s) => s.content = PROSE[start..].repeat(2),
        Payload::Deliberation(d) => d.raw_output = PROSE[start..].to_owned(),
        Payload::ToolCall(t) => t
            .evidence_footprint
            .files_read
            .push(format!("src/module_{i}.py")),
        Payload::ContextDecision(c) => c.segment_id = format!("{}{i}", &PROSE[start..start + 100]),
        _ => {}
    }
    event
}

fn events(count: usize) -> impl Iterator<Item = BenchmarkEvent> {
    (0..count).map(event)
}

/// CPU time (user + system) a live process has used, seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the `(comm)`, which may contain spaces: state is field 3, utime 14.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// Waits until ClickHouse runs no merges, so that neither measurement pays for the
/// other's background work.
fn wait_quiet(clickhouse: &ClickHouseServer) {
    let start = Instant::now();
    while rows_in(clickhouse, "system.merges") > 0 && start.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn rows_in(clickhouse: &ClickHouseServer, table: &str) -> usize {
    clickhouse
        .try_query(&format!("SELECT count() FROM {table}"))
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .unwrap_or(0)
}

/// The JSONEachRow bodies (one per table) of events `range`, as the sink would write
/// them: every `events_raw` row and every typed row.
fn reference_inserts(range: std::ops::Range<usize>) -> Vec<String> {
    let prefix = SubjectPrefix::default();
    let mut raw = String::from("INSERT INTO reference.events_raw FORMAT JSONEachRow\n");
    let mut typed: Vec<(EventType, String)> = EventType::ALL
        .into_iter()
        .map(|t| {
            let head = format!(
                "INSERT INTO reference.{} FORMAT JSONEachRow\n",
                typed_table(t)
            );
            (t, head)
        })
        .collect();
    let received_at = event_sink::rows::datetime(chrono::Utc::now().timestamp());
    for (offset, event) in range.clone().map(event).enumerate() {
        let bytes = event.to_json();
        let subject = prefix.event_subject(event.run_id, event.event_type());
        let event = bench_schemas::Decoded::Benchstream(event);
        let env = RawEnvelope::of(&event);
        let arrival = Arrival {
            received_at,
            stream_seq: (range.start + offset) as u64,
        };
        let row = EventRawRow::new(&env, &bytes, &subject, arrival);
        raw.push_str(&serde_json::to_string(&row).expect("row JSON"));
        raw.push('\n');
        let body = &mut typed
            .iter_mut()
            .find(|(t, _)| *t == event.event_type())
            .expect("every type")
            .1;
        body.push_str(&serde_json::to_string(&TypedRow::new(&event, arrival)).expect("row JSON"));
        body.push('\n');
    }
    typed
        .into_iter()
        .map(|(_, body)| body)
        .filter(|body| body.lines().count() > 1)
        .chain([raw])
        .collect()
}

/// What the sink processes used while draining the stream.
struct SinkRun {
    /// From the first process start (migrations included) to the last row in ClickHouse.
    seconds: f64,
    /// Largest peak RSS of one process, bytes.
    peak_rss: u64,
    /// User + system CPU of all processes, seconds.
    cpu: f64,
}

/// Applies the migrations with `binary migrate` (`extra`: its database or cluster), then
/// waits for ClickHouse to settle: creating tables is not part of any measurement.
fn migrate(binary: &Path, clickhouse: &ClickHouseServer, extra: &[&str]) {
    let migrate = Command::new(binary)
        .args(["migrate", "--clickhouse-url", &clickhouse.http_url()])
        .args(extra)
        .env("RUST_LOG", "warn")
        .status()
        .expect("run event-sink migrate");
    assert!(migrate.success(), "event-sink migrate: {migrate}");
    wait_quiet(clickhouse);
}

/// Runs `args.sinks` sink processes until `count` events are in ClickHouse, then stops
/// them with SIGTERM (each must exit 0).
fn run_sinks(
    processes: usize,
    binary: &Path,
    nats_url: &str,
    clickhouse: &ClickHouseServer,
    count: usize,
    extra: &[&str],
) -> SinkRun {
    let started = Instant::now();
    let mut sinks: Vec<Child> = (0..processes)
        .map(|_| {
            Command::new(binary)
                .args(["--nats-url", nats_url])
                .args(["--clickhouse-url", &clickhouse.http_url()])
                .args(["--metrics-listen", "off"])
                .args(extra)
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .spawn()
                .expect("start event-sink")
        })
        .collect();
    while rows_in(clickhouse, "benchstream.events_raw") < count {
        for sink in &mut sinks {
            assert!(
                sink.try_wait().expect("wait").is_none(),
                "event-sink exited"
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let seconds = started.elapsed().as_secs_f64();
    let peak_rss = sinks.iter().map(|s| peak_rss(s.id())).max().unwrap_or(0);
    let cpu = sinks.iter().map(|s| cpu_seconds(s.id())).sum();
    for sink in &mut sinks {
        kill(Pid::from_raw(sink.id() as i32), Signal::SIGTERM).expect("SIGTERM");
        let status = sink.wait().expect("event-sink exit");
        assert!(status.success(), "event-sink: {status}");
    }
    SinkRun {
        seconds,
        peak_rss,
        cpu,
    }
}

/// Inserts the rows of `count` events into database `reference` (migrated by `binary`),
/// 20 000 events at a time, one concurrent insert per table; returns the seconds spent
/// in the inserts (building the JSON is not counted).
fn run_reference(binary: &Path, clickhouse: &ClickHouseServer, count: usize) -> f64 {
    migrate(binary, clickhouse, &["--clickhouse-database", "reference"]);
    let mut seconds = 0.0;
    for start in (0..count).step_by(REFERENCE_BATCH) {
        let inserts = reference_inserts(start..(start + REFERENCE_BATCH).min(count));
        let timer = Instant::now();
        std::thread::scope(|scope| {
            for insert in &inserts {
                scope.spawn(|| clickhouse.query(insert));
            }
        });
        seconds += timer.elapsed().as_secs_f64();
    }
    assert_eq!(rows_in(clickhouse, "reference.events_raw"), count);
    seconds
}

/// CPU seconds of the calling thread so far.
fn thread_cpu_seconds() -> f64 {
    let usage = getrusage(UsageWho::RUSAGE_THREAD).expect("getrusage");
    let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    seconds(usage.user_time()) + seconds(usage.system_time())
}

/// Drains the `count` events of the stream at `nats_url` with a consumer of its own, the
/// sink's pull requests and nothing but the NATS client, on one thread of its own: each
/// message is taken apart into a [`Delivery`] and acked. Returns that thread's CPU
/// seconds.
fn drain_with_the_client_alone(nats_url: &str, count: usize) -> f64 {
    let defaults = SinkArgs::default().resolve().expect("default settings");
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                let cpu = thread_cpu_seconds();
                runtime.block_on(async {
                    let js = jetstream(nats_url).await;
                    let stream = js
                        .get_stream(&defaults.stream.name)
                        .await
                        .expect("the stream");
                    let config = ConsumerConfig {
                        name: "client-alone".to_owned(),
                        ..defaults.consumer.clone()
                    };
                    let wanted = consumer::consumer_config(&config, String::new());
                    let consumer = consumer::ensure_consumer(&stream, wanted, true)
                        .await
                        .expect("consumer");
                    let mut acked = 0;
                    let mut progressed = Instant::now();
                    while acked < count {
                        assert!(
                            progressed.elapsed() < Duration::from_secs(30),
                            "the client-alone drain got {acked} of {count} events and no \
                             more for 30 s"
                        );
                        let mut pull = consumer::pull(
                            &consumer,
                            config.fetch_batch,
                            defaults.batch.max_bytes,
                            Duration::from_secs(1),
                        )
                        .await
                        .expect("pull request");
                        while let Some(Ok(message)) = pull.next().await {
                            Delivery::new(message).answer(AckKind::Ack).await;
                            acked += 1;
                            progressed = Instant::now();
                        }
                    }
                    js.client().flush().await.expect("flush acks");
                });
                thread_cpu_seconds() - cpu
            })
            .join()
            .expect("client-alone drain")
    })
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(args.sinks >= 1, "--sinks must be at least 1");
    let count = args.events;
    let sink_binary = sink_binary(args.sink.as_deref())?;
    println!("{}", data_dir_line());
    println!("measuring {}", sink_binary.display());
    let nats = NatsServer::start();
    let clickhouse = ClickHouseServer::start();
    let bytes: usize = events(count).map(|e| e.to_json().len()).sum();
    let mb = bytes as f64 / 1e6;
    println!(
        "{count} events, {mb:.1} MB of JSON ({} bytes/event on average)",
        bytes / count
    );

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let started = Instant::now();
    runtime.block_on(async {
        create_stream(&nats.url(), &SubjectPrefix::default()).await;
        publish_all(&jetstream(&nats.url()).await, events(count), 4096).await;
    });
    println!(
        "pre-filled the stream in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    migrate(&sink_binary, &clickhouse, &[]);
    let threads = args.worker_threads.to_string();
    let servers = [clickhouse.pid(), nats.pid()].map(|pid| pid.expect("server running"));
    let servers_before = servers.map(cpu_seconds);
    let sink = run_sinks(
        args.sinks,
        &sink_binary,
        &nats.url(),
        &clickhouse,
        count,
        &["--worker-threads", &threads],
    );
    let servers_during = servers.map(cpu_seconds);
    let reference_seconds = run_reference(&sink_binary, &clickhouse, count);
    let reference_cpu = cpu_seconds(servers[0]) - servers_during[0];
    let client_cpu = drain_with_the_client_alone(&nats.url(), count);

    let sink_rate = count as f64 / sink.seconds;
    let reference_rate = count as f64 / reference_seconds;
    println!(
        "sink:       {:6.1} s  {sink_rate:9.0} events/s  {:6.1} MB/s  peak RSS {:.1} MiB \
         ({} process(es) of {} worker thread(s), from process start, migrated before)",
        sink.seconds,
        mb / sink.seconds,
        sink.peak_rss as f64 / (1024.0 * 1024.0),
        args.sinks,
        args.worker_threads
    );
    println!(
        "clickhouse: {reference_seconds:6.1} s  {reference_rate:9.0} events/s  {:6.1} MB/s  \
         (JSONEachRow over HTTP, {REFERENCE_BATCH} events per insert, one concurrent insert \
         per table, same rows)",
        mb / reference_seconds
    );
    println!(
        "sink CPU: {:.2} s user+system, {:.2} us/event; the NATS client alone (pull, take \
         apart, ack): {:.2} us/event",
        sink.cpu,
        sink.cpu * 1e6 / count as f64,
        client_cpu * 1e6 / count as f64
    );
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    println!(
        "CPU during the drain: sink {:.2} s, ClickHouse {:.2} s, nats-server {:.2} s, of \
         {:.1} s ({cores} cores x {:.1} s); during the reference: ClickHouse {reference_cpu:.2} s",
        sink.cpu,
        servers_during[0] - servers_before[0],
        servers_during[1] - servers_before[1],
        cores as f64 * sink.seconds,
        sink.seconds
    );
    println!("ratio sink / clickhouse: {:.2}", sink_rate / reference_rate);
    if args.cluster {
        drain_into_cluster(&sink_binary, &nats.url(), count, mb, sink_rate);
    }
    Ok(())
}

/// `--cluster`: the same stream drained by one sink (its own consumer) into a 2 × 2
/// cluster; printed beside `single_rate`, the one-server drain.
fn drain_into_cluster(sink_binary: &Path, nats_url: &str, count: usize, mb: f64, single_rate: f64) {
    let cluster = ClickHouseCluster::start();
    let entry = &cluster.servers()[0];
    // Migrating a cluster waits for every server per statement (about half a minute).
    migrate(sink_binary, entry, &["--cluster", "benchstream"]);
    let SinkRun {
        seconds,
        peak_rss,
        cpu,
    } = run_sinks(
        1,
        sink_binary,
        nats_url,
        entry,
        count,
        &[
            "--cluster",
            "benchstream",
            "--consumer",
            "event-sink-cluster",
        ],
    );
    let rate = count as f64 / seconds;
    println!(
        "cluster:    {seconds:6.1} s  {rate:9.0} events/s  {:6.1} MB/s  peak RSS {:.1} MiB  CPU {cpu:.1} s \
         (one sink, 2 shards x 2 replicas, synchronous distributed inserts, migrated before)",
        mb / seconds,
        peak_rss as f64 / (1024.0 * 1024.0)
    );
    println!("ratio cluster / one server: {:.2}", rate / single_rate);
}
