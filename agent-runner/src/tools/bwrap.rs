//! The agent sandbox: every process an agent causes (the `bash` tool, each judge test, an
//! `exec` agent and all their children) starts through [`Confinement::command`], which
//! wraps it in bubblewrap (`bwrap`) with the run's limits.
//!
//! What a sandboxed process sees:
//! - the host's system directories read-only (`/usr` and the `/bin`, `/sbin`, `/lib*`
//!   links or directories), and of `/etc` only what toolchains read: the dynamic linker
//!   cache, `alternatives`, user and group names, name-service config, time zone and TLS
//!   roots (`ETC_ENTRIES`); the resolver files only when the network is enabled;
//! - toolchains that live outside the system directories, read-only: the Rust sysroot the
//!   runner's `rustc` reports, and every directory in `BENCH_SANDBOX_TOOLCHAINS`
//!   (colon-separated); their `bin/` goes first on `PATH`;
//! - the run's scratch copy, read-write, at its host path: the only writable host path;
//! - a private `/tmp` (also `HOME`), fresh `/proc` and a minimal `/dev`;
//! - new pid, ipc and uts namespaces, a new network namespace unless
//!   `sandbox_limits.network_enabled`, a new session (no terminal to inject into);
//! - an environment built from an allowlist: `PATH`, `HOME`, `LANG`, `CARGO_HOME` and the
//!   variables the caller documents for its process. Nothing else of the runner's
//!   environment (API keys, NATS and ClickHouse settings) reaches it.
//!
//! Limits, enforced rather than recorded: `prlimit` sets rlimits before `bwrap` starts
//! (address space = `memory_mb`, CPU seconds, file size = `disk_mb`, open files, processes),
//! and where the host lets the runner create cgroups (v1 `pids` hierarchy, or v2 with the
//! `pids` controller delegated: systemd `Delegate=yes`, the runner then moving itself into
//! a leaf of its cgroup, `enable_delegated_pids`) each sandbox gets its own `pids.max`,
//! which holds a fork bomb even for root, whom `RLIMIT_NPROC` does not bind. Time limits are the caller's:
//! `bwrap --die-with-parent` in its own pid namespace means that killing the `bwrap`
//! process ends every process of the sandbox, and [`TreeGuard`] kills what is left in the
//! cgroup.
//!
//! Availability is probed once per process ([`host`]): `bwrap` must be installed and able
//! to create the namespaces (some containers forbid user namespaces). Without it a run may
//! still execute as plain processes ([`Confinement::unsandboxed`]); `run_start.sandbox`
//! then says `none`, and the limits that still hold (rlimits, cgroup, timeouts) are listed.
//!
//! A sandbox that cannot be set up for one command (its cgroup cannot be created or
//! joined, the runner cannot fork, bwrap fails: a namespace or process limit reached, a
//! mount refused) is not the agent's doing, so it must not become part of a result. Whether
//! bwrap set the sandbox up is read from bwrap itself, never from the command's output
//! (which the agent writes): bwrap writes `"exit-code"` on its `--json-status-fd` only
//! after the sandbox was set up and its command ran ([`TreeGuard::setup_completed`]). The
//! first such failure is kept by the run's [`Confinement`] ([`Confinement::setup_failure`]),
//! which ends the run `exit_environment`, unjudged.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, OnceLock};

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use schemas::{EnforcedLimit, SandboxInfo, SandboxLimits};
use tokio::process::Command;

/// Host directories bound read-only when they are directories, recreated as the same
/// symlinks when they are links (merged-`/usr` systems).
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// Entries of `/etc` bound read-only: what compilers, interpreters and test runners read
/// (dynamic linker cache and config, `alternatives` links, user and group names for `ls -l`
/// and `getpass`, name-service config, time zone, TLS roots). Not the rest of `/etc`: it
/// can hold host secrets and service credentials.
const ETC_ENTRIES: &[&str] = &[
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "localtime",
    "timezone",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
];

/// Entries of `/etc` bound only when the network is enabled: name resolution.
const ETC_NETWORK_ENTRIES: &[&str] = &["hosts", "host.conf", "resolv.conf", "gai.conf"];

/// `PATH` inside the sandbox, after the toolchains' `bin/` directories.
const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// `HOME` inside the sandbox: on its private `/tmp`, so caches never land in the workspace.
const SANDBOX_HOME: &str = "/tmp";

