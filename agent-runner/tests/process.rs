//! The runner binary as an operator runs it: killed with SIGKILL while the broker is
//! away, its spool survives and the next start delivers it, with the same event ids;
//! stopped with SIGTERM, it ends its runs and delivers their events before exiting (and
//! stopped during a hung command, within seconds, its workspace removed); a spool holding
//! what can never be delivered (records for a subject no stream captures, flipped bytes, a
//! torn record, a lost newline) is flushed around it: the rest is delivered, every
//! undeliverable byte is in the quarantine file, and the exit code says so; and on a host
//! without bwrap, LLM scenarios and exec agents refuse to start unless `--unsandboxed`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bench_delivery::{record_line, Outgoing, QuarantineEntry, QuarantineKind};
use bench_nats::StreamSpec;
use bench_schemas::SubjectPrefix;
use benchstream_tests::cli::{assert_config_error, assert_unreachable_error};
use benchstream_tests::runs::{self, journal_lines, only_run_dir};
use benchstream_tests::spool::{ids, spool_with, step_messages};
use benchstream_tests::stream::{self, create_stream, stream_messages};
use benchstream_tests::{free_port, processes_with, NatsServer};

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

/// `agent-runner spool flush` against `url`; its exit code and what it printed.
fn flush(spool: &Path, url: &str) -> (Option<i32>, String) {
    let out = Command::new(RUNNER)
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
        .stderr(Stdio::null())
        .output()
        .expect("run agent-runner");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// `agent-runner spool status --json` of `spool` (one slot): JSON lines, one object per
/// slot.
fn spool_status(spool: &Path) -> serde_json::Value {
    let out = Command::new(RUNNER)
        .args(["spool", "status", "--json", "--spool"])
        .arg(spool)
        .output()
        .expect("run agent-runner");
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    let mut slots: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is one JSON object"))
        .collect();
    assert_eq!(slots.len(), 1, "one line per slot: {stdout}");
    slots.remove(0)
}

/// The quarantine entries of `status`.
fn quarantine_entries(status: &serde_json::Value) -> Vec<QuarantineEntry> {
    serde_json::from_value(status["quarantine"]["entries"].clone()).expect("entries")
}

/// `Nats-Msg-Id`s of the stream, in stream order.
async fn stored_ids(url: &str, spec: &StreamSpec) -> Vec<String> {
    stream_messages(url, spec)
        .await
        .iter()
        .map(|m| m.header("Nats-Msg-Id").expect("msg id header").to_owned())
        .collect()
}

/// A nats-server with the stream of the default prefix, and a spool path beside it.
async fn broker_and_spool() -> (NatsServer, StreamSpec, tempfile::TempDir, PathBuf) {
    let nats = NatsServer::start();
    let spec = create_stream(&nats.url(), &SubjectPrefix::default()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = dir.path().join("runner.spool");
    (nats, spec, dir, spool)
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
    let (code, out) = flush(&spool, &nats.url());
    assert_eq!(code, Some(4), "{out}");
    assert!(
        out.contains(&format!(
            "{} left in spool (last attempt: not connected",
            spooled.len()
        )),
        "the reason is printed: {out}"
    );
    assert_eq!(spooled_ids(&spool), spooled, "spool kept intact");

    nats.restart();
    assert_eq!(flush(&spool, &nats.url()).0, Some(0));
    assert_eq!(
        fs::metadata(&spool).expect("spool").len(),
        0,
        "spool emptied"
    );

    let stored = stored_ids(&nats.url(), &spec).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_no_stream_captures_are_quarantined_and_the_rest_delivered() {
    let (nats, spec, _dir, spool) = broker_and_spool().await;
    // Three records written under another --subject-prefix, between good ones.
    let before = step_messages("bench", 2);
    let other = step_messages("team-a", 3);
    let after = step_messages("bench", 4);
    spool_with(
        &spool,
        &[before.clone(), other.clone(), after.clone()].concat(),
    );

    let (code, out) = flush(&spool, &nats.url());
    assert_eq!(code, Some(6), "{out}");
    assert!(
        out.contains("6 replayed, 3 quarantined, 0 left in spool"),
        "{out}"
    );
    assert_eq!(
        stored_ids(&nats.url(), &spec).await,
        ids(&[before, after].concat()),
        "the rest delivered, in order"
    );
    assert_eq!(
        fs::metadata(&spool).expect("spool").len(),
        0,
        "spool emptied"
    );

    let status = spool_status(&spool);
    assert_eq!(status["pending"].as_array().map(Vec::len), Some(0));
    let quarantined = quarantine_entries(&status);
    assert_eq!(quarantined.len(), 3);
    for (entry, message) in quarantined.iter().zip(&other) {
        assert_eq!(entry.kind, QuarantineKind::NoStream);
        assert_eq!(entry.msg_id.as_deref(), Some(message.msg_id.as_str()));
        assert!(
            entry
                .reason
                .contains(&format!("no stream captures {}", message.subject)),
            "{}",
            entry.reason
        );
        assert_eq!(
            entry.raw(),
            Some(record_line(message)),
            "the original record"
        );
    }
    let text = Command::new(RUNNER)
        .args(["spool", "status", "--spool"])
        .arg(&spool)
        .output()
        .expect("status");
    let text = String::from_utf8_lossy(&text.stdout);
    assert_eq!(text.matches("no_stream").count(), 3, "{text}");
}

/// Flushes a spool holding `messages` whose bytes `damage` altered; checks that exactly
/// `delivered` reached the stream, in order, and returns the quarantine entries.
async fn flush_damaged(
    messages: &[Outgoing],
    damage: impl FnOnce(&mut Vec<u8>),
    delivered: &[Outgoing],
) -> (Vec<QuarantineEntry>, String) {
    let (nats, spec, _dir, spool) = broker_and_spool().await;
    let mut bytes = spool_with(&spool, messages);
    damage(&mut bytes);
    fs::write(&spool, &bytes).expect("damage the spool");

    let (code, out) = flush(&spool, &nats.url());
    assert_eq!(code, Some(6), "{out}");
    assert_eq!(stored_ids(&nats.url(), &spec).await, ids(delivered));
    assert_eq!(
        fs::metadata(&spool).expect("spool").len(),
        0,
        "spool emptied"
    );
    (quarantine_entries(&spool_status(&spool)), out)
}

/// Offsets of the line ends of a spool.
fn newlines(bytes: &[u8]) -> Vec<usize> {
    bytes
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .map(|(i, _)| i)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flipped_byte_is_quarantined_verbatim_and_the_rest_delivered() {
    let messages = step_messages("bench", 5);
    let mut flipped_line = Vec::new();
    let (quarantined, out) = flush_damaged(
        &messages,
        |bytes| {
            // One hex digit of the third record's event id, inside the event: the JSON
            // still parses, the checksum does not match.
            let nl = newlines(bytes);
            let line = nl[1] + 1..nl[2] + 1;
            let id = &messages[2].msg_id;
            let at = line.start
                + bytes[line.clone()]
                    .windows(id.len())
                    .rposition(|w| w == id.as_bytes())
                    .expect("event id in the record");
            bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
            flipped_line = bytes[line].to_vec();
        },
        &[&messages[..2], &messages[3..]].concat(),
    )
    .await;
    assert!(out.contains("4 replayed, 1 quarantined"), "{out}");
    assert_eq!(quarantined.len(), 1);
    assert_eq!(quarantined[0].kind, QuarantineKind::Corrupt);
    assert!(
        quarantined[0].reason.contains("checksum mismatch"),
        "{}",
        quarantined[0].reason
    );
    assert_eq!(
        quarantined[0].raw(),
        Some(flipped_line),
        "kept byte for byte"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_record_is_quarantined_verbatim_and_the_rest_delivered() {
    let messages = step_messages("bench", 4);
    let torn = record_line(&messages[3]);
    let torn = &torn[..torn.len() / 2];
    let (quarantined, out) = flush_damaged(
        &messages[..3],
        |bytes| bytes.extend_from_slice(torn),
        &messages[..3],
    )
    .await;
    assert!(out.contains("3 replayed, 1 quarantined"), "{out}");
    assert_eq!(quarantined.len(), 1);
    assert_eq!(quarantined[0].kind, QuarantineKind::Torn);
    assert_eq!(quarantined[0].raw().as_deref(), Some(torn));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flipped_newline_loses_neither_record() {
    let messages = step_messages("bench", 4);
    let (quarantined, out) = flush_damaged(
        &messages,
        |bytes| {
            let at = newlines(bytes)[1];
            bytes[at] ^= 0x40;
        },
        &messages,
    )
    .await;
    assert!(out.contains("4 replayed, 1 quarantined"), "{out}");
    assert_eq!(quarantined.len(), 1, "the stray byte, nothing else");
    assert_eq!(quarantined[0].kind, QuarantineKind::Corrupt);
    assert_eq!(quarantined[0].raw(), Some(vec![b'\n' ^ 0x40]));
    let stray_at = record_line(&messages[0]).len() + record_line(&messages[1]).len() - 1;
    assert_eq!(quarantined[0].spool_offset, Some(stray_at as u64));
}

/// `agent-runner <global> spool flush --nats-url <url>` on an empty spool: its exit code
/// and stderr.
fn flush_to(global: &[&str], url: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(RUNNER)
        .args(global)
        .args(["spool", "flush", "--nats-url", url, "--spool"])
        .arg(dir.path().join("runner.spool"))
        .output()
        .expect("run agent-runner");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn garbage_nats_url_is_a_usage_error() {
    let (code, stderr) = flush_to(&[], "nats://not a host:4222");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(r#"invalid nats url "nats://not a host:4222""#),
        "{stderr}"
    );
}

/// The runner's edge is the other binaries': with `--log-format json` the error that
/// ends it is one JSON log line carrying the whole message, and the exit status is the
/// shared usage code.
#[test]
fn with_json_logs_the_error_is_one_json_line_and_a_usage_error_exits_2() {
    let (code, stderr) = flush_to(&["--log-format", "json"], "nats://bad host:1");
    assert_eq!(code, Some(2), "{stderr}");
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON log line"))
        .collect();
    let [line] = lines.as_slice() else {
        panic!("one log line expected: {stderr}");
    };
    assert_eq!(line["level"], "ERROR", "{stderr}");
    let message = line["fields"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(r#"invalid nats url "nats://bad host:1""#),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_the_stream_refuses_for_good_is_quarantined_and_the_rest_delivered() {
    let nats = NatsServer::start();
    let messages = step_messages("bench", 3);
    // A stream that takes events of the usual size, not one four times as big.
    let limit = messages[0].payload.len() * 2;
    let spec = StreamSpec::default();
    stream::jetstream(&nats.url())
        .await
        .create_stream(async_nats::jetstream::stream::Config {
            name: spec.name.clone(),
            subjects: vec![SubjectPrefix::default().all_events()],
            max_message_size: i32::try_from(limit).expect("limit"),
            ..Default::default()
        })
        .await
        .expect("create stream");
    let mut oversize = messages[1].clone();
    oversize.payload = format!(r#"{{"pad":"{}"}}"#, "x".repeat(limit * 2)).into();
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = dir.path().join("runner.spool");
    spool_with(
        &spool,
        &[messages[0].clone(), oversize.clone(), messages[2].clone()],
    );

    let (code, out) = flush(&spool, &nats.url());
    assert_eq!(code, Some(6), "{out}");
    assert!(out.contains("2 replayed, 1 quarantined, 0 left"), "{out}");
    assert_eq!(
        stored_ids(&nats.url(), &spec).await,
        ids(&[messages[0].clone(), messages[2].clone()])
    );
    let quarantined = quarantine_entries(&spool_status(&spool));
    assert_eq!(quarantined.len(), 1);
    assert_eq!(quarantined[0].kind, QuarantineKind::Refused);
    assert_eq!(quarantined[0].raw(), Some(record_line(&oversize)));
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
    // Nobody judged the run: its judged numbers are unknown, not 0.
    for unknown in [
        "tests_passed",
        "tests_failed",
        "final_score",
        "stability_variance",
    ] {
        assert_eq!(
            summary["result"][unknown],
            serde_json::Value::Null,
            "{unknown}"
        );
    }
    assert_eq!(summary["result"]["success"], false, "it did not submit");
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
    // A PATH with git alone (each run's submission is a diff git makes), no bwrap.
    let only_git = tempfile::tempdir().expect("PATH dir");
    let git = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("git"))
        .find(|git| git.is_file())
        .expect("git on PATH");
    std::os::unix::fs::symlink(git, only_git.path().join("git")).expect("link git");
    let output = Command::new(RUNNER)
        .args(args)
        .env("BENCH_RUNNER_OUT", out)
        .env("PATH", only_git.path())
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

#[test]
fn a_bad_scenario_file_and_an_unreachable_provider_are_named() {
    let dir = tempfile::tempdir().expect("dir");
    let scenario = dir.path().join("bad.toml");
    let toml =
        "name = \"bad\"\nseed = 1\npolicy = \"llm\"\ntasks = [\"a\"]\n\n[config]\nmodel = 5\n";
    fs::write(&scenario, toml).expect("write");
    let out = Command::new(RUNNER)
        .args(["run", "--no-publish", "--allow-unpinned"])
        .arg(&scenario)
        .output()
        .expect("run agent-runner");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_config_error(
        &stderr,
        &scenario,
        "line 7, column 9",
        "config.model",
        "model = 5",
    );

    // The provider is checked before the first run: nothing runs, nothing is recorded.
    let nowhere = format!("http://127.0.0.1:{}/v1", free_port());
    let llm = format!(
        "{}/../tests/fixtures/llm/raw.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let runs = dir.path().join("runs");
    let out = Command::new(RUNNER)
        .args([
            "run",
            &llm,
            "--no-publish",
            "--no-progress",
            "--allow-unpinned",
        ])
        .args(["--llm-base-url", &nowhere, "--out"])
        .arg(&runs)
        .output()
        .expect("run agent-runner");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let error = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("an error line: {stderr}"));
    assert_unreachable_error(error, &nowhere, "Connection refused");
    assert!(!runs.exists(), "no run was started");
}
