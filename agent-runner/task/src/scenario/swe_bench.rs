//! The `[swe_bench]` section of a task imported from a SWE-bench-format instance
//! (`agent-runner tasks import swe-bench`): the instance's fields as the dataset names them,
//! and what the judge derives from them (the files `test_patch` touches, the test files
//! to run). Such a task is judged by SWE-bench's rules instead of `[judge]`
//! (`bench-judge`). Format: `scenarios/README.md`, "SWE-bench-format tasks". No I/O.

use std::collections::BTreeSet;

use bench_schemas::TestSet;
use serde::{Deserialize, Serialize};

/// The test command when an instance and the import name none.
pub const DEFAULT_TEST_CMD: &str = "python -m pytest -rA";

/// `[swe_bench]` of `task.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweBench {
    /// The dataset's `instance_id` (`owner__name-1234`); also the task id.
    pub instance_id: String,
    /// `owner/name`.
    pub repo: String,
    /// The commit the fixture is the tree of.
    pub base_commit: String,
    /// The dataset's `version` of the repository, which keys its environment.
    #[serde(default)]
    pub version: Option<String>,
    /// The commit the environment was set up at, when the dataset names one.
    #[serde(default)]
    pub environment_setup_commit: Option<String>,
    /// The environment's directory under the scenarios directory's `envs/`, mounted
    /// read-only in the sandbox with its `bin/` first on `PATH`; `None`: the host's system
    /// Python only.
    #[serde(default)]
    pub environment: Option<String>,
    /// The test command: a pytest invocation (`python -m pytest -rA`), split on whitespace;
    /// the judge appends its report plugin, `--rootdir` and the test files.
    pub test_cmd: String,
    /// Time limit of one judging (the whole test run), ms.
    pub timeout_ms: u64,
    /// `FAIL_TO_PASS`: pytest node ids that fail at the base and pass with the fix.
    pub fail_to_pass: Vec<String>,
    /// `PASS_TO_PASS`: pytest node ids that pass at the base and with the fix.
    pub pass_to_pass: Vec<String>,
    /// The dataset's `hints_text`; kept, never shown to the agent.
    #[serde(default)]
    pub hints_text: String,
    /// The gold patch (`patch`), never shown to the agent.
    pub patch: String,
    /// The tests' patch (`test_patch`), applied by the judge after the agent.
    pub test_patch: String,
}

/// How a SWE-bench-format task's tests are run ([`SweBench::runner`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestRunner {
    /// `PYTHON -m pytest ARGS` (or `pytest ARGS`).
    Pytest {
        /// The interpreter.
        python: String,
        /// pytest's arguments before the test files.
        args: Vec<String>,
    },
    /// `PYTHON SCRIPT ARGS`: a unittest runner script of the repository (Django's
    /// `tests/runtests.py`), given the test modules ([`SweBench::script_labels`]).
    Script {
        /// The interpreter.
        python: String,
        /// The script, relative to the repository.
        script: String,
        /// Its arguments before the test modules.
        args: Vec<String>,
    },
}

impl SweBench {
    /// Every judged test with its set: `FAIL_TO_PASS` then `PASS_TO_PASS`, each once (a
    /// test in both counts as `FAIL_TO_PASS`).
    pub fn tests(&self) -> Vec<(&str, TestSet)> {
        let mut seen = BTreeSet::new();
        self.fail_to_pass
            .iter()
            .map(|t| (t.as_str(), TestSet::FailToPass))
            .chain(
                self.pass_to_pass
                    .iter()
                    .map(|t| (t.as_str(), TestSet::PassToPass)),
            )
            .filter(|(t, _)| seen.insert(*t))
            .collect()
    }