/// Processes (and threads) one sandbox may have at once.
pub const MAX_PROCESSES: u64 = 256;

/// Open files per process.
pub const MAX_OPEN_FILES: u64 = 1024;

/// Extra toolchain directories to bind read-only, colon-separated.
pub const TOOLCHAINS_ENV: &str = "BENCH_SANDBOX_TOOLCHAINS";

/// What this host offers, probed once per process by [`host`].
#[derive(Debug, Clone)]
pub struct HostSupport {
    /// `bwrap --version` when bwrap works here, or why it does not.
    bwrap: Result<String, String>,
    /// Whether util-linux `prlimit` is there to set rlimits before exec.
    prlimit: bool,
    /// The cgroup directory under which per-sandbox `pids` cgroups can be created.
    pids_cgroup: Option<PathBuf>,
    /// Toolchain directories outside [`SYSTEM_DIRS`], bound read-only.
    toolchains: Vec<PathBuf>,
}

impl HostSupport {
    /// The bwrap version, or why bwrap cannot be used on this host.
    pub fn bwrap(&self) -> Result<&str, &str> {
        self.bwrap.as_deref().map_err(String::as_str)
    }
}

/// Probes the host on first use: bwrap creating every namespace a sandbox uses, `prlimit`,
/// a writable `pids` cgroup, toolchains.
pub fn host() -> &'static HostSupport {
    static HOST: OnceLock<HostSupport> = OnceLock::new();
    HOST.get_or_init(|| {
        let support = HostSupport {
            bwrap: probe_bwrap(),
            prlimit: std::process::Command::new("prlimit")
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()),
            pids_cgroup: probe_pids_cgroup(),
            toolchains: toolchains(),
        };
        tracing::info!(bwrap = ?support.bwrap, prlimit = support.prlimit, pids_cgroup = ?support.pids_cgroup, toolchains = ?support.toolchains, "agent sandbox support");
        support
    })
}

fn probe_bwrap() -> Result<String, String> {
    let version = std::process::Command::new("bwrap")
        .arg("--version")
        .output()
        .map_err(|e| format!("bwrap is not installed or not runnable: {e}"))?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
    let mut probe = std::process::Command::new("bwrap");
    probe
        .args(system_binds())
        .args([
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-net",
        ])
        .args([
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--die-with-parent",
            "true",
        ]);
    let out = probe
        .output()
        .map_err(|e| format!("cannot run bwrap: {e}"))?;
    if out.status.success() {
        Ok(version)
    } else {
        Err(format!(
            "bwrap cannot create namespaces here (user namespaces disabled?): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A cgroup directory of this process (v1 `pids` hierarchy or v2) in which a child with
/// `pids.max` can be created, or `None`.
fn probe_pids_cgroup() -> Option<PathBuf> {
    let own = fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut candidates = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "pids") {
            candidates.push(Path::new("/sys/fs/cgroup/pids").join(path));
        } else if controllers.is_empty() {
            for base in [
                Path::new("/sys/fs/cgroup"),
                Path::new("/sys/fs/cgroup/unified"),
            ] {
                let base = base.join(path);
                // Never below the root cgroup: it holds every process of the host.
                if !path.is_empty() && base.join("cgroup.controllers").is_file() {
                    if let Err(e) = enable_delegated_pids(&base) {
                        tracing::debug!(cgroup = %base.display(), error = %e, "no delegated pids controller");
                    }
                }
                candidates.push(base);
            }
        }
    }
    candidates.into_iter().find(|base| {
        PidsCgroup::create(base, 1)
            .map(|cg| {
                cg.remove();
            })
            .is_ok()
    })
}

/// On cgroup v2, a cgroup delegated to the runner (systemd `Delegate=yes`) offers the
/// `pids` controller to children only once `+pids` is in its `cgroup.subtree_control`,
/// which the kernel allows only while no process is in it ("no internal processes"):
/// the runner moves itself (its own process, nothing else) into a leaf child `runner`
/// first, then enables `pids`, so that sandbox cgroups can be made beside that leaf.
fn enable_delegated_pids(base: &Path) -> io::Result<()> {
    let lists_pids = |file: &str| -> io::Result<bool> {
        Ok(fs::read_to_string(base.join(file))?
            .split_whitespace()
            .any(|c| c == "pids"))
    };
    if !lists_pids("cgroup.controllers")? {
        return Err(io::Error::other("pids is not delegated to this cgroup"));
    }
    if lists_pids("cgroup.subtree_control")? {
        return Ok(());
    }
    let leaf = base.join("runner");
    match fs::create_dir(&leaf) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    fs::write(leaf.join("cgroup.procs"), std::process::id().to_string())?;
    fs::write(base.join("cgroup.subtree_control"), "+pids")
}

/// The Rust sysroot of the runner's `rustc` and the directories of [`TOOLCHAINS_ENV`],
/// those that exist and are not under a system directory already bound.
fn toolchains() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os(TOOLCHAINS_ENV)
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    if let Ok(out) = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .stderr(Stdio::null())
        .output()
    {
        if out.status.success() {
            dirs.push(PathBuf::from(
                String::from_utf8_lossy(&out.stdout).trim().to_owned(),
            ));
        }
    }
    dirs.into_iter()
        .filter_map(|d| d.canonicalize().ok())
        .filter(|d| d.is_dir() && !SYSTEM_DIRS.iter().any(|s| d.starts_with(s)))
        .collect()
}

/// `--ro-bind` / `--symlink` arguments for [`SYSTEM_DIRS`] as they are on this host.
fn system_binds() -> Vec<OsString> {
    let mut args = Vec::new();
    for dir in SYSTEM_DIRS {
        let path = Path::new(dir);
        match fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = fs::read_link(path) {
                    args.extend(["--symlink".into(), target.into_os_string(), dir.into()]);
                }
            }
            Ok(meta) if meta.is_dir() => {
                args.extend(["--ro-bind".into(), dir.into(), dir.into()]);
            }
            _ => {}
        }
    }
    args
}

