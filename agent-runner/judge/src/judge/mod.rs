//! Judging a run: every judge test of the task is decided from the per-test report of a
//! judge-owned runner, never from an exit code of code the agent wrote. The score is the
//! fraction of tests passing, success is all of them passing.
//!
//! Each test runs in a fresh sandbox of its own, in the run's scratch copy, under the task's
//! per-test timeout, with:
//! - its inputs pristine: every fixture file the judge relies on (the suite, the task's
//!   `[judge] protect` files, the runner configuration files of the language,
//!   [`Language::runner_config_patterns`]) copied from the pinned fixture (hash checked) into a
//!   judge-only directory and mounted read-only over the scratch copy, so code under test
//!   cannot rewrite them before, between or during tests; an agent-written `.cargo/` is
//!   hidden under an empty read-only directory;
//! - the runner: `python3 -I` with `unittest_report.py` (the standard library first on the
//!   import path, the task's source directory added last, the test module loaded from its
//!   pristine file), `libtest_report.sh` around the test executable cargo built (with a
//!   private `CARGO_HOME` and target directory, the executable copied out of reach of the
//!   code under test; libtest's own log read from a pipe the harness holds), or
//!   `shell_report.sh` around `bash <script> <test>`;
//! - a report directory of its own, outside the scratch copy and never mounted for an
//!   agent (it lies under the host's temp directory, which every agent sandbox replaces by
//!   a private `/tmp` and which no `--sandbox-ro` path may contain,
//!   [`bench_sandbox::mountable_read_only`]; only this test's sandbox binds it, after
//!   its own private `/tmp`), holding a random token the harness reads and deletes
//!   before any code of the task runs; the runner reads the report back once the sandbox
//!   is gone and accepts it only when it ends with `complete <token>` ([`report`]).
//!
//! A missing report, a test the report does not name, a crash, a timeout and an exit 0
//! without a report all fail the test, with the reason in the verdict. Every naive forgery
//! fails: exiting early, printing success lines, shadowing the framework, editing the
//! tests or the runner config, killing the runner, writing a report wherever it may be
//! (without the token it is no report). What the runner cannot stop is code that, running
//! inside the framework's own process, deliberately reads the token out of the harness's
//! memory (Python) or writes libtest log lines to the descriptor it inherited (Rust).
//!
//! The final verdict ([`judge_submission`]) first restores the protected files in the
//! scratch copy ([`crate::protect`]), so what had to be restored is part of the verdict. The
//! probes between turns ([`judge`]) change nothing in the scratch copy: a file the agent
//! deleted or replaced by a link is not mounted there, and its test fails.
//!
//! A task imported from a SWE-bench-format instance is judged by SWE-bench's rules instead
//! ([`swe_bench`]), with the same report rules.

mod report;
mod swe_bench;
mod verdict;

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bench_sandbox::{apply_patch, run_confined, Bind, Confinement, SandboxedCommand, ShellOutput};

use crate::protect::Restore;
use bench_task::{Judge, JudgeTest, Language, LoadedTask};

pub use report::FailReason;
use report::Report;
use verdict::JUDGE_OUTPUT_CAP;
pub use verdict::{FailedTest, SweBenchVerdict, Verdict};

/// How long applying a submitted diff to a pristine copy may take.
const APPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// Output kept of the Rust build, whose JSON messages name the test executable.
const BUILD_OUTPUT_CAP: usize = 8 << 20;

/// Version of these scoring rules (`run_start.scoring_version`). 2: verdicts from the test
/// framework's per-test report with pristine inputs mounted read-only (1: exit codes).
pub const SCORING_VERSION: &str = "2";

/// The judge-owned unittest runner.
const UNITTEST_REPORT: &str = include_str!("unittest_report.py");

/// The judge-owned harness around a shell task's test script.
const SHELL_REPORT: &str = include_str!("shell_report.sh");

/// The judge-owned harness around a Rust test executable, reading libtest's log.
const LIBTEST_REPORT: &str = include_str!("libtest_report.sh");

