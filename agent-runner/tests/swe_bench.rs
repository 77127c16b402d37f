//! SWE-bench-format tasks as a user meets them: `agent-runner tasks import swe-bench` on a
//! git repository made here, whose history goes on past the base with the fix, a tag and
//! a remote; the fixture then holds the base and nothing later (`git log --all`, `git
//! fsck --lost-found`, `.git/packed-refs`, the fix's objects), the import reports one line
//! per instance and fails when one fails; and `run` judges by SWE-bench's rules: the gold
//! patch resolves the task, an empty submission does not, and editing the test file
//! `test_patch` touches gains nothing.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use benchstream_tests::runs;

const RUNNER: &str = env!("CARGO_BIN_EXE_agent-runner");

/// `git <args>` in `dir` with the host's configuration ignored; its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "dev")
        .env("GIT_AUTHOR_EMAIL", "dev@example.org")
        .env("GIT_COMMITTER_NAME", "dev")
        .env("GIT_COMMITTER_EMAIL", "dev@example.org")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("mkdir");
    }
    fs::write(path, text).expect("write");
}

const BUGGY: &str = "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n";
const FIXED: &str = "def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n";
const TESTS_BASE: &str =
    "from calc import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n";
const TESTS_FIX: &str = "from calc import add, neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";

/// A project `o/calc` with a buggy base commit, then the fix with its regression test,
/// a tag on it and a remote: `(clones dir, base commit, fix commit, gold patch, test
/// patch)`.
fn project(root: &Path) -> (PathBuf, String, String, String, String) {
    let repos = root.join("repos");
    let clone = repos.join("o__calc");
    fs::create_dir_all(&clone).expect("mkdir");
    git(&clone, &["init", "-q", "-b", "main"]);
    write(&clone.join("calc.py"), BUGGY);
    write(&clone.join("tests/test_calc.py"), TESTS_BASE);
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-qm", "calc"]);
    let base = git(&clone, &["rev-parse", "HEAD"]).trim().to_owned();
    write(&clone.join("calc.py"), FIXED);
    write(&clone.join("tests/test_calc.py"), TESTS_FIX);
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-qm", "fix add (the answer)"]);
    let fix = git(&clone, &["rev-parse", "HEAD"]).trim().to_owned();
    git(&clone, &["tag", "v1.1"]);
    git(&clone, &["remote", "add", "origin", "https://example.org/o/calc.git"]);
    git(&clone, &["pack-refs", "--all"]);
    let patch = git(&clone, &["diff", &base, &fix, "--", "calc.py"]);
    let test_patch = git(&clone, &["diff", &base, &fix, "--", "tests"]);
    (repos, base, fix, patch, test_patch)
}

/// The instance record as the published dataset writes it (lists as JSON strings).
fn instance(id: &str, base: &str, patch: &str, test_patch: &str) -> String {
    serde_json::json!({
        "instance_id": id,
        "repo": "o/calc",
        "base_commit": base,
        "problem_statement": "add() subtracts instead of adding.",
        "hints_text": "",
        "patch": patch,
        "test_patch": test_patch,
        "FAIL_TO_PASS": "[\"tests/test_calc.py::test_add\"]",
        "PASS_TO_PASS": "[\"tests/test_calc.py::test_neg\"]",
        "version": "1.0",
        "environment_setup_commit": base,
        "created_at": "2024-01-01T00:00:00Z",
    })
    .to_string()
}

fn runner(cwd: &Path, args: &[&str]) -> Output {
    Command::new(RUNNER)
        .current_dir(cwd)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run agent-runner")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Imports one good instance and one whose base commit the clone lacks.
fn import(root: &Path) -> (PathBuf, String, String) {
    let (repos, base, fix, patch, test_patch) = project(root);
    let instances = root.join("instances.jsonl");
    fs::write(
        &instances,
        format!(
            "{}\n{}\n",
            instance("o__calc-1", &base, &patch, &test_patch),
            instance("o__calc-2", &"0".repeat(40), &patch, &test_patch),
        ),
    )
    .expect("write");
    let scenarios = root.join("scenarios");
    let out = runner(
        root,
        &[
            "tasks",
            "import",
            "swe-bench",
            "--instances",
            instances.to_str().expect("utf-8"),
            "--repos",
            repos.to_str().expect("utf-8"),
            "--scenarios-dir",
            scenarios.to_str().expect("utf-8"),
            "--scenario",
            "swe-local",
        ],
    );
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "one instance failed: {report}");
    assert!(report.contains("imported o__calc-1: o/calc at"), "{report}");
    assert!(report.contains("failed o__calc-2: "), "{report}");
    assert!(report.contains("1 imported, 0 skipped, 1 failed"), "{report}");
    (scenarios, base, fix)
}