/// Why a run may not start.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the agent sandbox is unavailable: {0}; install bubblewrap and allow user namespaces, or pass --unsandboxed to run agents as plain processes on this host")]
pub struct SandboxUnavailable(pub String);

/// Whether the processes of runs must be sandboxed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// In bwrap. Policies whose actions are untrusted (`llm`, `exec` agents) refuse to start
    /// without it; the scripted policy, which replays known actions, falls back to plain
    /// processes.
    #[default]
    Required,
    /// `--unsandboxed`: plain processes on the host, bwrap or not.
    Off,
}

impl SandboxMode {
    /// The confinement of a run with `limits`; `trusted` = its actions are known in
    /// advance (scripted policy).
    pub fn confinement(
        self,
        limits: &SandboxLimits,
        trusted: bool,
    ) -> Result<Confinement, SandboxUnavailable> {
        match self {
            SandboxMode::Off => Ok(Confinement::unsandboxed(limits)),
            SandboxMode::Required => Confinement::for_run(limits, trusted),
        }
    }
}

/// Limits one sandbox's processes get, from the run's `sandbox_limits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ResourceLimits {
    /// `RLIMIT_AS`: `memory_mb`.
    memory_bytes: u64,
    /// `RLIMIT_CPU`: the run's execution time times `cpu_cores`, rounded up.
    cpu_seconds: u64,
    /// `RLIMIT_FSIZE`: `disk_mb`.
    file_size_bytes: u64,
    /// `RLIMIT_NPROC` and `pids.max`.
    processes: u64,
    /// `RLIMIT_NOFILE`.
    open_files: u64,
}

impl ResourceLimits {
    fn from_config(limits: &SandboxLimits) -> Self {
        let seconds = limits.execution_timeout_ms.div_ceil(1000).max(1);
        ResourceLimits {
            memory_bytes: limits.memory_mb.saturating_mul(1 << 20),
            // CPU time is a backstop; the wall-clock timeouts end the tree first.
            cpu_seconds: (seconds as f64 * limits.cpu_cores.max(1.0)).ceil() as u64,
            file_size_bytes: limits.disk_mb.saturating_mul(1 << 20),
            processes: MAX_PROCESSES,
            open_files: MAX_OPEN_FILES,
        }
    }

