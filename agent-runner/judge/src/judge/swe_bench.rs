//! Judging a SWE-bench-format task by SWE-bench's rules: after the agent, the files
//! `test_patch` touches are put back to the base (the task's protected files, which also
//! hold pytest's configuration and names, [`bench_task::LoadedTask`]), `test_patch` is
//! applied, and `FAIL_TO_PASS ∪ PASS_TO_PASS` are run in one sandbox with the task's test
//! command and the judge's own pytest plugin (`benchstream_pytest_report.py`). Each test
//! passes only when that plugin's token-checked report names it, exactly once, as passed
//! ([`super::report`]); resolved is every test passing, the score the fraction passing.
//!
//! `test_patch` is applied with `patch` inside a sandbox (it runs no code of the
//! repository). The files it touched and every other protected file are then copied into
//! the judge's directory and mounted read-only over the scratch copy while the tests run,
//! so code under test cannot rewrite them. The report directory lies outside the scratch
//! copy, as for every judge ([`super`]).

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bench_sandbox::{run_confined, walk, Bind, Confinement, SandboxedCommand};
use bench_schemas::TestOutcome;

use super::report::{FailReason, Report};
use super::verdict::{SweBenchVerdict, Verdict, JUDGE_OUTPUT_CAP};
use crate::protect::Restore;
use bench_task::{LoadedTask, SweBench, TestRunner, Validation};

/// The judge-owned pytest plugin.
const PYTEST_REPORT: &str = include_str!("benchstream_pytest_report.py");

/// Its module name, as the entry point imports it.
const PLUGIN: &str = "benchstream_pytest_report";

/// The judge-owned entry point that runs pytest (`python -I <it> ARGS`).
const PYTEST_JUDGE: &str = include_str!("benchstream_pytest_judge.py");

/// Its file name in the runner directory.
const ENTRY: &str = "benchstream_pytest_judge.py";

/// The judge-owned entry point of a task whose tests a unittest runner script runs
/// (Django's `tests/runtests.py`): it records every outcome of `unittest` itself and
/// writes the report.
const UNITTEST_JUDGE: &str = include_str!("benchstream_unittest_judge.py");

/// Its file name in the judge's runner directory.
const UNITTEST_ENTRY: &str = "benchstream_unittest_judge.py";

/// The repository's own top-level module names: every directory and `.py` file at the
/// fixture's root and under `src/` (a module of the repository of an installed
/// distribution's name is the repository's, tested from its source).
fn own_modules(task: &LoadedTask) -> Vec<String> {
    let mut names = std::collections::BTreeSet::new();
    for entry in task.fixture.entries() {
        let path = entry.path.strip_prefix("src/").unwrap_or(&entry.path);
        let first = path.split('/').next().unwrap_or(path);
        let name = if path.contains('/') {
            first
        } else {
            first.strip_suffix(".py").unwrap_or("")
        };
        if !name.is_empty() {
            names.insert(name.to_owned());
        }
    }
    names.into_iter().collect()
}

/// The final verdict on `dir` by SWE-bench's rules: restore, apply `test_patch`, run.
pub async fn judge_submission(
    task: &LoadedTask,
    swe: &SweBench,
    dir: &Path,
    confinement: &Confinement,
) -> Verdict {
    // A restore that fails fails every test: the pristine tests could not be put back.
    let restore = task
        .protected
        .restore(&task.fixture_dir(), &task.fixture, dir)
        .map_err(|e| {
            tracing::error!(task = %task.task.id, error = %e, "cannot restore the test files; every test fails");
            FailReason::Setup(e.to_string())
        });
    let restored = restore.as_ref().cloned().unwrap_or_default();
    if !restored.is_empty() {
        let files: Vec<String> = restored.iter().map(ToString::to_string).collect();
        tracing::warn!(task = %task.task.id, files = %files.join(", "), "the agent changed files of test_patch or pytest's own; restored before judging");
    }
    let outcome = match (restore, JudgeRun::create(task, swe, dir, confinement)) {
        (Err(reason), _) => Err(reason),
        (_, Err(e)) => Err(FailReason::Setup(e.to_string())),
        (Ok(_), Ok(run)) => match run.apply_test_patch().await {
            Ok(()) => match run.pristine(task) {
                Ok(binds) => run.reported(&binds).await,
                Err(e) => Err(FailReason::Setup(format!("test files: {e}"))),
            },
            Err(reason) => Err(reason),
        },
    };
    let shadows = match &outcome {
        Ok((report, _)) => report.shadows().to_vec(),
        Err(_) => Vec::new(),
    };
    let (verdict, tests) = decide(swe, task.validation.as_ref(), &outcome);
    Verdict {
        restored,
        swe_bench: Some(SweBenchVerdict { tests, shadows }),
        ..verdict
    }
}