/// The final verdict on `dir`, a scratch copy of `task`'s fixture: restores the protected
/// files, then runs every judge test. A restore that fails is logged and fails every test
/// (the pristine tests could not be put back, so nothing the tests say could be trusted).
pub async fn judge_submission(task: &LoadedTask, dir: &Path, confinement: &Confinement) -> Verdict {
    let tests = match (&task.task.judge, &task.task.swe_bench) {
        (_, Some(swe)) => return swe_bench::judge_submission(task, swe, dir, confinement).await,
        (Some(tests), None) => tests,
        // A loaded task has one or the other.
        (None, None) => return Verdict::default(),
    };
    let restored = match task
        .protected
        .restore(&task.fixture_dir(), &task.fixture, dir)
    {
        Ok(restored) => restored,
        Err(e) => {
            tracing::error!(task = %task.task.id, error = %e, "cannot restore the protected files; every judge test fails");
            return Verdict::all_failing(tests, &FailReason::Setup(e.to_string()));
        }
    };
    if !restored.is_empty() {
        let files: Vec<String> = restored.iter().map(ToString::to_string).collect();
        tracing::warn!(task = %task.task.id, files = %files.join(", "), "the agent changed protected files; restored before judging");
    }
    Verdict {
        restored,
        ..judge(task, dir, confinement).await
    }
}

/// The verdict on a submission: `diff` applied to a fresh pristine copy of `task`'s
/// fixture, judged there by [`judge_submission`]. A diff that does not apply fails every
/// test, with the reason.
pub async fn judge_diff(task: &LoadedTask, diff: &[u8], confinement: &Confinement) -> Verdict {
    let copy = match task.workspace(None) {
        Ok(copy) => copy,
        Err(e) => return unjudged(task, FailReason::Setup(format!("pristine copy: {e}"))),
    };
    if !diff.is_empty() {
        if let Err(e) = apply_patch(copy.root(), diff, APPLY_TIMEOUT).await {
            tracing::warn!(task = %task.task.id, error = %e, "the submitted diff does not apply");
            return unjudged(
                task,
                FailReason::Setup(format!("the submitted diff does not apply: {e}")),
            );
        }
    }
    judge_submission(task, copy.root(), confinement).await
}

/// Every test of `task` failing for `reason`, none run.
pub fn unjudged(task: &LoadedTask, reason: FailReason) -> Verdict {
    match (&task.task.judge, &task.task.swe_bench) {
        (_, Some(swe)) => swe_bench::unjudged(swe, reason),
        (Some(judge), None) => Verdict::all_failing(judge, &reason),
        (None, None) => Verdict::default(),
    }
}

/// A run's submitted `diff` judged `times` more times, each by [`judge_diff`] on a fresh
/// copy (`run --regrade K`).
pub async fn regrade(
    task: &LoadedTask,
    diff: &[u8],
    confinement: &Confinement,
    times: u32,
) -> Vec<Verdict> {
    let mut verdicts = Vec::new();
    for _ in 0..times {
        verdicts.push(judge_diff(task, diff, confinement).await);
    }
    verdicts
}

/// Runs every judge test of `task` in `dir` as the agent left it (the probes between
/// turns; the final verdict after restoring), each in a sandbox of its own with the
/// pristine inputs mounted.
pub async fn judge(task: &LoadedTask, dir: &Path, confinement: &Confinement) -> Verdict {
    let judge = match (&task.task.judge, &task.task.swe_bench) {
        (_, Some(swe)) => return swe_bench::probe(task, swe, dir, confinement).await,
        (Some(judge), None) => judge,
        // A loaded task has one or the other.
        (None, None) => return Verdict::default(),
    };
    let setup = match JudgeDir::create(task, dir) {
        Ok(setup) => setup,
        Err(e) => {
            tracing::error!(task = %task.task.id, error = %e, "cannot set up the judge; every judge test fails");
            return Verdict::all_failing(judge, &FailReason::Setup(e.to_string()));
        }
    };
    let ctx = Ctx {
        judge,
        dir,
        confinement,
        setup: &setup,
        timeout: Duration::from_millis(judge.timeout_ms),
    };
    let mut verdict = Verdict::default();
    match task.task.language {
        Language::Python => {
            for (i, test) in judge.tests.iter().enumerate() {
                verdict.record(&test.name, ctx.unittest(i, test).await);
            }
        }
        Language::Shell => {
            for (i, test) in judge.tests.iter().enumerate() {
                verdict.record(&test.name, ctx.shell(i, test).await);
            }
        }
        Language::Rust => match ctx.cargo_build().await {
            Ok(executable) => {
                for (i, test) in judge.tests.iter().enumerate() {
                    verdict.record(&test.name, ctx.libtest(i, test, &executable).await);
                }
            }
            Err(reason) => {
                tracing::debug!(task = %task.task.id, %reason, "judge build failed");
                verdict = Verdict::all_failing(judge, &reason);
            }
        },
    }
    verdict
}