    fn prlimit_args(&self) -> Vec<OsString> {
        [
            format!("--as={}", self.memory_bytes),
            format!("--cpu={}", self.cpu_seconds),
            format!("--fsize={}", self.file_size_bytes),
            format!("--nofile={}", self.open_files),
            format!("--nproc={}", self.processes),
        ]
        .into_iter()
        .map(OsString::from)
        .collect()
    }
}

/// How the processes of one run are confined: bwrap or plain processes, network or not,
/// and the limits. Cheap to clone; the judge and the tools of a run share one, and so
/// share its record of a sandbox that could not be set up.
#[derive(Debug, Clone)]
pub struct Confinement {
    /// The bwrap version; `None` = plain processes on the host.
    bwrap: Option<String>,
    /// `sandbox_limits.network_enabled`.
    network: bool,
    /// rlimits and `pids.max`.
    limits: ResourceLimits,
    /// Why a sandbox of this run could not be set up, the first time it could not.
    setup_failure: Arc<OnceLock<String>>,
}

/// One process to start in a sandbox.
#[derive(Debug, Clone)]
pub struct SandboxedCommand<'a> {
    /// The program (looked up on the sandbox's `PATH` when it has no `/`).
    pub program: &'a OsStr,
    /// Its arguments.
    pub args: &'a [OsString],
    /// The run's scratch copy: working directory and the only writable host path.
    pub workdir: &'a Path,
    /// More host paths visible read-only at the same place (an `exec` agent's program and
    /// task directory).
    pub read_only: &'a [PathBuf],
    /// Variables documented for this process, on top of the allowlist.
    pub env: &'a [(String, String)],
}

/// `PATH` of every confined process: the toolchains' `bin/`, then the system
/// directories. Programs are looked up there, not on the runner's own `PATH`.
pub fn sandbox_path() -> String {
    host()
        .toolchains
        .iter()
        .map(|t| t.join("bin"))
        .filter(|b| b.is_dir())
        .map(|b| b.display().to_string())
        .chain([SYSTEM_PATH.to_owned()])
        .collect::<Vec<_>>()
        .join(":")
}

impl Confinement {
    /// The confinement for a run with `limits`: bwrap when this host has it, else plain
    /// processes if `bare_allowed` (the scripted policy, `--unsandboxed`), else an error.
    pub fn for_run(
        limits: &SandboxLimits,
        bare_allowed: bool,
    ) -> Result<Confinement, SandboxUnavailable> {
        match host().bwrap() {
            Ok(version) => Ok(Confinement {
                bwrap: Some(version.to_owned()),
                ..Confinement::unsandboxed(limits)
            }),
            Err(why) if bare_allowed => {
                tracing::warn!(reason = why, "running agent processes without a sandbox");
                Ok(Confinement::unsandboxed(limits))
            }
            Err(why) => Err(SandboxUnavailable(why.to_owned())),
        }
    }

    /// Plain processes on the host (`--unsandboxed`): rlimits, cgroup and the allowlisted
    /// environment still apply; the file system, network and other processes do not
    /// change.
    pub fn unsandboxed(limits: &SandboxLimits) -> Confinement {
        Confinement {
            bwrap: None,
            network: limits.network_enabled,
            limits: ResourceLimits::from_config(limits),
            setup_failure: Arc::default(),
        }
    }

    /// Why a sandbox of this run could not be set up, if one could not: the run is then
    /// no result (`exit_environment`, unjudged).
    pub fn setup_failure(&self) -> Option<&str> {
        self.setup_failure.get().map(String::as_str)
    }

    /// Records that a sandbox of this run could not be set up (the first reason is kept),
    /// and says so on the log.
    pub fn record_setup_failure(&self, why: String) {
        tracing::error!(reason = %crate::terminal::Escaped(&why), "the agent sandbox could not be set up; the run is not a result");
        let _ = self.setup_failure.set(why);
    }

    /// Whether processes run inside bwrap.
    pub fn is_sandboxed(&self) -> bool {
        self.bwrap.is_some()
    }

