//! The `event-sink` binary as an operator runs it: killed with SIGKILL mid-stream and
//! restarted, stopped with SIGTERM, started against servers it cannot use.
//!
//! These tests live here rather than with the other sink tests in
//! `tests/tests/it/sink/` because Cargo hands the binary's path (`CARGO_BIN_EXE_*`) only
//! to the integration tests and benchmarks of the package that builds it.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bench_schemas::EventType;
use benchstream_tests::cli::{
    assert_clickhouse_only_help, assert_config_error, assert_unreachable_error, help, run_to_exit,
    SINK_ONLY_FLAGS,
};
use benchstream_tests::events::{publish_all, Run};
use benchstream_tests::query::wait_for;
use benchstream_tests::stream::{create_stream, jetstream};
use benchstream_tests::{free_port, ClickHouseServer, NatsAuth, NatsOptions, NatsServer};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use bench_schemas::SubjectPrefix;

const SINK: &str = env!("CARGO_BIN_EXE_event-sink");

/// `event-sink` with settings for these servers and `extra` flags, output discarded.
fn sink_command(nats: &str, clickhouse: &str, extra: &[&str]) -> Command {
    let mut command = Command::new(SINK);
    command
        .args(["--nats-url", nats, "--clickhouse-url", clickhouse])
        .args(["--metrics-listen", "off"])
        .args(extra)
        .env("RUST_LOG", "warn");
    command
}

fn spawn(mut command: Command) -> Child {
    command
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start event-sink")
}