/// Every test failing for `reason`, none run (a submission that could not be judged).
pub fn unjudged(swe: &SweBench, reason: FailReason) -> Verdict {
    let (verdict, tests) = decide(swe, None, &Err(reason));
    Verdict {
        swe_bench: Some(SweBenchVerdict {
            tests,
            shadows: Vec::new(),
        }),
        ..verdict
    }
}

/// The tests as the agent left the scratch copy, without `test_patch` (the probes between
/// turns change nothing in it): the `FAIL_TO_PASS` tests `test_patch` adds fail there.
pub async fn probe(
    task: &LoadedTask,
    swe: &SweBench,
    dir: &Path,
    confinement: &Confinement,
) -> Verdict {
    let outcome = match JudgeRun::create(task, swe, dir, confinement) {
        Ok(run) => run.reported(&[]).await,
        Err(e) => Err(FailReason::Setup(e.to_string())),
    };
    decide(swe, None, &outcome).0
}

/// Each judged test decided from the report (or failing for the reason there is none):
/// the verdict, and every test's outcome as a `test_outcome` carries it (`before` from the
/// task's `validation`, when it has one that agreed on the test).
fn decide(
    swe: &SweBench,
    validation: Option<&Validation>,
    outcome: &Result<(Report, Option<i32>), FailReason>,
) -> (Verdict, Vec<TestOutcome>) {
    let mut verdict = Verdict::default();
    let mut tests = Vec::new();
    for (id, set) in swe.tests() {
        let (result, duration_ms) = match outcome {
            Ok((report, exit)) => (report.decide(id, *exit), report.duration_ms(id)),
            Err(reason) => (Err(reason.clone()), None),
        };
        tests.push(TestOutcome {
            test_id: id.to_owned(),
            test_set: set,
            // Known only from the task's validation, which the run does not repeat.
            before: validation.and_then(|v| v.before(id)),
            after: result.is_ok(),
            duration_ms,
            reason: result.as_ref().err().map(ToString::to_string),
        });
        verdict.record(id, result);
    }
    (verdict, tests)
}

/// One judging's judge-only directory (plugin, patch, pristine copies, report), deleted on
/// drop, never inside the scratch copy.
struct JudgeRun<'a> {
    swe: &'a SweBench,
    /// The repository's own top-level module names, from the pristine fixture.
    own_modules: String,
    scratch: &'a Path,
    confinement: &'a Confinement,
    /// Owns the directory.
    _dir: tempfile::TempDir,
    /// Canonical path of `dir`.
    root: PathBuf,
}