    /// `run_start.sandbox`: the kind, version, network and every limit that is enforced,
    /// by what; the time limits are the runner's.
    pub fn info(&self, tool_timeout_ms: u64, execution_timeout_ms: u64) -> SandboxInfo {
        let host = host();
        let mut enforced = Vec::new();
        let mut add = |limit: &str, value: u64, by: &str| {
            enforced.push(EnforcedLimit {
                limit: limit.to_owned(),
                value,
                by: by.to_owned(),
            });
        };
        if host.prlimit {
            let l = &self.limits;
            add("memory_bytes", l.memory_bytes, "rlimit");
            add("cpu_seconds", l.cpu_seconds, "rlimit");
            add("file_size_bytes", l.file_size_bytes, "rlimit");
            add("open_files", l.open_files, "rlimit");
            // Root is exempt from RLIMIT_NPROC; only a cgroup holds its processes.
            if !nix::unistd::geteuid().is_root() {
                add("processes", l.processes, "rlimit");
            }
        }
        if host.pids_cgroup.is_some() {
            add("processes", self.limits.processes, "cgroup");
        }
        add("tool_timeout_ms", tool_timeout_ms, "runner");
        add("execution_timeout_ms", execution_timeout_ms, "runner");
        SandboxInfo {
            kind: if self.bwrap.is_some() {
                "bwrap"
            } else {
                "none"
            }
            .to_owned(),
            version: self.bwrap.clone(),
            network_isolated: self.bwrap.is_some() && !self.network,
            enforced,
        }
    }

    /// The command that starts `spec` confined (its `PATH` is [`sandbox_path`]), in its
    /// own process group, with its stdout and stderr still to be set by the caller (stdin
    /// is `/dev/null`: the caller must not set it); and the guard of its process tree, to
    /// kill when the command is done or timed out.
    ///
    /// # Errors
    ///
    /// The sandbox cannot be set up (its cgroup cannot be created, no pipe); recorded as
    /// this run's [`Confinement::setup_failure`] too.
    pub fn command(&self, spec: &SandboxedCommand<'_>) -> io::Result<(Command, TreeGuard)> {
        self.build(spec).inspect_err(|e| {
            self.record_setup_failure(format!("cannot prepare the sandbox: {e}"));
        })
    }

