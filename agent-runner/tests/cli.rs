//! The runner's command line as a user meets it, against a real nats-server: a broker
//! that is up gets every event directly (no spooling, no warning), events sent before the
//! first connection wait for it, and a broker that is away gets them spooled; workers started side by side in one directory each take a spool
//! slot of their own, and what they leave is replayed; `exec` runs the documented command
//! with its defaults and refuses a missing program before publishing anything; `tail`
//! shows what was published, filtered, replayed with `--last` / `--since`, as text or
//! JSON, ends with exit 0 on Ctrl-C and leaves no consumer behind; and logs written to a
//! file carry no colour codes.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use bench_nats::StreamSpec;
use bench_schemas::SubjectPrefix;
use benchstream_tests::runs;
use benchstream_tests::stream::{create_stream, jetstream, stream_messages};
use benchstream_tests::NatsServer;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use uuid::Uuid;

const RUNNER: &str = env!("CARGO_BIN_EXE_agent-runner");

/// A path in the repository.
fn repo(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// `agent-runner <args>` in `cwd`, stderr into `cwd/stderr.log` (a file, as in a
/// service's log); its output, and the log.
fn runner(cwd: &Path, args: &[&str]) -> (Output, String) {
    let log = cwd.join("stderr.log");
    let output = Command::new(RUNNER)
        .current_dir(cwd)
        .args(args)
        .env_remove("NO_COLOR")
        .stderr(fs::File::create(&log).expect("log file"))
        .output()
        .expect("run agent-runner");
    let log = fs::read(&log).expect("log");
    assert!(!log.contains(&0x1b), "colour codes in a log file");
    (output, String::from_utf8_lossy(&log).into_owned())
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Bytes in the spool slot files of `dir/.local/spool/`, by file name.
fn spool_slots(dir: &Path) -> Vec<(String, u64)> {
    let mut slots: Vec<(String, u64)> = fs::read_dir(dir.join(".local/spool"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".spool"))
                .map(|name| {
                    let len =
                        fs::metadata(dir.join(".local/spool").join(&name)).map_or(0, |m| m.len());
                    (name, len)
                })
                .collect()
        })
        .unwrap_or_default();
    slots.sort();
    slots
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_is_up_gets_every_event_directly() {
    let nats = NatsServer::start();
    let spec = create_stream(&nats.url(), &SubjectPrefix::default()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let smoke = repo("scenarios/smoke.toml");
    let (out, log) = tokio::task::block_in_place(|| {
        runner(
            dir.path(),
            &[
                "run",
                smoke.to_str().expect("utf-8"),
                "--tasks",
                "sh-ci-exit-status",
                "--no-progress",
                "--nats-url",
                &nats.url(),
            ],
        )
    });
    assert_eq!(out.status.code(), Some(0), "{log}");
    assert!(
        !log.contains("spooling") && !log.contains("delivery failed"),
        "{log}"
    );
    let report = stdout(&out);
    assert!(report.contains(", 0 spooled, 0 replayed"), "{report}");
    assert!(
        spool_slots(dir.path()).iter().all(|(_, len)| *len == 0),
        "{:?}",
        spool_slots(dir.path())
    );
    let run_dir = runs::only_run_dir(&dir.path().join(".local/runs"));
    let events = runs::journal_events(&run_dir).len();
    assert!(events >= 3, "{events} events");
    assert_eq!(stream_messages(&nats.url(), &spec).await.len(), events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_sent_before_the_first_connection_wait_for_it_instead_of_spooling() {
    let nats = NatsServer::start();
    let spec = create_stream(&nats.url(), &SubjectPrefix::default()).await;
    nats.stop();
    let dir = tempfile::tempdir().expect("tempdir");
    // An import sends its 27 events at once, long before the broker below is back.
    let traj = repo("tests/fixtures/swe-agent/django__django-11099.traj");
    let importer = {
        let (dir, url) = (dir.path().to_owned(), nats.url());
        std::thread::spawn(move || {
            runner(
                &dir,
                &[
                    "import",
                    "swe-agent",
                    traj.to_str().expect("utf-8"),
                    "--nats-url",
                    &url,
                ],
            )
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    tokio::task::block_in_place(|| nats.restart());
    let (out, log) = tokio::task::block_in_place(|| importer.join()).expect("import");
    assert_eq!(out.status.code(), Some(0), "{log}");
    assert!(
        !log.contains("spooling") && !log.contains("delivery failed"),
        "{log}"
    );
    assert!(log.contains("27 acked (0 duplicates), 0 spooled"), "{log}");
    assert_eq!(stream_messages(&nats.url(), &spec).await.len(), 27);
    assert!(spool_slots(dir.path()).iter().all(|(_, len)| *len == 0));
}

/// Two `agent-runner run` of the slow scenario started together in `dir` with the
/// default spool, publishing to `url`.
fn two_workers(dir: &Path, url: &str) -> Vec<(Output, String)> {
    let slow = repo("tests/fixtures/runner/slow-steps.toml");
    let args = [
        "run",
        slow.to_str().expect("utf-8"),
        "--allow-unpinned",
        "--no-progress",
        "--ack-timeout-ms",
        "500",
        "--drain-timeout-ms",
        "500",
        "--nats-url",
        url,
    ];
    let workers: Vec<(Child, PathBuf)> = (0..2)
        .map(|i| {
            let log = dir.join(format!("worker{i}.log"));
            let child = Command::new(RUNNER)
                .current_dir(dir)
                .args(args)
                .arg("--out")
                .arg(dir.join(format!("runs{i}")))
                .stdout(Stdio::piped())
                .stderr(fs::File::create(&log).expect("log"))
                .spawn()
                .expect("start agent-runner");
            (child, log)
        })
        .collect();
    workers
        .into_iter()
        .map(|(child, log)| {
            let out = child.wait_with_output().expect("worker ends");
            let log = fs::read(&log).expect("log");
            assert!(!log.contains(&0x1b), "colour codes in a log file");
            (out, String::from_utf8_lossy(&log).into_owned())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_in_one_directory_spool_to_their_own_slots_and_a_flush_replays_both() {
    let nats = NatsServer::start();
    let spec = create_stream(&nats.url(), &SubjectPrefix::default()).await;
    nats.stop();
    let dir = tempfile::tempdir().expect("tempdir");

    let workers = tokio::task::block_in_place(|| two_workers(dir.path(), &nats.url()));
    for (out, log) in &workers {
        // 4: the runs ended with their events in the spool (not 5: spool locked).
        assert_eq!(out.status.code(), Some(4), "{log}");
        assert!(log.contains("broker unreachable; spooling events"), "{log}");
    }
    let slots = spool_slots(dir.path());
    let names: Vec<&str> = slots.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["agent-runner.1.spool", "agent-runner.spool"]);
    assert!(slots.iter().all(|(_, len)| *len > 0), "{slots:?}");

    nats.restart();
    let (out, log) = tokio::task::block_in_place(|| {
        runner(dir.path(), &["spool", "flush", "--nats-url", &nats.url()])
    });
    assert_eq!(out.status.code(), Some(0), "{}{log}", stdout(&out));
    assert!(spool_slots(dir.path()).iter().all(|(_, len)| *len == 0));
    let mut journals = 0;
    for i in 0..2 {
        let run_dir = runs::only_run_dir(&dir.path().join(format!("runs{i}")));
        journals += runs::journal_events(&run_dir).len();
    }
    assert_eq!(stream_messages(&nats.url(), &spec).await.len(), journals);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_with_a_missing_program_publishes_nothing() {
    let nats = NatsServer::start();
    let spec = create_stream(&nats.url(), &SubjectPrefix::default()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let scenarios = repo("scenarios");
    for program in ["no-such-agent-program", "./agents/missing.py"] {
        let out = Command::new(RUNNER)
            .current_dir(dir.path())
            .args(["exec", "--scenarios-dir"])
            .arg(&scenarios)
            .args(["--nats-url", &nats.url(), "--", program])
            .output()
            .expect("run agent-runner");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("agent program \"{program}\"")),
            "{err}"
        );
    }
    assert!(stream_messages(&nats.url(), &spec).await.is_empty());
    assert!(!dir.path().join(".local/runs").exists());
}

#[test]
fn exec_runs_the_documented_command_and_names_the_policy_after_the_script() {
    let out_dir = tempfile::tempdir().expect("tempdir");
    // From the repository root, as the README shows it; one task to keep it short (the
    // default, every task of `smoke`, is checked by the unit tests).
    let out = Command::new(RUNNER)
        .current_dir(repo(""))
        .args([
            "exec",
            "--task",
            "sh-ci-exit-status",
            "--no-publish",
            "--out",
        ])
        .arg(out_dir.path())
        .args(["--", "python3", "scenarios/agents/example_agent.py"])
        .output()
        .expect("run agent-runner");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = runs::journal_events(&runs::only_run_dir(out_dir.path()));
    assert!(events
        .iter()
        .all(|e| e.policy_id == "exec:example_agent.py" && e.task_id == "sh-ci-exit-status"));
}

/// One event of run `run` as a producer would publish it (`tail` reads any JSON).
fn event(run: Uuid, seq: u64, event_type: &str, task: &str, policy: &str) -> serde_json::Value {
    serde_json::json!({
        "schema_version": 1, "event_id": Uuid::now_v7(), "run_id": run, "task_id": task,
        "step_id": null, "seq": seq, "ts": "2026-01-02T03:04:05.000Z", "policy_id": policy,
        "type": event_type, "data": {"step_type": "act", "content": format!("{event_type} {seq}")}
    })
}

async fn publish(url: &str, events: &[serde_json::Value]) {
    let js = jetstream(url).await;
    for e in events {
        let subject = format!(
            "bench.events.{}.{}",
            e["run_id"].as_str().expect("run"),
            e["type"].as_str().expect("type")
        );
        js.publish(subject, e.to_string().into())
            .await
            .expect("publish")
            .await
            .expect("ack");
    }
}

/// A running `agent-runner tail` and its stdout lines.
struct Tail {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Tail {
    fn start(url: &str, args: &[&str]) -> Tail {
        let mut child = Command::new(RUNNER)
            .arg("tail")
            .args(args)
            .args(["--nats-url", url])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start agent-runner tail");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Tail { child, lines }
    }

    /// The next `n` lines; panics after 20 s.
    fn lines(&self, n: usize) -> Vec<String> {
        (0..n)
            .map(|i| {
                self.lines
                    .recv_timeout(Duration::from_secs(20))
                    .unwrap_or_else(|e| panic!("line {i} of {n}: {e}"))
            })
            .collect()
    }

    /// Ctrl-C: it must end with exit 0 and print nothing more.
    fn interrupt(mut self) {
        kill(Pid::from_raw(self.child.id() as i32), Signal::SIGINT).expect("SIGINT");
        let status = self.child.wait().expect("tail ends");
        assert_eq!(status.code(), Some(0));
        let rest: Vec<String> = self.lines.try_iter().collect();
        assert!(rest.is_empty(), "unexpected lines: {rest:?}");
    }
}

async fn consumers(url: &str, spec: &StreamSpec) -> usize {
    let js = jetstream(url).await;
    let mut stream = js.get_stream(&spec.name).await.expect("stream");
    stream.info().await.expect("info").state.consumer_count
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_shows_filtered_events_replays_the_last_ones_and_ends_on_ctrl_c() {
    let nats = NatsServer::start();
    let url = nats.url();
    let spec = create_stream(&url, &SubjectPrefix::default()).await;
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let stored = [
        event(a, 0, "run_start", "task-a", "policy-a"),
        event(a, 1, "step", "task-a", "policy-a"),
        event(a, 2, "run_stop", "task-a", "policy-a"),
        event(b, 0, "run_start", "task-b", "policy-b"),
        event(b, 1, "step", "task-b", "policy-b"),
        event(b, 2, "failure", "task-b", "policy-b"),
    ];
    publish(&url, &stored).await;

    // The last two stored, then live ones, one readable line each.
    let tail = Tail::start(&url, &["--last", "2"]);
    let replayed = tail.lines(2);
    assert!(
        replayed[0].contains(&format!(
            "step             run {b} #1 task task-b policy policy-b  act: step 1"
        )),
        "{replayed:?}"
    );
    assert!(
        replayed[1].contains(&format!("failure          run {b} #2")),
        "{replayed:?}"
    );
    let live = event(a, 3, "step", "task-a", "policy-a");
    publish(&url, std::slice::from_ref(&live)).await;
    let line = tail.lines(1);
    assert!(line[0].contains(&format!("run {a} #3")), "{line:?}");
    tail.interrupt();

    // One run's events as published, JSON.
    let tail = Tail::start(&url, &["--since", "1h", "--run", &a.to_string(), "--json"]);
    let json: Vec<serde_json::Value> = tail
        .lines(4)
        .iter()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(json, [&stored[..3], std::slice::from_ref(&live)].concat());
    tail.interrupt();

    // Payload filters (task, policy) with subject filters (type) and --last.
    let tail = Tail::start(
        &url,
        &[
            "--since",
            "1h",
            "--task",
            "task-b",
            "--type",
            "step,failure",
        ],
    );
    let lines = tail.lines(2);
    assert!(
        lines[0].contains(" step ") && lines[1].contains(" failure "),
        "{lines:?}"
    );
    tail.interrupt();
    let tail = Tail::start(
        &url,
        &[
            "--policy",
            "policy-a",
            "--type",
            "run_start,run_stop",
            "--last",
            "1",
        ],
    );
    let lines = tail.lines(1);
    assert!(
        lines[0].contains(&format!("run_stop         run {a} #2")),
        "{lines:?}"
    );
    tail.interrupt();

    assert_eq!(
        consumers(&url, &spec).await,
        0,
        "a tail left a consumer behind"
    );
}
