//! Judging a run: each judge test of the task runs separately (`bash -c`, in the run's
//! scratch directory, under the task's per-test timeout); exit 0 passes. The score is the
//! fraction of tests passing, success is all of them passing.
//!
//! The judge runs the tests as they are in the scratch directory: it does not restore
//! test files the agent may have edited.

use std::path::Path;
use std::time::Duration;

use crate::scenario::Judge;
use crate::tools::exec::{run_shell, ExecSpec};

/// Output kept per judge test (only for logs).
const JUDGE_OUTPUT_CAP: usize = 16 * 1024;

/// Version of these scoring rules (`run_start.scoring_version`).
pub const SCORING_VERSION: &str = "1";

/// The verdict.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    pub passed: u32,
    pub failed: u32,
    /// Names of the failing tests, in task order.
    pub failing: Vec<String>,
}

impl Verdict {
    /// All tests pass.
    pub fn success(&self) -> bool {
        self.failed == 0 && self.passed > 0
    }

    /// Fraction of tests passing.
    pub fn score(&self) -> f64 {
        let total = self.passed + self.failed;
        if total == 0 {
            0.0
        } else {
            f64::from(self.passed) / f64::from(total)
        }
    }
}

/// Runs every judge test in `dir`.
pub async fn judge(judge: &Judge, dir: &Path) -> Verdict {
    let mut verdict = Verdict::default();
    for test in &judge.tests {
        let spec = ExecSpec {
            command: &test.command,
            cwd: dir,
            timeout: Duration::from_millis(judge.timeout_ms),
            output_cap: JUDGE_OUTPUT_CAP,
        };
        let passed = match run_shell(&spec).await {
            Ok(out) => {
                if !out.success() {
                    tracing::debug!(test = %test.name, timed_out = out.timed_out, output = %out.output, "judge test failed");
                }
                out.success()
            }
            Err(e) => {
                tracing::warn!(test = %test.name, error = %e, "cannot run judge test");
                false
            }
        };
        if passed {
            verdict.passed += 1;
        } else {
            verdict.failed += 1;
            verdict.failing.push(test.name.clone());
        }
    }
    verdict
}
