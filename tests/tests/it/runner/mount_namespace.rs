//! The runner binary started as an unprivileged user (the systemd unit's `User=`), as
//! root starts it with `setpriv`: it enters a user and mount namespace of its own, mounts
//! each workspace's tmpfs there, and so bounds its agent's disk and files as a root runner
//! does; what reaches ClickHouse says which bound held. The root runner's side (its
//! workspace never mounted in the host's namespace, nothing left after SIGKILL) is in
//! `agent-runner/tests/hostile.rs`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use benchstream_tests::cli::{run_to_exit, workspace_binary};

use crate::common::{fixture_scenario, repo_path, start_pipeline};

/// The runner's uid and gid: `nobody`, an account that owns nothing of the host.
const RUNNER_UID: u32 = 65534;

/// `policy_id` of the run, to find it in ClickHouse.
const POLICY: &str = "exec:unprivileged-disk";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_unprivileged_runner_bounds_its_agents_disk_and_files_and_clickhouse_says_so() {
    let own_uid = std::fs::metadata("/proc/self").expect("/proc/self").uid();
    assert_eq!(own_uid, 0, "this test runs as root, as CI does");
    let (nats, sink) = start_pipeline().await;
    // The runner's journal and spool: a directory its user owns.
    let dir = tempfile::tempdir().expect("dir");
    std::os::unix::fs::chown(dir.path(), Some(RUNNER_UID), Some(RUNNER_UID)).expect("chown");
    let script = repo_path("tests/fixtures/runner/hostile-disk.sh")
        .canonicalize()
        .expect("hostile-disk.sh");
    let mut runner = Command::new("setpriv");
    runner
        .args([
            format!("--reuid={RUNNER_UID}"),
            format!("--regid={RUNNER_UID}"),
            "--clear-groups".to_owned(),
            "--".to_owned(),
        ])
        .arg(workspace_binary("agent-runner"))
        .args(["exec", "--allow-unpinned", "--task", "sh-ci-exit-status"])
        .args(["--policy-id", POLICY, "--nats-url", &nats.url()])
        .arg("--scenario")
        .arg(fixture_scenario("hostile-disk"))
        .arg("--out")
        .arg(dir.path().join("runs"))
        .arg("--spool")
        .arg(dir.path().join("spool/runner.spool"))
        .arg("--")
        .arg("bash")
        .arg(&script)
        .arg("16")
        // Nothing of root's home (toolchains, shims) is the runner user's.
        .env("HOME", dir.path())
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .current_dir(dir.path());
    let out = tokio::task::block_in_place(|| run_to_exit(&mut runner));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("(submitted)") && stdout.contains("agent exit 0"),
        "an attack succeeded: the agent's exit status is its number in hostile-disk.sh\n\
         {stdout}\n{stderr}"
    );
    // Journal and spool alike.
    assert_owned_by_runner(dir.path());

    // The record, as ClickHouse has it: the bwrap sandbox, the runner's own uid outside,
    // and both workspace bounds by tmpfs beside the /tmp bound.
    sink.wait_for(
        &format!(
            "SELECT sandbox_kind FROM benchstream.run_starts FINAL \
             WHERE policy_id = '{POLICY}' FORMAT TSV"
        ),
        "bwrap",
    )
    .await;
    let held = |limit: &str, value: u64| {
        format!("position(raw, '{{\"limit\":\"{limit}\",\"value\":{value},\"by\":\"tmpfs\"}}') > 0")
    };
    sink.wait_for(
        &format!(
            "SELECT count() FROM benchstream.events_raw FINAL \
             WHERE policy_id = '{POLICY}' AND type = 'run_start' \
             AND position(raw, '\"uid_outside\":{RUNNER_UID}') > 0 AND {} AND {} AND {}",
            held("workspace_bytes", 16 << 20),
            held("workspace_inodes", 4096),
            held("tmp_bytes", 16 << 20),
        ),
        "1",
    )
    .await;
    sink.wait_for(
        &format!(
            "SELECT exit_status FROM benchstream.run_stops FINAL \
             WHERE policy_id = '{POLICY}' FORMAT TSV"
        ),
        "submitted",
    )
    .await;
    sink.stop().await;
}

/// Everything under `dir` belongs to the runner's user on the host: its user namespace
/// maps it to itself.
fn assert_owned_by_runner(dir: &Path) {
    for entry in walk(dir) {
        let meta = std::fs::symlink_metadata(&entry).expect("stat");
        assert_eq!(
            (meta.uid(), meta.gid()),
            (RUNNER_UID, RUNNER_UID),
            "{} is not the runner's",
            entry.display()
        );
    }
}

/// `dir` and everything below it.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = vec![dir.to_path_buf()];
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}