/// Waits for the process to exit, at most `timeout`.
fn wait_exit(child: &mut Child, timeout: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        assert!(
            start.elapsed() < timeout,
            "event-sink still running after {timeout:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn count(clickhouse: &ClickHouseServer, sql: &str) -> u64 {
    clickhouse
        .try_query(sql)
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .unwrap_or(0)
}

/// Servers of their own, and a stream holding the events of one run.
struct Prefilled {
    nats: NatsServer,
    clickhouse: ClickHouseServer,
    /// The runtime that published them, for later JetStream calls.
    runtime: tokio::runtime::Runtime,
    run: Run,
}

impl Prefilled {
    /// Starts nats-server and ClickHouse, and publishes `events` events of one run.
    fn start(events: usize) -> Prefilled {
        let nats = NatsServer::start();
        let clickhouse = ClickHouseServer::start();
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let mut run = Run::default();
        let events = run.events(events);
        runtime.block_on(async {
            create_stream(&nats.url(), &SubjectPrefix::default()).await;
            publish_all(&jetstream(&nats.url()).await, events, 512).await;
        });
        Prefilled {
            nats,
            clickhouse,
            runtime,
            run,
        }
    }
}

#[test]
fn sink_crash_loses_nothing_and_counts_nothing_twice() {
    const EVENTS: usize = 20_000;
    let Prefilled {
        nats,
        clickhouse,
        runtime,
        run,
    } = Prefilled::start(EVENTS);

    // Small batches and a short ack_wait: the crash hits between flushes, and the
    // restarted sink gets the dead one's unacked messages within seconds.
    let flags = ["--batch-max-rows", "500", "--ack-wait-ms", "3000"];
    let mut first = spawn(sink_command(&nats.url(), &clickhouse.http_url(), &flags));
    let stored = format!(
        "SELECT uniqExact(event_id) FROM benchstream.events_raw WHERE run_id = '{}'",
        run.run_id
    );
    let start = Instant::now();
    while count(&clickhouse, &stored) < 2000 {
        assert!(start.elapsed() < Duration::from_secs(60), "nothing landed");
        std::thread::sleep(Duration::from_millis(10));
    }
    first.kill().expect("SIGKILL");
    first.wait().expect("reap");
    let at_crash = count(&clickhouse, &stored);
    assert!(
        at_crash < EVENTS as u64,
        "crash came too late to test anything"
    );

    // The restarted sink runs on two worker threads: the multi-thread runtime stores
    // everything and drains on SIGTERM like the single-thread one.
    let restart_flags = [&flags[..], &["--worker-threads", "2"]].concat();
    let mut second = spawn(sink_command(
        &nats.url(),
        &clickhouse.http_url(),
        &restart_flags,
    ));
    wait_for(
        &clickhouse,
        &format!(
            "SELECT count(), uniqExact(event_id), max(seq) FROM benchstream.events_raw FINAL \
             WHERE run_id = '{}'",
            run.run_id
        ),
        &format!("{EVENTS}\t{EVENTS}\t{}", EVENTS - 1),
        Duration::from_secs(60),
    );
    let typed: u64 = EventType::ALL
        .into_iter()
        .map(|t| {
            count(
                &clickhouse,
                &format!(
                    "SELECT count() FROM benchstream.{} FINAL WHERE run_id = '{}'",
                    event_sink::rows::typed_table(t),
                    run.run_id
                ),
            )
        })
        .sum();
    assert_eq!(typed, EVENTS as u64);

    // SIGTERM: drain and exit 0 in bounded time.
    let pid = Pid::from_raw(i32::try_from(second.id()).expect("pid"));
    kill(pid, Signal::SIGTERM).expect("SIGTERM");
    let status = wait_exit(&mut second, Duration::from_secs(15));
    assert!(status.success(), "SIGTERM exit: {status}");
    let info = runtime.block_on(async {
        let js = jetstream(&nats.url()).await;
        let stream = js.get_stream("BENCH_EVENTS").await.expect("stream");
        stream.consumer_info("event-sink").await.expect("consumer")
    });
    assert_eq!(info.num_ack_pending, 0);
    assert_eq!(info.num_pending, 0);
}

/// How soon a crashed sink's messages come back: a sink holding a batch is killed with
/// SIGKILL and a new one started; every event lands once, and the time from the kill
/// until the last one is stored is printed (a measurement, not an assertion). The
/// consumer's `ack_wait` is the sink's default unless `BENCH_SINK_ACK_WAIT_MS` says
/// otherwise, so the same test measures other settings:
/// `BENCH_SINK_ACK_WAIT_MS=60000 cargo test -p event-sink --test process catch_up -- --nocapture`.
#[test]
fn catch_up_after_a_sink_kill_waits_only_for_ack_wait() {
    const EVENTS: usize = 20_000;
    let Prefilled {
        nats,
        clickhouse,
        runtime,
        run,
    } = Prefilled::start(EVENTS);
    let mut first = spawn(sink_command(&nats.url(), &clickhouse.http_url(), &[]));
    let stored = format!(
        "SELECT uniqExact(event_id) FROM benchstream.events_raw WHERE run_id = '{}'",
        run.run_id
    );
    let start = Instant::now();
    while count(&clickhouse, &stored) < 2000 {
        assert!(start.elapsed() < Duration::from_secs(60), "nothing landed");
        std::thread::sleep(Duration::from_millis(10));
    }
    first.kill().expect("SIGKILL");
    first.wait().expect("reap");
    let killed = Instant::now();
    let at_crash = count(&clickhouse, &stored);
    let held = runtime.block_on(async {
        let js = jetstream(&nats.url()).await;
        let stream = js.get_stream("BENCH_EVENTS").await.expect("stream");
        stream.consumer_info("event-sink").await.expect("consumer")
    });

    let mut second = spawn(sink_command(&nats.url(), &clickhouse.http_url(), &[]));
    wait_for(
        &clickhouse,
        &format!(
            "SELECT count(), uniqExact(event_id) FROM benchstream.events_raw FINAL \
             WHERE run_id = '{}'",
            run.run_id
        ),
        &format!("{EVENTS}\t{EVENTS}"),
        Duration::from_secs(180),
    );
    let catch_up = killed.elapsed();
    eprintln!(
        "catch-up after kill -9: {EVENTS} events, {at_crash} stored and {} held unacked at \
         the kill, ack_wait {:?}: all stored {:.1} s after the kill",
        held.num_ack_pending,
        held.config.ack_wait,
        catch_up.as_secs_f64()
    );
    let pid = Pid::from_raw(i32::try_from(second.id()).expect("pid"));
    kill(pid, Signal::SIGTERM).expect("SIGTERM");
    let status = wait_exit(&mut second, Duration::from_secs(15));
    assert!(status.success(), "SIGTERM exit: {status}");
}

#[test]
fn startup_failures_exit_non_zero_with_a_clear_error() {
    let nats = NatsServer::start_with(NatsOptions {
        auth: NatsAuth::Token("right-token".into()),
        ..NatsOptions::default()
    });
    let clickhouse = ClickHouseServer::start();

    // Runs the sink with `flags` to its exit, checks the exit code, returns stderr.
    let exit = |clickhouse_url: &str, flags: &[&str], code: i32| {
        let out = run_to_exit(&mut sink_command(&nats.url(), clickhouse_url, flags));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(code), "{stderr}");
        stderr
    };

    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let stderr = exit(&nowhere, &["--nats-token", "right-token"], 1);
    assert!(
        stderr.contains("cannot reach clickhouse") && stderr.contains(&nowhere),
        "{stderr}"
    );

    let stderr = exit(&clickhouse.http_url(), &["--nats-token", "wrong-token"], 1);
    assert!(
        stderr.contains(&nats.url()) && stderr.to_lowercase().contains("authorization"),
        "{stderr}"
    );

    let stderr = exit(&clickhouse.http_url(), &["--batch-max-rows", "0"], 2);
    assert!(stderr.contains("batch.max_rows"), "{stderr}");

    // A wrong password is an authentication failure, said once; not "cannot reach".
    let wrong_password = [
        "--nats-token",
        "right-token",
        "--clickhouse-user",
        ClickHouseServer::AUTH_USER,
        "--clickhouse-password",
        "wrong",
    ];
    let stderr = exit(&clickhouse.http_url(), &wrong_password, 1);
    assert!(
        stderr.contains("authentication failed") && !stderr.contains("cannot reach"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("Code: ").count(), 1, "repeated: {stderr}");

    // A garbage NATS URL is a settings error.
    let garbage = run_to_exit(&mut sink_command(
        "nats://%%%:x",
        &clickhouse.http_url(),
        &[],
    ));
    let stderr = String::from_utf8_lossy(&garbage.stderr);
    assert_eq!(garbage.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(r#"invalid nats url "nats://%%%:x""#),
        "{stderr}"
    );

    // A metrics port in use fails at once, before ClickHouse is even tried.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let listen = taken.local_addr().expect("addr").to_string();
    let mut command = Command::new(SINK);
    command
        .args(["--nats-url", &nats.url(), "--clickhouse-url", &nowhere])
        .args(["--metrics-listen", &listen]);
    let out = run_to_exit(&mut command);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot listen for metrics") && !stderr.contains("clickhouse"),
        "{stderr}"
    );
}

#[test]
fn each_subcommand_shows_only_its_own_flags() {
    // `query` and `report`: tests/tests/it/analysis/cli.rs (bench-analysis).
    let migrate = help(Command::new(SINK), &["migrate"]);
    assert_clickhouse_only_help("migrate", &migrate);
    let run = help(Command::new(SINK), &["run"]);
    for flag in SINK_ONLY_FLAGS {
        assert!(run.contains(flag), "run --help lacks {flag}");
    }
}

#[test]
fn migrate_subcommand_applies_migrations_and_exits() {
    let clickhouse = ClickHouseServer::start();
    let out = run_to_exit(
        Command::new(SINK)
            .args(["migrate", "--clickhouse-url", &clickhouse.http_url()])
            .args(["--clickhouse-database", "other_db", "--log-format", "json"]),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr
            .lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()),
        "not JSON logs: {stderr}"
    );
    let tables = clickhouse.query("SELECT count() FROM system.tables WHERE database = 'other_db'");
    // A typed table per event type, events_raw, event_ids and the view feeding it,
    // dead_letters, schema_migrations.
    assert_eq!(
        tables.trim(),
        (bench_schemas::EventType::ALL.len() + 5).to_string()
    );
}

