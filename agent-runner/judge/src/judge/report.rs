//! Reading the reports the judge's runners write, and deciding each judge test from them.
//!
//! The judge-owned harnesses (`unittest_report.py`, `shell_report.sh`,
//! `libtest_report.sh`) write one `passed <id>` / `failed <id>` line per test that ran,
//! then `complete <token>` with the token the judge gave that run alone (the unittest
//! runner first names every test it is about to run, `expect <id>`). A report without that
//! last line is incomplete, whatever else it says. A test passes only when a complete
//! report names it exactly once, as passed; everything else is a failure with its reason
//! ([`FailReason`]). This module does no I/O.

use std::fmt;

/// Why a judge test failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailReason {
    /// The framework reported it failed (an error, a skip and an unexpected success too).
    Failed,
    /// The runner finished its report without naming the test.
    NotInReport,
    /// The report names the test more than once (two tests of one id).
    Ambiguous,
    /// No report at all; the runner's exit code (`None`: killed by a signal). An exit 0 with
    /// no report is this too.
    NoReport {
        /// The runner's exit code.
        exit: Option<i32>,
    },
    /// A report that stops before its end: the runner crashed or was made to exit.
    Incomplete {
        /// The runner's exit code.
        exit: Option<i32>,
    },
    /// The time limit passed.
    TimedOut,
    /// The test suite could not be built (Rust), or its build named no test executable.
    Build(String),
    /// The judge could not run the test at all (its own files, the sandbox).
    Setup(String),
}

impl fmt::Display for FailReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let exit = |e: &Option<i32>| e.map_or("a signal".to_owned(), |c| format!("exit {c}"));
        match self {
            FailReason::Failed => write!(f, "failed"),
            FailReason::NotInReport => write!(f, "not in the report"),
            FailReason::Ambiguous => write!(f, "reported more than once"),
            FailReason::NoReport { exit: e } => write!(f, "no report ({})", exit(e)),
            FailReason::Incomplete { exit: e } => write!(f, "incomplete report ({})", exit(e)),
            FailReason::TimedOut => write!(f, "timed out"),
            FailReason::Build(why) => write!(f, "build failed: {why}"),
            FailReason::Setup(why) => write!(f, "judge setup failed: {why}"),
        }
    }
}

/// One test's line in a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Passed,
    Failed,
}

/// A report, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// `(id, outcome)` in report order.
    lines: Vec<(String, Outcome)>,
    /// The tests the runner said it would run (`expect <id>`), when it said.
    expected: Vec<String>,
    /// Whether the runner said it finished (harness reports only).
    complete: bool,
    /// Milliseconds each test took, when the runner says (`duration <seconds> <id>`: the
    /// pytest plugin); a test named twice has no time.
    durations: std::collections::BTreeMap<String, Option<u64>>,
    /// Modules of the repository named like an installed one, `(module, path)`, as the
    /// pytest entry point found them (`shadows <module> <path>`).
    shadows: Vec<(String, String)>,
}

