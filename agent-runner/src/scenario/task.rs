//! A benchmark task: `scenarios/tasks/<id>/task.toml` (problem, judge tests, reference
//! solution) plus the buggy project in `fixture/`. Format: `scenarios/README.md`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ScenarioError;
use crate::protect::Protected;
use crate::tools::ToolRequest;

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
    /// How success is decided.
    pub judge: Judge,
    /// The reference solution, in tool-call form (what the `scripted` policy replays).
    #[serde(default)]
    pub solution: Vec<ToolRequest>,
}

/// Languages tasks are written in (what a fresh worker host can run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    Python,
    Shell,
    Rust,
}

/// The judge: tests that fail on the fixture and pass after a correct fix.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judge {
    /// Time limit of each test command, ms.
    pub timeout_ms: u64,
    /// Each runs separately with `bash -c` in the run's scratch copy; exit 0 = pass.
    pub tests: Vec<JudgeTest>,
    /// Globs (relative to the fixture root) of the judge's own files: before the final
    /// verdict they are restored from the pristine fixture and files the agent added that
    /// match are deleted ([`crate::protect`]). Default: none.
    #[serde(default)]
    pub protect: Vec<String>,
}

/// One judge test.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeTest {
    /// Reported in `run_stop.failing_tests`.
    pub name: String,
    /// Shell text.
    pub command: String,
}

impl Task {
    /// Parses and checks the text of `<dir>/task.toml`.
    pub fn parse(dir: &Path, text: &str) -> Result<Task, ScenarioError> {
        let path = dir.join(TASK_FILE);
        let task: Task = super::parse_toml(&path, text)?;
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
        if task.judge.tests.is_empty() {
            return Err(invalid("judge has no tests".into()));
        }
        if task.judge.timeout_ms == 0 {
            return Err(invalid("judge.timeout_ms must be > 0".into()));
        }
        Protected::new(&task.judge.protect).map_err(|e| invalid(format!("judge.protect: {e}")))?;
        for (i, step) in task.solution.iter().enumerate() {
            step.parse()
                .map_err(|e| invalid(format!("solution step {}: {e}", i + 1)))?;
        }
        if !dir.join(FIXTURE_DIR).is_dir() {
            return Err(invalid(format!("no {FIXTURE_DIR}/ directory beside it")));
        }
        Ok(task)
    }

    /// The fixture directory of the task in `dir`.
    pub fn fixture_dir(dir: &Path) -> PathBuf {
        dir.join(FIXTURE_DIR)
    }
}
