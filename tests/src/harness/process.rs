//! The life cycle of one server child process: find the binary, spawn it with its output
//! in a log file, wait until a probe says it is ready, stop it with SIGTERM or SIGKILL;
//! and the start-up and restart of a [`Server`] built on one, retrying on fresh ports.
//!
//! Shared by [`NatsServer`](super::NatsServer),
//! [`ClickHouseServer`](super::ClickHouseServer) and the nodes of
//! [`NatsCluster`](super::NatsCluster); knows nothing about either protocol.

use std::env;
use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// How long a server may take to become ready before the harness gives up. A replicated
/// ClickHouse restarted after SIGKILL on a busy 2-core machine was seen to need more than
/// 20 s; a ready server answers at once, so a generous limit only delays a real failure.
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a server may take to exit after SIGTERM before it gets SIGKILL.
pub(crate) const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Timeout of one readiness probe (TCP connect, HTTP request).
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Start attempts when a freshly picked port turns out to be taken.
const START_ATTEMPTS: usize = 3;

/// Pause between readiness probes and exit checks.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Lines of server log quoted in panic messages.
const LOG_TAIL_LINES: usize = 40;

/// Finds `name` in `PATH`, or panics telling how to install it.
pub(crate) fn find_binary(name: &str) -> PathBuf {
    let path = env::var_os("PATH").unwrap_or_default();
    env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
        .unwrap_or_else(|| {
            panic!("`{name}` not found on PATH; run deploy/local/install.sh (as root)")
        })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path)
        .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Why a server did not become ready.
#[derive(Debug)]
pub(crate) enum StartFailure {
    /// The process exited during start-up.
    Exited(ExitStatus),
    /// The probe did not succeed within [`READY_TIMEOUT`].
    TimedOut,
}

impl fmt::Display for StartFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exited(status) => write!(f, "exited during start-up ({status})"),
            Self::TimedOut => write!(f, "not ready after {READY_TIMEOUT:?}"),
        }
    }
}

/// What a [`ServerProcess`] runs, and where its output goes.
#[derive(Debug)]
pub(crate) struct ServerCommand {
    /// Human name for messages, e.g. `nats-server`.
    pub(crate) name: &'static str,
    /// The binary ([`find_binary`]).
    pub(crate) program: PathBuf,
    /// Its arguments.
    pub(crate) args: Vec<OsString>,
    /// Environment variables added to the harness's own.
    pub(crate) envs: Vec<(OsString, OsString)>,
    /// The server's working directory (its temp dir).
    pub(crate) working_dir: PathBuf,
    /// stdout and stderr of every run, appended, so a restart keeps the earlier history.
    pub(crate) log_path: PathBuf,
    /// Log files the server writes itself, quoted after `log_path` in panic messages.
    pub(crate) server_logs: Vec<PathBuf>,
}

/// One server process, started and stopped any number of times with the same command.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    /// What runs; the same for every start.
    command: ServerCommand,
    /// The running child, if any. A mutex so every method takes `&self` and servers can
    /// be shared (`Arc`) between a test and the tasks it disturbs.
    child: Mutex<Option<Child>>,
}

/// A harness server built on one [`ServerProcess`], with its readiness probe.
pub(crate) trait Server {
    /// The server's process.
    fn process(&self) -> &ServerProcess;
    /// Whether the server answers the way its clients need (one probe, bounded by
    /// [`PROBE_TIMEOUT`]).
    fn is_ready(&self) -> bool;
}

/// Starts the server `prepare` returns and waits until it is ready. When it failed because
/// another process took one of its freshly picked ports, prepares a new one (new ports)
/// and tries again, [`START_ATTEMPTS`] times in all.
///
/// # Panics
///
/// If the server does not become ready; the message quotes the end of its logs.
pub(crate) fn start_on_free_ports<S: Server>(mut prepare: impl FnMut() -> S) -> S {
    let mut attempt = 1;
    loop {
        let server = prepare();
        let process = server.process();
        match process.spawn(|| server.is_ready()) {
            Ok(()) => return server,
            Err(failure) if attempt < START_ATTEMPTS && process.failed_on_taken_port(&failure) => {
                attempt += 1;
            }
            Err(failure) => panic!("{}", process.failure_message(&failure)),
        }
    }
}