#[test]
fn dead_letters_replay_prints_its_report_and_refuses_a_bad_since() {
    let clickhouse = ClickHouseServer::start();
    let url = clickhouse.http_url();
    let migrated = run_to_exit(Command::new(SINK).args(["migrate", "--clickhouse-url", &url]));
    assert!(migrated.status.success());
    clickhouse.query(
        "INSERT INTO benchstream.dead_letters (received_at, stream, stream_seq, subject, \
         headers, raw, error_class, error, delivered) VALUES (now(), 'BENCH_EVENTS', 7, \
         'bench.events.x.step', '', '{\"type\": ', 'malformed_json', 'EOF', 1)",
    );
    // A dry run needs no NATS: nothing is published.
    let replay = |extra: &[&str]| {
        run_to_exit(
            Command::new(SINK)
                .args([
                    "dead-letters",
                    "replay",
                    "--dry-run",
                    "--clickhouse-url",
                    &url,
                ])
                .args(["--nats-url", "nats://127.0.0.1:1"])
                .args(extra),
        )
    };
    let out = replay(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("skipped\t7\tmalformed_json\t\tstill refused (malformed_json)"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("1 dead letters: would replay 0, skipped 1\n"),
        "{stdout}"
    );
    let other_class = replay(&["--class", "conflict", "--since", "2020-01-01"]);
    assert_eq!(
        String::from_utf8_lossy(&other_class.stdout),
        "0 dead letters: would replay 0, skipped 0\n"
    );
    let bad_since = replay(&["--since", "yesterday"]);
    assert_eq!(bad_since.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_since.stderr).contains("RFC 3339"));
}