impl Report {
    /// A judge-owned harness's report: `passed <id>` / `failed <id>` (and `expect <id>`)
    /// lines, then `complete <token>`. Unknown lines are ignored; nothing after the end
    /// counts, and an end with another token is none.
    pub fn harness(text: &str, token: &str) -> Report {
        let mut report = Report::default();
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("complete", t)) if t == token => {
                    report.complete = true;
                    break;
                }
                Some(("passed", id)) => report.lines.push((id.to_owned(), Outcome::Passed)),
                Some(("failed", id)) => report.lines.push((id.to_owned(), Outcome::Failed)),
                Some(("expect", id)) => report.expected.push(id.to_owned()),
                Some(("shadows", rest)) => {
                    if let Some((module, path)) = rest.split_once(' ') {
                        report.shadows.push((module.to_owned(), path.to_owned()));
                    }
                }
                Some(("duration", rest)) => {
                    if let Some((secs, id)) = rest.split_once(' ') {
                        let ms = secs
                            .parse::<f64>()
                            .ok()
                            .filter(|s| s.is_finite() && *s >= 0.0)
                            .map(|s| (s * 1000.0).round() as u64);
                        report
                            .durations
                            .entry(id.to_owned())
                            .and_modify(|d| *d = None)
                            .or_insert(ms);
                    }
                }
                _ => {}
            }
        }
        report
    }

    /// The verdict on test `id`: `Ok(())` when the report names it exactly once, passed.
    /// `exit` is the runner's exit code, for the reason.
    pub fn decide(&self, id: &str, exit: Option<i32>) -> Result<(), FailReason> {
        let found: Vec<Outcome> = self
            .lines
            .iter()
            .filter(|(name, _)| name == id)
            .map(|(_, outcome)| *outcome)
            .collect();
        match found[..] {
            [_, _, ..] => Err(FailReason::Ambiguous),
            [Outcome::Failed] => Err(FailReason::Failed),
            [Outcome::Passed] if self.complete => Ok(()),
            _ if !self.complete && self.lines.is_empty() => Err(FailReason::NoReport { exit }),
            _ if !self.complete => Err(FailReason::Incomplete { exit }),
            _ => Err(FailReason::NotInReport),
        }
    }

    /// Modules of the repository named like an installed one, `(module, path)`, when the
    /// report is complete.
    pub fn shadows(&self) -> &[(String, String)] {
        if self.complete {
            &self.shadows
        } else {
            &[]
        }
    }

    /// How long test `id` took, ms, when a complete report says (once).
    pub fn duration_ms(&self, id: &str) -> Option<u64> {
        let ms = (*self.durations.get(id)?)?;
        self.complete.then_some(ms)
    }

    /// The verdict on a whole suite: every test the report names passed, once each, there
    /// was at least one, and every test the runner expected has its line.
    pub fn decide_all(&self, exit: Option<i32>) -> Result<(), FailReason> {
        if !self.complete {
            return Err(if self.lines.is_empty() {
                FailReason::NoReport { exit }
            } else {
                FailReason::Incomplete { exit }
            });
        }
        if self.lines.is_empty() {
            return Err(FailReason::NotInReport);
        }
        let mut seen = std::collections::BTreeSet::new();
        for (id, outcome) in &self.lines {
            if !seen.insert(id) {
                return Err(FailReason::Ambiguous);
            }
            if *outcome == Outcome::Failed {
                return Err(FailReason::Failed);
            }
        }
        if self.expected.iter().any(|id| !seen.contains(id)) {
            return Err(FailReason::NotInReport);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_passes_only_when_a_complete_report_names_it_once_as_passed() {
        let r = Report::harness(
            "passed m.T.a\nfailed m.T.b\npassed m.T.c\npassed m.T.c\ncomplete k\n",
            "k",
        );
        assert_eq!(r.decide("m.T.a", Some(0)), Ok(()));
        assert_eq!(r.decide("m.T.b", Some(0)), Err(FailReason::Failed));
        assert_eq!(r.decide("m.T.c", Some(0)), Err(FailReason::Ambiguous));
        assert_eq!(r.decide("m.T.d", Some(0)), Err(FailReason::NotInReport));
        let timed = Report::harness(
            "passed t::a\nduration 0.0125 t::a\nduration x t::b\ncomplete k\n",
            "k",
        );
        assert_eq!(timed.duration_ms("t::a"), Some(13));
        assert_eq!(timed.duration_ms("t::b"), None);
        assert_eq!(timed.duration_ms("t::c"), None);
        assert_eq!(r.decide_all(Some(0)), Err(FailReason::Failed));
    }

    #[test]
    fn a_missing_cut_or_forged_report_fails_whatever_the_exit_code() {
        assert_eq!(
            Report::harness("", "k").decide("a", Some(0)),
            Err(FailReason::NoReport { exit: Some(0) })
        );
        let cut = Report::harness("passed a\n", "k");
        assert_eq!(
            cut.decide("a", Some(0)),
            Err(FailReason::Incomplete { exit: Some(0) })
        );
        assert_eq!(
            cut.decide_all(None),
            Err(FailReason::Incomplete { exit: None })
        );
        // Ended by anyone but the runner given the token: no end.
        for forged in ["passed a\ncomplete\n", "passed a\ncomplete guess\n"] {
            assert_eq!(
                Report::harness(forged, "k").decide("a", Some(0)),
                Err(FailReason::Incomplete { exit: Some(0) }),
                "{forged}"
            );
        }
        assert_eq!(
            Report::harness("complete k\n", "k").decide_all(Some(0)),
            Err(FailReason::NotInReport)
        );
        // A test announced but never reported (skipped by patched machinery) fails the
        // suite even though every reported one passed.
        assert_eq!(
            Report::harness("expect a\nexpect b\npassed a\ncomplete k\n", "k").decide_all(Some(0)),
            Err(FailReason::NotInReport)
        );
        assert_eq!(
            Report::harness("expect a\npassed a\ncomplete k\n", "k").decide_all(Some(0)),
            Ok(())
        );
        // Lines after the end are not the runner's.
        assert_eq!(
            Report::harness("complete k\npassed a\n", "k").decide("a", Some(0)),
            Err(FailReason::NotInReport)
        );
    }
}
