//! [`Verdict`]: what judging a run decided, test by test.

use super::report::FailReason;
use crate::protect::Tampered;
use bench_task::Judge;

/// Output kept per judge test (only for logs).
pub(super) const JUDGE_OUTPUT_CAP: usize = 16 * 1024;

/// The verdict.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// Tests passing.
    pub passed: u32,
    /// Tests failing.
    pub failed: u32,
    /// The failing tests with why, in task order.
    pub failures: Vec<FailedTest>,
    /// Protected files the agent had changed, restored before the tests ran (final
    /// verdicts only), sorted by path.
    pub restored: Vec<Tampered>,
    /// A SWE-bench-format task's final verdict: each test's outcome and the final diff.
    pub swe_bench: Option<SweBenchVerdict>,
}

/// What a final verdict by SWE-bench's rules adds ([`super::swe_bench`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SweBenchVerdict {
    /// Every `FAIL_TO_PASS` then `PASS_TO_PASS` test, as `test_outcome` events carry them.
    pub tests: Vec<bench_schemas::TestOutcome>,
    /// Modules of the judged copy named like a module of the standard library or of an
    /// installed distribution, `(module, path)`, as the judge's pytest entry point found
    /// them (they cannot shadow it there: `benchstream_pytest_judge.py`).
    pub shadows: Vec<(String, String)>,
}

/// One failing judge test.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedTest {
    /// The judge test's name.
    pub name: String,
    /// Why it failed.
    pub reason: FailReason,
}

impl Verdict {
    /// All tests pass.
    pub fn success(&self) -> bool {
        self.failed == 0 && self.passed > 0
    }

    /// `run_stop.success` of a run that submitted or not, judged by `verdict` (`None`: no
    /// judge ran): a run without a submission did not solve its task; a submission
    /// nobody judged may have, so its success is unknown.
    pub fn run_success(verdict: Option<&Verdict>, submitted: bool) -> Option<bool> {
        if submitted {
            verdict.map(Verdict::success)
        } else {
            Some(false)
        }
    }

    /// Every test failing for `reason`, none run (the scratch copy could not be judged).
    pub fn all_failing(judge: &Judge, reason: &FailReason) -> Verdict {
        let mut verdict = Verdict::default();
        for test in &judge.tests {
            verdict.record(&test.name, Err(reason.clone()));
        }
        verdict
    }

    /// Names of the failing tests, in task order (`run_stop.failing_tests`).
    pub fn failing(&self) -> Vec<String> {
        self.failures.iter().map(|f| f.name.clone()).collect()
    }

    /// The failing tests with why, as `"<name>: <reason>"`, in task order.
    pub fn failures_explained(&self) -> Vec<String> {
        self.failures
            .iter()
            .map(|f| format!("{}: {}", f.name, f.reason))
            .collect()
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

    pub(super) fn record(&mut self, name: &str, outcome: Result<(), FailReason>) {
        match outcome {
            Ok(()) => self.passed += 1,
            Err(reason) => {
                tracing::debug!(test = %name, %reason, "judge test failed");
                self.failed += 1;
                self.failures.push(FailedTest {
                    name: name.to_owned(),
                    reason,
                });
            }
        }
    }
}