#[test]
fn each_flush_logs_where_it_waited_at_debug_level() {
    const EVENTS: usize = 300;
    let Prefilled {
        nats,
        clickhouse,
        run,
        ..
    } = Prefilled::start(EVENTS);
    let mut command = sink_command(
        &nats.url(),
        &clickhouse.http_url(),
        &["--batch-max-rows", "100", "--log-format", "json"],
    );
    command
        .env("RUST_LOG", "warn,event_sink::writer=debug")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let sink = command.spawn().expect("start event-sink");
    wait_for(
        &clickhouse,
        &format!(
            "SELECT count() FROM benchstream.events_raw WHERE run_id = '{}'",
            run.run_id
        ),
        &EVENTS.to_string(),
        Duration::from_secs(60),
    );
    let pid = Pid::from_raw(i32::try_from(sink.id()).expect("pid"));
    kill(pid, Signal::SIGTERM).expect("SIGTERM");
    let out = sink.wait_with_output().expect("event-sink output");
    assert!(out.status.success(), "SIGTERM exit: {}", out.status);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let flushes: Vec<serde_json::Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|l| l["fields"]["message"] == "batch flushed")
        .collect();
    // Batches of at most 100 messages: at least three flushes, holding every event once.
    assert!(flushes.len() >= 3, "{stderr}");
    let field = |flush: &serde_json::Value, name: &str| {
        flush["fields"][name]
            .as_u64()
            .unwrap_or_else(|| panic!("no {name} in {flush}"))
    };
    let messages: u64 = flushes.iter().map(|f| field(f, "messages")).sum();
    assert_eq!(messages, EVENTS as u64, "{stderr}");
    for flush in &flushes {
        assert!(field(flush, "messages") <= 100, "{flush}");
        for wait in [
            "lookup_ms",
            "typed_ms",
            "raw_ms",
            "dead_letters_ms",
            "answer_ms",
        ] {
            field(flush, wait);
        }
    }
}