    /// The test files to run: the file part (before `::`) of every judged test, sorted.
    pub fn test_files(&self) -> Vec<String> {
        self.tests()
            .iter()
            .map(|(id, _)| id.split("::").next().unwrap_or(id).to_owned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// The test command's words.
    pub fn test_argv(&self) -> Vec<String> {
        self.test_cmd
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }

    /// How the tests run: pytest ([`SweBench::pytest`]), or a unittest runner script of
    /// the repository (`./tests/runtests.py ...`, `python tests/runtests.py ...`: Django),
    /// given SWE-bench's test ids `<method> (<module>.<Class>)`; `None` for anything else.
    pub fn runner(&self) -> Option<TestRunner> {
        if let Some((python, args)) = self.pytest() {
            return Some(TestRunner::Pytest { python, args });
        }
        let is_python = |p: &str| {
            std::path::Path::new(p)
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("python"))
        };
        let (python, script, args) = match self.test_argv().as_slice() {
            [python, script, rest @ ..] if is_python(python) && script.ends_with(".py") => {
                (python.clone(), script.clone(), rest.to_vec())
            }
            [script, rest @ ..] if script.ends_with(".py") => {
                ("python".to_owned(), script.clone(), rest.to_vec())
            }
            _ => return None,
        };
        let script = script.trim_start_matches("./").to_owned();
        let inside =
            !script.starts_with('/') && script.split('/').all(|c| c != ".." && !c.is_empty());
        inside.then_some(TestRunner::Script {
            python,
            script,
            args,
        })
    }

    /// What a runner script is given to run: the Python files `test_patch` touches under
    /// the script's directory, as dotted module names from there
    /// (`tests/admin_views/tests.py` → `admin_views.tests` for `tests/runtests.py`).
    pub fn script_labels(&self, script: &str) -> Vec<String> {
        let dir = match script.rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/"),
            None => String::new(),
        };
        patch_paths(&self.test_patch)
            .iter()
            .filter_map(|p| p.strip_prefix(&dir)?.strip_suffix(".py"))
            .map(|module| module.replace('/', "."))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// The interpreter and pytest's own arguments of the test command: `PY -m pytest ARGS`,
    /// or `pytest ARGS` with the environment's `python`; `None` when it runs no pytest. The
    /// judge runs pytest through an entry point of its own with them (`bench-judge`).
    pub fn pytest(&self) -> Option<(String, Vec<String>)> {
        match self.test_argv().as_slice() {
            [python, m, pytest, rest @ ..] if m == "-m" && pytest == "pytest" => {
                Some((python.clone(), rest.to_vec()))
            }
            [pytest, rest @ ..]
                if std::path::Path::new(pytest)
                    .file_name()
                    .is_some_and(|n| n == "pytest" || n == "py.test") =>
            {
                Some(("python".to_owned(), rest.to_vec()))
            }
            _ => None,
        }
    }

    /// What is wrong with this section, if anything.
    pub fn check(&self, task_id: &str) -> Result<(), String> {
        if self.instance_id != task_id {
            return Err(format!(
                "swe_bench.instance_id {:?} differs from the task id {task_id:?}",
                self.instance_id
            ));
        }
        if self.tests().is_empty() {
            return Err("swe_bench has no FAIL_TO_PASS or PASS_TO_PASS test".into());
        }
        if self.fail_to_pass.is_empty() {
            return Err("swe_bench.fail_to_pass is empty: nothing would show a fix".into());
        }
        if let Some(id) = self
            .tests()
            .iter()
            .map(|(id, _)| *id)
            .find(|id| id.is_empty() || id.contains(['\n', '\r']) || !relative(id))
        {
            return Err(format!(
                "swe_bench test {id:?} is not a node id inside the repository"
            ));
        }
        if self.runner().is_none() {
            return Err(format!(
                "swe_bench.test_cmd {:?} runs neither pytest nor a unittest runner script: it \
                 must be `python -m pytest ...`, `pytest ...` or a script of the repository \
                 (`./tests/runtests.py ...`)",
                self.test_cmd
            ));
        }
        if self.timeout_ms == 0 {
            return Err("swe_bench.timeout_ms must be > 0".into());
        }
        let touched = patch_paths(&self.test_patch);
        if touched.is_empty() {
            return Err("swe_bench.test_patch touches no file".into());
        }
        if let Some(path) = touched.iter().find(|p| !relative(p)) {
            return Err(format!(
                "swe_bench.test_patch touches {path:?}, outside the repository"
            ));
        }
        Ok(())
    }
}

/// Whether `path`'s file part is a relative path that stays inside the repository.
fn relative(id: &str) -> bool {
    let path = id.split("::").next().unwrap_or(id);
    !path.is_empty()
        && !path.starts_with('/')
        && path.split('/').all(|c| !c.is_empty() && c != "..")
}

/// The repository paths a unified diff touches (old and new names of `diff --git a/X b/Y`
/// headers, and `---`/`+++` names of plain diffs, without their `a/`/`b/` prefix and
/// without `/dev/null`), sorted, each once.
pub fn patch_paths(patch: &str) -> Vec<String> {
    let mut paths = BTreeSet::new();
    for line in patch.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            // `a/X b/Y`: paths with spaces are quoted by git; unquoted ones split at " b/".
            if let Some((a, b)) = rest.split_once(" b/") {
                paths.extend(a.strip_prefix("a/").map(str::to_owned));
                paths.insert(b.to_owned());
            }
        } else if let Some(name) = line
            .strip_prefix("--- ")
            .or_else(|| line.strip_prefix("+++ "))
        {
            // A timestamp may follow the name after a tab.
            let name = name.split('\t').next().unwrap_or(name).trim_end();
            if name != "/dev/null" {
                let name = name
                    .strip_prefix("a/")
                    .or_else(|| name.strip_prefix("b/"))
                    .unwrap_or(name);
                paths.insert(name.to_owned());
            }
        }
    }
    paths.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_names_every_file_it_touches_old_and_new() {
        let patch = "diff --git a/tests/test_a.py b/tests/test_a.py\n\
                     --- a/tests/test_a.py\n+++ b/tests/test_a.py\n@@ -1 +1 @@\n-x\n+y\n\
                     diff --git a/tests/new.py b/tests/new.py\nnew file mode 100644\n\
                     --- /dev/null\n+++ b/tests/new.py\n@@ -0,0 +1 @@\n+z\n\
                     diff --git a/old.py b/renamed.py\nsimilarity index 100%\n\
                     rename from old.py\nrename to renamed.py\n";
        assert_eq!(
            patch_paths(patch),
            ["old.py", "renamed.py", "tests/new.py", "tests/test_a.py"]
        );
    }

    #[test]
    fn tests_are_counted_once_and_run_by_file() {
        let swe = SweBench {
            instance_id: "o__n-1".into(),
            repo: "o/n".into(),
            base_commit: "c".into(),
            version: None,
            environment_setup_commit: None,
            environment: None,
            test_cmd: DEFAULT_TEST_CMD.into(),
            timeout_ms: 1,
            fail_to_pass: vec!["t/test_a.py::test_x[a b]".into()],
            pass_to_pass: vec!["t/test_a.py::test_y".into(), "t/test_b.py::T::z".into()],
            hints_text: String::new(),
            patch: String::new(),
            test_patch: "--- a/t/test_a.py\n+++ b/t/test_a.py\n".into(),
        };
        assert_eq!(swe.test_files(), ["t/test_a.py", "t/test_b.py"]);
        assert_eq!(
            swe.tests()[0],
            ("t/test_a.py::test_x[a b]", TestSet::FailToPass)
        );
        assert_eq!(swe.check("o__n-1"), Ok(()));
        let outside = SweBench {
            pass_to_pass: vec!["../x.py::t".into()],
            ..swe.clone()
        };
        assert!(outside.check("o__n-1").is_err());
        assert!(swe.check("other").is_err());
    }
}