    fn build(&self, spec: &SandboxedCommand<'_>) -> io::Result<(Command, TreeGuard)> {
        let host = host();
        let cgroup = match &host.pids_cgroup {
            Some(base) => Some(PidsCgroup::create(base, self.limits.processes)?),
            None => None,
        };
        // bwrap's status pipe: its write end is the wrapper's stdin, moved to `STATUS_FD`
        // before the wrapper execs (no `unsafe` fd plumbing in the runner), so nothing
        // else the runner spawns meanwhile inherits it.
        let status = match self.bwrap {
            Some(_) => Some(nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(io::Error::from)?),
            None => None,
        };
        let path = sandbox_path();
        let home = match self.bwrap {
            Some(_) => SANDBOX_HOME.to_owned(),
            None => std::env::var("HOME").unwrap_or_else(|_| SANDBOX_HOME.to_owned()),
        };
        let mut env: Vec<(String, String)> = vec![
            ("PATH".into(), path),
            ("HOME".into(), home),
            ("LANG".into(), "C.UTF-8".into()),
        ];
        if self.bwrap.is_some() {
            // Cargo's registry cache and lock files go to the private /tmp.
            env.push(("CARGO_HOME".into(), format!("{SANDBOX_HOME}/.cargo")));
        }
        env.extend(spec.env.iter().cloned());

        let mut argv: Vec<OsString> = Vec::new();
        if cgroup.is_some() || status.is_some() {
            // A shell that moves the status pipe to `STATUS_FD` and joins the cgroup before
            // anything else runs, so no fork escapes it ("0" = the writer), then becomes
            // the rest of the command line.
            let mut script = String::new();
            if status.is_some() {
                script.push_str(&format!("exec {STATUS_FD}>&0 </dev/null && "));
            }
            if cgroup.is_some() {
                script.push_str(r#"echo 0 > "$0" && "#);
            }
            script.push_str(r#"exec "$@""#);
            argv.extend(["/bin/sh".into(), "-c".into(), script.into()]);
            argv.push(cgroup.as_ref().map_or_else(
                || "sandbox".into(),
                |cg| cg.dir.join("cgroup.procs").into_os_string(),
            ));
        }
        if host.prlimit {
            argv.push("prlimit".into());
            argv.extend(self.limits.prlimit_args());
            argv.push("--".into());
        }
        if self.bwrap.is_some() {
            argv.push("bwrap".into());
            argv.extend(["--json-status-fd".into(), STATUS_FD.to_string().into()]);
            argv.extend(self.bwrap_args(spec, &host.toolchains, &env));
        }
        argv.push(spec.program.to_owned());
        argv.extend(spec.args.iter().cloned());

        let (first, rest) = argv
            .split_first()
            .ok_or_else(|| io::Error::other("empty command line"))?;
        let mut command = Command::new(first);
        command
            .args(rest)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(spec.workdir)
            .process_group(0)
            .kill_on_drop(true);
        let status = match status {
            Some((read_end, write_end)) => {
                command.stdin(Stdio::from(write_end));
                Some(read_end)
            }
            None => {
                command.stdin(Stdio::null());
                None
            }
        };
        Ok((command, TreeGuard { cgroup, status }))
    }

    fn bwrap_args(
        &self,
        spec: &SandboxedCommand<'_>,
        toolchains: &[PathBuf],
        env: &[(String, String)],
    ) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
        ]
        .map(OsString::from)
        .to_vec();
        if !self.network {
            args.push("--unshare-net".into());
        }
        args.extend(system_binds());
        let etc = ETC_ENTRIES.iter().chain(if self.network {
            ETC_NETWORK_ENTRIES
        } else {
            &[]
        });
        for entry in etc {
            let path = Path::new("/etc").join(entry);
            args.extend(["--ro-bind-try".into(), path.clone().into(), path.into()]);
        }
        for dir in toolchains.iter().chain(spec.read_only) {
            args.extend([
                "--ro-bind".into(),
                dir.clone().into_os_string(),
                dir.clone().into_os_string(),
            ]);
        }
        args.extend(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"].map(OsString::from));
        // After /tmp: the scratch copy usually lives under the host's /tmp.
        let workdir = spec.workdir.as_os_str().to_owned();
        args.extend([
            "--bind".into(),
            workdir.clone(),
            workdir.clone(),
            "--chdir".into(),
            workdir,
        ]);
        args.push("--clearenv".into());
        for (key, value) in env {
            args.extend(["--setenv".into(), key.into(), value.into()]);
        }
        args.push("--".into());
        args
    }
}

/// The process tree of one sandboxed command: kills whatever is left in its cgroup, and
/// removes the cgroup, on [`TreeGuard::kill`] and on drop. Without a cgroup the pid
/// namespace (killing `bwrap` ends it) and the process group are the tree.
#[derive(Debug)]
pub struct TreeGuard {
    /// The command's own `pids` cgroup, when the host allows one.
    cgroup: Option<PidsCgroup>,
    /// The read end of bwrap's `--json-status-fd`; `None` for plain processes.
    status: Option<OwnedFd>,
}

/// The descriptor bwrap writes its status to (`--json-status-fd`): one a shell can
/// redirect (a single digit), above those other descriptors passed to bwrap are likely
/// to take.
const STATUS_FD: u8 = 9;

/// The most of bwrap's status pipe read: bwrap writes two short JSON lines; the rest is
/// whatever the sandboxed processes wrote to the fd they inherit.
const STATUS_READ_LIMIT: usize = 64 * 1024;

impl TreeGuard {
    /// Whether bwrap set the sandbox up and ran the command, read once the command has
    /// exited on its own (not after a timeout kill): bwrap reports `"exit-code"` on its
    /// status pipe only then, before it exits. `false` = the sandbox could not be set up
    /// (bwrap's message is on the command's stderr). Always `true` for plain processes.
    ///
    /// A sandboxed process can write to the pipe too, but only once the sandbox exists:
    /// a forged line can claim a setup that did happen, never deny one.
    pub fn setup_completed(&self) -> bool {
        let Some(fd) = &self.status else {
            return true;
        };
        let Ok(fd) = fd.try_clone() else {
            return false;
        };
        if fcntl(&fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).is_err() {
            return false;
        }
        let mut pipe = fs::File::from(fd);
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while seen.len() < STATUS_READ_LIMIT {
            match io::Read::read(&mut pipe, &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        seen.windows(b"\"exit-code\"".len())
            .any(|w| w == b"\"exit-code\"")
    }

    /// SIGKILLs every process still in the tree's cgroup.
    pub fn kill(&self) {
        if let Some(cg) = &self.cgroup {
            cg.kill_all();
        }
    }
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        if let Some(cg) = self.cgroup.take() {
            cg.kill_all();
            cg.remove();
        }
    }
}

/// A `pids` cgroup made for one sandboxed command.
#[derive(Debug)]
struct PidsCgroup {
    dir: PathBuf,
}

impl PidsCgroup {
    fn create(base: &Path, max: u64) -> io::Result<PidsCgroup> {
        let dir = base.join(format!("bench-sandbox-{}", uuid::Uuid::new_v4().simple()));
        fs::create_dir(&dir)?;
        let cg = PidsCgroup { dir };
        if let Err(e) = fs::write(cg.dir.join("pids.max"), max.to_string()) {
            cg.remove();
            return Err(e);
        }
        Ok(cg)
    }

