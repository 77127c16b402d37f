//! The SWE-bench flow as `scenarios/swe-pack/README.md` writes it, with the `agent-runner`
//! binary started in a directory of its own and every path relative to it, the scenarios
//! directory the default `scenarios`: import, `tasks validate`, `run`. Relative paths
//! hold inside the sandbox (the task's environment is mounted by its absolute path), and
//! a task that cannot be validated (its environment gone) is an environment error that
//! names its own environment, writes and publishes nothing and exits 7, never a broken
//! task.

use std::path::Path;
use std::process::{Command, Output};

use benchstream_tests::cli::{run_to_exit, workspace_binary};
use benchstream_tests::swe_bench::Project;
use benchstream_tests::NatsServer;

/// `agent-runner args` run in `dir`, logging plainly.
fn runner(dir: &Path, args: &[&str]) -> Output {
    run_to_exit(
        Command::new(workspace_binary("agent-runner"))
            .current_dir(dir)
            .args(args)
            .env("NO_COLOR", "1")
            .env_remove("BENCH_SCENARIOS_DIR")
            .env_remove("BENCH_NATS_URL"),
    )
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Imports two tasks of the project (versions 2.0 and 1.0: two environments), in that
/// order, into `<dir>/scenarios` with relative paths only.
fn import(dir: &Path) {
    let project = Project::create(dir);
    let instances = [("o__calc-2", "2.0"), ("o__calc-1", "1.0")]
        .map(|(id, version)| {
            let mut record: serde_json::Value =
                serde_json::from_str(&project.instance(id, &project.base)).expect("record");
            record["version"] = version.into();
            record.to_string()
        })
        .join("\n");
    std::fs::write(dir.join("instances.jsonl"), instances).expect("write");
    let out = runner(
        dir,
        &[
            "tasks",
            "import",
            "swe-bench",
            "--instances",
            "instances.jsonl",
            "--repos",
            "repos",
            "--scenario",
            "swe-local",
            "--test-cmd",
            "python -m pytest -rA",
        ],
    );
    assert!(
        out.status.success(),
        "import: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn validate_and_run_hold_with_the_default_relative_scenarios_dir() {
    let dir = tempfile::tempdir().expect("dir");
    import(dir.path());

    let out = runner(dir.path(), &["tasks", "validate", "swe-local"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    // One line per task, in the order of the scenario file (the instances file's), not
    // sorted.
    let lines: Vec<&str> = stdout.lines().take(2).collect();
    assert!(lines[0].starts_with("valid o__calc-2:"), "{stdout}");
    assert!(lines[1].starts_with("valid o__calc-1:"), "{stdout}");
    assert!(
        stdout.contains("2 tasks, 0 broken, 0 not validated"),
        "{stdout}"
    );

    // The scripted policy replays each gold patch: both solved, artifacts under the
    // default relative `.local/runs` of the directory the runner started in.
    let out = runner(
        dir.path(),
        &["run", "swe-local", "--no-publish", "--no-progress"],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert_eq!(stdout.matches(" solved ").count(), 2, "{stdout}");
    let runs = std::fs::read_dir(dir.path().join(".local/runs"))
        .expect("runs directory")
        .count();
    assert_eq!(runs, 2, "one artifact directory per run");
}

#[test]
fn a_task_whose_environment_is_gone_is_an_error_naming_it_not_a_broken_task() {
    let dir = tempfile::tempdir().expect("dir");
    import(dir.path());
    let gone = dir.path().join("scenarios/envs/o__calc__1.0");
    std::fs::remove_dir_all(&gone).expect("remove the environment");

    // Given a broker, as `compare` needs: only what was validated is published.
    let nats = NatsServer::start();
    let url = nats.url();
    let validate = [
        "tasks",
        "validate",
        "swe-local",
        "--create-stream",
        "--nats-url",
    ];
    let out = runner(dir.path(), &[&validate[..], &[url.as_str()]].concat());
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(7),
        "an environment error: {stdout}{}",
        text(&out.stderr)
    );
    let error = stdout
        .lines()
        .find(|l| l.starts_with("error o__calc-1:"))
        .unwrap_or_else(|| panic!("an error line for o__calc-1: {stdout}"));
    assert!(error.contains(&gone.display().to_string()), "{error}");
    assert!(
        !error.contains("o__calc__2.0"),
        "its own environment: {error}"
    );
    assert!(stdout.contains("valid o__calc-2:"), "{stdout}");
    assert!(
        stdout.contains("2 tasks, 0 broken, 1 not validated"),
        "{stdout}"
    );
    assert!(
        stdout.contains("task_validation events: delivery: 1 acked"),
        "one task_validation, the validated task's: {stdout}"
    );
    // Nothing written for the task that was not validated; the other one's result is.
    let tasks = dir.path().join("scenarios/tasks");
    assert!(!tasks.join("o__calc-1/validation.toml").exists());
    assert!(tasks.join("o__calc-2/validation.toml").exists());
}
