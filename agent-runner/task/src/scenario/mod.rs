//! Scenarios and tasks on disk, and the pins that make a run reproducible.
//!
//! A scenarios directory holds scenario files (`<name>.toml`), `pins.toml` and
//! `tasks/<id>/{task.toml,fixture/}`; `scenarios/README.md` documents the formats.
//! [`LoadedScenario::load`] reads a scenario with the tasks it selects, hashes everything
//! and checks the hashes against the pins. Nothing here runs a task.
//!
//! - `error`: what loading fails with ([`ScenarioError`]) and the TOML reader of every file.
//! - `file`: the scenario file ([`Scenario`]).
//! - `task`: `task.toml` ([`Task`]).
//! - `pins`: `pins.toml` ([`Pins`]).
//! - `swe_bench`: the `[swe_bench]` section of a task imported from a SWE-bench-format
//!   instance ([`SweBench`]).
//! - `validation`: what `tasks validate` found about such a task ([`Validation`]): broken
//!   tasks are left out of runs ([`LoadedScenario::without_broken`]).

mod error;
mod file;
mod pins;
mod swe_bench;
mod task;
mod validation;

use std::fs;
use std::path::{Path, PathBuf};

use bench_image::{Digest, ImageRef};
use bench_sandbox::{Scratch, ScratchError, Tree, WorkspaceBound};
use bench_schemas::{sha256_hex, Hash256};

use crate::protected::Protected;

pub use error::{PinError, ScenarioError};
pub use file::{PolicyKind, Scenario, ScriptedActions};
pub use pins::{Pins, TaskPin, PINS_FILE, TASKS_DIR};
pub use swe_bench::{patch_paths, SweBench, TestRunner, DEFAULT_TEST_CMD};
pub use task::{
    Judge, JudgeTest, Language, SubmissionLimits, Task, TaskImage, FIXTURE_DIR, TASK_FILE,
};
pub use validation::{ValidatedTest, Validation, VALIDATION_FILE};

/// Directory of the environments of SWE-bench-format tasks, at the root of the scenarios
/// directory (`envs/<owner__name>__<version>/`).
pub const ENVS_DIR: &str = "envs";

/// Files a SWE-bench-format task's judge keeps pristine besides those `test_patch`
/// touches: pytest's configuration and what `python -m pytest`, which puts the working
/// directory first on the import path, would import from the repository in place of
/// pytest or of the judge's own plugin (agent-made ones are deleted before the final
/// verdict).
const SWE_BENCH_JUDGE_PATTERNS: [&str; 17] = [
    // Every file pytest reads its configuration from (`pytest.ini` is a Python runner
    // file already): an `addopts = -p <module>` there loads a plugin of the agent's into
    // the judge's pytest, where it can write the report itself.
    "**/.pytest.ini",
    "**/pytest.toml",
    "**/.pytest.toml",
    "**/pyproject.toml",
    "**/tox.ini",
    "**/setup.cfg",
    // Distribution metadata on the import path: a `pytest11` entry point there is a
    // plugin pytest loads by itself.
    "*.dist-info/**",
    "*.egg-info/**",
    // Sources, bytecode and extension modules alike: Python imports each of them.
    "pytest.*",
    "pytest/**",
    "py.*",
    "py/**",
    "_pytest/**",
    "pluggy.*",
    "pluggy/**",
    "benchstream_pytest_report.*",
    "benchstream_pytest_report/**",
];

/// How to load a scenario.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Only these task ids (each must be in the scenario); `None` = all of them.
    pub tasks: Option<Vec<String>>,
    /// Run even when a hash differs from `pins.toml` (logged as a warning).
    pub allow_unpinned: bool,
}

/// A scenario with its tasks, hashed and checked against the pins.
#[derive(Debug, Clone)]
pub struct LoadedScenario {
    /// The scenario file.
    pub path: PathBuf,
    /// The scenarios directory (the file's directory): `tasks/` and `pins.toml` are here.
    pub dir: PathBuf,
    /// Parsed content.
    pub scenario: Scenario,
    /// sha256 of the file's bytes (`run_start.scenario.sha256`).
    pub sha256: Hash256,
    /// The selected tasks, in scenario order.
    pub tasks: Vec<LoadedTask>,
}

