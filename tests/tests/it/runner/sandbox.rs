//! The agent sandbox against hostile agents, with real processes: scripted scenarios
//! (`tests/fixtures/runner/hostile-*.toml`) and `exec` agents that try to read or change
//! files outside their workspace, read the runner's environment, reach the network, fork
//! without end, eat memory, outlive their timeouts or block the runner. Each case must be
//! contained, end within its timeout plus 5 s with the expected `exit_status`, and leave
//! the canary files outside the workspace (created here) unchanged.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_runner::exec::{self, ExecConfig, ExecReport};
use agent_runner::tools::bwrap;
use benchstream_tests::{processes_with, NatsServer};
use schemas::{BenchmarkEvent, ExitKind, ExitStatus, Payload, StepType, ToolCall};
use tokio_util::sync::CancellationToken;

use crate::common::{fixture_scenario, journal_events, run_offline};

/// Where the canaries live: outside every workspace, outside /tmp.
const CANARY_DIR: &str = "/var/tmp/benchstream-canary";

/// A canary file outside the workspace with known content, checked unchanged on drop of
/// the test (explicitly, with [`Canary::assert_unchanged`]).
struct Canary {
    path: PathBuf,
    content: String,
}

impl Canary {
    fn new(name: &str) -> Canary {
        fs::create_dir_all(CANARY_DIR).expect("canary dir");
        let path = Path::new(CANARY_DIR).join(name);
        let content = format!("canary {name} {}\n", uuid::Uuid::new_v4());
        fs::write(&path, &content).expect("write canary");
        Canary { path, content }
    }

    fn assert_unchanged(&self) {
        assert_eq!(
            fs::read_to_string(&self.path).expect("canary still there"),
            self.content,
            "{} was changed",
            self.path.display()
        );
    }
}

fn tool_calls(events: &[BenchmarkEvent]) -> Vec<&ToolCall> {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            Payload::ToolCall(t) => Some(t),
            _ => None,
        })
        .collect()
}

fn observations(events: &[BenchmarkEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            Payload::Step(s) if s.step_type == StepType::Observe => Some(s.content.as_str()),
            _ => None,
        })
        .collect()
}

