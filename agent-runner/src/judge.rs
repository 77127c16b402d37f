//! Judging a run: each judge test of the task runs separately (`bash -c`, in the run's
//! scratch directory, in a fresh sandbox of its own, under the task's per-test timeout);
//! exit 0 passes. The score is the
//! fraction of tests passing, success is all of them passing.
//!
//! The final verdict ([`judge_submission`]) first restores the task's protected files
//! (`[judge] protect`: its tests) from the pristine fixture ([`crate::protect`]), so an agent
//! cannot pass by editing or deleting tests; what had to be restored is part of the
//! verdict. The probes between turns ([`judge`]) run the tests as the agent left them and
//! change nothing in the scratch directory: a tampered test can only delay a
//! `failing_tests_patience` stop there, never make a run succeed.

use std::path::Path;
use std::time::Duration;

use crate::protect::Tampered;
use crate::scenario::{Judge, LoadedTask};
use crate::tools::bwrap::Confinement;
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
    /// Protected files the agent had changed, restored before the tests ran (final
    /// verdicts only), sorted by path.
    pub restored: Vec<Tampered>,
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

    /// Every test failing, none run (the scratch copy could not be judged).
    pub fn all_failing(judge: &Judge) -> Verdict {
        Verdict {
            passed: 0,
            failed: u32::try_from(judge.tests.len()).unwrap_or(u32::MAX),
            failing: judge.tests.iter().map(|t| t.name.clone()).collect(),
            restored: Vec::new(),
        }
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

/// The final verdict on `dir`, a scratch copy of `task`'s fixture: restores the protected
/// files, then runs every judge test. A restore that fails is logged and fails every test
/// (the pristine tests could not be put back, so nothing the tests say could be trusted).
pub async fn judge_submission(task: &LoadedTask, dir: &Path, confinement: &Confinement) -> Verdict {
    let restored = match task
        .protected
        .restore(&task.fixture_dir(), &task.fixture, dir)
    {
        Ok(restored) => restored,
        Err(e) => {
            tracing::error!(task = %task.task.id, error = %e, "cannot restore the protected files; every judge test fails");
            return Verdict::all_failing(&task.task.judge);
        }
    };
    if !restored.is_empty() {
        let files: Vec<String> = restored.iter().map(ToString::to_string).collect();
        tracing::warn!(task = %task.task.id, files = %files.join(", "), "the agent changed protected files; restored before judging");
    }
    Verdict {
        restored,
        ..judge(&task.task.judge, dir, confinement).await
    }
}

/// Runs every judge test in `dir` as it is (the probes between turns), each in a sandbox of
/// its own: nothing the agent left running can see or change a test while it runs.
pub async fn judge(judge: &Judge, dir: &Path, confinement: &Confinement) -> Verdict {
    let mut verdict = Verdict::default();
    for test in &judge.tests {
        let spec = ExecSpec {
            command: &test.command,
            cwd: dir,
            confinement,
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
