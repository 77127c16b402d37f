//! Running one shell command the way both the `bash` tool and the judge need it: `bash -c`
//! in the run's scratch directory, inside the run's sandbox ([`super::bwrap`]), stdout and
//! stderr merged into one pipe, output capped, and the command's whole process tree killed
//! when it times out or exits.
//!
//! The tree is reached three ways, whichever the host has: the sandbox's pid namespace
//! (killing `bwrap` ends every process in it, `setsid` or not), its `pids` cgroup, and the
//! process group the command leads (`process_group(0)`), which is all there is for an
//! unsandboxed run. The tree is also killed after a normal exit: a background process left
//! behind by one call must not outlive it (and would keep the output pipe open).
//!
//! A command whose sandbox could not be set up (cgroup, fork, bwrap) did not run: that is
//! [`ShellError::Sandbox`], recorded on the run's [`Confinement`] as well, never an exit
//! status the agent's code could have produced.

use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use super::bwrap::{Confinement, SandboxedCommand};

/// How long to keep reading output after the process group was killed: only what is
/// already in the pipe buffer is left, unless a process escaped the group.
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(200);

/// Characters of bwrap's message kept in a setup failure.
const SETUP_MESSAGE_CHARS: usize = 1000;

/// What to run and within which limits.
#[derive(Debug, Clone)]
pub struct ShellSpec<'a> {
    /// Shell text given to `bash -c`.
    pub command: &'a str,
    /// Working directory (the run's scratch copy), the only writable path.
    pub cwd: &'a Path,
    /// The sandbox and limits it runs in.
    pub confinement: &'a Confinement,
    /// Wall-clock limit; the process group is killed past it.
    pub timeout: Duration,
    /// Bytes of output kept: the first and the last half of this many.
    pub output_cap: usize,
}

/// How a command ended.
#[derive(Debug, Clone)]
pub struct ShellOutput {
    /// Exit status of the shell; `None` when it was killed for the timeout.
    pub status: Option<ExitStatus>,
    /// Whether the timeout killed it.
    pub timed_out: bool,
    /// Merged stdout/stderr, head and tail when over the cap (lossy UTF-8).
    pub output: String,
    /// Total bytes the command wrote, including the ones cut out.
    pub output_bytes: u64,
    /// Wall time.
    pub elapsed: Duration,
}

impl ShellOutput {
    /// Exit code 0 within the time limit.
    pub fn success(&self) -> bool {
        !self.timed_out && self.status.is_some_and(|s| s.success())
    }
}

/// Why a command did not run.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    /// Its sandbox could not be set up; the reason is also the run's
    /// [`Confinement::setup_failure`].
    #[error("the sandbox could not be set up: {0}")]
    Sandbox(String),
    /// Its output or exit could not be read.
    #[error("cannot run the command: {0}")]
    Io(#[from] io::Error),
}

/// Runs `spec.command` and returns once the process tree is gone and the output read.
///
/// # Errors
///
/// [`ShellError::Sandbox`] when the sandbox could not be set up (the command never ran);
/// [`ShellError::Io`] when its output or exit could not be read.
pub async fn run_shell(spec: &ShellSpec<'_>) -> Result<ShellOutput, ShellError> {
    let args: [OsString; 2] = ["-c".into(), spec.command.into()];
    let command = SandboxedCommand {
        program: "bash".as_ref(),
        args: &args,
        workdir: spec.cwd,
        read_only: &[],
        env: &[],
        binds: &[],
    };
    run_confined(spec.confinement, &command, spec.timeout, spec.output_cap).await
}

/// Runs any `command` in `confinement` the way [`run_shell`] runs shell text (the judge
/// starts its own runners, with their mounts, this way): output merged and capped at
/// `output_cap`, the whole tree killed past `timeout` and after exit.
///
/// # Errors
///
/// As [`run_shell`]: a sandbox that could not be set up is also recorded as the run's
/// [`Confinement::setup_failure`].
pub async fn run_confined(
    confinement: &Confinement,
    command: &SandboxedCommand<'_>,
    timeout: Duration,
    output_cap: usize,
) -> Result<ShellOutput, ShellError> {
    let started = Instant::now();
    let setup_failed = |why: String| {
        confinement.record_setup_failure(why.clone());
        ShellError::Sandbox(why)
    };
    // CLOEXEC so that commands spawned concurrently by other runs do not inherit our
    // write end (which would keep this pipe open until they exit).
    let (read_end, write_end) = nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(io::Error::from)?;
    let (mut command, tree) = confinement
        .command(command)
        .map_err(|e| ShellError::Sandbox(format!("cannot prepare the sandbox: {e}")))?;
    command
        .stdout(Stdio::from(write_end.try_clone()?))
        .stderr(Stdio::from(write_end));
    // A fork the runner cannot make (a process limit reached) is the host's, not the agent's.
    let mut child = command
        .spawn()
        .map_err(|e| setup_failed(format!("cannot start the sandboxed command: {e}")))?;
    // The parent's copies of the write end live in `command`; drop them so EOF can come.
    drop(command);
    // Kills the group when this function returns or its future is dropped (shutdown).
    let group = GroupKill(
        child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw),
    );
    let mut reader = pipe::Receiver::from_owned_fd(read_end)?;
    let mut capture = Capture::new(output_cap);
    let deadline = tokio::time::Instant::from_std(started)
        .checked_add(timeout)
        .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400 * 365));

    let mut buf = vec![0u8; 16 * 1024];
    let mut status = None;
    let mut timed_out = false;
    let mut eof = false;
    while status.is_none() && !timed_out {
        tokio::select! {
            read = reader.read(&mut buf), if !eof => match read {
                Ok(0) => eof = true,
                Ok(n) => capture.push(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => eof = true,
            },
            exited = child.wait() => status = Some(exited?),
            _ = tokio::time::sleep_until(deadline) => timed_out = true,
        }
    }
    group.kill();
    tree.kill();
    if timed_out {
        // The leader is dead or dying after the group kill; reap it.
        let _ = child.wait().await;
    }
    if !eof {
        let _ = tokio::time::timeout(DRAIN_AFTER_KILL, async {
            loop {
                match reader.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => capture.push(&buf[..n]),
                }
            }
        })
        .await;
    }
    let (output, output_bytes) = capture.finish();
    if !timed_out && !tree.setup_completed() {
        // bwrap's own message is what the command printed.
        let message: String = output.trim().chars().take(SETUP_MESSAGE_CHARS).collect();
        return Err(setup_failed(format!(
            "bwrap did not start the command: {message}"
        )));
    }
    Ok(ShellOutput {
        status: if timed_out { None } else { status },
        timed_out,
        output,
        output_bytes,
        elapsed: started.elapsed(),
    })
}

