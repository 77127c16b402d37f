//! `task_validation`: what `agent-runner tasks validate` found about one SWE-bench-format
//! task.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::canonical::Hash256;

/// `task_validation`: one validation of a SWE-bench-format task with its gold patch, K
/// times over (`agent-runner tasks validate`). Each validation is a stream of its own: a
/// fresh `run_id` with this one event (`seq` 0), `policy_id` `validation`, `step_id` and
/// `seed` null. The latest validation of a task (by `task_id` and `fixture_sha256`) is the
/// one that counts: `compare` leaves the runs of a task it found broken out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskValidation {
    /// The scenario the task was validated in (its name).
    pub scenario: String,
    /// SHA-256 of the task's `task.toml` (its pin, which holds the gold patch,
    /// `test_patch` and the test lists): a re-validation of a changed task has another.
    pub task_sha256: Hash256,
    /// SHA-256 of the task's fixture tree (its pin), as `run_start.fixture_sha256` of the
    /// task's runs.
    pub fixture_sha256: Hash256,
    /// Judgings of each state (the base, the gold patch), ≥ 1.
    pub repeats: u32,
    /// Whether validation failed: a `FAIL_TO_PASS` test that did not fail at the base or
    /// did not pass with the gold patch, a `PASS_TO_PASS` test that did not pass both
    /// times, or a task that could not be validated at all. Runs of a broken task are
    /// not results.
    pub broken: bool,
    /// Why the task is broken, one line per contradiction; empty when it is not.
    pub reasons: Vec<String>,
    /// `FAIL_TO_PASS` and `PASS_TO_PASS` tests judged: 0 when the task could not be
    /// validated at all.
    pub tests: u32,
    /// Ids of the tests whose outcome differed between repetitions of the same state;
    /// empty with one repetition.
    pub flaky_tests: Vec<String>,
}
