//! The runner binary as an operator runs it: killed with SIGKILL while the broker is
//! away, its spool survives and the next start delivers it, with the same event ids; and
//! stopped with SIGTERM, it ends its runs and delivers their events before exiting (and
//! stopped during a hung command, within seconds, its workspace removed); and on a host
//! without bwrap, LLM scenarios and exec agents refuse to start unless `--unsandboxed`.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use benchstream_tests::NatsServer;
use schemas::SubjectPrefix;

// Shared with the in-process runner tests (`tests/tests/it/`), which do not use every
// helper either.
#[allow(dead_code)]
#[path = "../../tests/tests/it/common/runs.rs"]
mod runs;
#[allow(dead_code)]
#[path = "../../tests/tests/it/common/stream.rs"]
mod stream;

use runs::{journal_lines, only_run_dir};
use stream::{create_stream, stream_messages};

const RUNNER: &str = env!("CARGO_BIN_EXE_agent-runner");

fn slow_scenario() -> String {
    format!(
        "{}/../tests/fixtures/runner/slow-steps.toml",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// `msg_id`s of the complete records of a spool file, in order.
fn spooled_ids(spool: &Path) -> Vec<String> {
    let text = fs::read_to_string(spool).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).expect("spool record");
            record["msg_id"].as_str().expect("msg_id").to_owned()
        })
        .collect()
}

/// `agent-runner run` of the slow scenario, artifacts in `runs`, spooling to `spool`,
/// publishing to `url`, with `extra` flags; quiet.
fn spawn_runner(runs: &Path, spool: &Path, url: &str, extra: &[&str]) -> Child {
    Command::new(RUNNER)
        .args(["run", &slow_scenario(), "--allow-unpinned", "--no-progress"])
        .arg("--out")
        .arg(runs)
        .arg("--spool")
        .arg(spool)
        .args(["--nats-url", url])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start agent-runner")
}

