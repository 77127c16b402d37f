//! The agent's tools, acting in the run's sandbox.
//!
//! [`Toolbox::call`] takes a [`ToolRequest`] from a policy, parses it into a
//! [`ToolCommand`], runs it inside the run's [`Scratch`] and returns a [`ToolOutcome`]: the
//! observation text for the policy, the `exit_kind` and the evidence footprint for the
//! `tool_call` event. A tool never fails the run: bad arguments, escaping paths and missing
//! files are `user_error`, broken tools are `system_error`, time limits are `timeout`.
//!
//! The sandbox itself (the scratch copy, path confinement, bwrap, seccomp, the network, the
//! confined shell) is the `bench-sandbox` crate (`agent-runner/sandbox/`).
//!
//! - the request: [`ToolRequest`] / [`ToolCommand`] (`bench-task`).
//! - `outcome`: [`ToolOutcome`], what a call returns.
//! - `files`: `view`, `str_replace`, `write_file`: in-process, off the async runtime,
//!   never through a link and never on anything but regular files.
//! - `grep`: the `grep` tool.
//! - [`footprint`]: lines changed, test files, what a shell command changed.

mod files;
pub mod footprint;
mod grep;
mod outcome;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bench_sandbox::{run_shell, Capture, Confinement, Scratch, ShellSpec};
use bench_schemas::{EvidenceFootprint, ExitKind, RetryPolicy, RunConfig};

use bench_task::ToolCommand;
pub use bench_task::ToolRequest;
pub use outcome::ToolOutcome;

use footprint::Snapshot;

/// Default cap of the observation text one call returns, bytes.
pub const DEFAULT_OUTPUT_CAP: usize = 64 * 1024;

/// Limits of the tools of one run.
#[derive(Debug, Clone)]
pub struct ToolLimits {
    /// Per call time limit (`tool_timeout_ms`).
    pub timeout: Duration,
    /// Observation bytes kept per call.
    pub output_cap: usize,
    /// Retries of timed-out calls (`retry_policy`).
    pub retry: RetryPolicy,
    /// Tools the agent may call (`available_tools`); `submit` is always allowed.
    pub available: Vec<String>,
}

impl ToolLimits {
    /// The limits a run config sets.
    pub fn from_config(config: &RunConfig, output_cap: usize) -> Self {
        ToolLimits {
            // A scenario always states it (scenario::file); unstated, a call may take
            // the run's whole time.
            timeout: Duration::from_millis(
                config
                    .tool_timeout_ms
                    .unwrap_or(config.execution_timeout_ms),
            ),
            output_cap,
            retry: config.retry_policy.clone(),
            available: config.available_tools.clone(),
        }
    }
}

/// The tools of one run, bound to its sandbox.
#[derive(Debug)]
pub struct Toolbox {
    /// The scratch copy; shared with the blocking file-tool tasks.
    sandbox: Arc<Scratch>,
    /// Time, output and tool limits.
    limits: ToolLimits,
    /// Where `bash` commands run.
    confinement: Confinement,
}

impl Toolbox {
    /// Tools acting in `sandbox` within `limits`, their commands confined by `confinement`.
    pub fn new(sandbox: Scratch, limits: ToolLimits, confinement: Confinement) -> Self {
        Toolbox {
            sandbox: Arc::new(sandbox),
            limits,
            confinement,
        }
    }

    /// The sandbox.
    pub fn scratch(&self) -> &Scratch {
        &self.sandbox
    }

    /// The process confinement.
    pub fn confinement(&self) -> &Confinement {
        &self.confinement
    }

    /// Runs one request. `budget` bounds its time further than the per-call timeout (the
    /// rest of the run's execution time).
    pub async fn call(&self, request: &ToolRequest, budget: Duration) -> ToolOutcome {
        let started = Instant::now();
        let mut retries = 0;
        let mut outcome = loop {
            let outcome = self
                .call_once(request, budget.saturating_sub(started.elapsed()))
                .await;
            let retry = &self.limits.retry;
            if outcome.exit_kind != ExitKind::Timeout
                || !retry.retry_on_timeout
                || retries >= retry.max_retries
                || started.elapsed() >= budget
            {
                break outcome;
            }
            tokio::time::sleep(crate::backoff::delay(retry, retries)).await;
            retries += 1;
        };
        outcome.retries = retries;
        outcome.latency = started.elapsed();
        if outcome.observation.len() > self.limits.output_cap {
            let mut capture = Capture::new(self.limits.output_cap);
            capture.push(outcome.observation.as_bytes());
            outcome.observation = capture.finish().0;
        }
        outcome
    }

    async fn call_once(&self, request: &ToolRequest, budget: Duration) -> ToolOutcome {
        if request.tool != "submit" && !self.limits.available.contains(&request.tool) {
            return ToolOutcome::failed(
                ExitKind::UserError,
                format!(
                    "tool {:?} is not available; available: {}",
                    request.tool,
                    self.limits.available.join(", ")
                ),
            );
        }
        let command = match request.parse() {
            Ok(c) => c,
            Err(e) => return ToolOutcome::failed(ExitKind::UserError, e),
        };
        match command {
            ToolCommand::Bash { command } => self.bash(&command, budget).await,
            ToolCommand::Submit {} => ToolOutcome {
                submitted: true,
                ..ToolOutcome::done("submitted\n".into(), EvidenceFootprint::default())
            },
            file_tool => self.in_process(file_tool, budget).await,
        }
    }

