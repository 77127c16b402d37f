//! Pins: the shipped pins match the files, and a run refuses a tampered fixture.

use std::fs;
use std::path::Path;

use agent_runner::Exit;
use bench_task::{LoadOptions, LoadedScenario, Pins, ScenarioError};
use tokio_util::sync::CancellationToken;

use crate::common::{repo_path, runner_config};

const TASK: &str = "py-slugify-unicode";

#[test]
fn shipped_pins_match_the_files() {
    let dir = repo_path("scenarios");
    let pinned = Pins::load(&dir)
        .expect("read pins")
        .expect("scenarios/pins.toml exists");
    let actual = Pins::compute(&dir).expect("hash scenarios");
    assert_eq!(
        actual.changes_since(&pinned),
        Vec::<String>::new(),
        "scenarios/pins.toml is stale: run `cargo run -p agent-runner -- scenarios hash`"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from)
        .expect("read dir")
        .map(|e| e.expect("entry"))
    {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_fixture_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenarios = dir.path().join("scenarios");
    copy_dir(
        &repo_path("scenarios/tasks").join(TASK),
        &scenarios.join("tasks").join(TASK),
    );
    for file in ["smoke.toml", "pins.toml"] {
        fs::copy(repo_path("scenarios").join(file), scenarios.join(file)).expect("copy");
    }
    let options = LoadOptions {
        tasks: Some(vec![TASK.to_owned()]),
        allow_unpinned: false,
    };
    let smoke = scenarios.join("smoke.toml");
    LoadedScenario::load(&smoke, &options).expect("an untouched copy is accepted");

    let fixture_file = scenarios
        .join("tasks")
        .join(TASK)
        .join("fixture/slugify.py");
    let mut text = fs::read_to_string(&fixture_file).expect("read");
    text.push_str("\n# sneaky\n");
    fs::write(&fixture_file, text).expect("tamper");

    let err = LoadedScenario::load(&smoke, &options).expect_err("tampered fixture refused");
    assert!(matches!(err, ScenarioError::Pin(_)), "{err}");
    let message = err.to_string();
    assert!(
        message.contains(&format!("fixture of task {TASK}")),
        "{message}"
    );
    assert!(message.contains("--allow-unpinned"), "{message}");

    // Through the runner: nothing runs, and the CLI exit code is the pins one.
    let config = runner_config(
        smoke.clone(),
        Some(vec![TASK.to_owned()]),
        false,
        None,
        dir.path(),
    );
    let err = agent_runner::run(config, CancellationToken::new())
        .await
        .expect_err("refused");
    assert_eq!(err.exit(), Exit::Pins);
    assert!(!dir.path().join("runs").exists(), "no run started");

    // Explicitly allowed, it runs.
    let allowed = LoadOptions {
        allow_unpinned: true,
        ..options
    };
    LoadedScenario::load(&smoke, &allowed).expect("--allow-unpinned accepts it");
}
