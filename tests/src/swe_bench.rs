//! A SWE-bench-format project made on the spot, for the tests of `agent-runner tasks import
//! swe-bench` and of judging by SWE-bench's rules: a git repository `o/calc` whose base
//! commit has a bug, followed by the fix with its regression test, a tag on the fix and a
//! remote (history an agent must not find), and the instance record naming it as the
//! published dataset writes one (`FAIL_TO_PASS`/`PASS_TO_PASS` as JSON strings).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `calc.py` at the base: `add` subtracts.
pub const BUGGY: &str = "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n";
/// `calc.py` after the fix.
pub const FIXED: &str = "def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n";
/// The test file at the base.
pub const TESTS_BASE: &str = "from calc import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n";
/// The test file after the fix: `test_add` is the regression test.
pub const TESTS_FIX: &str = "from calc import add, neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
/// The instance's `FAIL_TO_PASS` test.
pub const F2P: &str = "tests/test_calc.py::test_add";
/// The instance's `PASS_TO_PASS` test.
pub const P2P: &str = "tests/test_calc.py::test_neg";

/// The project, made by [`Project::create`].
#[derive(Debug, Clone)]
pub struct Project {
    /// The clones' directory (`--repos`), holding `o__calc`.
    pub repos: PathBuf,
    /// The base commit.
    pub base: String,
    /// The fix commit, later in the clone's history.
    pub fix: String,
    /// The gold patch (`calc.py`).
    pub patch: String,
    /// The test patch (`tests/`).
    pub test_patch: String,
}

/// `git <args>` in `dir` with the host's configuration ignored; its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
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

impl Project {
    /// Makes the clone `<root>/repos/o__calc`.
    pub fn create(root: &Path) -> Project {
        Project::create_with(root, TESTS_FIX)
    }

    /// [`Project::create`] whose fix commit writes `tests_fix` as the test file (what
    /// `test_patch` then holds).
    pub fn create_with(root: &Path, tests_fix: &str) -> Project {
        Project::create_from(
            root,
            &[("calc.py", BUGGY), ("tests/test_calc.py", TESTS_BASE)],
            &[("calc.py", FIXED), ("tests/test_calc.py", tests_fix)],
        )
    }

    /// The clone `<root>/repos/o__calc` whose base commit holds the files `base` and whose
    /// fix writes `fix`: `patch` is the fix's change of `calc.py`, `test_patch` its change
    /// under `tests/`.
    pub fn create_from(root: &Path, base: &[(&str, &str)], fix: &[(&str, &str)]) -> Project {
        let repos = root.join("repos");
        let clone = repos.join("o__calc");
        fs::create_dir_all(&clone).expect("mkdir");
        git(&clone, &["init", "-q", "-b", "main"]);
        for (path, text) in base {
            write(&clone.join(path), text);
        }
        git(&clone, &["add", "-A"]);
        git(&clone, &["commit", "-qm", "calc"]);
        let base = git(&clone, &["rev-parse", "HEAD"]).trim().to_owned();
        for (path, text) in fix {
            write(&clone.join(path), text);
        }
        git(&clone, &["add", "-A"]);
        git(&clone, &["commit", "-qm", "fix add (the answer)"]);
        let fix = git(&clone, &["rev-parse", "HEAD"]).trim().to_owned();
        git(&clone, &["tag", "v1.1"]);
        git(
            &clone,
            &["remote", "add", "origin", "https://example.org/o/calc.git"],
        );
        git(&clone, &["pack-refs", "--all"]);
        let patch = git(&clone, &["diff", &base, &fix, "--", "calc.py"]);
        let test_patch = git(&clone, &["diff", &base, &fix, "--", "tests"]);
        Project {
            repos,
            base,
            fix,
            patch,
            test_patch,
        }
    }

    /// The instance record `id` at `base_commit`, as one JSON line.
    pub fn instance(&self, id: &str, base_commit: &str) -> String {
        self.instance_with(id, base_commit, &[F2P], &[P2P], None)
    }

    /// [`Project::instance`] with these `FAIL_TO_PASS` and `PASS_TO_PASS` tests and, when
    /// given, its own `test_cmd`.
    pub fn instance_with(
        &self,
        id: &str,
        base_commit: &str,
        fail_to_pass: &[&str],
        pass_to_pass: &[&str],
        test_cmd: Option<&str>,
    ) -> String {
        let list = |tests: &[&str]| serde_json::to_string(tests).expect("json");
        let mut record = serde_json::json!({
            "instance_id": id,
            "repo": "o/calc",
            "base_commit": base_commit,
            "problem_statement": "add() subtracts instead of adding.",
            "hints_text": "",
            "patch": self.patch,
            "test_patch": self.test_patch,
            "FAIL_TO_PASS": list(fail_to_pass),
            "PASS_TO_PASS": list(pass_to_pass),
            "version": "1.0",
            "environment_setup_commit": base_commit,
            "created_at": "2024-01-01T00:00:00Z",
        });
        if let Some(cmd) = test_cmd {
            record["test_cmd"] = serde_json::Value::from(cmd);
        }
        record.to_string()
    }
}