/// Stops `server` if it runs, then starts it again with the same command (same ports,
/// data and config) and waits until it is ready.
///
/// # Panics
///
/// If it does not come back within [`READY_TIMEOUT`] (for example because something else
/// took its port meanwhile).
pub(crate) fn restart(server: &impl Server) {
    let process = server.process();
    process.stop();
    if let Err(failure) = process.spawn(|| server.is_ready()) {
        panic!("{}", process.failure_message(&failure));
    }
}

/// The life-cycle methods of a harness server, the same for every one: its log, stop,
/// crash, restart and liveness. Expanded inside the server's `impl` block; the server
/// implements [`Server`] and keeps its [`ServerProcess`] in the field `process`.
macro_rules! life_cycle_methods {
    () => {
        /// The file receiving the server's console output, across restarts.
        pub fn log_path(&self) -> &std::path::Path {
            self.process.log_path()
        }

        /// Stops the server gracefully: SIGTERM, wait (SIGKILL after 30 s). No-op if
        /// stopped.
        pub fn stop(&self) {
            self.process.stop();
        }

        /// Kills the server with SIGKILL, like a crash. No-op if stopped.
        pub fn kill(&self) {
            self.process.kill();
        }

        /// Stops the server if it runs, then starts it again with the same ports, config
        /// and data, and waits until it is ready.
        ///
        /// # Panics
        ///
        /// If it does not come back within 60 s (for example because something else took
        /// its port meanwhile).
        pub fn restart(&self) {
            $crate::harness::process::restart(self);
        }

        /// Whether the server process is alive.
        pub fn is_running(&self) -> bool {
            self.process.is_running()
        }

        /// The server's process id while it runs.
        pub fn pid(&self) -> Option<u32> {
            self.process.pid()
        }
    };
}
pub(crate) use life_cycle_methods;

impl ServerProcess {
    /// Describes the process; nothing runs until [`spawn`](Self::spawn).
    pub(crate) fn new(command: ServerCommand) -> Self {
        Self {
            command,
            child: Mutex::new(None),
        }
    }

    /// The file receiving the server's stdout and stderr.
    pub(crate) fn log_path(&self) -> &Path {
        &self.command.log_path
    }