#[test]
fn an_imported_fixture_holds_the_base_and_no_later_history() {
    let root = tempfile::tempdir().expect("tempdir");
    let (scenarios, base, fix) = import(root.path());
    let fixture = scenarios.join("tasks/o__calc-1/fixture");
    assert_eq!(fs::read_to_string(fixture.join("calc.py")).expect("read"), BUGGY);
    assert_eq!(
        fs::read_to_string(fixture.join("tests/test_calc.py")).expect("read"),
        TESTS_BASE
    );
    // One commit, reachable from everything; its message names the base.
    let all = git(&fixture, &["log", "--all", "--format=%H %s"]);
    assert_eq!(all.lines().count(), 1, "{all}");
    assert!(all.contains(&format!("o/calc at {base}")), "{all}");
    assert_eq!(git(&fixture, &["rev-list", "--all", "--reflog"]).lines().count(), 1);
    let fsck = git(&fixture, &["fsck", "--lost-found", "--no-progress"]);
    assert!(!fsck.contains("dangling"), "{fsck}");
    assert!(!fixture.join(".git/lost-found/commit").exists());
    // No packed refs, tags, remotes, stash or reflog; the fix's objects are nowhere.
    assert!(!fixture.join(".git/packed-refs").exists());
    assert!(!fixture.join(".git/logs").exists());
    assert_eq!(git(&fixture, &["tag"]), "");
    assert_eq!(git(&fixture, &["remote"]), "");
    assert_eq!(git(&fixture, &["stash", "list"]), "");
    assert_eq!(git(&fixture, &["for-each-ref", "--format=%(refname)"]), "refs/heads/main\n");
    let probe = Command::new("git")
        .arg("-C")
        .arg(&fixture)
        .args(["cat-file", "-e", &fix])
        .output()
        .expect("git");
    assert!(!probe.status.success(), "the fix commit is in the fixture");
    let everything = fs::read_dir(fixture.join(".git/objects/pack"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(everything, 0, "packs in the fixture");
    // The answer key stays in task.toml, out of the fixture.
    let grep = Command::new("grep")
        .args(["-r", "-l", "a + b", "--exclude-dir=.git"])
        .arg(&fixture)
        .output()
        .expect("grep");
    assert_eq!(text(&grep.stdout), "");
    // The environment was made once, and the scenario is pinned.
    assert!(scenarios.join("envs/o__calc__1.0/bin/python").exists());
    let check = runner(
        root.path(),
        &["scenarios", "check", "--dir", scenarios.to_str().expect("utf-8")],
    );
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stdout));
}

/// Runs `scenario` of `scenarios` with the scripted policy; the run's summary.
fn run(root: &Path, scenarios: &Path, scenario: &str) -> serde_json::Value {
    let out_dir = root.join(format!("runs-{scenario}"));
    let out = runner(
        root,
        &[
            "run",
            scenario,
            "--scenarios-dir",
            scenarios.to_str().expect("utf-8"),
            "--no-publish",
            "--no-progress",
            "--out",
            out_dir.to_str().expect("utf-8"),
        ],
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    runs::summary(&runs::only_run_dir(&out_dir))
}

/// A copy of the imported scenario whose scripted policy does `actions` instead of the
/// gold patch, pinned.
fn variant(root: &Path, scenarios: &Path, name: &str, actions: &str) {
    let base = fs::read_to_string(scenarios.join("swe-local.toml")).expect("scenario");
    let text = base.replace("name = \"swe-local\"", &format!("name = \"{name}\""));
    fs::write(
        scenarios.join(format!("{name}.toml")),
        format!("{text}\n[scripted]\nactions = {actions}\n"),
    )
    .expect("write");
    let hash = runner(
        root,
        &["scenarios", "hash", "--dir", scenarios.to_str().expect("utf-8")],
    );
    assert_eq!(hash.status.code(), Some(0), "{}", text_of(&hash));
}

fn text_of(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

#[test]
fn the_gold_patch_resolves_and_neither_nothing_nor_editing_the_tests_does() {
    let root = tempfile::tempdir().expect("tempdir");
    let (scenarios, _, _) = import(root.path());

    let gold = run(root.path(), &scenarios, "swe-local");
    assert_eq!(gold["result"]["success"], true, "{gold:#}");
    assert_eq!(gold["result"]["tests_passed"], 2, "{gold:#}");
    assert_eq!(gold["result"]["final_score"], 1.0, "{gold:#}");

    variant(root.path(), &scenarios, "swe-nothing", "[{ tool = \"submit\" }]");
    let nothing = run(root.path(), &scenarios, "swe-nothing");
    assert_eq!(nothing["result"]["success"], false, "{nothing:#}");
    assert_eq!(nothing["result"]["tests_passed"], 1, "{nothing:#}");
    assert_eq!(
        nothing["result"]["failing_tests"],
        serde_json::json!(["tests/test_calc.py::test_add"]),
        "{nothing:#}"
    );

    // Replaces the test file by one whose tests all pass on the buggy code.
    let cheat = "[{ tool = \"write_file\", path = \"tests/test_calc.py\", content = \"def test_add():\\n    pass\\n\\n\\ndef test_neg():\\n    pass\\n\" }, { tool = \"submit\" }]";
    variant(root.path(), &scenarios, "swe-cheat", cheat);
    let cheated = run(root.path(), &scenarios, "swe-cheat");
    assert_eq!(cheated["result"]["success"], false, "{cheated:#}");
    assert_eq!(cheated["result"]["tests_passed"], 1, "{cheated:#}");
    assert_eq!(
        cheated["protected_restored"],
        serde_json::json!(["tests/test_calc.py (modified)"]),
        "{cheated:#}"
    );
}