/// The judge-only host directory of one judging: the runner scripts, the pristine copies
/// of the judge's inputs, and a report directory per test. Deleted on drop. Never inside a
/// scratch copy, never mounted for an agent.
struct JudgeDir {
    dir: tempfile::TempDir,
    /// Read-only mounts over the scratch copy: pristine files, the hidden `.cargo`.
    pristine: Vec<Bind>,
}

impl JudgeDir {
    fn create(task: &LoadedTask, scratch: &Path) -> io::Result<JudgeDir> {
        let dir = tempfile::Builder::new().prefix("bench-judge-").tempdir()?;
        let root = dir.path().canonicalize()?;
        let runner = root.join("runner");
        fs::create_dir(&runner)?;
        fs::write(runner.join("unittest_report.py"), UNITTEST_REPORT)?;
        fs::write(runner.join("shell_report.sh"), SHELL_REPORT)?;
        fs::write(runner.join("libtest_report.sh"), LIBTEST_REPORT)?;
        let mut pristine = Vec::new();
        let fixture_dir = task.fixture_dir();
        for entry in task.fixture.entries() {
            if !task.protected.matches(&entry.path) {
                continue;
            }
            let bytes = fs::read(fixture_dir.join(&entry.path))?;
            if bench_schemas::sha256_hex(&bytes) != entry.sha256 {
                return Err(io::Error::other(format!(
                    "fixture file {} changed after it was pinned",
                    entry.path
                )));
            }
            let copy = root.join("pristine").join(&entry.path);
            if let Some(parent) = copy.parent() {
                fs::create_dir_all(parent)?;
            }
            fs::write(&copy, &bytes)?;
            let mode = if entry.executable { 0o555 } else { 0o444 };
            fs::set_permissions(&copy, fs::Permissions::from_mode(mode))?;
            let dest = scratch.join(&entry.path);
            // Only over a regular file reached without links: mounting elsewhere would
            // create files in the scratch copy or land outside it. A missing test fails.
            if is_plain_file(scratch, &dest) {
                pristine.push(Bind {
                    src: copy,
                    dest,
                    read_only: true,
                });
            }
        }
        // A fixture's own `.cargo/` is pinned and mounted above; an agent-made one is hidden.
        let fixture_cargo = task
            .fixture
            .entries()
            .iter()
            .any(|e| e.path.starts_with(".cargo/"));
        if task.task.language == Language::Rust && !fixture_cargo {
            let cargo = scratch.join(".cargo");
            match fs::symlink_metadata(&cargo) {
                Ok(meta) if meta.is_dir() => {
                    let empty = root.join("empty");
                    fs::create_dir(&empty)?;
                    pristine.push(Bind {
                        src: empty,
                        dest: cargo,
                        read_only: true,
                    });
                }
                Ok(_) => {
                    return Err(io::Error::other(
                        "the scratch copy's .cargo is not a directory; cargo would read it",
                    ))
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(JudgeDir { dir, pristine })
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// A fresh, empty report directory for test `i`.
    fn report_dir(&self, i: usize) -> io::Result<PathBuf> {
        let dir = self.root().join(format!("report-{i}"));
        fs::create_dir(&dir)?;
        dir.canonicalize()
    }
}

/// Whether `path` (under `root`) is a regular file and no component of it below `root` is
/// a symlink.
fn is_plain_file(root: &Path, path: &Path) -> bool {
    let regular = fs::symlink_metadata(path).is_ok_and(|m| m.is_file());
    regular
        && path
            .canonicalize()
            .is_ok_and(|real| real == path && real.starts_with(root))
}

/// What every test of one judging shares.
struct Ctx<'a> {
    judge: &'a Judge,
    dir: &'a Path,
    confinement: &'a Confinement,
    setup: &'a JudgeDir,
    timeout: Duration,
}

impl Ctx<'_> {
    /// Runs `program args` in a fresh sandbox over the scratch copy with the pristine
    /// mounts, `extra` mounts and `env`.
    async fn run(
        &self,
        program: &Path,
        args: &[std::ffi::OsString],
        extra: &[Bind],
        env: &[(String, String)],
        output_cap: usize,
    ) -> Result<ShellOutput, FailReason> {
        let mut binds = self.setup.pristine.clone();
        // The runner scripts, read-only at their host path.
        let runner = self.setup.root().join("runner");
        binds.push(Bind {
            src: runner.clone(),
            dest: runner,
            read_only: true,
        });
        binds.extend_from_slice(extra);
        let command = SandboxedCommand {
            program: program.as_os_str(),
            args,
            workdir: self.dir,
            read_only: &[],
            env,
            binds: &binds,
        };
        let out = run_confined(self.confinement, &command, self.timeout, output_cap)
            .await
            .map_err(|e| FailReason::Setup(format!("cannot start {}: {e}", program.display())))?;
        if out.timed_out {
            return Err(FailReason::TimedOut);
        }
        Ok(out)
    }

    /// Runs test `i` with `program args` (given the report file's path), in a fresh
    /// report directory mounted writable that holds a new random token for the harness;
    /// returns the report read back with that token and the exit code.
    async fn run_reported(
        &self,
        i: usize,
        test: &JudgeTest,
        program: &Path,
        args: impl FnOnce(&Path) -> Vec<std::ffi::OsString>,
        extra: &[Bind],
    ) -> Result<(Report, Option<i32>), FailReason> {
        let setup = |e: io::Error| FailReason::Setup(format!("report directory: {e}"));
        let reports = self.setup.report_dir(i).map_err(setup)?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        fs::write(reports.join("token"), &token).map_err(setup)?;
        let file = reports.join("report");
        let mut binds = vec![Bind {
            src: reports.clone(),
            dest: reports,
            read_only: false,
        }];
        binds.extend_from_slice(extra);
        let env: Vec<(String, String)> = test
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let out = self
            .run(program, &args(&file), &binds, &env, JUDGE_OUTPUT_CAP)
            .await?;
        let exit = out.status.and_then(|s| s.code());
        tracing::debug!(test = %test.name, exit = ?exit, output = %out.output, "judge test ran");
        // A report file that cannot be read (not UTF-8, not a file) is no report.
        let text = fs::read_to_string(&file).unwrap_or_default();
        Ok((Report::harness(&text, &token), exit))
    }

    async fn unittest(&self, i: usize, test: &JudgeTest) -> Result<(), FailReason> {
        let script = self.setup.root().join("runner/unittest_report.py");
        let suite = &self.judge.suite;
        let selector = test.test.clone();
        let dir = self.dir;
        let (report, exit) = self
            .run_reported(
                i,
                test,
                Path::new("python3"),
                |file| {
                    let mut args: Vec<std::ffi::OsString> = vec![
                        "-I".into(),
                        script.into(),
                        file.into(),
                        dir.into(),
                        suite.into(),
                    ];
                    args.extend(selector.clone().map(Into::into));
                    args
                },
                &[],
            )
            .await?;
        match &test.test {
            Some(selector) => {
                let module = Path::new(suite)
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or_default();
                report.decide(&format!("{module}.{selector}"), exit)
            }
            None => report.decide_all(exit),
        }
    }

    async fn shell(&self, i: usize, test: &JudgeTest) -> Result<(), FailReason> {
        let script = self.setup.root().join("runner/shell_report.sh");
        let id = test.test.as_deref().unwrap_or(&test.name);
        let suite = &self.judge.suite;
        let (report, exit) = self
            .run_reported(
                i,
                test,
                Path::new("bash"),
                |file| vec![script.into(), file.into(), suite.into(), id.into()],
                &[],
            )
            .await?;
        report.decide(id, exit)
    }

    /// Builds the suite's test executable with cargo (offline, private `CARGO_HOME`, a
    /// judge-owned target directory) and copies it into the judge directory, where no code
    /// under test can change it.
    async fn cargo_build(&self) -> Result<PathBuf, FailReason> {
        let target = self.setup.root().join("target");
        fs::create_dir(&target).map_err(|e| FailReason::Setup(format!("target dir: {e}")))?;
        let args: Vec<std::ffi::OsString> = vec![
            "test".into(),
            "--offline".into(),
            "--no-run".into(),
            "--message-format=json".into(),
            "--test".into(),
            self.judge.suite.clone().into(),
            "--config".into(),
            format!("build.target-dir={}", toml_string(&target)).into(),
        ];
        let bind = Bind {
            src: target.clone(),
            dest: target,
            read_only: false,
        };
        let out = self
            .run(Path::new("cargo"), &args, &[bind], &[], BUILD_OUTPUT_CAP)
            .await?;
        if !out.success() {
            tracing::debug!(output = %out.output, "judge build failed");
            return Err(FailReason::Build(format!(
                "cargo exited with {}",
                out.status.map_or("a signal".to_owned(), |s| s.to_string())
            )));
        }
        let suite_src = self
            .dir
            .join("tests")
            .join(format!("{}.rs", self.judge.suite));
        let built =
            test_executable(&out.output, &self.judge.suite, &suite_src).ok_or_else(|| {
                FailReason::Build(format!(
                    "no test executable built from tests/{}.rs",
                    self.judge.suite
                ))
            })?;
        let bin = self.setup.root().join("bin");
        fs::create_dir(&bin).map_err(|e| FailReason::Setup(format!("bin dir: {e}")))?;
        let copy = bin.join(&self.judge.suite);
        fs::copy(&built, &copy)
            .and_then(|_| fs::set_permissions(&copy, fs::Permissions::from_mode(0o555)))
            .map_err(|e| FailReason::Build(format!("cannot copy {}: {e}", built.display())))?;
        Ok(copy)
    }

    async fn libtest(
        &self,
        i: usize,
        test: &JudgeTest,
        executable: &Path,
    ) -> Result<(), FailReason> {
        let id = test.test.as_deref().unwrap_or(&test.name);
        let bin = executable.parent().unwrap_or(executable).to_path_buf();
        let bind = Bind {
            src: bin.clone(),
            dest: bin,
            read_only: true,
        };
        let script = self.setup.root().join("runner/libtest_report.sh");
        let (report, exit) = self
            .run_reported(
                i,
                test,
                Path::new("bash"),
                |file| vec![script.into(), file.into(), executable.into(), id.into()],
                &[bind],
            )
            .await?;
        report.decide(id, exit)
    }
}

/// `path` as a TOML string for `cargo --config key=value`.
fn toml_string(path: &Path) -> String {
    serde_json::to_string(&path.display().to_string()).unwrap_or_default()
}

/// The executable of integration test target `suite` in cargo's JSON messages: a test
/// artifact of that name built from `src` (the pristine suite file, so an agent's
/// `[[test]]` entry pointing elsewhere is not it).
fn test_executable(messages: &str, suite: &str, src: &Path) -> Option<PathBuf> {
    messages.lines().find_map(|line| {
        let msg: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
        let target = msg.get("target")?;
        let is_it = msg.get("reason")?.as_str()? == "compiler-artifact"
            && target.get("name")?.as_str()? == suite
            && target.get("kind")?.as_array()?.iter().any(|k| k == "test")
            && Path::new(target.get("src_path")?.as_str()?) == src
            && msg.get("profile")?.get("test")?.as_bool()?;
        is_it.then(|| msg.get("executable")?.as_str().map(PathBuf::from))?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_executable_is_the_one_built_from_the_suite_file() {
        let src = Path::new("/w/tests/records.rs");
        let good = r#"{"reason":"compiler-artifact","target":{"name":"records","kind":["test"],"src_path":"/w/tests/records.rs"},"profile":{"test":true},"executable":"/t/debug/deps/records-1"}"#;
        let elsewhere = r#"{"reason":"compiler-artifact","target":{"name":"records","kind":["test"],"src_path":"/w/src/fake.rs"},"profile":{"test":true},"executable":"/t/debug/deps/records-2"}"#;
        assert_eq!(
            test_executable(&format!("{elsewhere}\nnoise\n{good}\n"), "records", src),
            Some(PathBuf::from("/t/debug/deps/records-1"))
        );
        assert_eq!(test_executable(elsewhere, "records", src), None);
    }
}
