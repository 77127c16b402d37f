//! `tasks/<id>/validation.toml`: what `agent-runner tasks validate` found about a
//! SWE-bench-format task, per test, over K repetitions at the base (with `test_patch`) and
//! with the gold patch: whether the task is broken (a test that contradicts its list every
//! time), and which tests are flaky (outcomes that differ between repetitions of the same
//! state). It is a result, not an input: not pinned, rewritten by every validation. Runs,
//! sweeps and `exec` leave broken tasks out ([`super::LoadedScenario::load`]), and a run's
//! `test_outcome.before` comes from here. No I/O beyond reading and writing the file.

use std::fs;
use std::io;
use std::path::Path;

use bench_schemas::TestSet;
use serde::{Deserialize, Serialize};

use super::error::ScenarioError;

/// The file name, in the task directory.
pub const VALIDATION_FILE: &str = "validation.toml";

/// A task's validation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Validation {
    /// Repetitions of each state (`--repeat`).
    pub repeats: u32,
    /// Whether the task is broken: `reasons` says why.
    pub broken: bool,
    /// Why it is broken (empty when it is not).
    pub reasons: Vec<String>,
    /// Every judged test, in task order.
    pub tests: Vec<ValidatedTest>,
}

/// One test's outcomes over the repetitions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidatedTest {
    /// The test id.
    pub test_id: String,
    /// `fail_to_pass` or `pass_to_pass`.
    pub test_set: String,
    /// Repetitions in which it passed at the base with `test_patch` applied.
    pub passed_before: u32,
    /// Repetitions in which it passed with the gold patch.
    pub passed_after: u32,
}

impl ValidatedTest {
    /// Whether its outcome differed between repetitions of one state.
    pub fn flaky(&self, repeats: u32) -> bool {
        let varies = |passed: u32| passed > 0 && passed < repeats;
        varies(self.passed_before) || varies(self.passed_after)
    }

    /// Why the test contradicts its list in every repetition, if it does: a
    /// `FAIL_TO_PASS` test that always passes before or always fails after; a
    /// `PASS_TO_PASS` test that always fails before or after.
    pub fn contradiction(&self, set: TestSet, repeats: u32) -> Option<String> {
        let id = &self.test_id;
        match set {
            TestSet::FailToPass if self.passed_before == repeats => {
                Some(format!("FAIL_TO_PASS {id} passes without the fix"))
            }
            TestSet::FailToPass if self.passed_after == 0 => {
                Some(format!("FAIL_TO_PASS {id} fails with the gold patch"))
            }
            TestSet::PassToPass if self.passed_before == 0 => {
                Some(format!("PASS_TO_PASS {id} fails at the base"))
            }
            TestSet::PassToPass if self.passed_after == 0 => {
                Some(format!("PASS_TO_PASS {id} fails with the gold patch"))
            }
            _ => None,
        }
    }
}

impl Validation {
    /// Whether test `id` passed at the base, when every repetition agreed.
    pub fn before(&self, id: &str) -> Option<bool> {
        let test = self.tests.iter().find(|t| t.test_id == id)?;
        match test.passed_before {
            0 => Some(false),
            n if n == self.repeats => Some(true),
            _ => None,
        }
    }

    /// The flaky tests' ids.
    pub fn flaky(&self) -> Vec<&str> {
        self.tests
            .iter()
            .filter(|t| t.flaky(self.repeats))
            .map(|t| t.test_id.as_str())
            .collect()
    }

    /// Reads `<task dir>/validation.toml`; `None` when the task was never validated.
    pub fn load(task_dir: &Path) -> Result<Option<Validation>, ScenarioError> {
        let path = task_dir.join(VALIDATION_FILE);
        match fs::read_to_string(&path) {
            Ok(text) => super::error::parse_toml(&path, &text).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ScenarioError::Read { path, source }),
        }
    }

    /// Writes `<task dir>/validation.toml`.
    pub fn write(&self, task_dir: &Path) -> Result<(), ScenarioError> {
        let path = task_dir.join(VALIDATION_FILE);
        let text = toml::to_string(self).map_err(|e| ScenarioError::Invalid {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        fs::write(&path, text).map_err(|source| ScenarioError::Write { path, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test(set: &str, before: u32, after: u32) -> ValidatedTest {
        ValidatedTest {
            test_id: "t.py::a".into(),
            test_set: set.into(),
            passed_before: before,
            passed_after: after,
        }
    }

    #[test]
    fn only_a_test_wrong_every_time_breaks_a_task_and_one_that_varies_is_flaky() {
        let f2p = TestSet::FailToPass;
        assert_eq!(test("f", 0, 3).contradiction(f2p, 3), None);
        assert!(test("f", 3, 3).contradiction(f2p, 3).is_some());
        assert!(test("f", 0, 0).contradiction(f2p, 3).is_some());
        assert_eq!(test("f", 1, 3).contradiction(f2p, 3), None);
        assert!(test("f", 1, 3).flaky(3));
        let p2p = TestSet::PassToPass;
        assert!(test("p", 0, 3).contradiction(p2p, 3).is_some());
        assert_eq!(test("p", 3, 2).contradiction(p2p, 3), None);
        assert!(test("p", 3, 2).flaky(3));
        let v = Validation {
            repeats: 3,
            broken: false,
            reasons: Vec::new(),
            tests: vec![test("f", 0, 3)],
        };
        assert_eq!(v.before("t.py::a"), Some(false));
        assert_eq!(v.before("other"), None);
    }
}