/// The command's process group, killed with SIGKILL on [`GroupKill::kill`] and on drop.
struct GroupKill(Option<Pid>);

impl GroupKill {
    fn kill(&self) {
        if let Some(pgid) = self.0 {
            match killpg(pgid, Signal::SIGKILL) {
                Ok(()) | Err(Errno::ESRCH) => {}
                Err(e) => {
                    tracing::warn!(pgid = pgid.as_raw(), error = %e, "cannot kill process group")
                }
            }
        }
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Head and tail of a byte stream, within a cap.
#[derive(Debug)]
pub struct Capture {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    half: usize,
    total: u64,
}

impl Capture {
    /// An empty capture that keeps at most `cap` bytes, half head and half tail.
    pub fn new(cap: usize) -> Self {
        let half = cap / 2;
        Capture {
            head: Vec::with_capacity(half.min(64 * 1024)),
            tail: std::collections::VecDeque::new(),
            half,
            total: 0,
        }
    }

    /// Takes the next bytes of the stream.
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.half.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if bytes.len() >= self.half {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.half..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.half);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    /// The text (head, a marker with the number of bytes cut, tail) and the total size.
    pub fn finish(self) -> (String, u64) {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.total > kept {
            text.push_str(&format!(
                "\n[... {} bytes of output cut ...]\n",
                self.total - kept
            ));
        }
        let tail: Vec<u8> = self.tail.into_iter().collect();
        text.push_str(&String::from_utf8_lossy(&tail));
        (text, self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain processes with generous limits: these tests are about the pipe and the
    /// timeout, not the sandbox (tests/tests/it/runner/sandbox.rs covers that).
    fn bare() -> Confinement {
        Confinement::unsandboxed(&bench_schemas::SandboxLimits {
            memory_mb: Some(4096),
            cpu_cores: 1.0,
            disk_mb: 1024,
            network_enabled: false,
            execution_timeout_ms: 60_000,
        })
    }

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut c = Capture::new(8);
        c.push(b"abcdefgh");
        c.push(b"ijklmnop");
        let (text, total) = c.finish();
        assert_eq!(total, 16);
        assert!(text.starts_with("abcd"), "{text}");
        assert!(text.ends_with("mnop"), "{text}");
        assert!(text.contains("8 bytes of output cut"), "{text}");
    }

    #[test]
    fn capture_under_cap_is_verbatim() {
        let mut c = Capture::new(100);
        c.push(b"hello ");
        c.push(b"world");
        assert_eq!(c.finish(), ("hello world".to_owned(), 11));
    }

    #[tokio::test]
    async fn merges_streams_and_reports_status() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = run_shell(&ShellSpec {
            command: "echo out; echo err >&2; exit 3",
            cwd: dir.path(),
            confinement: &bare(),
            timeout: Duration::from_secs(10),
            output_cap: 1024,
        })
        .await
        .expect("runs");
        assert_eq!(out.status.and_then(|s| s.code()), Some(3));
        assert!(!out.timed_out);
        assert!(out.output.contains("out") && out.output.contains("err"));
    }

    #[tokio::test]
    async fn background_child_does_not_hold_the_call() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = run_shell(&ShellSpec {
            command: "sleep 30 & echo done",
            cwd: dir.path(),
            confinement: &bare(),
            timeout: Duration::from_secs(20),
            output_cap: 1024,
        })
        .await
        .expect("runs");
        assert!(out.success());
        assert!(out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
    }

    #[tokio::test]
    async fn timeout_kills_and_reports() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = run_shell(&ShellSpec {
            command: "echo start; sleep 30",
            cwd: dir.path(),
            confinement: &bare(),
            timeout: Duration::from_millis(300),
            output_cap: 1024,
        })
        .await
        .expect("runs");
        assert!(out.timed_out);
        assert!(out.status.is_none());
        assert!(out.output.contains("start"));
    }
}