    /// SIGKILLs the members until none is left (a fork bomb keeps forking meanwhile,
    /// within `pids.max`), for at most a few rounds.
    fn kill_all(&self) {
        for _ in 0..50 {
            let Ok(procs) = fs::read_to_string(self.dir.join("cgroup.procs")) else {
                return;
            };
            let pids: Vec<i32> = procs.lines().filter_map(|l| l.parse().ok()).collect();
            if pids.is_empty() {
                return;
            }
            for pid in pids {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// Removes the (empty) cgroup; a failure is logged, the directory stays.
    fn remove(&self) {
        // Killed processes leave the cgroup when reaped, which can lag a little.
        for _ in 0..100 {
            match fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
            }
        }
        tracing::warn!(dir = %self.dir.display(), "cannot remove a sandbox cgroup");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(network_enabled: bool) -> SandboxLimits {
        SandboxLimits {
            memory_mb: 512,
            cpu_cores: 2.0,
            disk_mb: 64,
            network_enabled,
            execution_timeout_ms: 1500,
        }
    }

    fn args_of(confinement: &Confinement, workdir: &Path) -> Vec<String> {
        let env = [("BENCH_X".to_owned(), "1".to_owned())];
        let spec = SandboxedCommand {
            program: "true".as_ref(),
            args: &[],
            workdir,
            read_only: &[],
            env: &env,
        };
        confinement
            .bwrap_args(&spec, &[], &env)
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn limits_come_from_the_config() {
        let l = ResourceLimits::from_config(&limits(false));
        assert_eq!(l.memory_bytes, 512 << 20);
        assert_eq!(l.file_size_bytes, 64 << 20);
        // 1.5 s rounds up to 2 s, times 2 cores.
        assert_eq!(l.cpu_seconds, 4);
        assert!(l.prlimit_args().contains(&OsString::from("--as=536870912")));
    }

    #[test]
    fn network_is_unshared_unless_enabled() {
        let dir = Path::new("/tmp/bench-run-x");
        let mut c = Confinement::unsandboxed(&limits(false));
        c.bwrap = Some("bubblewrap test".to_owned());
        let closed = args_of(&c, dir);
        assert!(closed.contains(&"--unshare-net".to_owned()));
        assert!(!closed.iter().any(|a| a.ends_with("resolv.conf")));
        // The workspace is bound after the private /tmp that would hide it.
        let tmpfs = closed.iter().position(|a| a == "--tmpfs");
        let bind = closed.iter().position(|a| a == "--bind");
        assert!(tmpfs < bind, "{closed:?}");
        assert!(closed.ends_with(&[
            "--clearenv".to_owned(),
            "--setenv".to_owned(),
            "BENCH_X".to_owned(),
            "1".to_owned(),
            "--".to_owned()
        ]));

        let mut open = Confinement::unsandboxed(&limits(true));
        open.bwrap = Some("bubblewrap test".to_owned());
        let open = args_of(&open, dir);
        assert!(!open.contains(&"--unshare-net".to_owned()));
        assert!(open.iter().any(|a| a == "/etc/resolv.conf"));
    }

    #[test]
    fn unsandboxed_runs_say_none() {
        let info = Confinement::unsandboxed(&limits(true)).info(1000, 2000);
        assert_eq!(info.kind, "none");
        assert_eq!(info.version, None);
        assert!(!info.network_isolated);
        assert!(info
            .enforced
            .iter()
            .any(|l| l.limit == "execution_timeout_ms" && l.value == 2000 && l.by == "runner"));
    }
}