    /// A file tool, on a blocking thread and within the call's time limit: a file system
    /// that stalls (a FIFO that slipped through, a hung mount) costs a thread, never the
    /// runtime, and the call still ends on time.
    async fn in_process(&self, command: ToolCommand, budget: Duration) -> ToolOutcome {
        let timeout = self.limits.timeout.min(budget);
        let sb = Arc::clone(&self.sandbox);
        let work = tokio::task::spawn_blocking(move || match command {
            ToolCommand::View {
                path,
                start_line,
                end_line,
            } => files::view(&sb, &path, start_line, end_line),
            ToolCommand::StrReplace { path, old, new } => {
                files::str_replace(&sb, &path, &old, &new)
            }
            ToolCommand::WriteFile { path, content } => files::write_file(&sb, &path, &content),
            ToolCommand::Grep { pattern, path } => grep::grep(&sb, &pattern, path.as_deref()),
            ToolCommand::Bash { .. } | ToolCommand::Submit {} => {
                ToolOutcome::failed(ExitKind::SystemError, "not an in-process tool".to_owned())
            }
        });
        match tokio::time::timeout(timeout, work).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(e)) => ToolOutcome::failed(ExitKind::SystemError, format!("tool failed: {e}")),
            Err(_) => ToolOutcome::failed(
                ExitKind::Timeout,
                format!(
                    "file tool gave no answer within {} ms (tool timeout)",
                    timeout.as_millis()
                ),
            ),
        }
    }

    async fn bash(&self, command: &str, budget: Duration) -> ToolOutcome {
        let root = self.sandbox.root();
        let timeout = self.limits.timeout.min(budget);
        let before = Snapshot::take(root);
        let spec = ShellSpec {
            command,
            cwd: root,
            confinement: &self.confinement,
            timeout,
            output_cap: self.limits.output_cap,
        };
        let output = match run_shell(&spec).await {
            Ok(o) => o,
            // A sandbox that could not be set up also ends the run (`exit_environment`).
            Err(e) => return ToolOutcome::failed(ExitKind::SystemError, e.to_string()),
        };
        let mut footprint = before.footprint_since(&Snapshot::take(root));
        footprint.bytes_read = output.output_bytes;
        let mut observation = output.output;
        if output.timed_out {
            let message = format!(
                "killed after {} ms (tool timeout); the whole process tree was killed",
                timeout.as_millis()
            );
            observation.push_str(&format!("\n[{message}]\n"));
            return ToolOutcome {
                observation,
                footprint,
                ..ToolOutcome::failed(ExitKind::Timeout, message)
            };
        }
        let status = output.status;
        let code = status.and_then(|s| s.code());
        use std::os::unix::process::ExitStatusExt;
        let signal = status.and_then(|s| s.signal());
        observation.push_str(&match (code, signal) {
            (Some(code), _) => format!("[exit code {code}]\n"),
            (None, Some(sig)) => format!("[killed by signal {sig}]\n"),
            (None, None) => "[exit status unknown]\n".to_owned(),
        });
        let (kind, message) = classify_exit(code, signal, &observation);
        ToolOutcome {
            observation,
            exit_kind: kind,
            message,
            ..ToolOutcome::done(String::new(), footprint)
        }
    }
}

/// How a finished `bash` call ended, and why when it hit a limit. A shell reports a child
/// killed by signal N as exit code 128 + N (and so does `bwrap`), so both forms count.
fn classify_exit(
    code: Option<i32>,
    signal: Option<i32>,
    output: &str,
) -> (ExitKind, Option<String>) {
    let signal = signal.or(code.filter(|c| (129..=192).contains(c)).map(|c| c - 128));
    let limit = |kind, text: &str| (kind, Some(text.to_owned()));
    match (code, signal) {
        (Some(0), _) => (ExitKind::Ok, None),
        // SIGKILL the runner did not send: the kernel's OOM killer is the usual sender.
        (_, Some(9)) => limit(ExitKind::Oom, "killed by SIGKILL (out of memory?)"),
        (_, Some(24)) => limit(
            ExitKind::Timeout,
            "CPU time limit of the sandbox exceeded (SIGXCPU)",
        ),
        (_, Some(25)) => limit(
            ExitKind::SystemError,
            "file size limit of the sandbox exceeded (SIGXFSZ; sandbox_limits.disk_mb)",
        ),
        _ if output.contains("MemoryError")
            || output.contains("Cannot allocate memory")
            || output.contains("memory allocation of") =>
        {
            limit(
                ExitKind::Oom,
                "an allocation failed under the sandbox's memory limit (sandbox_limits.memory_mb)",
            )
        }
        _ if output.contains("fork: retry")
            || output.contains("fork: Resource temporarily unavailable")
            || output.contains("Cannot fork") =>
        {
            limit(
                ExitKind::SystemError,
                "process limit of the sandbox reached (fork failed)",
            )
        }
        _ => (ExitKind::Deterministic, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_hits_are_named() {
        let kind = |code, signal, out| classify_exit(code, signal, out).0;
        assert_eq!(kind(Some(0), None, ""), ExitKind::Ok);
        assert_eq!(
            kind(Some(1), None, "AssertionError"),
            ExitKind::Deterministic
        );
        // 128 + 9 from the shell or bwrap is SIGKILL too.
        assert_eq!(kind(Some(137), None, ""), ExitKind::Oom);
        assert_eq!(kind(None, Some(24), ""), ExitKind::Timeout);
        assert_eq!(kind(Some(153), None, ""), ExitKind::SystemError);
        assert_eq!(kind(Some(1), None, "MemoryError\n"), ExitKind::Oom);
        // Text the agent can print is not a sandbox failure (bwrap's status pipe says
        // when one is: `bench_sandbox::run_shell`).
        assert_eq!(
            kind(Some(1), None, "bwrap: Can't mount proc\n"),
            ExitKind::Deterministic
        );
        assert!(classify_exit(Some(137), None, "").1.is_some());
    }
}
