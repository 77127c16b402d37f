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
use bench_schemas::{
    BenchmarkEvent, ExitKind, ExitStatus, Payload, PidsLimit, SandboxNetwork, StepType, ToolCall,
};
use benchstream_tests::{processes_with, ClickHouseServer, NatsServer};
use tokio_util::sync::CancellationToken;

use crate::common::{fixture_scenario, journal_events, repo_path, run_exec, run_offline};

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

fn run_start_sandbox(events: &[BenchmarkEvent]) -> &bench_schemas::SandboxInfo {
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
    let latency = calls[0]
        .latency_ms
        .expect("the runner times every tool call");
    assert!(
        latency < 3000 + 5000,
        "the bomb's tree was killed late: {latency} ms"
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

/// An `exec` agent running `script` under `hostile-exec.toml` (3 s execution timeout, no
/// network).
async fn hostile_exec(script: &str, dir: &Path) -> (ExecReport, Duration) {
    hostile_exec_command(["bash", "-c", script].map(OsString::from).to_vec(), dir).await
}

/// An `exec` agent running `command` under `hostile-exec.toml`.
async fn hostile_exec_command(command: Vec<OsString>, dir: &Path) -> (ExecReport, Duration) {
    let started = Instant::now();
    let report = run_exec(exec_config(
        command,
        fixture_scenario("hostile-exec"),
        dir,
        Vec::new(),
    ))
    .await;
    (report, started.elapsed())
}

/// The config of a sandboxed `exec` run of `command` on `sh-ci-exit-status` of `scenario`,
/// its journal under `dir/runs`, with `read_only` given as `--sandbox-ro`.
fn exec_config(
    command: Vec<OsString>,
    scenario: PathBuf,
    dir: &Path,
    read_only: Vec<PathBuf>,
) -> ExecConfig {
    ExecConfig {
        command,
        scenario,
        task: "sh-ci-exit-status".to_owned(),
        allow_unpinned: true,
        seed: None,
        policy_id: Some("exec:hostile".to_owned()),
        host: "test-host".to_owned(),
        out_dir: Some(dir.join("runs")),
        publish: None,
        images: Default::default(),
        sandbox: bench_sandbox::SandboxMode::Required,
        read_only,
        experiment: Default::default(),
        prices: None,
    }
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
    assert!(
        bench_sandbox::host().bwrap().is_ok(),
        "bwrap is installed here"
    );
    let dir = tempfile::tempdir().expect("dir");
    let report = run_exec(ExecConfig {
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
        images: Default::default(),
        sandbox: bench_sandbox::SandboxMode::Off,
        read_only: Vec::new(),
        experiment: Default::default(),
        prices: None,
    })
    .await;
    // Unsandboxed, the host's /etc is there; the record says so.
    assert_eq!(report.agent_exit, Some(0));
    let events = journal_events(&report.summary);
    let sandbox = run_start_sandbox(&events);
    assert_eq!(sandbox.kind, "none");
    assert_eq!(sandbox.version, None);
    assert!(!sandbox.network_isolated);
}

/// The uid this test process (and so the runner) has on the host.
fn own_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self").expect("/proc/self").uid()
}

/// A `user` key in the user keyring of this process's uid (the runner's, shared by every
/// process of that uid: under a root runner, by every run), listed in the host's
/// `/proc/keys` to every process of that uid; invalidated on drop.
struct UserKey {
    description: String,
    id: i64,
}

impl UserKey {
    /// Adds the key with `add_key(2)` from a child Python: the user keyring outlives it
    /// (a session keyring it made for itself would not).
    fn add() -> UserKey {
        let description = format!("bench-canary-key-{}", uuid::Uuid::new_v4().simple());
        let out = std::process::Command::new("python3")
            .args([
                "-c",
                "import ctypes, sys\n\
                 libc = ctypes.CDLL(None, use_errno=True)\n\
                 libc.syscall.restype = ctypes.c_long\n\
                 n = {'x86_64': 248, 'aarch64': 217}[__import__('platform').machine()]\n\
                 key = libc.syscall(n, b'user', sys.argv[1].encode(), b'runner secret', 13, -4)\n\
                 print(key)\n\
                 sys.exit(key < 0)",
                &description,
            ])
            .output()
            .expect("python3");
        assert!(out.status.success(), "add_key: {out:?}");
        let id = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("key id");
        let key = UserKey { description, id };
        // The attack is real: the key is listed on the host.
        let keys = fs::read_to_string("/proc/keys").expect("/proc/keys");
        assert!(keys.contains(&key.description), "{keys}");
        key
    }
}

impl Drop for UserKey {
    fn drop(&mut self) {
        // KEYCTL_INVALIDATE (21): gone from every keyring at once.
        let _ = std::process::Command::new("python3")
            .args([
                "-c",
                "import ctypes, sys\n\
                 libc = ctypes.CDLL(None)\n\
                 n = {'x86_64': 250, 'aarch64': 219}[__import__('platform').machine()]\n\
                 libc.syscall(n, 21, int(sys.argv[1]))",
                &self.id.to_string(),
            ])
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_runner_gives_its_agent_no_privilege() {
    // CI runs as root: this is the case where bwrap alone would leave every capability.
    let canary = Canary::new("privileges.txt");
    let core_pattern = fs::read_to_string("/proc/sys/kernel/core_pattern").expect("read");
    let dir = tempfile::tempdir().expect("dir");
    let key = UserKey::add();
    // Another run's scratch copy, where runs keep theirs.
    let other_run = tempfile::Builder::new()
        .prefix("bench-run-")
        .tempdir()
        .expect("other scratch");
    fs::write(other_run.path().join("secret.txt"), "secret\n").expect("write");
    let script = repo_path("tests/fixtures/runner/hostile-privileges.sh");
    let command = vec![
        OsString::from("bash"),
        script.into_os_string(),
        OsString::from(CANARY_DIR),
        OsString::from("privileges.txt"),
        OsString::from("64"),
        OsString::from(&key.description),
        OsString::from(key.id.to_string()),
        OsString::from(std::process::id().to_string()),
        other_run.path().as_os_str().to_owned(),
    ];
    let (report, _) = hostile_exec_command(command, dir.path()).await;
    assert_eq!(
        report.agent_exit,
        Some(0),
        "an attack succeeded: the exit status is its number in hostile-privileges.sh"
    );
    assert_eq!(report.summary.result.exit_status, ExitStatus::Submitted);
    canary.assert_unchanged();
    assert!(!Path::new(CANARY_DIR).join("owned").exists());
    assert_eq!(
        fs::read_to_string("/proc/sys/kernel/core_pattern").expect("read"),
        core_pattern
    );

    // The record says what held.
    let events = journal_events(&report.summary);
    let sandbox = run_start_sandbox(&events);
    assert_eq!(sandbox.kind, "bwrap");
    assert_eq!(sandbox.uid_inside, Some(bench_sandbox::SANDBOX_UID));
    // A root runner's agent is uid 0 on the host (without any capability there): said so.
    assert_eq!(sandbox.uid_outside, Some(own_uid()));
    // A plain root shell on this (cgroup v1) host: a pids cgroup per command.
    assert_eq!(sandbox.pids_limit, Some(PidsLimit::Cgroup), "{sandbox:?}");
    assert_eq!(sandbox.user_namespace, Some(true));
    assert_eq!(sandbox.capabilities_dropped, Some(true));
    assert_eq!(sandbox.seccomp, Some(true));
    assert_eq!(sandbox.network, Some(SandboxNetwork::None));
    assert!(
        sandbox
            .enforced
            .iter()
            .any(|l| l.limit == "tmp_bytes" && l.value == 64 << 20 && l.by == "tmpfs"),
        "{:?}",
        sandbox.enforced
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_program_task_and_read_only_paths_under_the_host_tmp_are_visible() {
    // CI clones the repository into a directory nobody chooses, /tmp included: the
    // sandbox's own /tmp must not hide what lives under the host's.
    let host_tmp = tempfile::Builder::new()
        .prefix("benchstream-under-tmp-")
        .tempdir_in("/tmp")
        .expect("dir under /tmp");
    let scenario_dir = host_tmp.path().join("scenario");
    fs::create_dir_all(scenario_dir.join("tasks")).expect("mkdir");
    fs::copy(
        fixture_scenario("hostile-exec"),
        scenario_dir.join("hostile-exec.toml"),
    )
    .expect("copy scenario");
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(repo_path("tests/fixtures/runner/tasks/sh-ci-exit-status"))
        .arg(scenario_dir.join("tasks"))
        .status()
        .expect("cp");
    assert!(copied.success());
    let agent = host_tmp.path().join("agent.sh");
    fs::write(
        &agent,
        "test -r \"$BENCH_TASK_DIR/problem.md\" || exit 14\n\
         test -r \"$1/data.txt\" || exit 15\n\
         exit 0\n",
    )
    .expect("write agent");
    let data_dir = host_tmp.path().join("data");
    fs::create_dir(&data_dir).expect("mkdir");
    fs::write(data_dir.join("data.txt"), "data\n").expect("write data");

    let dir = tempfile::tempdir().expect("dir");
    let command = vec![
        OsString::from("bash"),
        agent.clone().into_os_string(),
        data_dir.clone().into_os_string(),
    ];
    let report = run_exec(exec_config(
        command,
        scenario_dir.join("hostile-exec.toml"),
        dir.path(),
        vec![data_dir],
    ))
    .await;
    assert_eq!(
        report.agent_exit,
        Some(0),
        "14: the task brief, 15: the --sandbox-ro directory was invisible"
    );
    assert_eq!(report.summary.result.exit_status, ExitStatus::Submitted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_path_the_sandbox_cannot_show_is_refused_before_the_run() {
    let dir = tempfile::tempdir().expect("dir");
    for (path, why) in [
        (PathBuf::from("/proc/self"), "own /proc"),
        (std::env::temp_dir(), "scratch copies"),
        (dir.path().join("missing"), "No such file"),
    ] {
        let result = exec::run(
            exec_config(
                ["bash", "-c", "exit 0"].map(OsString::from).to_vec(),
                fixture_scenario("hostile-exec"),
                dir.path(),
                vec![path.clone()],
            ),
            CancellationToken::new(),
        )
        .await;
        let Err(error) = result else {
            panic!("{} was accepted", path.display());
        };
        assert!(
            error.to_string().contains(why),
            "{}: {error}",
            path.display()
        );
        assert_ne!(error.exit() as u8, 0);
    }
    // Nothing was recorded: no run started.
    let runs = dir.path().join("runs");
    assert!(
        !runs.exists() || fs::read_dir(&runs).expect("runs").next().is_none(),
        "a run was recorded"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_agent_writes_to_its_tmp_and_workspace_counts_against_its_memory() {
    // memory_mb = 128, disk_mb = 512: /tmp and the workspace may hold 512 MB each, but
    // both are tmpfs (the workspace's under a root runner), whose pages are memory.
    for target in ["/tmp/big", "big"] {
        let dir = tempfile::tempdir().expect("dir");
        let script = format!(
            "head -c 300M /dev/zero > {target} 2>/dev/null; \
             size=$(stat -c %s {target}); \
             [ \"$size\" -ge $((300 * 1024 * 1024)) ] && exit 60; \
             exit 0"
        );
        let report = run_exec(exec_config(
            ["bash", "-c", &script].map(OsString::from).to_vec(),
            fixture_scenario("hostile-tmpfs"),
            dir.path(),
            Vec::new(),
        ))
        .await;
        let events = journal_events(&report.summary);
        let enforced = &run_start_sandbox(&events).enforced;
        for (limit, value, by) in [
            ("memory_bytes", 128 << 20, "cgroup"),
            ("tmp_bytes", 512 << 20, "tmpfs"),
            ("workspace_bytes", 512 << 20, "tmpfs"),
        ] {
            assert!(
                enforced
                    .iter()
                    .any(|l| l.limit == limit && l.value == value && l.by == by),
                "{limit} = {value} by {by} does not hold on this host: {enforced:?}"
            );
        }
        // The memory cgroup stops the writer short (0), or kills the shell too (none; or,
        // with the tmpfs still full, a later fork of it: 1, 2, 137). 60 alone is the attack.
        assert_ne!(
            report.agent_exit,
            Some(60),
            "300 MB reached {target} under a 128 MB memory limit"
        );
        assert_ne!(report.summary.result.exit_status, ExitStatus::ExitTimeout);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_with_the_network_enabled_reaches_none_of_the_hosts_loopback_services() {
    let nats = NatsServer::start();
    let clickhouse = ClickHouseServer::start();
    // A local web server: it answers whoever connects.
    let web = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let web_port = web.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in web.incoming().flatten() {
            let mut stream = stream;
            let _ = std::io::Write::write_all(&mut stream, b"HTTP/1.0 200 OK\r\n\r\nhost\n");
        }
    });
    let ports = [
        nats.port(),
        clickhouse.http_port(),
        clickhouse.tcp_port(),
        web_port,
    ];
    // Exit 0 only if no port answered, on loopback or through the gateway (where pasta
    // lets a connection hang: 2 s each); a namespace without a default route would be no
    // network at all (90).
    let script = format!(
        "ip route | grep -q '^default' || exit 90; \
         gw=$(ip route | awk '/^default/ {{print $3}}'); i=0; \
         for port in {ports}; do \
           i=$((i + 1)); \
           timeout 2 bash -c \"exec 3<>/dev/tcp/127.0.0.1/$port\" 2>/dev/null && exit $((70 + i)); \
           timeout 2 bash -c \"exec 3<>/dev/tcp/$gw/$port\" 2>/dev/null && exit $((80 + i)); \
         done; exit 0",
        ports = ports.map(|p| p.to_string()).join(" ")
    );
    let dir = tempfile::tempdir().expect("dir");
    let report = run_exec(exec_config(
        ["bash", "-c", &script].map(OsString::from).to_vec(),
        fixture_scenario("hostile-network"),
        dir.path(),
        Vec::new(),
    ))
    .await;
    assert_eq!(
        report.agent_exit,
        Some(0),
        "71-74: NATS, ClickHouse HTTP, ClickHouse TCP, the web server answered on loopback \
         (81-84: through the gateway); 90: no network at all"
    );
    let events = journal_events(&report.summary);
    let sandbox = run_start_sandbox(&events);
    assert_eq!(sandbox.network, Some(SandboxNetwork::Pasta));
    assert!(!sandbox.network_isolated);
    // The services were up: the refusals were the sandbox's.
    for port in ports {
        std::net::TcpStream::connect(("127.0.0.1", port)).expect("service is up");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_without_end_in_tmp_are_held_by_the_memory_limit() {
    // Empty files take no tmpfs bytes, but each inode is kernel memory charged to the
    // command's memory cgroup (128 MB here): millions of them cannot be made.
    let dir = tempfile::tempdir().expect("dir");
    let script = r#"python3 -c '
import sys
for n in range(3_000_000):
    open("/tmp/f%d" % n, "w").close()
sys.exit(61)
'"#;
    let report = run_exec(exec_config(
        ["bash", "-c", script].map(OsString::from).to_vec(),
        fixture_scenario("hostile-tmpfs"),
        dir.path(),
        Vec::new(),
    ))
    .await;
    // SIGKILL by the memory cgroup: bash reports 137 for python, or is killed itself.
    assert!(
        matches!(report.agent_exit, Some(137) | None),
        "exit {:?} (61: 3 million files were made in /tmp)",
        report.agent_exit
    );
    assert_ne!(
        report.summary.result.exit_status,
        ExitStatus::ExitTimeout,
        "the agent ran out of time before any limit held: the test proves nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_cannot_write_past_its_disk_nor_make_files_without_end() {
    // disk_mb = 16: twice that in files of 8 MB (each under the per-file limit) in the
    // workspace and in /tmp, and 50,000 files in the workspace.
    let dir = tempfile::tempdir().expect("dir");
    let script = repo_path("tests/fixtures/runner/hostile-disk.sh");
    let command = vec![
        OsString::from("bash"),
        script.into_os_string(),
        OsString::from("16"),
    ];
    let report = run_exec(exec_config(
        command,
        fixture_scenario("hostile-disk"),
        dir.path(),
        Vec::new(),
    ))
    .await;
    assert_eq!(
        report.agent_exit,
        Some(0),
        "an attack succeeded: the exit status is its number in hostile-disk.sh"
    );
    // The agent's failed writes are its own business: the run is judged as any other.
    assert_eq!(report.summary.result.exit_status, ExitStatus::Submitted);
    assert!(report.summary.result.success.is_some());

    // The record says what bounded the disk (a root runner mounts the workspace's tmpfs).
    let events = journal_events(&report.summary);
    let enforced = &run_start_sandbox(&events).enforced;
    for (limit, value) in [
        ("workspace_bytes", 16 << 20),
        ("workspace_inodes", 4096),
        ("tmp_bytes", 16 << 20),
    ] {
        assert!(
            enforced
                .iter()
                .any(|l| l.limit == limit && l.value == value && l.by == "tmpfs"),
            "{limit} = {value} by tmpfs is not recorded (a runner that is not root?): {enforced:?}"
        );
    }
}
