//! `test_outcome`: one judged test of a run of a SWE-bench-format task.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `test_outcome`: how one `FAIL_TO_PASS` or `PASS_TO_PASS` test of a SWE-bench-format
/// task ended when the run's final submission was judged (one event per test, after the
/// judge, before `run_stop`). Across runs these show the tests no run solves and the ones
/// that flip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TestOutcome {
    /// The test's id as the dataset names it: a pytest node id
    /// (`tests/test_calc.py::test_add`).
    pub test_id: String,
    /// Which list of the task the test is in.
    pub test_set: TestSet,
    /// Whether the test passed at the base with `test_patch` applied, before any agent, as
    /// the task's validation found; null when the task was not validated.
    pub before: Option<bool>,
    /// Whether the test passed after the agent (the judge's per-test report named it,
    /// once, as passed).
    pub after: bool,
    /// Time the test took in the judged run, ms (its setup, call and teardown); null when
    /// the report has no time for it (it did not run).
    pub duration_ms: Option<u64>,
    /// Why it did not pass (`failed`, `not in the report`, `timed out`, ...); null when it
    /// passed.
    pub reason: Option<String>,
}

/// The list of a SWE-bench task a test belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TestSet {
    /// `FAIL_TO_PASS`: fails at the base, passes with the fix.
    FailToPass,
    /// `PASS_TO_PASS`: passes at the base and with the fix.
    PassToPass,
}

impl TestSet {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            TestSet::FailToPass => "fail_to_pass",
            TestSet::PassToPass => "pass_to_pass",
        }
    }
}