impl<'a> JudgeRun<'a> {
    fn create(
        task: &LoadedTask,
        swe: &'a SweBench,
        scratch: &'a Path,
        confinement: &'a Confinement,
    ) -> io::Result<JudgeRun<'a>> {
        let dir = tempfile::Builder::new().prefix("bench-judge-").tempdir()?;
        let root = dir.path().canonicalize()?;
        fs::create_dir(root.join("runner"))?;
        fs::write(
            root.join("runner").join(format!("{PLUGIN}.py")),
            PYTEST_REPORT,
        )?;
        fs::write(root.join("runner").join(ENTRY), PYTEST_JUDGE)?;
        fs::write(root.join("runner").join(UNITTEST_ENTRY), UNITTEST_JUDGE)?;
        fs::write(root.join("runner").join("test.patch"), &swe.test_patch)?;
        Ok(JudgeRun {
            swe,
            own_modules: own_modules(task).join(","),
            scratch,
            confinement,
            _dir: dir,
            root,
        })
    }

    fn runner(&self) -> PathBuf {
        self.root.join("runner")
    }

    /// Runs `program args` sandboxed in the scratch copy with the runner directory
    /// read-only and `binds`.
    async fn run(
        &self,
        program: &str,
        args: &[OsString],
        binds: &[Bind],
        env: &[(String, String)],
    ) -> Result<bench_sandbox::ShellOutput, FailReason> {
        let mut all = binds.to_vec();
        all.push(Bind {
            src: self.runner(),
            dest: self.runner(),
            read_only: true,
        });
        let command = SandboxedCommand {
            program: program.as_ref(),
            args,
            workdir: self.scratch,
            read_only: &[],
            env,
            binds: &all,
        };
        let timeout = Duration::from_millis(self.swe.timeout_ms);
        let out = run_confined(self.confinement, &command, timeout, JUDGE_OUTPUT_CAP)
            .await
            .map_err(|e| FailReason::Setup(format!("cannot start {program}: {e}")))?;
        if out.timed_out {
            return Err(FailReason::TimedOut);
        }
        Ok(out)
    }

    /// Applies `test_patch` to the scratch copy.
    async fn apply_test_patch(&self) -> Result<(), FailReason> {
        let args: Vec<OsString> = vec![
            "--batch".into(),
            "--forward".into(),
            "-p1".into(),
            "-i".into(),
            self.runner().join("test.patch").into(),
        ];
        let out = self.run("patch", &args, &[], &[]).await?;
        if out.success() {
            Ok(())
        } else {
            tracing::debug!(output = %out.output, "test_patch does not apply");
            Err(FailReason::Setup(format!(
                "test_patch does not apply: {}",
                out.output.lines().last().unwrap_or_default()
            )))
        }
    }

    /// Read-only mounts of every protected file of the scratch copy (the base's, and those
    /// `test_patch` wrote), copied out of the code's reach first.
    fn pristine(&self, task: &LoadedTask) -> io::Result<Vec<Bind>> {
        let mut binds = Vec::new();
        for entry in walk(self.scratch) {
            let entry = entry.map_err(io::Error::other)?;
            if !entry.file_type().is_file() {
                continue;
            }
            let Ok(relative) = entry.path().strip_prefix(self.scratch) else {
                continue;
            };
            let relative = relative.to_string_lossy().into_owned();
            if !task.protected.matches(&relative) {
                continue;
            }
            let copy = self.root.join("pristine").join(&relative);
            if let Some(parent) = copy.parent() {
                fs::create_dir_all(parent)?;
            }
            fs::copy(entry.path(), &copy)?;
            binds.push(Bind {
                src: copy,
                dest: entry.path().to_path_buf(),
                read_only: true,
            });
        }
        Ok(binds)
    }

    /// Runs every judged test in one sandbox with the plugin; its report and exit code.
    async fn reported(&self, binds: &[Bind]) -> Result<(Report, Option<i32>), FailReason> {
        let setup = |e: io::Error| FailReason::Setup(format!("report directory: {e}"));
        let reports = self.root.join("report");
        fs::create_dir(&reports).map_err(setup)?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        fs::write(reports.join("token"), &token).map_err(setup)?;
        let file = reports.join("report");
        let mut all = binds.to_vec();
        all.push(Bind {
            src: reports.clone(),
            dest: reports,
            read_only: false,
        });
        let runner = self.swe.runner().ok_or_else(|| {
            FailReason::Setup(format!(
                "test_cmd {:?} runs neither pytest nor a runner script",
                self.swe.test_cmd
            ))
        })?;
        let mut args: Vec<OsString> = ["-I", "-X", "pycache_prefix=/tmp/judge-pycache"]
            .iter()
            .map(Into::into)
            .collect();
        let program = match &runner {
            TestRunner::Pytest { python, args: rest } => {
                args.push(self.runner().join(ENTRY).into());
                args.extend(rest.iter().map(Into::into));
                args.extend(
                    ["-p", "no:cacheprovider", "--rootdir"]
                        .iter()
                        .map(Into::into),
                );
                args.push(self.scratch.into());
                args.extend(self.swe.test_files().iter().map(Into::into));
                python
            }
            TestRunner::Script {
                python,
                script,
                args: rest,
            } => {
                args.push(self.runner().join(UNITTEST_ENTRY).into());
                args.push(self.scratch.join(script).into());
                args.extend(rest.iter().map(Into::into));
                args.extend(self.swe.script_labels(script).iter().map(Into::into));
                python
            }
        };
        let env = [
            ("BENCH_JUDGE_REPORT".to_owned(), file.display().to_string()),
            (
                "BENCH_JUDGE_OWN_MODULES".to_owned(),
                self.own_modules.clone(),
            ),
        ];
        let out = self.run(program, &args, &all, &env).await?;
        let exit = out.status.and_then(|s| s.code());
        tracing::debug!(exit = ?exit, output = %out.output, "swe-bench tests ran");
        // A report file that cannot be read (not UTF-8, not a file) is no report.
        let text = fs::read_to_string(&file).unwrap_or_default();
        Ok((Report::harness(&text, &token), exit))
    }
}
