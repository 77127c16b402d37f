//! The runner binary against what a hostile agent does to the host and to the operator,
//! run as root (as CI runs): an unprivileged runner gets its sandboxes while other
//! processes of its user fill its process limit (it counts its processes in a user
//! namespace of its own), but once processes of its user fill the limit inside that
//! namespace it cannot, so its run is no result (`exit_environment`, success and score
//! null) and the runner says why and exits 8 (no run was a result), while an agent that only prints bwrap's
//! error is still judged; an `exec` agent's escape
//! sequences (on stderr, in file names the judge restores, in malformed lines) reach the
//! operator's log escaped, and its floods of stderr and malformed stdout lines give a
//! bounded log with a count of what was not shown; huge sparse files an agent leaves in
//! its workspace (one over a protected test) do not grow the runner's memory; a run's
//! scratch directory is `0700`; and a runner killed with SIGKILL mid-run leaves no
//! workspace file system mounted on the host (it only ever was in the runner's own mount
//! namespace).

use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use bench_schemas::{ExitStatus, Payload, PidsLimit};
use benchstream_tests::processes_with;
use benchstream_tests::runs::{journal_events, only_run_dir, summary};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::{chown, geteuid, Gid, Pid, Uid};

const RUNNER: &str = env!("CARGO_BIN_EXE_agent-runner");

/// A uid no account uses: the runner's user, as the systemd unit's `User=` would be.
const RUNNER_UID: u32 = 64_123;

fn fixture_scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../tests/fixtures/runner/{name}.toml"))
}

/// `setpriv` arguments that run what follows as [`RUNNER_UID`], no supplementary groups.
fn as_runner_user() -> Command {
    let mut command = Command::new("setpriv");
    command.args([
        format!("--reuid={RUNNER_UID}"),
        format!("--regid={RUNNER_UID}"),
        "--clear-groups".to_owned(),
        "--".to_owned(),
    ]);
    command
}

/// `nsenter` arguments that run what follows as [`RUNNER_UID`] in the user namespace of
/// the process `pid` (a runner's own).
fn in_user_namespace_of(pid: u32) -> Command {
    let mut command = Command::new("nsenter");
    command.arg(format!("--user=/proc/{pid}/ns/user")).args([
        format!("--setuid={RUNNER_UID}"),
        format!("--setgid={RUNNER_UID}"),
        "--".to_owned(),
    ]);
    command
}

/// Processes of [`RUNNER_UID`] holding its process count up, all killed on drop.
struct Holders(Child);

