//! A benchmark task: `scenarios/tasks/<id>/task.toml` (problem, judge tests or a
//! SWE-bench instance, reference solution) plus the buggy project in `fixture/`. Format:
//! `scenarios/README.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bench_image::ImageRef;
use serde::Deserialize;

use super::error::ScenarioError;
use super::swe_bench::SweBench;
use crate::protected::Protected;
use crate::tool_request::ToolRequest;

/// Name of the task definition file inside a task directory.
pub const TASK_FILE: &str = "task.toml";
/// Name of the fixture directory inside a task directory.
pub const FIXTURE_DIR: &str = "fixture";

/// `task.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Task id; must equal the directory name.
    pub id: String,
    /// Language of the fixture project.
    pub language: Language,
    /// One-line title.
    pub title: String,
    /// The problem statement given to the agent.
    pub problem: String,
    /// How success is decided: the task's own judge tests. A task has this or
    /// `swe_bench`, never both.
    #[serde(default)]
    pub judge: Option<Judge>,
    /// A task imported from a SWE-bench-format instance, judged by SWE-bench's rules
    /// (`agent-runner tasks import swe-bench`).
    #[serde(default)]
    pub swe_bench: Option<SweBench>,
    /// The reference solution, in tool-call form (what the `scripted` policy replays).
    #[serde(default)]
    pub solution: Vec<ToolRequest>,
    /// How much of a run's workspace its submission may take (`[submission]`).
    #[serde(default)]
    pub submission: SubmissionLimits,
    /// The OCI image whose root file system the task's commands and judge run on
    /// (`[image]`); absent = the host's system directories, as for the shipped tasks.
    #[serde(default)]
    pub image: Option<TaskImage>,
}

/// `[image]` of `task.toml`: the task's environment as an OCI image. Its manifest digest
/// is pinned in `pins.toml`; the image is fetched, unpacked and cached by
/// [`bench_image::ImageStore`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskImage {
    /// `docker://REGISTRY/NAME:TAG`, `oci:DIR:TAG` or `docker-archive:FILE`; a relative
    /// `DIR` or `FILE` is relative to the scenarios directory.
    pub reference: ImageRef,
    /// Where the task's repository goes in the image (default: the image's
    /// `WorkingDir`, else `/testbed`).
    #[serde(default)]
    pub workdir: Option<String>,
    /// An environment prefix inside the image whose `bin/` goes first on `PATH`, as
    /// activating it would (SWE-bench images: `/opt/miniconda3/envs/testbed`).
    #[serde(default)]
    pub activate: Option<String>,
}