/// `agent-runner spool flush` against `url`; its exit code.
fn flush(spool: &Path, url: &str) -> Option<i32> {
    Command::new(RUNNER)
        .args([
            "spool",
            "flush",
            "--drain-timeout-ms",
            "2000",
            "--ack-timeout-ms",
            "1000",
        ])
        .arg("--spool")
        .arg(spool)
        .args(["--nats-url", url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run agent-runner")
        .code()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_runner_spool_is_replayed_on_restart() {
    let nats = NatsServer::start();
    let spec = create_stream(&nats.url(), &SubjectPrefix::default()).await;
    nats.stop();

    let dir = tempfile::tempdir().expect("tempdir");
    let spool = dir.path().join("spool/runner.spool");
    let runs = dir.path().join("runs");
    let mut runner = spawn_runner(&runs, &spool, &nats.url(), &["--ack-timeout-ms", "1000"]);

    let deadline = Instant::now() + Duration::from_secs(60);
    while spooled_ids(&spool).len() < 20 {
        assert!(Instant::now() < deadline, "runner spooled nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    runner.kill().expect("SIGKILL");
    runner.wait().expect("reap");
    let spooled = spooled_ids(&spool);

    // Broker still away: the next start keeps the spool and says so (exit 4).
    assert_eq!(flush(&spool, &nats.url()), Some(4));
    assert_eq!(spooled_ids(&spool), spooled, "spool kept intact");

    nats.restart();
    assert_eq!(flush(&spool, &nats.url()), Some(0));
    assert_eq!(
        fs::metadata(&spool).expect("spool").len(),
        0,
        "spool emptied"
    );

    let stored: Vec<String> = stream_messages(&nats.url(), &spec)
        .await
        .iter()
        .map(|m| m.header("Nats-Msg-Id").expect("msg id header").to_owned())
        .collect();
    assert_eq!(stored, spooled, "every spooled event, once, in order");

    // They are the killed run's events, under their original ids.
    let journal = runs::journal(&only_run_dir(&runs));
    let journal_ids: BTreeSet<String> = journal
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["event_id"].as_str().expect("event_id").to_owned())
        .collect();
    assert!(stored.iter().all(|id| journal_ids.contains(id)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_the_runs_and_delivers_their_events() {
    let nats = NatsServer::start();
    let spec = create_stream(&nats.url(), &SubjectPrefix::default()).await;

    let dir = tempfile::tempdir().expect("tempdir");
    let runs = dir.path().join("runs");
    let spool = dir.path().join("runner.spool");
    let mut runner = spawn_runner(&runs, &spool, &nats.url(), &[]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while journal_lines(&runs) < 10 {
        assert!(Instant::now() < deadline, "runner produced no events");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(runner.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let status = runner.wait().expect("reap");
    assert_eq!(status.code(), Some(130));

    let summary = runs::summary(&only_run_dir(&runs));
    assert_eq!(summary["result"]["exit_status"], "exit_error");
    assert_eq!(summary["result"]["early_stop_reason"], "shutdown");
    let events = summary["events"].as_u64().expect("events");
    assert!(events < 81, "the run was cut short");
    let stored = stream_messages(&nats.url(), &spec).await.len() as u64;
    assert_eq!(
        stored, events,
        "every event of the stopped run was delivered"
    );
}

/// Processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| fs::read(e.path().join("cmdline")).ok())
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .filter(|cmd| cmd.contains(marker))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_hung_command_ends_the_run_and_removes_its_workspace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let runs = dir.path().join("runs");
    let tmp = dir.path().join("tmp");
    fs::create_dir(&tmp).expect("tmp");
    let scenario = format!(
        "{}/../tests/fixtures/runner/hostile-signal.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut runner = Command::new(RUNNER)
        .args([
            "run",
            &scenario,
            "--allow-unpinned",
            "--no-progress",
            "--no-publish",
        ])
        .arg("--out")
        .arg(&runs)
        .env("TMPDIR", &tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start agent-runner");
    let deadline = Instant::now() + Duration::from_secs(60);
    // The hanging command runs (in its sandbox); its bwrap command line names it too.
    while processes_with("sleep 1000.8181").is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let stopped = Instant::now();
    let pid = nix::unistd::Pid::from_raw(i32::try_from(runner.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let status = runner.wait().expect("reap");
    assert!(
        stopped.elapsed() < Duration::from_secs(5),
        "{:?}",
        stopped.elapsed()
    );
    assert_eq!(status.code(), Some(130));

    let summary = runs::summary(&only_run_dir(&runs));
    assert_eq!(summary["result"]["exit_status"], "exit_error");
    assert_eq!(summary["result"]["early_stop_reason"], "shutdown");
    assert_eq!(summary["result"]["tests_passed"], 0);
    assert_eq!(summary["result"]["tests_failed"], 0);
    let left: Vec<_> = fs::read_dir(&tmp)
        .expect("tmp")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "workspace left behind: {left:?}");
    assert_eq!(processes_with("sleep 1000.8181"), Vec::<String>::new());
}

/// `agent-runner` with `args`, on a host where `bwrap` cannot be found (an empty `PATH`),
/// artifacts in `out`; its exit code and stderr.
fn runner_without_bwrap(args: &[&str], out: &Path) -> (Option<i32>, String) {
    let empty = tempfile::tempdir().expect("empty PATH dir");
    let output = Command::new(RUNNER)
        .args(args)
        .env("BENCH_RUNNER_OUT", out)
        .env("PATH", empty.path())
        .stdin(Stdio::null())
        .output()
        .expect("run agent-runner");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn without_bwrap_exec_agents_refuse_to_start_unless_unsandboxed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = format!(
        "{}/../tests/fixtures/runner/hostile-exec.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let exec = [
        "exec",
        "--scenario",
        &scenario,
        "--task",
        "sh-ci-exit-status",
        "--allow-unpinned",
        "--no-publish",
    ];
    let (code, stderr) = runner_without_bwrap(&[&exec[..], &["--", "true"]].concat(), dir.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--unsandboxed"), "{stderr}");
    assert!(only_run_dir_absent(dir.path()), "a run started");

    let (code, stderr) = runner_without_bwrap(
        &[&exec[..], &["--unsandboxed", "--", "true"]].concat(),
        dir.path(),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let summary = runs::summary(&only_run_dir(dir.path()));
    assert_eq!(summary["result"]["exit_status"], "submitted");
    let run_start: serde_json::Value = serde_json::from_str(
        fs::read_to_string(only_run_dir(dir.path()).join("events.jsonl"))
            .expect("events")
            .lines()
            .next()
            .expect("run_start"),
    )
    .expect("json");
    assert_eq!(run_start["data"]["sandbox"]["kind"], "none");
}

#[test]
fn without_bwrap_the_scripted_policy_runs_and_records_no_sandbox() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = format!(
        "{}/../tests/fixtures/runner/hostile-timeout.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let (code, stderr) = runner_without_bwrap(
        &[
            "run",
            &scenario,
            "--allow-unpinned",
            "--no-progress",
            "--no-publish",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let run = only_run_dir(dir.path());
    let first = fs::read_to_string(run.join("events.jsonl")).expect("events");
    let run_start: serde_json::Value =
        serde_json::from_str(first.lines().next().expect("run_start")).expect("json");
    assert_eq!(run_start["data"]["sandbox"]["kind"], "none");
    assert_eq!(runs::summary(&run)["result"]["exit_status"], "exit_timeout");
}

/// No run directory was written under `out`.
fn only_run_dir_absent(out: &Path) -> bool {
    fs::read_dir(out).map_or(true, |mut d| d.next().is_none())
}

#[test]
fn without_bwrap_llm_scenarios_refuse_to_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = format!("{}/../scenarios/llm-local.toml", env!("CARGO_MANIFEST_DIR"));
    let (code, stderr) = runner_without_bwrap(
        &[
            "run",
            &scenario,
            "--no-progress",
            "--no-publish",
            "--llm-base-url",
            "http://127.0.0.1:9/v1",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("sandbox is unavailable"), "{stderr}");
    assert!(only_run_dir_absent(dir.path()), "a run started");
}