impl Holders {
    /// `count` sleeping processes of [`RUNNER_UID`] started through `prefix` (which runs
    /// what follows as that user), once they all exist.
    fn start(mut prefix: Command, count: usize, marker: &str) -> Holders {
        let child = prefix
            .args([
                "sh",
                "-c",
                &format!("for i in $(seq {count}); do sleep {marker} & done; wait"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start the holders");
        let holders = Holders(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while processes_with(&format!("sleep {marker}")).len() < count {
            assert!(Instant::now() < deadline, "the holders did not all start");
            std::thread::sleep(Duration::from_millis(50));
        }
        holders
    }
}

impl Drop for Holders {
    fn drop(&mut self) {
        let pgid = Pid::from_raw(i32::try_from(self.0.id()).expect("pid"));
        let _ = killpg(pgid, Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The first command of each starved run (`hostile-starved*.toml`, and the `exec` agent).
const FIRST_COMMAND: [&str; 2] = ["sleep", "1000.6403"];

/// Pids of the processes whose command line is exactly `argv`.
fn pids_running(argv: &[&str]) -> Vec<i32> {
    let wanted = argv.join("\0") + "\0";
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(Result::ok)
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            (cmdline == wanted.as_bytes()).then_some(pid)
        })
        .collect()
}

/// What `agent-runner <command> <args>` run as [`RUNNER_UID`] in `dir` printed; the
/// command (`run`, `exec`) is given `--allow-unpinned --no-publish --out dir/runs` first.
/// Once the run's [`FIRST_COMMAND`] runs in its sandbox, `count` processes of the
/// runner's user are started in the runner's own user namespace and the command is
/// killed: the run goes on starved.
fn starved_runner(command: &str, args: &[&OsStr], dir: &Path, count: usize) -> Output {
    let mut runner = as_runner_user()
        .args([RUNNER, command, "--allow-unpinned", "--no-publish"])
        .arg("--out")
        .arg(dir.join("runs"))
        .args(args)
        .env("HOME", dir)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run agent-runner");
    let deadline = Instant::now() + Duration::from_secs(60);
    let first = loop {
        if let Some(&pid) = pids_running(&FIRST_COMMAND).first() {
            break pid;
        }
        if Instant::now() >= deadline || runner.try_wait().is_ok_and(|s| s.is_some()) {
            let _ = runner.kill();
            let out = runner.wait_with_output().expect("agent-runner output");
            panic!(
                "the first command never ran (no sandbox at all?): {}",
                stderr_of(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _holders = Holders::start(in_user_namespace_of(runner.id()), count, "1000.6404");
    nix::sys::signal::kill(Pid::from_raw(first), Signal::SIGKILL).expect("kill the sleep");
    runner.wait_with_output().expect("agent-runner output")
}

/// The run in `dir/runs` is no result: `exit_environment`, nothing judged, and a
/// `failure` of category `environment`; and the runner exited 8 (its only run was no
/// result; 7 when only some runs lack their sandbox) saying why.
fn assert_no_result(out: &Output, dir: &Path) {
    let stderr = stderr_of(out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(8), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("Creating new namespace failed"),
        "the runner does not say why: {stderr}"
    );
    assert!(stdout.contains("no result"), "{stdout}");
    let run_dir = only_run_dir(&dir.join("runs"));
    let result = &summary(&run_dir)["result"];
    assert_eq!(result["exit_status"], "exit_environment", "{result}");
    for unknown in ["success", "final_score", "tests_passed", "tests_failed"] {
        assert!(result[unknown].is_null(), "{unknown} is not null: {result}");
    }
    let events = journal_events(&run_dir);
    let stop = events
        .iter()
        .find_map(|e| match &e.payload {
            Payload::RunStop(stop) => Some(stop),
            _ => None,
        })
        .expect("run_stop");
    assert_eq!(stop.exit_status, ExitStatus::ExitEnvironment);
    assert_eq!(stop.success, None);
    let environment = events.iter().any(|e| {
        matches!(&e.payload, Payload::Failure(f) if f.final_error_state.error_category == "environment")
    });
    assert!(environment, "no failure says the environment failed");

    // The record says what held for this runner: its own uid outside, and, with no cgroup
    // the user may create (the host's hierarchies are root's), the process limit by
    // RLIMIT_NPROC, the fallback; no workspace file system (mounting one needs root).
    let sandbox = match &events[0].payload {
        Payload::RunStart(start) => start.sandbox.as_ref().expect("run_start.sandbox"),
        other => panic!("the first event is not run_start: {other:?}"),
    };
    assert_eq!(sandbox.uid_outside, Some(RUNNER_UID));
    assert_eq!(sandbox.uid_inside, Some(65534));
    assert_eq!(
        sandbox.pids_limit,
        Some(PidsLimit::Rlimit),
        "this host delegates a pids cgroup to an unprivileged user: {sandbox:?}"
    );
    let by = |limit: &str| -> Vec<&str> {
        sandbox
            .enforced
            .iter()
            .filter(|l| l.limit == limit)
            .map(|l| l.by.as_str())
            .collect()
    };
    assert_eq!(by("processes"), ["rlimit"], "{:?}", sandbox.enforced);
    // Its own mount namespace lets it bound the workspace all the same.
    assert_eq!(by("workspace_bytes"), ["tmpfs"], "{:?}", sandbox.enforced);
}

/// A directory [`RUNNER_UID`] owns.
fn runner_user_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    chown(
        dir.path(),
        Some(Uid::from_raw(RUNNER_UID)),
        Some(Gid::from_raw(RUNNER_UID)),
    )
    .expect("chown");
    dir
}

#[test]
fn a_run_starved_of_processes_is_no_result_and_the_runner_says_why() {
    assert!(geteuid().is_root(), "this test runs as root, as CI does");
    // Processes of the runner's user outside the runner, more than a sandbox may have
    // (256): the runner counts its own in its user namespace, so its first command still
    // gets a sandbox (the runs below would not start otherwise).
    let _outside = Holders::start(as_runner_user(), 300, "1000.6402");
    // Then as many inside the runner's namespace (another run's agent of the same
    // runner): no further sandbox can be created, for a tool call, for the judge of a run
    // or for the judge of an exec agent.
    for scenario in ["hostile-starved", "hostile-starved-judge"] {
        let dir = runner_user_dir();
        let scenario = fixture_scenario(scenario);
        let out = starved_runner(
            "run",
            &[OsStr::new("--no-progress"), scenario.as_os_str()],
            dir.path(),
            300,
        );
        assert_no_result(&out, dir.path());
    }
    let dir = runner_user_dir();
    let scenario = fixture_scenario("hostile-starved");
    let mut args = vec![
        OsStr::new("--task"),
        OsStr::new("sh-ci-exit-status"),
        OsStr::new("--scenario"),
        scenario.as_os_str(),
        OsStr::new("--"),
    ];
    args.extend(FIRST_COMMAND.map(OsStr::new));
    let out = starved_runner("exec", &args, dir.path(), 300);
    assert_no_result(&out, dir.path());
}

/// An `exec` agent under the test scenario `scenario` running `script` (bash), through
/// the runner binary, artifacts under `dir/runs`; what the runner printed.
fn exec_agent(scenario: &str, script: &str, dir: &Path) -> Output {
    exec_agent_as(Runner::Root, scenario, script, dir)
}

/// Who starts the runner.
#[derive(Debug, Clone, Copy)]
enum Runner {
    /// root, as CI does.
    Root,
    /// [`RUNNER_UID`], no capabilities (its `dir` must be [`runner_user_dir`]).
    Unprivileged,
}

/// [`exec_agent`] with the runner started by `who`.
fn exec_agent_as(who: Runner, scenario: &str, script: &str, dir: &Path) -> Output {
    exec_command(who, scenario, script, dir)
        .stdin(Stdio::null())
        .output()
        .expect("run agent-runner exec")
}

/// The command line of [`exec_agent_as`], not yet started.
fn exec_command(who: Runner, scenario: &str, script: &str, dir: &Path) -> Command {
    let mut command = match who {
        Runner::Root => Command::new(RUNNER),
        Runner::Unprivileged => {
            let mut command = as_runner_user();
            command.arg(RUNNER);
            command
        }
    };
    command
        .args([
            "exec",
            "--allow-unpinned",
            "--no-publish",
            "--task",
            "sh-ci-exit-status",
        ])
        .arg("--scenario")
        .arg(fixture_scenario(scenario))
        .arg("--out")
        .arg(dir.join("runs"))
        .args([OsStr::new("--"), OsStr::new("bash"), OsStr::new("-c")])
        .arg(script)
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info");
    command
}

/// A directory for a runner started by `who`.
fn dir_for(who: Runner) -> tempfile::TempDir {
    match who {
        Runner::Root => tempfile::tempdir().expect("dir"),
        Runner::Unprivileged => runner_user_dir(),
    }
}

/// Bytes that change what a terminal shows: C0 controls other than newline, DEL, and C1
/// controls (UTF-8 `c2 80`-`c2 9f`).
fn raw_controls(bytes: &[u8]) -> Vec<(usize, u8)> {
    let mut found: Vec<(usize, u8)> = bytes
        .iter()
        .enumerate()
        .filter(|(_, &b)| (b < 0x20 && b != b'\n') || b == 0x7f)
        .map(|(i, &b)| (i, b))
        .collect();
    found.extend(
        bytes
            .windows(2)
            .enumerate()
            .filter(|(_, w)| w[0] == 0xc2 && (0x80..=0x9f).contains(&w[1]))
            .map(|(i, w)| (i, w[1])),
    );
    found
}

#[test]
fn an_exec_agents_escape_bytes_and_floods_reach_the_log_escaped_and_bounded() {
    let dir = tempfile::tempdir().expect("dir");
    // OSC 52 (clipboard write), clear screen, CSI as C1, a forged log line; on stderr, in
    // a protected file's name (the judge restores `tests/` and names what it removed), in
    // a malformed line; then 100,000 lines of stderr and a million malformed lines.
    let script = r#"
        printf 'evil \033]52;c;aGFjaw==\a \033[2J\302\233 31m\nFAKE  INFO forged line\n' >&2
        touch "tests/name-$(printf '\033[2J\033]52;c;aGk=\a').sh"
        printf '{"type": "\033[2J\033]0;title\a"}\n'
        yes 'stderr flood' | head -n 100000 >&2
        yes x | head -n 1000000
        exit 0
    "#;
    let out = exec_agent("hostile-flood", script, dir.path());
    let stderr = stderr_of(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");

    assert_eq!(
        raw_controls(&out.stderr),
        Vec::new(),
        "raw control bytes reached the log"
    );
    assert!(
        stderr.contains(r"evil \u{1b}]52;c;aGFjaw==\u{7}"),
        "the agent's stderr is not shown escaped: {}",
        &stderr[..stderr.len().min(4000)]
    );
    assert!(
        !stderr.lines().any(|l| l.starts_with("FAKE")),
        "a forged line reached the log"
    );
    assert!(
        stderr.contains(r"name-\u{1b}[2J\u{1b}]52;c;aGk=\u{7}.sh"),
        "the restored file's name is not shown escaped"
    );
    // 200 stderr lines, 20 skipped lines and a few counts, not a million lines.
    let lines = stderr.lines().count();
    assert!(lines < 400, "{lines} lines of log");
    assert!(
        stderr.contains("agent lines skipped in all") && stderr.contains("skipped=1000001"),
        "no count of the skipped lines"
    );
    assert!(
        stderr.contains("agent stderr: lines not shown in all"),
        "no count of the stderr lines not shown"
    );
    assert!(
        stdout.contains("1000001 of 1000001 agent lines skipped"),
        "{stdout}"
    );
    // The run itself is a result: the agent exited 0 and was judged.
    let result = &summary(&only_run_dir(&dir.path().join("runs")))["result"];
    assert_eq!(result["exit_status"], "submitted", "{result}");
}

/// `command` run to its end, and the peak resident memory of the largest process of its
/// own tree, in bytes: measured by a `python3` parent that starts it and reads
/// `getrusage(RUSAGE_CHILDREN)`, so other tests' processes running beside it do not count.
fn peak_rss_of(command: &Command) -> (Output, u64) {
    let out = Command::new("python3")
        .arg("-c")
        .arg(
            "import resource, subprocess, sys\n\
             done = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, capture_output=True)\n\
             sys.stdout.buffer.write(done.stdout)\n\
             sys.stderr.buffer.write(done.stderr)\n\
             sys.stderr.write('\\npeak-kib %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
             sys.exit(done.returncode)\n",
        )
        .arg(command.get_program())
        .args(command.get_args())
        .envs(command.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdin(Stdio::null())
        .output()
        .expect("run under python3");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let kib: u64 = stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("peak-kib ")?.trim().parse().ok())
        .expect("the peak");
    (out, kib * 1024)
}

#[test]
fn huge_sparse_files_left_by_the_agent_do_not_grow_the_runners_memory() {
    let dir = tempfile::tempdir().expect("dir");
    // 3000 MB that take no disk: two new files and one over the protected test, which the
    // judge restores (and must compare without reading it whole).
    let script = "truncate -s 1000M big1.bin big2.bin tests/test_ci.sh && exit 0; exit 9";
    let command = exec_command(Runner::Root, "hostile-sparse", script, dir.path());
    let (out, peak) = peak_rss_of(&command);
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    println!("peak RSS of the runner's process tree: {} MiB", peak >> 20);
    assert!(
        peak < 256 << 20,
        "the runner held {} MiB: it read a sparse file whole",
        peak >> 20
    );
    let run_dir = only_run_dir(&dir.path().join("runs"));
    let result = &summary(&run_dir)["result"];
    assert_eq!(result["exit_status"], "submitted", "{result}");
    // Over the per-file cap: named, left out of the diff, so no path is modified by it.
    assert_eq!(result["files_modified"], 0, "{result}");
    let excluded = result["integrity"]["diff_excluded"].to_string();
    for path in ["big1.bin", "big2.bin", "tests/test_ci.sh"] {
        assert!(
            excluded.contains(&format!(
                "{path} (1048576000 bytes, over the 1048576-byte file cap)"
            )),
            "{excluded}"
        );
    }
    // The judged copy holds the fixture's test: the submission left the sparse one out.
    let restored = summary(&run_dir)["protected_restored"].clone();
    assert!(
        !restored.to_string().contains("tests/test_ci.sh"),
        "{restored}"
    );
}

/// Whether a run is a result is read from bwrap, never from what the agent prints: an
/// agent that imitates bwrap's failure cannot make its run no result (and so leave the
/// success rate).
#[test]
fn an_agent_imitating_a_sandbox_failure_is_still_judged() {
    let dir = tempfile::tempdir().expect("dir");
    let script =
        "echo 'bwrap: Creating new namespace failed: Resource temporarily unavailable' >&2; exit 1";
    let out = exec_agent("hostile-flood", script, dir.path());
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let result = &summary(&only_run_dir(&dir.path().join("runs")))["result"];
    assert_eq!(result["exit_status"], "exit_error", "{result}");
    assert_eq!(result["success"], false, "{result}");
    assert!(result["final_score"].is_number(), "not judged: {result}");
}

/// A run's scratch directory is `0700`: no other user of the host (another run's agent
/// under another uid) can list or read it.
#[test]
fn the_scratch_directory_is_private() {
    let dir = tempfile::tempdir().expect("dir");
    let script = r#"mode=$(stat -c %a "$BENCH_WORKDIR"); [ "$mode" = 700 ] && exit 0; echo "mode $mode" >&2; exit 9"#;
    let out = exec_agent("hostile-flood", script, dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("agent exit 0"),
        "{stdout}\n{}",
        stderr_of(&out)
    );
}

/// The tmpfs mounted on a workspace under `scratch` in `mountinfo` (a `/proc/*/mountinfo`):
/// its mount point.
fn workspace_mount(mountinfo: &str, scratch: &Path) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        // `ID PARENT DEV ROOT MOUNT_POINT OPTIONS... - FSTYPE SOURCE SUPER_OPTIONS`
        let (mount, fs) = line.split_once(" - ")?;
        let point = Path::new(mount.split(' ').nth(4)?);
        let mut fs = fs.split(' ');
        let (fstype, source) = (fs.next()?, fs.next()?);
        (fstype == "tmpfs" && source == "bench-workspace" && point.starts_with(scratch))
            .then(|| point.to_path_buf())
    })
}

/// A child SIGKILLed and reaped on drop: a runner a failed assertion leaves running.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A root runner killed with SIGKILL mid-run cannot unmount its workspace: the tmpfs must
/// exist in the runner's own mount namespace only, so that it goes with the runner.
#[test]
fn a_root_runner_killed_mid_run_leaves_no_workspace_mounted_on_the_host() {
    assert!(geteuid().is_root(), "this test runs as root, as CI does");
    // The runner's temp dir: its scratch copies are made here.
    let scratch = tempfile::tempdir().expect("scratch");
    let scratch = scratch.path().canonicalize().expect("canonical");
    let dir = tempfile::tempdir().expect("dir");
    let runner = Command::new(RUNNER)
        .args([
            "exec",
            "--allow-unpinned",
            "--no-publish",
            "--task",
            "sh-ci-exit-status",
        ])
        .arg("--scenario")
        .arg(fixture_scenario("hostile-disk"))
        .arg("--out")
        .arg(dir.path().join("runs"))
        .args(["--", "bash", "-c", "echo x > started; exec sleep 1000.6441"])
        .env("TMPDIR", &scratch)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start agent-runner exec");
    let mut runner = Killed(runner);
    let pid = runner.0.id();

    // The agent has written to its workspace, seen from inside the runner's namespace.
    let deadline = Instant::now() + Duration::from_secs(60);
    let workspace = loop {
        let mounts = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap_or_default();
        if let Some(point) = workspace_mount(&mounts, &scratch) {
            let started = Path::new(&format!("/proc/{pid}/root"))
                .join(point.strip_prefix("/").expect("absolute").join("started"));
            if started.exists() {
                break point;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the agent never wrote to a workspace tmpfs of the runner's"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let host = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    assert_eq!(
        workspace_mount(&host, &scratch),
        None,
        "the workspace is mounted in the host's mount namespace"
    );

    runner.0.kill().expect("SIGKILL");
    runner.0.wait().expect("reap");
    // bwrap dies with the runner (`--die-with-parent`), and the agent with its pid namespace.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with("sleep 1000.6441").is_empty() {
        assert!(Instant::now() < deadline, "the agent outlived its runner");
        std::thread::sleep(Duration::from_millis(50));
    }
    let host = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    assert_eq!(workspace_mount(&host, &scratch), None);
    assert!(
        !host.contains(scratch.to_str().expect("utf-8")),
        "a mount under the runner's temp dir outlived it:\n{host}"
    );
    // What is left on the host is the empty directory the tmpfs was mounted on.
    let left = std::fs::read_dir(&workspace)
        .expect("the scratch directory")
        .count();
    assert_eq!(left, 0, "{} holds files on the host", workspace.display());
}

/// The events an exec agent may report are its own: a `task_validation` (which could
/// break or un-break a task for every policy), a `test_outcome` beside the judge's, a
/// `run_start` and an `optimizer_update` are refused, counted in
/// `integrity.forged_events` and never recorded, whoever starts the runner.
#[test]
fn an_exec_agent_cannot_pass_off_other_producers_events() {
    let fixture = "0".repeat(64);
    let script = format!(
        r#"
        echo '{{"type":"task_validation","data":{{"scenario":"x","task_sha256":"{fixture}","fixture_sha256":"{fixture}","repeats":1,"broken":true,"reasons":[],"tests":1,"flaky_tests":[]}}}}'
        echo '{{"type":"test_outcome","data":{{"test_id":"t","test_set":"fail_to_pass","before":false,"after":true}}}}'
        echo '{{"type":"run_start","data":{{}}}}'
        echo '{{"type":"optimizer_update","data":{{}}}}'
        echo '{{"type":"step","step":1,"data":{{"step_type":"act","content":"ls","tokens_in":null,"tokens_out":null,"wall_time_ms":null,"planned_step":null,"context_kb":null}}}}'
        exit 0
        "#
    );
    for who in [Runner::Root, Runner::Unprivileged] {
        let dir = dir_for(who);
        let out = exec_agent_as(who, "hostile-flood", &script, dir.path());
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(0), "{who:?}: {stderr}");
        for kind in [
            "task_validation",
            "test_outcome",
            "run_start",
            "optimizer_update",
        ] {
            assert!(
                stderr.contains(&format!("type={kind}")),
                "{who:?}: no warning names {kind}: {stderr}"
            );
        }
        let run_dir = only_run_dir(&dir.path().join("runs"));
        let events = journal_events(&run_dir);
        let forged: Vec<&str> = events
            .iter()
            .map(|e| e.payload.event_type().as_str())
            .filter(|t| matches!(*t, "task_validation" | "test_outcome" | "optimizer_update"))
            .collect();
        assert_eq!(forged, Vec::<&str>::new(), "{who:?}");
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e.payload, Payload::RunStart(_)))
                .count(),
            1,
            "{who:?}: only the runner's run_start"
        );
        assert!(
            events.iter().any(|e| matches!(e.payload, Payload::Step(_))),
            "{who:?}: the agent's own step is kept"
        );
        let result = &summary(&run_dir)["result"];
        assert_eq!(result["integrity"]["forged_events"], 4, "{who:?}: {result}");
    }
}

/// What an agent leaves that costs it nothing but would cost the host dearly to diff
/// (a sparse 1 GiB file hard-linked eight times, a file over the per-file cap, a fifo)
/// is left out of the submission, named with why, and never read: the runner's memory
/// stays small and the diff holds only the small change.
#[test]
fn hard_links_oversized_and_special_files_are_left_out_of_the_submission() {
    let script = "truncate -s 1G sparse.bin && for i in 1 2 3 4 5 6 7 8; do ln sparse.bin link$i.bin; done \
                  && head -c 2097152 /dev/zero > large.bin && mkfifo pipe && echo small > note.txt && exit 0; exit 9";
    for who in [Runner::Root, Runner::Unprivileged] {
        let dir = dir_for(who);
        let out = exec_agent_as(who, "hostile-sparse", script, dir.path());
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(0), "{who:?}: {stderr}");
        let run_dir = only_run_dir(&dir.path().join("runs"));
        let result = &summary(&run_dir)["result"];
        assert_eq!(result["exit_status"], "submitted", "{who:?}: {result}");
        let excluded: Vec<String> =
            serde_json::from_value(result["integrity"]["diff_excluded"].clone()).expect("list");
        let mut expected = vec![
            "large.bin (2097152 bytes, over the 1048576-byte file cap)".to_owned(),
            "pipe (a fifo, not a file)".to_owned(),
        ];
        expected.extend((1..=8).map(|i| format!("link{i}.bin (9 hard links)")));
        expected.push("sparse.bin (9 hard links)".to_owned());
        expected.sort();
        assert_eq!(excluded, expected, "{who:?}");
        let diff = std::fs::read_to_string(run_dir.join("final.diff")).expect("final.diff");
        assert!(
            diff.contains("b/note.txt") && diff.contains("+small"),
            "{who:?}: {diff}"
        );
        assert!(
            !diff.contains("sparse.bin") && !diff.contains("large.bin"),
            "{who:?}: {diff}"
        );
        assert_eq!(
            result["files_modified"], 1,
            "{who:?}: the diff and files_modified agree"
        );
    }
}

/// A descriptor the runner was started with (a secret file opened for reading, a host
/// log opened for appending: `flock 9`, socket activation and CI pipes do this) is open
/// in no agent: reading and writing it from the sandbox fail, whoever starts the runner.
#[test]
fn descriptors_the_runner_inherited_never_reach_the_agent() {
    let script =
        "(cat <&42) > read-through-42.txt 2>&1; echo pwned >&43; ls -l /proc/self/fd > fds.txt; exit 0";
    for who in [Runner::Root, Runner::Unprivileged] {
        let dir = dir_for(who);
        let secret = dir.path().join("secret");
        let log = dir.path().join("host.log");
        std::fs::write(&secret, "the operator's secret\n").expect("write");
        std::fs::write(&log, "").expect("write");
        for path in [&secret, &log] {
            chown(
                path,
                Some(Uid::from_raw(RUNNER_UID)),
                Some(Gid::from_raw(RUNNER_UID)),
            )
            .expect("chown");
        }
        let runner = exec_command(who, "hostile-flood", script, dir.path());
        // The runner's parent opens 42 and 43 and starts it with them (as a shell does).
        let mut command = Command::new("bash");
        command
            .arg("-c")
            .arg(r#"exec 42<"$1" 43>>"$2"; shift 2; exec "$@""#)
            .arg("bash")
            .arg(&secret)
            .arg(&log)
            .arg(runner.get_program())
            .args(runner.get_args())
            .envs(runner.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .stdin(Stdio::null());
        let out = command.output().expect("run");
        assert_eq!(out.status.code(), Some(0), "{who:?}: {}", stderr_of(&out));
        assert_eq!(
            std::fs::read_to_string(&log).expect("log"),
            "",
            "{who:?}: the agent wrote to the host's log"
        );
        let run_dir = only_run_dir(&dir.path().join("runs"));
        let diff = std::fs::read_to_string(run_dir.join("final.diff")).expect("final.diff");
        assert!(diff.contains("b/read-through-42.txt"), "{who:?}: {diff}");
        assert!(
            !diff.contains("secret"),
            "{who:?}: the agent read the runner's descriptor: {diff}"
        );
        assert!(
            !diff.contains(" 42 ->") && !diff.contains(" 43 ->"),
            "{who:?}: {diff}"
        );
    }
}