/// A task with its hashes and fixture listing.
#[derive(Debug, Clone)]
pub struct LoadedTask {
    /// Parsed `task.toml`.
    pub task: Task,
    /// The task directory.
    pub dir: PathBuf,
    /// sha256 of `task.toml`.
    pub task_sha256: Hash256,
    /// The fixture files; the scratch copy is made from this listing.
    pub fixture: Tree,
    /// The judge's inputs: `[judge] protect`, the suite file and the runner configuration
    /// files of the task's language ([`Language::runner_config_patterns`]).
    pub protected: Protected,
    /// What `tasks validate` found (SWE-bench-format tasks); `None`: never validated.
    pub validation: Option<Validation>,
    /// The manifest digest `pins.toml` pins the task's image to; `None` for a task
    /// without an image, or one not pinned (`--allow-unpinned`).
    pub image_pin: Option<Digest>,
}

impl LoadedScenario {
    /// Loads the scenario file at `path` and its tasks (see [`LoadOptions`]).
    pub fn load(path: &Path, options: &LoadOptions) -> Result<LoadedScenario, ScenarioError> {
        let bytes = fs::read(path).map_err(|source| ScenarioError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let text = String::from_utf8(bytes.clone()).map_err(|e| ScenarioError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let scenario = Scenario::parse(path, &text)?;
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let sha256 = sha256_hex(&bytes);

        let selected: Vec<String> = match &options.tasks {
            None => scenario.tasks.clone(),
            Some(filter) => {
                if let Some(task) = filter.iter().find(|t| !scenario.tasks.contains(t)) {
                    return Err(ScenarioError::UnknownTask {
                        scenario: scenario.name.clone(),
                        task: task.clone(),
                        known: scenario.tasks.join(", "),
                    });
                }
                scenario
                    .tasks
                    .iter()
                    .filter(|t| filter.contains(t))
                    .cloned()
                    .collect()
            }
        };
        let mut tasks = selected
            .iter()
            .map(|id| LoadedTask::load(&dir.join(TASKS_DIR).join(id)))
            .collect::<Result<Vec<_>, _>>()?;
        let pins = Pins::load(&dir)?.unwrap_or_default();
        for task in &mut tasks {
            task.image_pin = pins
                .tasks
                .get(&task.task.id)
                .and_then(|pin| pin.image.clone());
        }

        let loaded = LoadedScenario {
            path: path.to_path_buf(),
            dir,
            scenario,
            sha256,
            tasks,
        };
        if let Err(e) = loaded.check_pins(&pins) {
            if !options.allow_unpinned {
                return Err(e);
            }
            tracing::warn!(error = %e, "running unpinned (--allow-unpinned)");
        }
        Ok(loaded)
    }

    /// Leaves out the tasks `tasks validate` found broken, saying so on the log; their ids.
    /// Runs, sweeps and `exec` call it; validation itself does not.
    pub fn without_broken(&mut self) -> Vec<String> {
        let broken: Vec<String> = self
            .tasks
            .iter()
            .filter(|t| t.validation.as_ref().is_some_and(|v| v.broken))
            .map(|t| t.task.id.clone())
            .collect();
        if !broken.is_empty() {
            self.tasks.retain(|t| !broken.contains(&t.task.id));
            tracing::warn!(count = broken.len(), tasks = %broken.join(", "), "skipping tasks that failed validation (validation.toml says broken)");
        }
        broken
    }

    fn check_pins(&self, pins: &Pins) -> Result<(), ScenarioError> {
        let pins_path = self.dir.join(PINS_FILE);
        let file_name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        pins.check_scenario(&pins_path, file_name, &self.sha256)?;
        for task in &self.tasks {
            let has_image = task.task.image.is_some();
            pins.check_task(&pins_path, &task.task.id, &task.pin(), has_image)?;
        }
        Ok(())
    }
}

impl LoadedTask {
    /// Loads the task in `dir` and scans its fixture.
    pub fn load(dir: &Path) -> Result<LoadedTask, ScenarioError> {
        let task_file = dir.join(task::TASK_FILE);
        let bytes = fs::read(&task_file).map_err(|source| ScenarioError::Read {
            path: task_file.clone(),
            source,
        })?;
        let text = String::from_utf8_lossy(&bytes);
        let task = Task::parse(dir, &text)?;
        let fixture = Tree::scan(&Task::fixture_dir(dir))?;
        let invalid_glob = |e: globset::Error| ScenarioError::Invalid {
            path: task_file.clone(),
            reason: format!("judge.protect: {e}"),
        };
        let patterns = match (&task.judge, &task.swe_bench) {
            (Some(judge), _) => Self::judge_patterns(&task_file, task.language, judge, &fixture)?,
            // The files `test_patch` touches are restored to the base before it is applied
            // (one it creates is deleted first); pytest's own configuration and names are
            // the judge's too.
            // A runner script (Django's `tests/runtests.py`) is the judge's too.
            (None, Some(swe)) => patch_paths(&swe.test_patch)
                .iter()
                .chain(
                    match swe.runner() {
                        Some(TestRunner::Script { script, .. }) => Some(script),
                        _ => None,
                    }
                    .as_ref(),
                )
                .map(|p| globset::escape(p))
                .chain(
                    Language::Python
                        .runner_config_patterns()
                        .iter()
                        .chain(&SWE_BENCH_JUDGE_PATTERNS)
                        .map(|p| (*p).to_owned()),
                )
                .collect(),
            (None, None) => Vec::new(),
        };
        let protected = Protected::new(&patterns).map_err(invalid_glob)?;
        let validation = match task.swe_bench {
            Some(_) => Validation::load(dir)?,
            None => None,
        };
        Ok(LoadedTask {
            validation,
            task,
            dir: dir.to_path_buf(),
            task_sha256: sha256_hex(&bytes),
            fixture,
            protected,
            image_pin: None,
        })
    }

    /// The judge's inputs of a task with `[judge]`: the task's own patterns (each must
    /// match a fixture file), the suite file (which must exist) and the runner
    /// configuration of its language.
    fn judge_patterns(
        task_file: &Path,
        language: Language,
        judge: &Judge,
        fixture: &Tree,
    ) -> Result<Vec<String>, ScenarioError> {
        let invalid = |reason: String| ScenarioError::Invalid {
            path: task_file.to_path_buf(),
            reason,
        };
        let unmatched = Protected::new(&judge.protect)
            .map_err(|e| invalid(format!("judge.protect: {e}")))?
            .unmatched(fixture)
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>();
        if !unmatched.is_empty() {
            return Err(invalid(format!(
                "judge.protect patterns {unmatched:?} match no fixture file (they would protect nothing)"
            )));
        }
        let suite = judge.suite_file(language);
        if !fixture.entries().iter().any(|e| e.path == suite) {
            return Err(invalid(format!("judge.suite: the fixture has no {suite}")));
        }
        Ok(judge
            .protect
            .iter()
            .cloned()
            .chain([globset::escape(&suite)])
            .chain(
                language
                    .runner_config_patterns()
                    .iter()
                    .map(|p| (*p).to_owned()),
            )
            .collect())
    }

    /// The environment of a SWE-bench-format task (`<scenarios>/envs/<name>`), if it has
    /// one. The task directory is `<scenarios>/tasks/<id>`.
    pub fn environment_dir(&self) -> Option<PathBuf> {
        let name = self.task.swe_bench.as_ref()?.environment.as_ref()?;
        let scenarios = self.dir.parent()?.parent()?;
        Some(scenarios.join(ENVS_DIR).join(name))
    }

    /// The task's image (`[image]`), a relative `oci:` directory or `docker-archive:`
    /// file taken from the scenarios directory.
    pub fn image(&self) -> Option<ImageRef> {
        let image = &self.task.image.as_ref()?.reference;
        let scenarios = self.dir.parent()?.parent()?;
        let transport = image.transport();
        let rest = &image.as_str()[transport.len()..];
        if transport == "docker://" || rest.starts_with('/') {
            return Some(image.clone());
        }
        format!("{transport}{}", scenarios.join(rest).display())
            .parse()
            .ok()
    }

    /// A fresh scratch copy of the fixture for a run; for a SWE-bench-format task a git
    /// repository whose one commit is the fixture. `bound`: the size and inodes of its
    /// own file system, for an agent's copy under a root runner (`None`: a host directory,
    /// as for the judge's copies).
    pub fn workspace(&self, bound: Option<WorkspaceBound>) -> Result<Scratch, ScratchError> {
        let scratch = Scratch::create(&self.fixture_dir(), &self.fixture, bound)?;
        match &self.task.swe_bench {
            Some(swe) => scratch.commit_base(&base_message(swe)),
            None => Ok(scratch),
        }
    }

    /// The fixture directory.
    pub fn fixture_dir(&self) -> PathBuf {
        Task::fixture_dir(&self.dir)
    }

    /// The tree hash of the fixture (`run_start.fixture_sha256`).
    pub fn fixture_sha256(&self) -> Hash256 {
        self.fixture.sha256()
    }

    /// What `pins.toml` should say about this task.
    pub fn pin(&self) -> TaskPin {
        TaskPin {
            task: self.task_sha256.clone(),
            fixture: self.fixture_sha256(),
            image: None,
        }
    }
}

/// The message of the one commit of a SWE-bench-format task's repository (its fixture and
/// every scratch copy): the instance and its base commit.
pub fn base_message(swe: &SweBench) -> String {
    format!("{} at {}", swe.repo, swe.base_commit)
}