    /// Starts the process, then polls `probe` until it returns true.
    ///
    /// # Panics
    ///
    /// If the process is already running or cannot be spawned at all.
    pub(crate) fn spawn(&self, mut probe: impl FnMut() -> bool) -> Result<(), StartFailure> {
        {
            let mut slot = self.lock();
            assert!(
                !Self::running(&mut slot),
                "{} is already running (pid {:?})",
                self.command.name,
                slot.as_ref().map(Child::id)
            );
            let command = &self.command;
            let log = self.open_log();
            let err_log = log
                .try_clone()
                .unwrap_or_else(|e| panic!("clone handle of {}: {e}", command.log_path.display()));
            let child = Command::new(&command.program)
                .args(&command.args)
                .envs(command.envs.iter().map(|(k, v)| (k, v)))
                .current_dir(&command.working_dir)
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(err_log)
                .spawn()
                .unwrap_or_else(|e| {
                    panic!(
                        "spawn {} ({}): {e}",
                        command.name,
                        command.program.display()
                    )
                });
            *slot = Some(child);
        }

        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = self.exit_status() {
                return Err(StartFailure::Exited(status));
            }
            if probe() {
                // The probe may have reached another process that took our port while
                // ours was failing to bind it: only count it if ours still lives.
                return match self.exit_status() {
                    Some(status) => Err(StartFailure::Exited(status)),
                    None => Ok(()),
                };
            }
            if Instant::now() >= deadline {
                return Err(StartFailure::TimedOut);
            }
            thread::sleep(POLL_INTERVAL);
        }
    }

    /// Whether the process runs (spawned and not yet exited).
    pub(crate) fn is_running(&self) -> bool {
        Self::running(&mut self.lock())
    }

    /// The process id while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        let mut slot = self.lock();
        if Self::running(&mut slot) {
            slot.as_ref().map(Child::id)
        } else {
            None
        }
    }

    /// Sends SIGTERM and waits up to [`STOP_TIMEOUT`]; then SIGKILL. No-op if not running.
    pub(crate) fn stop(&self) {
        let mut slot = self.lock();
        let Some(child) = slot.as_mut() else { return };
        if matches!(child.try_wait(), Ok(Some(_))) {
            *slot = None;
            return;
        }
        // std has no SIGTERM and the workspace forbids unsafe code (libc::kill): use the
        // shell's `kill` builtin, present wherever `sh` is.
        let pid = child.id().to_string();
        let sent = Command::new("sh")
            .args(["-c", "kill -TERM \"$1\"", "sh", &pid])
            .status()
            .map(|status| status.success())
            .unwrap_or(false);
        if sent {
            let deadline = Instant::now() + STOP_TIMEOUT;
            while Instant::now() < deadline {
                if matches!(child.try_wait(), Ok(Some(_))) {
                    *slot = None;
                    return;
                }
                thread::sleep(POLL_INTERVAL);
            }
        }
        Self::kill_child(child);
        *slot = None;
    }

    /// Sends SIGKILL and reaps the process. No-op if not running. Never panics, so it is
    /// safe in `Drop`.
    pub(crate) fn kill(&self) {
        let mut slot = self.lock();
        if let Some(child) = slot.as_mut() {
            Self::kill_child(child);
        }
        *slot = None;
    }

    /// The last lines of each log (console output first), each under a header naming
    /// its file; for panic messages and for recognising start-up errors.
    pub(crate) fn log_tail(&self) -> String {
        let mut out = String::new();
        let command = &self.command;
        for path in std::iter::once(&command.log_path).chain(&command.server_logs) {
            let text = match fs::read(path) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => format!("<cannot read: {e}>"),
            };
            let lines: Vec<&str> = text.lines().collect();
            let start = lines.len().saturating_sub(LOG_TAIL_LINES);
            out.push_str(&format!("---- {} (last lines)\n", path.display()));
            out.push_str(&lines[start..].join("\n"));
            out.push('\n');
        }
        out
    }

    /// A panic message for a failed start, with the log tails.
    pub(crate) fn failure_message(&self, failure: &StartFailure) -> String {
        format!("{} {failure}\n{}----", self.command.name, self.log_tail())
    }

    /// Whether the logs say a port could not be bound, the one start failure worth
    /// retrying on other ports.
    pub(crate) fn failed_on_taken_port(&self, failure: &StartFailure) -> bool {
        matches!(failure, StartFailure::Exited(_))
            && self
                .log_tail()
                .to_ascii_lowercase()
                .contains("address already in use")
    }

    fn exit_status(&self) -> Option<ExitStatus> {
        let mut slot = self.lock();
        let status = slot
            .as_mut()
            .and_then(|child| child.try_wait().ok().flatten());
        if status.is_some() {
            *slot = None;
        }
        status
    }

    fn running(slot: &mut Option<Child>) -> bool {
        match slot.as_mut().map(Child::try_wait) {
            Some(Ok(None)) => true,
            Some(Ok(Some(_)) | Err(_)) => {
                *slot = None;
                false
            }
            None => false,
        }
    }

    fn kill_child(child: &mut Child) {
        // Errors mean it already exited; `wait` then reaps it either way.
        let _ = child.kill();
        let _ = child.wait();
    }

    fn open_log(&self) -> File {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap_or_else(|e| panic!("open log {}: {e}", self.log_path().display()))
    }

    fn lock(&self) -> MutexGuard<'_, Option<Child>> {
        // A panic while holding the lock leaves the slot consistent (it only holds the
        // child handle), so poisoning carries no information here.
        self.child.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Processes on this host whose command line contains `marker`: what tests use to check
/// that nothing a run started outlived it.
pub fn processes_with(marker: &str) -> Vec<String> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| fs::read(e.path().join("cmdline")).ok())
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .filter(|cmd| cmd.contains(marker))
        .collect()
}