fn run_start_sandbox(events: &[BenchmarkEvent]) -> &schemas::SandboxInfo {
    match &events[0].payload {
        Payload::RunStart(start) => start.sandbox.as_ref().expect("run_start.sandbox"),
        other => panic!("first event is not run_start: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_file_access_is_contained() {
    let canary = Canary::new("canary.txt");
    let through_link = Path::new(CANARY_DIR).join("created-through-link.txt");
    let _ = fs::remove_file(&through_link);
    let escape = std::env::temp_dir().join("escape-hostile-files.txt");
    let _ = fs::remove_file(&escape);

    let started = Instant::now();
    let (_dir, report) = run_offline(fixture_scenario("hostile-files"), true).await;
    assert!(started.elapsed() < Duration::from_secs(120 + 5));
    let run = &report.runs[0];
    let events = journal_events(run);
    let sandbox = run_start_sandbox(&events);
    assert_eq!(sandbox.kind, "bwrap");
    assert!(sandbox.network_isolated);
    let calls = tool_calls(&events);
    let seen = observations(&events);
    let kinds: Vec<ExitKind> = calls.iter().map(|c| c.exit_kind).collect();

    // 0: the canary is not there to read.
    assert_eq!(kinds[0], ExitKind::Deterministic, "{}", seen[0]);
    assert!(!seen[0].contains(&canary.content), "{}", seen[0]);
    // 1-3: `..` and absolute paths, by the file tools and by bash.
    assert_eq!(kinds[1], ExitKind::UserError);
    assert_eq!(kinds[3], ExitKind::UserError);
    // 4: the links were made (the hard link cannot be: the canary is not in the sandbox).
    assert!(
        seen[4].contains("link ->") && seen[4].contains("dangling ->"),
        "{}",
        seen[4]
    );
    // 5-9: no file tool goes through a link or blocks on a FIFO.
    for (i, kind) in kinds.iter().enumerate().take(10).skip(5) {
        assert_eq!(*kind, ExitKind::UserError, "call {i}: {}", seen[i]);
    }
    assert!(seen[9].contains("not a regular file"), "{}", seen[9]);
    // 10: nothing of the runner's environment but the allowlist.
    let allowed = ["PATH", "HOME", "LANG", "CARGO_HOME", "PWD", "SHLVL", "_"];
    for (key, _) in std::env::vars() {
        if !allowed.contains(&key.as_str()) {
            assert!(
                !seen[10].contains(&format!("\n{key}="))
                    && !seen[10].starts_with(&format!("{key}=")),
                "{key} reached the sandbox: {}",
                seen[10]
            );
        }
    }
    assert!(seen[10].contains("HOME=/tmp"), "{}", seen[10]);
    // 11: 20 MB of output, capped.
    assert_eq!(kinds[11], ExitKind::Ok);
    assert_eq!(calls[11].evidence_footprint.bytes_read, 20_000_000);
    assert!(seen[11].len() < 200_000);
    // 12: the protected test was restored before judging.
    assert_eq!(run.result.exit_status, ExitStatus::Submitted);
    assert_eq!(run.result.success, Some(false));
    assert!(
        run.protected_restored
            .iter()
            .any(|r| r.starts_with("tests/test_ci.sh")),
        "{:?}",
        run.protected_restored
    );

    canary.assert_unchanged();
    assert!(!through_link.exists(), "a file was created through a link");
    assert!(!escape.exists(), "a file was written next to the workspace");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_bomb_and_memory_hog_are_held_by_the_limits() {
    let started = Instant::now();
    let (_dir, report) = run_offline(fixture_scenario("hostile-limits"), true).await;
    // Two 3 s tool timeouts at most, plus the judge.
    assert!(
        started.elapsed() < Duration::from_secs(6 + 60),
        "{:?}",
        started.elapsed()
    );
    let run = &report.runs[0];
    let events = journal_events(run);
    let calls = tool_calls(&events);
    assert_eq!(calls[0].exit_kind, ExitKind::Timeout, "{:?}", calls[0]);
    assert!(
        calls[0].latency_ms < 3000 + 5000,
        "the bomb's tree was killed late: {} ms",
        calls[0].latency_ms
    );
    assert_eq!(
        calls[1].exit_kind,
        ExitKind::Oom,
        "{:?}",
        observations(&events)
    );
    assert!(calls[1].exit_message.is_some());
    assert_eq!(run.result.exit_status, ExitStatus::Submitted);
    let limits = &run_start_sandbox(&events).enforced;
    assert!(
        limits
            .iter()
            .any(|l| l.limit == "memory_bytes" && l.value == 256 << 20),
        "{limits:?}"
    );
    assert!(limits.iter().any(|l| l.limit == "processes"), "{limits:?}");
    // Failure events name the limit hits.
    let failures = events
        .iter()
        .filter(|e| matches!(e.payload, Payload::Failure(_)))
        .count();
    assert!(failures >= 2, "{failures} failure events");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_do_not_outlive_the_execution_timeout() {
    let started = Instant::now();
    let (_dir, report) = run_offline(fixture_scenario("hostile-timeout"), true).await;
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(3 + 5), "{elapsed:?}");
    let run = &report.runs[0];
    assert_eq!(run.result.exit_status, ExitStatus::ExitTimeout);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(processes_with("sleep 1000.616"), Vec::<String>::new());
}

/// An `exec` agent under `hostile-exec.toml` (3 s execution timeout, no network).
async fn hostile_exec(script: &str, dir: &Path) -> (ExecReport, Duration) {
    let started = Instant::now();
    let report = exec::run(
        ExecConfig {
            command: ["bash", "-c", script].map(OsString::from).to_vec(),
            scenario: fixture_scenario("hostile-exec"),
            task: "sh-ci-exit-status".to_owned(),
            allow_unpinned: true,
            seed: None,
            policy_id: Some("exec:hostile".to_owned()),
            host: "test-host".to_owned(),
            out_dir: Some(dir.join("runs")),
            publish: None,
            sandbox: bwrap::SandboxMode::Required,
            read_only: Vec::new(),
        },
        CancellationToken::new(),
    )
    .await
    .expect("exec run");
    (report, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_agent_closing_stdout_ends_at_its_timeout_with_its_children() {
    let dir = tempfile::tempdir().expect("dir");
    let (report, elapsed) = hostile_exec(
        "exec >&-; sleep 1000.7171 & setsid sleep 1000.7172 & sleep 1000.7173",
        dir.path(),
    )
    .await;
    assert!(elapsed < Duration::from_secs(3 + 5), "{elapsed:?}");
    assert_eq!(report.summary.result.exit_status, ExitStatus::ExitTimeout);
    assert_eq!(report.agent_exit, None);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(processes_with("sleep 1000.717"), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_agent_reaches_neither_the_broker_nor_the_canary_nor_its_answer_key() {
    let nats = NatsServer::start();
    let canary = Canary::new("exec.txt");
    let dir = tempfile::tempdir().expect("dir");
    // Exit 0 only if every attack failed; each success has its own code.
    let script = format!(
        "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && exit 11; \
         cat {canary} 2>/dev/null && exit 12; \
         echo owned 2>/dev/null > {canary} && exit 13; \
         test -r \"$BENCH_TASK_DIR/problem.md\" || exit 14; \
         touch \"$BENCH_TASK_DIR/owned\" 2>/dev/null && exit 15; \
         cat \"$BENCH_TASK_DIR/task.toml\" {task_toml} 2>/dev/null && exit 16; \
         exit 0",
        port = nats.port(),
        canary = canary.path.display(),
        task_toml = fixture_scenario("hostile-exec")
            .with_file_name("tasks/sh-ci-exit-status/task.toml")
            .canonicalize()
            .expect("task file")
            .display()
    );
    let (report, elapsed) = hostile_exec(&script, dir.path()).await;
    assert!(elapsed < Duration::from_secs(3 + 5), "{elapsed:?}");
    assert_eq!(report.agent_exit, Some(0), "an attack succeeded");
    assert_eq!(report.summary.result.exit_status, ExitStatus::Submitted);
    canary.assert_unchanged();
    let task_dir = fixture_scenario("hostile-exec").with_file_name("tasks/sh-ci-exit-status");
    assert!(task_dir.join("task.toml").exists());
    assert!(
        !task_dir.join("owned").exists(),
        "the task directory was written"
    );
    // The broker is reachable from outside the sandbox: the refusal was the sandbox's.
    std::net::TcpStream::connect(("127.0.0.1", nats.port())).expect("broker is up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_agents_refuse_to_start_without_a_sandbox_unless_told() {
    // This host has bwrap: the refusal is only observable where it has not; the choice to
    // run without one must be explicit and recorded.
    assert!(bwrap::host().bwrap().is_ok(), "bwrap is installed here");
    let dir = tempfile::tempdir().expect("dir");
    let report = exec::run(
        ExecConfig {
            command: ["bash", "-c", "test -r /etc/hostname || exit 9"]
                .map(OsString::from)
                .to_vec(),
            scenario: fixture_scenario("hostile-exec"),
            task: "sh-ci-exit-status".to_owned(),
            allow_unpinned: true,
            seed: None,
            policy_id: None,
            host: "test-host".to_owned(),
            out_dir: Some(dir.path().join("runs")),
            publish: None,
            sandbox: bwrap::SandboxMode::Off,
            read_only: Vec::new(),
        },
        CancellationToken::new(),
    )
    .await
    .expect("exec run");
    // Unsandboxed, the host's /etc is there; the record says so.
    assert_eq!(report.agent_exit, Some(0));
    let events = journal_events(&report.summary);
    let sandbox = run_start_sandbox(&events);
    assert_eq!(sandbox.kind, "none");
    assert_eq!(sandbox.version, None);
    assert!(!sandbox.network_isolated);
}