/// One `GET path` over HTTP/1.0 to `127.0.0.1:port`; the whole response, or the error.
fn http_get(port: u16, path: &str, timeout: Duration) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(timeout))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response)
}

/// Open file descriptors of process `pid`.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("read /proc/PID/fd")
        .count()
}

#[test]
fn idle_metrics_connections_are_capped_and_shed_while_ingestion_goes_on() {
    const CAP: usize = 8;
    const IDLE: usize = 300;
    let nats = NatsServer::start();
    let clickhouse = ClickHouseServer::start();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut command = Command::new(SINK);
    command
        .args([
            "--nats-url",
            &nats.url(),
            "--clickhouse-url",
            &clickhouse.http_url(),
        ])
        .args(["--metrics-listen", &listen, "--flush-interval-ms", "200"])
        .args(["--metrics-max-connections", &CAP.to_string()])
        .args(["--metrics-connection-timeout-ms", "1000"])
        .env("RUST_LOG", "warn");
    let sink = KillOnDrop(spawn(command));
    let sink = &sink.0;
    let start = Instant::now();
    while !http_get(port, "/healthz", Duration::from_secs(2)).is_ok_and(|r| r.ends_with("ok\n")) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "sink never served /healthz"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = open_fds(sink.id());

    // Idle clients: connect and send nothing.
    let idle: Vec<TcpStream> = (0..IDLE)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).expect("connect (accept queue)"))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let held = open_fds(sink.id());
    // CAP accepted connections, plus a little room for the sink's own ClickHouse/NATS
    // connections coming and going.
    assert!(
        held <= before + CAP + 4,
        "{IDLE} idle clients took the sink from {before} to {held} descriptors"
    );

    // An idle connection is closed by the server after its timeout.
    let mut first = &idle[0];
    first
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut buf = [0u8; 16];
    let read = std::io::Read::read(&mut first, &mut buf);
    assert!(
        matches!(read, Ok(0))
            || read
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "idle connection not closed by the server: {read:?}"
    );

    // Ingestion goes on while the idle clients are held.
    let mut run = Run::default();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        publish_all(&jetstream(&nats.url()).await, run.events(100), 64).await;
    });
    wait_for(
        &clickhouse,
        &format!(
            "SELECT uniqExact(event_id) FROM benchstream.events_raw WHERE run_id = '{}'",
            run.run_id
        ),
        "100",
        Duration::from_secs(30),
    );

    // Once the idle clients are gone, /metrics answers again, and counted the events.
    drop(idle);
    let start = Instant::now();
    let metrics = loop {
        match http_get(port, "/metrics", Duration::from_secs(2)) {
            Ok(text) if text.contains("# EOF") => break text,
            _ => {
                assert!(
                    start.elapsed() < Duration::from_secs(30),
                    "/metrics never answered"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    };
    assert!(
        metrics.contains("bench_sink_messages_consumed_total 100"),
        "{metrics}"
    );
}

/// A child process killed and reaped when dropped, also when the test panics.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_bad_config_file_and_an_unreachable_clickhouse_are_named() {
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("sink.toml");
    let toml = "[batch]\nmax_rows = 5\nflush_interval_ms = \"soon\"\n";
    std::fs::write(&config, toml).expect("write");
    let out = run_to_exit(Command::new(SINK).arg("run").arg("--config").arg(&config));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_config_error(
        &stderr,
        &config,
        "line 3, column 21",
        "batch.flush_interval_ms",
        "flush_interval_ms = \"soon\"",
    );

    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let out = run_to_exit(Command::new(SINK).args(["migrate", "--clickhouse-url", &nowhere]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_unreachable_error(&stderr, &nowhere, "Connection refused");
}