impl TaskImage {
    /// Paths inside the image are absolute and plain.
    fn check(&self) -> Result<(), String> {
        for (key, path) in [("workdir", &self.workdir), ("activate", &self.activate)] {
            if let Some(path) = path {
                let plain = Path::new(path)
                    .components()
                    .skip(1)
                    .all(|c| matches!(c, std::path::Component::Normal(_)));
                if !path.starts_with('/') || !plain || path.contains(':') {
                    return Err(format!(
                        "image.{key} {path:?} must be an absolute path inside the image, \
                         without `..` or `:`"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `[submission]` of `task.toml`: the bounds of the diff a run submits
/// (`bench-judge`). Every key is optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SubmissionLimits {
    /// The largest file a submission takes, bytes (default 1 MiB); a larger one is left
    /// out and named in `integrity.diff_excluded`.
    pub file_bytes: u64,
    /// The most bytes of changed files a submission takes in all (default 10 MiB).
    pub diff_bytes: u64,
    /// How long taking the submission may last, ms (default 30 000).
    pub timeout_ms: u64,
}

impl Default for SubmissionLimits {
    fn default() -> Self {
        SubmissionLimits {
            file_bytes: 1 << 20,
            diff_bytes: 10 << 20,
            timeout_ms: 30_000,
        }
    }
}

impl SubmissionLimits {
    /// [`Self::timeout_ms`] as a duration.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.timeout_ms)
    }
}

/// Languages tasks are written in (what a fresh worker host can run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    /// Python 3, judged with `unittest`.
    Python,
    /// Bash scripts, judged by a shell test script.
    Shell,
    /// Rust, judged by its libtest tests, built with cargo.
    Rust,
}

impl Language {
    /// Globs of the files this language's test runner or build reads as configuration,
    /// always pristine for the judge on top of the task's `[judge] protect` (agent-made
    /// ones are deleted before the final verdict): what would let code change how tests
    /// are found or run rather than what they test.
    pub fn runner_config_patterns(self) -> &'static [&'static str] {
        match self {
            Language::Python => &[
                "**/conftest.py",
                "**/sitecustomize.py",
                "**/usercustomize.py",
                "**/*.pth",
                "**/pytest.ini",
            ],
            Language::Rust => &[
                ".cargo",
                ".cargo/**",
                "rust-toolchain",
                "rust-toolchain.toml",
            ],
            Language::Shell => &[],
        }
    }
}

/// The judge: tests that fail on the fixture and pass after a correct fix, each decided
/// from the per-test report of a judge-owned runner (`bench-judge`), never from an exit
/// code of the code under test.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judge {
    /// Time limit of each test (and of the build, for `cargo`), ms.
    pub timeout_ms: u64,
    /// The test suite the tests belong to, by the task's language: Python, the test module
    /// file (`test_slugify.py`, run with `unittest`); Rust, the integration test target
    /// (`records` for `tests/records.rs`); shell, the test script (`tests/test_ci.sh`, run as
    /// `bash <script> <test>`). It is always mounted pristine for the judge.
    pub suite: String,
    /// The tests, each run separately in a fresh sandbox of its own.
    pub tests: Vec<JudgeTest>,
    /// Globs (relative to the fixture root) of the judge's own files: mounted read-only from
    /// the pristine fixture over the scratch copy while the judge runs, and before the final
    /// verdict restored in it, files the agent added that match being deleted
    /// (`bench-judge`). The runner's own configuration files of the language are always
    /// added ([`Language::runner_config_patterns`]). Default: none.
    #[serde(default)]
    pub protect: Vec<String>,
}

/// One judge test.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeTest {
    /// Reported in `run_stop.failing_tests`.
    pub name: String,
    /// The test in the suite: Python `Class.method` (absent: every test of the module, of
    /// which there must be at least one); Rust the exact libtest name (`round_trip`,
    /// `wrap::in_order`); shell the test name the script takes. Absent = `name` for Rust and
    /// shell.
    #[serde(default)]
    pub test: Option<String>,
    /// Environment variables of this test (`TZ = "IST-5:30"`), on top of the sandbox's.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

impl Judge {
    /// The fixture path of the suite file: the Python module or shell script as written,
    /// `tests/<target>.rs` for Rust.
    pub fn suite_file(&self, language: Language) -> String {
        match language {
            Language::Rust => format!("tests/{}.rs", self.suite),
            Language::Python | Language::Shell => self.suite.clone(),
        }
    }
}

/// Variables a judge test may not set: the sandbox's own.
const RESERVED_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "CARGO_HOME"];

/// Whether `id` can name a test in a report line: non-empty, no whitespace, no control
/// characters (report lines are `<outcome> <id>`).
fn valid_test_id(id: &str) -> bool {
    !id.is_empty() && !id.chars().any(|c| c.is_whitespace() || c.is_control())
}

impl Task {
    /// Parses and checks the text of `<dir>/task.toml`.
    pub fn parse(dir: &Path, text: &str) -> Result<Task, ScenarioError> {
        let path = dir.join(TASK_FILE);
        let task: Task = super::error::parse_toml(&path, text)?;
        let invalid = |reason: String| ScenarioError::Invalid {
            path: path.clone(),
            reason,
        };
        let dir_name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if task.id != dir_name {
            return Err(invalid(format!(
                "id {:?} differs from its directory name {dir_name:?}",
                task.id
            )));
        }
        match (&task.judge, &task.swe_bench) {
            (Some(judge), None) => {
                if judge.tests.is_empty() {
                    return Err(invalid("judge has no tests".into()));
                }
                if judge.timeout_ms == 0 {
                    return Err(invalid("judge.timeout_ms must be > 0".into()));
                }
                judge.check().map_err(invalid)?;
                Protected::new(&judge.protect)
                    .map_err(|e| invalid(format!("judge.protect: {e}")))?;
            }
            (None, Some(swe)) => swe.check(&task.id).map_err(invalid)?,
            _ => {
                return Err(invalid(
                    "a task has exactly one of [judge] and [swe_bench]".into(),
                ))
            }
        }
        if let Some(image) = &task.image {
            image.check().map_err(invalid)?;
        }
        for (i, step) in task.solution.iter().enumerate() {
            step.parse()
                .map_err(|e| invalid(format!("solution step {}: {e}", i + 1)))?;
        }
        if !dir.join(FIXTURE_DIR).is_dir() {
            return Err(invalid(format!("no {FIXTURE_DIR}/ directory beside it")));
        }
        Ok(task)
    }
}

impl Judge {
    /// The judge's names are unique and usable in reports, its suite a relative path
    /// inside the fixture, its environment free of the sandbox's own variables.
    fn check(&self) -> Result<(), String> {
        let judge = self;
        let suite = Path::new(&judge.suite);
        let inside = suite
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if judge.suite.is_empty() || !inside {
            return Err(format!(
                "judge.suite {:?} must be a relative path inside the fixture",
                judge.suite
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        for test in &judge.tests {
            if !names.insert(&test.name) {
                return Err(format!("judge test {:?} is named twice", test.name));
            }
            let id = test.test.as_deref().unwrap_or(&test.name);
            if !valid_test_id(&test.name) || !valid_test_id(id) {
                return Err(format!(
                    "judge test {:?}: names and tests must be non-empty, without whitespace",
                    test.name
                ));
            }
            if let Some(key) = test
                .env
                .keys()
                .find(|k| RESERVED_ENV.contains(&k.as_str()) || !valid_test_id(k))
            {
                return Err(format!(
                    "judge test {:?}: env {key:?} is the sandbox's own or not a name",
                    test.name
                ));
            }
        }
        Ok(())
    }
}

impl Task {
    /// The fixture directory of the task in `dir`.
    pub fn fixture_dir(dir: &Path) -> PathBuf {
        dir.join(FIXTURE_DIR)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `task.toml` text of task `t` with `judge` as its `[judge]` section.
    fn parse(judge: &str) -> Result<Task, String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let task_dir = dir.path().join("t");
        std::fs::create_dir_all(task_dir.join(FIXTURE_DIR)).expect("mkdir");
        let text =
            format!("id = \"t\"\nlanguage = \"shell\"\ntitle = \"x\"\nproblem = \"x\"\n{judge}");
        Task::parse(&task_dir, &text).map_err(|e| e.to_string())
    }

    #[test]
    fn a_judge_names_a_suite_inside_the_fixture_and_tests_it_can_report() {
        let ok = "[judge]\ntimeout_ms = 1\nsuite = \"tests/t.sh\"\n\
                  [[judge.tests]]\nname = \"a\"\nenv = { TZ = \"UTC\" }\n";
        assert!(parse(ok).is_ok(), "{:?}", parse(ok));
        for (bad, why) in [
            (
                "suite = \"../t.sh\"\n[[judge.tests]]\nname = \"a\"\n",
                "inside the fixture",
            ),
            (
                "suite = \"/t.sh\"\n[[judge.tests]]\nname = \"a\"\n",
                "inside the fixture",
            ),
            (
                "suite = \"t.sh\"\n[[judge.tests]]\nname = \"a\"\n[[judge.tests]]\nname = \"a\"\n",
                "named twice",
            ),
            (
                "suite = \"t.sh\"\n[[judge.tests]]\nname = \"a b\"\n",
                "without whitespace",
            ),
            (
                "suite = \"t.sh\"\n[[judge.tests]]\nname = \"a\"\nenv = { PATH = \"/x\" }\n",
                "the sandbox's own",
            ),
        ] {
            let err = parse(&format!("[judge]\ntimeout_ms = 1\n{bad}")).expect_err(bad);
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
