//! The agent sandbox: every process an agent causes (the `bash` tool, each judge test, an
//! `exec` agent and all their children) starts through [`Confinement::command`], which
//! wraps it in bubblewrap (`bwrap`) with the run's limits. The same whoever starts the
//! runner, root included.
//!
//! Who a sandboxed process is:
//! - uid and gid [`SANDBOX_UID`] in a user namespace of its own, which bwrap maps to the
//!   runner's uid (root stays uid 0 on the host, but without any capability there);
//! - no capabilities (`--cap-drop ALL`), no nested user namespaces (`--disable-userns`),
//!   and the seccomp filters of [`super::seccomp`] (no mounts, file handles, keyrings,
//!   ptrace, namespaces, `TIOCSTI`, kernel modules);
//! - new pid, ipc and uts namespaces, a new session (no controlling terminal).
//!
//! What it sees:
//! - a private `/tmp` (also `HOME`): a tmpfs of `disk_mb`, mounted first, so that host
//!   paths under the host's `/tmp` bound afterwards (the scratch copy, an `exec` agent's
//!   program and task) show through it;
//! - the host's system directories read-only (`/usr` and the `/bin`, `/sbin`, `/lib*`
//!   links or directories), and of `/etc` only what toolchains read: the dynamic linker
//!   cache, `alternatives`, user and group names, name-service config, time zone and TLS
//!   roots (`ETC_ENTRIES`); the resolver files only when the network is enabled;
//! - toolchains that live outside the system directories, read-only: the Rust sysroot the
//!   runner's `rustc` reports, and every directory in `BENCH_SANDBOX_TOOLCHAINS`
//!   (colon-separated); their `bin/` goes first on `PATH`;
//! - a task's environment, when it has one (a SWE-bench-format task's virtualenv,
//!   [`Confinement::with_environment`]), read-only, its `bin/` first of all on `PATH`;
//! - the run's scratch copy, read-write, at its host path: the only writable host path
//!   (a tmpfs of `disk_mb` with an inode cap, in the runner's own mount namespace:
//!   [`super::workspace_fs`]);
//! - a fresh `/proc`, read-only as a whole, without the host's key lists, and a minimal
//!   `/dev`;
//! - no network (an empty network namespace), or with `sandbox_limits.network_enabled` a
//!   namespace of its own behind pasta ([`super::network`]) that cannot reach the host's
//!   loopback;
//! - an environment built from an allowlist: `PATH`, `HOME`, `LANG`, `CARGO_HOME` and the
//!   variables the caller documents for its process. Nothing else of the runner's
//!   environment (API keys, NATS and ClickHouse settings) reaches it.
//!
//! Limits, enforced rather than recorded: the launcher shell sets rlimits before `bwrap`
//! starts (address space = `memory_mb`, CPU seconds, file size = `disk_mb`, open files,
//! processes), and where the host lets the runner create cgroups (the v1 `pids` and `memory`
//! hierarchies, or v2 with the controllers delegated: systemd `Delegate=yes`, the runner
//! then moving itself into a leaf of its cgroup, `enable_delegated`) each command gets its
//! own `pids.max`, which holds a fork bomb even for root, whom `RLIMIT_NPROC` does not
//! bind, and its own memory limit (`memory_mb`), which also counts the pages it writes to
//! its `/tmp`. Time limits are the caller's: `bwrap --die-with-parent` in its own pid
//! namespace means that killing the `bwrap` process ends every process of the sandbox, and
//! [`TreeGuard`] kills what is left in the cgroups.
//!
//! Availability is probed once per process ([`host`]): `bwrap` must be installed and able
//! to create the namespaces with every confinement above (some containers forbid user
//! namespaces). Without it a run may still execute as plain processes
//! ([`Confinement::unsandboxed`]); `run_start.sandbox` then says `none`, and the limits
//! that still hold (rlimits, cgroups, timeouts) are listed.
//!
//! A sandbox that cannot be set up for one command (its cgroups cannot be created or
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

use bench_schemas::{EnforcedLimit, PidsLimit, SandboxInfo, SandboxLimits, SandboxNetwork};
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::process::Command;

use super::network::{self, NetworkTools, PastaNetwork};
use super::seccomp;
use super::workspace_fs::{self, WorkspaceBound};

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

/// The uid and gid of every sandboxed process inside its own user namespace: `nobody`,
/// whoever started the runner. Outside, it is the runner's uid (bwrap maps one to the
/// other), without any capability there.
pub const SANDBOX_UID: u32 = 65534;

/// Descriptors the launcher shell opens the seccomp filters on for bwrap
/// (`--add-seccomp-fd`); single digits, the most a POSIX shell redirects.
const SECCOMP_FDS: [&str; 2] = ["8", "9"];

/// The descriptor bwrap writes its status to (`--json-status-fd`): a single digit, which
/// a POSIX shell can redirect, and not one of [`SECCOMP_FDS`].
const STATUS_FD: &str = "7";

/// The first process of every confined command, `/bin/sh -c LAUNCHER PIDS MEMORY FILTER1
/// FILTER2 STATUS LIMITS PROGRAM...`: joins the command's `pids` and `memory` cgroups (the
/// `cgroup.procs` files given, when not empty) before anything else runs, so no fork
/// escapes them and no page goes uncharged ("0" = the writer); when STATUS is not empty
/// (it is [`STATUS_FD`]), moves its stdin, the write end of bwrap's status pipe, to that
/// descriptor and reads `/dev/null` instead; sets the rlimits of LIMITS (when not empty:
/// [`ResourceLimits::launcher_arg`]) with the shell's own `ulimit`, soft and hard, so they
/// hold for the whole tree; opens the seccomp filters on [`SECCOMP_FDS`] (when given) and
/// becomes the rest of the command line. The descriptors are fixed in the script, not
/// taken from the arguments, because a shell redirects only literal numbers.
///
/// `ulimit` is the shell's builtin rather than util-linux `prlimit` in front of bwrap: one
/// program less to start per command (about 7 ms of a tool call on a loaded 2-core host).
/// Its units are POSIX's (`-v` KiB, `-f` 512-byte blocks, also in bash's POSIX mode as
/// `sh`); the process count is `-u` in bash and `-p` in dash, hence the fallback.
const LAUNCHER: &str = r#"for cg in "$0" "$1"; do [ -z "$cg" ] || echo 0 > "$cg" || exit 126; done
if [ -n "$4" ]; then exec 7>&0 </dev/null || exit 126; fi
limits() { ulimit -v "$1" && ulimit -t "$2" && ulimit -f "$3" && ulimit -n "$4" && { ulimit -u "$5" 2>/dev/null || ulimit -p "$5"; }; }
if [ -n "$5" ]; then set -f; limits $5 || exit 126; fi
a=$2 b=$3; shift 5
[ -z "$a" ] && exec "$@"
exec "$@" 8<"$a" 9<"$b""#;

/// A fresh `/proc`, read-only as a whole, and a minimal `/dev`. Read-only because the
/// processes of a root runner are uid 0 on the host, without capabilities but still the
/// owner of `/proc/sys/*` and `/proc/sysrq-trigger`, which check no capability: a writable
/// `/proc` would let them set `kernel.core_pattern` (a program the host runs as root).
const PROC_AND_DEV: [&str; 6] = ["--proc", "/proc", "--remount-ro", "/proc", "--dev", "/dev"];

/// Files of `/proc` hidden from the sandbox (a device node bound over them, which its
/// `nodev` mount makes unreadable): the keyrings of the host. Not namespaced, they list
/// every key whose owner is the reader's uid on the host, so under a root runner the
/// names of root's keys and those of other runs. Their payloads are out of reach anyway
/// (`keyctl` is denied by [`super::seccomp`]), but names can be secrets too.
const PROC_MASKED: [&str; 2] = ["/proc/keys", "/proc/key-users"];

/// [`PROC_AND_DEV`], then [`PROC_MASKED`] (those this kernel has).
fn proc_and_dev() -> Vec<OsString> {
    let mut args: Vec<OsString> = PROC_AND_DEV.map(OsString::from).to_vec();
    for file in PROC_MASKED.iter().filter(|f| Path::new(f).exists()) {
        args.extend(["--ro-bind".into(), "/dev/null".into(), (*file).into()]);
    }
    args
}

/// Host directories that can never be bound read-only into a sandbox: bwrap replaces
/// `/proc` and `/dev`, and `/sys` shows the host's devices and cgroups.
const UNMOUNTABLE_ROOTS: &[&str] = &["/proc", "/dev", "/sys"];

/// What this host offers, probed once per process by [`host`].
#[derive(Debug, Clone)]
pub struct HostSupport {
    /// `bwrap --version` when bwrap works here with every confinement a sandbox gets
    /// (user namespace, no capabilities, seccomp), or why it does not.
    bwrap: Result<String, String>,
    /// The cgroup directory under which per-sandbox `pids` cgroups can be created.
    pids_cgroup: Option<PathBuf>,
    /// The cgroup directory under which per-sandbox `memory` cgroups can be created.
    memory_cgroup: Option<PathBuf>,
    /// What gives a sandbox with `network_enabled` its own network, or why nothing can.
    network: Result<NetworkTools, String>,
    /// Toolchain directories outside [`SYSTEM_DIRS`], bound read-only.
    toolchains: Vec<PathBuf>,
}

impl HostSupport {
    /// The bwrap version, or why bwrap cannot be used on this host.
    pub fn bwrap(&self) -> Result<&str, &str> {
        self.bwrap.as_deref().map_err(String::as_str)
    }
}

/// Probes the host on first use: bwrap creating every namespace a sandbox uses, writable
/// `pids` and `memory` cgroups, the network tools, toolchains.
pub fn host() -> &'static HostSupport {
    static HOST: OnceLock<HostSupport> = OnceLock::new();
    HOST.get_or_init(|| {
        // No cgroup file (not Linux, no /proc): no cgroup candidates.
        let own_cgroups = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let support = HostSupport {
            bwrap: probe_bwrap(),
            pids_cgroup: probe_cgroup(&own_cgroups, Controller::Pids),
            memory_cgroup: probe_cgroup(&own_cgroups, Controller::Memory),
            network: network::probe(),
            toolchains: toolchains(),
        };
        tracing::info!(bwrap = ?support.bwrap, pids_cgroup = ?support.pids_cgroup, memory_cgroup = ?support.memory_cgroup, network = ?support.network.as_ref().err(), toolchains = ?support.toolchains, "agent sandbox support");
        support
    })
}

fn probe_bwrap() -> Result<String, String> {
    let version = std::process::Command::new("bwrap")
        .arg("--version")
        .output()
        .map_err(|e| format!("bwrap is not installed or not runnable: {e}"))?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
    let filters = seccomp::filters().map_err(|e| e.to_string())?;
    let mut probe = std::process::Command::new("/bin/sh");
    probe
        .arg("-c")
        .arg(LAUNCHER)
        .args(["", ""])
        .args(filters.paths())
        .args(["", ""])
        .arg("bwrap")
        .args(confinement_args())
        .args(system_binds())
        .arg("--unshare-net")
        .args(proc_and_dev())
        .arg("true");
    let out = probe
        .output()
        .map_err(|e| format!("cannot run bwrap: {e}"))?;
    if out.status.success() {
        Ok(version)
    } else {
        Err(format!(
            "bwrap cannot confine processes here (user namespaces disabled? seccomp?): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The namespaces, identity and privileges of every sandbox, probe included: a user
/// namespace mapping [`SANDBOX_UID`] to the runner's uid, no capabilities, no nested user
/// namespaces, the seccomp filters on [`SECCOMP_FDS`], and new pid, ipc and uts
/// namespaces; `bwrap` dies with the runner.
fn confinement_args() -> Vec<OsString> {
    let uid = SANDBOX_UID.to_string();
    let mut args: Vec<OsString> = [
        "--unshare-user",
        "--uid",
        &uid,
        "--gid",
        &uid,
        "--disable-userns",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
    ]
    .map(OsString::from)
    .to_vec();
    for fd in SECCOMP_FDS {
        args.extend(["--add-seccomp-fd".into(), fd.into()]);
    }
    args
}

/// A cgroup controller in which each sandboxed command gets a cgroup of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Controller {
    /// `pids.max`: the processes of the whole tree, root's included.
    Pids,
    /// The memory limit: what the tree's processes use, and the pages they write to a
    /// tmpfs (their `/tmp`), which `RLIMIT_AS` does not see.
    Memory,
}

impl Controller {
    fn name(self) -> &'static str {
        match self {
            Controller::Pids => "pids",
            Controller::Memory => "memory",
        }
    }

    /// The limit file of a cgroup in `dir`: v2's `memory.max`, v1's
    /// `memory.limit_in_bytes`, `pids.max` in both.
    fn limit_file(self, dir: &Path) -> PathBuf {
        match self {
            Controller::Pids => dir.join("pids.max"),
            Controller::Memory if dir.join("memory.max").exists() => dir.join("memory.max"),
            Controller::Memory => dir.join("memory.limit_in_bytes"),
        }
    }
}

/// A cgroup directory of this process (the v1 hierarchy of `controller`, or v2 with it
/// delegated) in which a child with a limit can be created, or `None`.
///
/// `own` is `/proc/self/cgroup` as read before any probe: on v2, probing one controller
/// can move the runner into a leaf cgroup ([`enable_delegated`]), and the next probe must
/// still start from the cgroup delegated to it, not from that leaf.
fn probe_cgroup(own: &str, controller: Controller) -> Option<PathBuf> {
    let mut candidates = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == controller.name()) {
            candidates.push(
                Path::new("/sys/fs/cgroup")
                    .join(controller.name())
                    .join(path),
            );
        } else if controllers.is_empty() {
            for base in [
                Path::new("/sys/fs/cgroup"),
                Path::new("/sys/fs/cgroup/unified"),
            ] {
                let base = base.join(path);
                // Never below the root cgroup: it holds every process of the host.
                if !path.is_empty() && base.join("cgroup.controllers").is_file() {
                    if let Err(e) = enable_delegated(&base, controller) {
                        tracing::debug!(cgroup = %base.display(), controller = controller.name(), error = %e, "no delegated controller");
                    }
                }
                candidates.push(base);
            }
        }
    }
    candidates.into_iter().find(|base| {
        SandboxCgroup::create(base, controller, 1 << 20)
            .map(|cg| {
                cg.remove();
            })
            .is_ok()
    })
}

/// On cgroup v2, a cgroup delegated to the runner (systemd `Delegate=yes`) offers a
/// controller (`pids`, `memory`) to children only once it is in its
/// `cgroup.subtree_control`, which the kernel allows only while no process is in it ("no
/// internal processes"): the runner moves itself (its own process, nothing else) into a
/// leaf child `runner` first, then enables the controller, so that sandbox cgroups can be
/// made beside that leaf.
fn enable_delegated(base: &Path, controller: Controller) -> io::Result<()> {
    let name = controller.name();
    let lists = |file: &str| -> io::Result<bool> {
        Ok(fs::read_to_string(base.join(file))?
            .split_whitespace()
            .any(|c| c == name))
    };
    if !lists("cgroup.controllers")? {
        return Err(io::Error::other(format!(
            "{name} is not delegated to this cgroup"
        )));
    }
    if lists("cgroup.subtree_control")? {
        return Ok(());
    }
    let leaf = base.join("runner");
    match fs::create_dir(&leaf) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    fs::write(leaf.join("cgroup.procs"), std::process::id().to_string())?;
    fs::write(base.join("cgroup.subtree_control"), format!("+{name}"))
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
    SYSTEM_DIRS
        .iter()
        .flat_map(|dir| read_only_entry(Path::new(dir), Path::new(dir)))
        .collect()
}

/// Every top-level entry of an image's root file system `root`, read-only at `/<name>`
/// (a symlink recreated as the same symlink).
fn root_binds(root: &Path) -> Vec<OsString> {
    let mut names: Vec<OsString> = fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name())
        .collect();
    names.sort();
    names
        .iter()
        .flat_map(|name| read_only_entry(&root.join(name), &Path::new("/").join(name)))
        .collect()
}

/// The bwrap arguments that show `source` read-only at `dest`: a bind of a directory or
/// file, the same symlink for a symlink, nothing for what is neither or cannot be read.
fn read_only_entry(source: &Path, dest: &Path) -> Vec<OsString> {
    match fs::symlink_metadata(source) {
        Ok(meta) if meta.file_type().is_symlink() => fs::read_link(source)
            .map(|target| vec!["--symlink".into(), target.into_os_string(), dest.into()])
            .unwrap_or_default(),
        Ok(meta) if meta.is_dir() || meta.is_file() => {
            vec!["--ro-bind".into(), source.into(), dest.into()]
        }
        _ => Vec::new(),
    }
}

/// Why a run may not start.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the agent sandbox is unavailable: {0}; install bubblewrap and allow user namespaces, or pass --unsandboxed to run agents as plain processes on this host")]
pub struct SandboxUnavailable(pub String);

/// A path that was to be visible read-only in the sandbox but cannot be: refused before
/// the run starts, since the agent would not find it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnmountablePath {
    /// The path does not exist (the path, the error).
    #[error("{0}: cannot be made visible in the agent sandbox: it does not exist ({1})")]
    Missing(PathBuf, String),
    /// The sandbox mounts its own copy of it (the path, which of its directories).
    #[error("{0}: cannot be made visible in the agent sandbox: the sandbox has its own {1}")]
    Replaced(PathBuf, &'static str),
    /// Mounting it would show the agent other runs' scratch copies (the path, the scratch
    /// directory).
    #[error("{0}: cannot be made visible in the agent sandbox: it holds the scratch copies of runs ({1})")]
    HoldsScratch(PathBuf, PathBuf),
}

/// Checks that each of `paths` can be bound read-only into a sandbox, and returns their
/// canonical forms: they exist, are not the root or under a directory the sandbox
/// replaces ([`UNMOUNTABLE_ROOTS`]), and do not contain the directory where the scratch
/// copies of runs live (binding it would show the agent the other runs).
pub fn mountable_read_only(paths: &[PathBuf]) -> Result<Vec<PathBuf>, UnmountablePath> {
    let scratch = std::env::temp_dir()
        .canonicalize()
        .unwrap_or_else(|_| std::env::temp_dir());
    paths
        .iter()
        .map(|path| {
            let canonical = path
                .canonicalize()
                .map_err(|e| UnmountablePath::Missing(path.clone(), e.to_string()))?;
            if let Some(root) = UNMOUNTABLE_ROOTS
                .iter()
                .find(|root| canonical.starts_with(root))
            {
                return Err(UnmountablePath::Replaced(path.clone(), root));
            }
            if scratch.starts_with(&canonical) {
                return Err(UnmountablePath::HoldsScratch(path.clone(), scratch.clone()));
            }
            Ok(canonical)
        })
        .collect()
}

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
    /// Size of the sandbox's private `/tmp` (a tmpfs): `disk_mb`.
    tmp_bytes: u64,
}

impl ResourceLimits {
    fn from_config(limits: &SandboxLimits) -> Self {
        let seconds = limits.execution_timeout_ms.div_ceil(1000).max(1);
        ResourceLimits {
            // A scenario always states the memory limit (scenario::file); a config
            // without one (none reaches a sandbox) would run without (`RLIM_INFINITY`).
            memory_bytes: limits
                .memory_mb
                .map_or(u64::MAX, |mb| mb.saturating_mul(1 << 20)),
            // CPU time is a backstop; the wall-clock timeouts end the tree first.
            cpu_seconds: (seconds as f64 * limits.cpu_cores.max(1.0)).ceil() as u64,
            file_size_bytes: limits.disk_mb.saturating_mul(1 << 20),
            processes: MAX_PROCESSES,
            open_files: MAX_OPEN_FILES,
            tmp_bytes: limits.disk_mb.saturating_mul(1 << 20),
        }
    }

    /// The LIMITS argument of [`LAUNCHER`], in `ulimit`'s units: address space (KiB), CPU
    /// seconds, file size (512-byte blocks), open files, processes. Sizes round down, so
    /// a limit is never looser than configured.
    fn launcher_arg(&self) -> String {
        format!(
            "{} {} {} {} {}",
            self.memory_bytes / 1024,
            self.cpu_seconds,
            self.file_size_bytes / 512,
            self.open_files,
            self.processes
        )
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
    /// The size and inodes of the run's workspace file system (`disk_mb`), where the host
    /// lets the runner mount one ([`workspace_fs::probe`]).
    workspace: WorkspaceBound,
    /// Why a sandbox of this run could not be set up, the first time it could not.
    setup_failure: Arc<OnceLock<String>>,
    /// The task's environment (a SWE-bench-format task's virtualenv): mounted read-only
    /// at its host path, its `bin/` first on `PATH`.
    environment: Option<PathBuf>,
    /// The task's image: the sandbox's root file system instead of the host's system
    /// directories.
    image: Option<Arc<ImageRoot>>,
}

/// A task's OCI image as a sandbox's root (`bench_image` unpacks it): mounted read-only as
/// `/`, the run's scratch copy at the image's working directory, the image's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRoot {
    /// The unpacked root file system.
    pub root: PathBuf,
    /// Where the scratch copy appears, and where commands start (`/testbed`).
    pub workdir: PathBuf,
    /// The image config's `Env`, `PATH` included (with an activated environment's `bin/`
    /// first).
    pub env: Vec<(String, String)>,
}

impl ImageRoot {
    /// `path` as the sandbox sees it: a path in the scratch copy `scratch` moves to the
    /// image's working directory; any other stays where it is.
    fn inside(&self, scratch: &Path, path: &Path) -> PathBuf {
        match path.strip_prefix(scratch) {
            Ok(rest) if rest.as_os_str().is_empty() => self.workdir.clone(),
            Ok(rest) => self.workdir.join(rest),
            Err(_) => path.to_path_buf(),
        }
    }
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
    /// Extra mounts, applied last (after the scratch copy, so they can lie over files in
    /// it): the judge's pristine inputs and its report directory. Ignored by unsandboxed
    /// confinements, which have no mount namespace.
    pub binds: &'a [Bind],
}

/// One extra bind mount of a [`SandboxedCommand`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind {
    /// The host path mounted.
    pub src: PathBuf,
    /// Where it appears in the sandbox (may lie inside the scratch copy).
    pub dest: PathBuf,
    /// Mounted read-only (`--ro-bind`) rather than writable (`--bind`).
    pub read_only: bool,
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
        let host = host();
        // Enabled network means pasta's, never the host's: without it, no sandbox.
        let sandbox = host
            .bwrap()
            .map_err(str::to_owned)
            .and_then(|version| match &host.network {
                Err(why) if limits.network_enabled => {
                    Err(format!("sandbox_limits.network_enabled needs pasta: {why}"))
                }
                _ => Ok(version),
            });
        match sandbox {
            Ok(version) => Ok(Confinement {
                bwrap: Some(version.to_owned()),
                ..Confinement::unsandboxed(limits)
            }),
            Err(why) if bare_allowed => {
                tracing::warn!(reason = why, "running agent processes without a sandbox");
                Ok(Confinement::unsandboxed(limits))
            }
            Err(why) => Err(SandboxUnavailable(why)),
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
            workspace: WorkspaceBound::from_limits(limits),
            setup_failure: Arc::default(),
            environment: None,
            image: None,
        }
    }

    /// This confinement with the task's `image` as every sandbox's root. Only a bwrap
    /// sandbox can change its root: [`Confinement::runs_image`] says whether it does.
    pub fn with_image(self, image: Option<ImageRoot>) -> Confinement {
        Confinement {
            image: image.map(Arc::new),
            ..self
        }
    }

    /// Whether commands run on the task image's root (bwrap and an image).
    pub fn runs_image(&self) -> bool {
        self.bwrap.is_some() && self.image.is_some()
    }

    /// This confinement with `environment` (a task's prepared environment, made before
    /// the run with network) read-only in every sandbox, its `bin/` first on `PATH`.
    pub fn with_environment(self, environment: Option<PathBuf>) -> Confinement {
        Confinement {
            environment,
            ..self
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

    /// The bound of the run's workspace file system, where the runner can mount one
    /// (sandboxed or not: in its own mount namespace, or as root in the one it is in);
    /// `None` = the scratch copy is a plain directory, bounded per file only.
    pub fn workspace_bound(&self) -> Option<WorkspaceBound> {
        workspace_fs::probe().is_ok().then_some(self.workspace)
    }

    /// Whether processes run inside bwrap.
    pub fn is_sandboxed(&self) -> bool {
        self.bwrap.is_some()
    }

    /// `run_start.sandbox`: the kind, version, network and every limit that is enforced,
    /// by what; the time limits are the runner's.
    /// (`tool_timeout_ms` is recorded when the config states one.)
    pub fn info(&self, tool_timeout_ms: Option<u64>, execution_timeout_ms: u64) -> SandboxInfo {
        let host = host();
        let mut enforced = Vec::new();
        let mut add = |limit: &str, value: u64, by: &str| {
            enforced.push(EnforcedLimit {
                limit: limit.to_owned(),
                value,
                by: by.to_owned(),
            });
        };
        let l = &self.limits;
        add("memory_bytes", l.memory_bytes, "rlimit");
        add("cpu_seconds", l.cpu_seconds, "rlimit");
        add("file_size_bytes", l.file_size_bytes, "rlimit");
        add("open_files", l.open_files, "rlimit");
        // Root is exempt from RLIMIT_NPROC; only a cgroup holds its processes.
        if !nix::unistd::geteuid().is_root() {
            add("processes", l.processes, "rlimit");
        }
        if host.pids_cgroup.is_some() {
            add("processes", self.limits.processes, "cgroup");
        }
        if host.memory_cgroup.is_some() {
            add("memory_bytes", self.limits.memory_bytes, "cgroup");
        }
        let sandboxed = self.bwrap.is_some();
        if sandboxed {
            add("tmp_bytes", self.limits.tmp_bytes, "tmpfs");
        }
        if let Some(bound) = self.workspace_bound() {
            add("workspace_bytes", bound.bytes, "tmpfs");
            add("workspace_inodes", bound.inodes, "tmpfs");
        }
        if let Some(ms) = tool_timeout_ms {
            add("tool_timeout_ms", ms, "runner");
        }
        add("execution_timeout_ms", execution_timeout_ms, "runner");
        let runner_uid = nix::unistd::getuid().as_raw();
        let pids_limit = if host.pids_cgroup.is_some() {
            PidsLimit::Cgroup
        } else if runner_uid != 0 {
            PidsLimit::Rlimit
        } else {
            PidsLimit::None
        };
        SandboxInfo {
            kind: if sandboxed { "bwrap" } else { "none" }.to_owned(),
            version: self.bwrap.clone(),
            network_isolated: sandboxed && !self.network,
            uid_inside: Some(if sandboxed { SANDBOX_UID } else { runner_uid }),
            uid_outside: Some(runner_uid),
            user_namespace: Some(sandboxed),
            capabilities_dropped: Some(sandboxed),
            seccomp: Some(sandboxed),
            network: Some(match (sandboxed, self.network) {
                (true, false) => SandboxNetwork::None,
                (true, true) => SandboxNetwork::Pasta,
                (false, _) => SandboxNetwork::Host,
            }),
            pids_limit: Some(pids_limit),
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
        let mut cgroups = TreeGuard {
            pids: None,
            memory: None,
            network: None,
            status: None,
        };
        if let Some(base) = &host.pids_cgroup {
            cgroups.pids = Some(SandboxCgroup::create(
                base,
                Controller::Pids,
                self.limits.processes,
            )?);
        }
        if let Some(base) = &host.memory_cgroup {
            cgroups.memory = Some(SandboxCgroup::create(
                base,
                Controller::Memory,
                self.limits.memory_bytes,
            )?);
        }
        // bwrap's status pipe: its write end is the launcher's stdin, moved to `STATUS_FD`
        // before the launcher execs (no `unsafe` fd plumbing in the runner), so nothing
        // else the runner spawns meanwhile inherits it.
        let status = match self.bwrap {
            Some(_) => Some(nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(io::Error::from)?),
            None => None,
        };
        let env = self.environment(spec);

        let filters = match self.bwrap {
            Some(_) => Some(seccomp::filters().map_err(io::Error::other)?.paths()),
            None => None,
        };
        let procs = |cg: &Option<SandboxCgroup>| {
            cg.as_ref()
                .map(|cg| cg.dir.join("cgroup.procs").into_os_string())
                .unwrap_or_default()
        };
        let mut argv: Vec<OsString> = vec!["/bin/sh".into(), "-c".into(), LAUNCHER.into()];
        argv.push(procs(&cgroups.pids));
        argv.push(procs(&cgroups.memory));
        match filters {
            Some(paths) => argv.extend(paths.map(PathBuf::into_os_string)),
            None => argv.extend([OsString::new(), OsString::new()]),
        }
        argv.push(match status {
            Some(_) => STATUS_FD.into(),
            None => OsString::new(),
        });
        argv.push(self.limits.launcher_arg().into());
        if let (Some(_), true, Ok(tools)) = (&self.bwrap, self.network, &host.network) {
            let network = PastaNetwork::start(tools)?;
            argv.extend(network.enter());
            cgroups.network = Some(network);
        }
        if self.bwrap.is_some() {
            argv.push("bwrap".into());
            argv.extend(["--json-status-fd".into(), STATUS_FD.into()]);
            argv.extend(self.bwrap_args(spec, &host.toolchains, &env));
        }
        argv.push(spec.program.to_owned());
        match self.bwrap {
            Some(_) => argv.extend(self.inside_args(spec)),
            None => argv.extend(spec.args.iter().cloned()),
        }

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
        cgroups.status = match status {
            Some((read_end, write_end)) => {
                command.stdin(Stdio::from(write_end));
                Some(read_end)
            }
            None => {
                command.stdin(Stdio::null());
                None
            }
        };
        Ok((command, cgroups))
    }

    /// The sandboxed program's whole environment: `PATH`, `HOME` and `LANG` (the image's
    /// when it sets them), the image's other settings, and `spec`'s own.
    fn environment(&self, spec: &SandboxedCommand<'_>) -> Vec<(String, String)> {
        let image = self.image.as_deref().filter(|_| self.bwrap.is_some());
        let image_var = |key: &str| {
            image.and_then(|i| i.env.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()))
        };
        let path = match (&self.environment, image_var("PATH")) {
            (_, Some(path)) => path,
            (Some(env), None) => format!("{}:{}", env.join("bin").display(), sandbox_path()),
            (None, None) => sandbox_path(),
        };
        let home = match self.bwrap {
            Some(_) => SANDBOX_HOME.to_owned(),
            None => std::env::var("HOME").unwrap_or_else(|_| SANDBOX_HOME.to_owned()),
        };
        let mut env: Vec<(String, String)> = vec![
            ("PATH".into(), path),
            ("HOME".into(), home),
            (
                "LANG".into(),
                image_var("LANG").unwrap_or_else(|| "C.UTF-8".into()),
            ),
        ];
        // The image's own settings (a conda prefix, locale, ...), never HOME or PATH.
        env.extend(
            image
                .iter()
                .flat_map(|i| &i.env)
                .filter(|(k, _)| !matches!(k.as_str(), "PATH" | "HOME" | "LANG"))
                .cloned(),
        );
        if self.bwrap.is_some() && image.is_none() {
            // Cargo's registry cache and lock files go to the private /tmp.
            env.push(("CARGO_HOME".into(), format!("{SANDBOX_HOME}/.cargo")));
        }
        env.extend(spec.env.iter().cloned());
        env
    }

    fn bwrap_args(
        &self,
        spec: &SandboxedCommand<'_>,
        toolchains: &[PathBuf],
        env: &[(String, String)],
    ) -> Vec<OsString> {
        let mut args = confinement_args();
        if !self.network {
            args.push("--unshare-net".into());
        }
        if let Some(image) = &self.image {
            // The image's top-level entries first, read-only, on bwrap's own tmpfs root:
            // everything below is mounted on top of them, and a mount point outside them
            // (a host path bound read-only, the judge's directory) can still be made.
            args.extend(root_binds(&image.root));
        }
        // The private /tmp first: host paths under /tmp bound below (the scratch copy, an
        // agent program, an exec agent's brief, the judge's pristine files and report
        // directory) are then mounted on top of it, not hidden by it.
        args.extend([
            "--size".into(),
            self.limits.tmp_bytes.to_string().into(),
            "--tmpfs".into(),
            "/tmp".into(),
        ]);
        if self.image.is_none() {
            args.extend(system_binds());
        }
        // An image's /etc is its own; with the network on, the host's resolver files lie
        // over those it has (a bind needs a file to lie over on a read-only /etc).
        let in_image = |entry: &&&str| {
            self.image
                .as_ref()
                .is_none_or(|i| i.root.join("etc").join(entry).is_file())
        };
        let etc = ETC_NETWORK_ENTRIES
            .iter()
            .filter(|_| self.network)
            .filter(in_image)
            .chain(ETC_ENTRIES.iter().filter(|_| self.image.is_none()));
        for entry in etc {
            let path = Path::new("/etc").join(entry);
            args.extend(["--ro-bind-try".into(), path.clone().into(), path.into()]);
        }
        // Host toolchains and a host virtualenv belong to the host's root, not an image's.
        let host_dirs = toolchains
            .iter()
            .chain(&self.environment)
            .filter(|_| self.image.is_none());
        for dir in host_dirs.chain(spec.read_only) {
            let inside = self.inside(spec, dir);
            args.extend(["--ro-bind".into(), dir.clone().into(), inside.into()]);
        }
        args.extend(proc_and_dev());
        let workdir = self.inside(spec, spec.workdir);
        args.extend([
            "--bind".into(),
            spec.workdir.as_os_str().to_owned(),
            workdir.clone().into(),
            "--chdir".into(),
            workdir.into(),
        ]);
        for bind in spec.binds {
            let flag = if bind.read_only {
                "--ro-bind"
            } else {
                "--bind"
            };
            args.extend([
                flag.into(),
                bind.src.clone().into_os_string(),
                self.inside(spec, &bind.dest).into(),
            ]);
        }
        args.push("--clearenv".into());
        for (key, value) in env {
            args.extend(["--setenv".into(), key.into(), value.into()]);
        }
        args.push("--".into());
        args
    }

    /// Where host path `path` of `spec` appears in the sandbox: where it is on the host,
    /// except that in an image the scratch copy is at the image's working directory.
    fn inside(&self, spec: &SandboxedCommand<'_>, path: &Path) -> PathBuf {
        match &self.image {
            Some(image) => image.inside(spec.workdir, path),
            None => path.to_path_buf(),
        }
    }

    /// The arguments of `spec` as the sandbox sees them: in an image, an argument that is
    /// a path in the scratch copy names it at the image's working directory.
    fn inside_args(&self, spec: &SandboxedCommand<'_>) -> Vec<OsString> {
        spec.args
            .iter()
            .map(|arg| self.inside(spec, Path::new(arg)).into_os_string())
            .collect()
    }
}

/// The process tree of one sandboxed command: kills whatever is left in its cgroups, and
/// removes them, on [`TreeGuard::kill`] and on drop. Without a cgroup the pid namespace
/// (killing `bwrap` ends it) and the process group are the tree.
#[derive(Debug)]
pub struct TreeGuard {
    /// The command's own `pids` cgroup, when the host allows one.
    pids: Option<SandboxCgroup>,
    /// The command's own `memory` cgroup, when the host allows one.
    memory: Option<SandboxCgroup>,
    /// The command's network namespace with pasta (`network_enabled`); deleted after the
    /// processes are killed (fields drop after [`Drop::drop`]).
    network: Option<PastaNetwork>,
    /// The read end of bwrap's `--json-status-fd`; `None` for plain processes.
    status: Option<OwnedFd>,
}

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

    /// SIGKILLs every process still in the tree's cgroups.
    pub fn kill(&self) {
        for cg in self.pids.iter().chain(&self.memory) {
            cg.kill_all();
        }
    }
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        for cg in self.pids.take().into_iter().chain(self.memory.take()) {
            cg.kill_all();
            cg.remove();
        }
    }
}

/// A cgroup made for one sandboxed command, in one controller's hierarchy.
#[derive(Debug)]
struct SandboxCgroup {
    dir: PathBuf,
}

impl SandboxCgroup {
    fn create(base: &Path, controller: Controller, limit: u64) -> io::Result<SandboxCgroup> {
        let dir = base.join(format!("bench-sandbox-{}", uuid::Uuid::new_v4().simple()));
        fs::create_dir(&dir)?;
        let cg = SandboxCgroup { dir };
        if let Err(e) = fs::write(controller.limit_file(&cg.dir), limit.to_string()) {
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
            // Usually the last process of a command that just ended, on its way out.
            std::thread::sleep(std::time::Duration::from_millis(1));
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

    #[test]
    fn an_images_root_is_its_top_level_entries_read_only_on_a_root_of_bwraps_own() {
        let root = tempfile::tempdir().expect("tempdir");
        fs::create_dir(root.path().join("usr")).expect("mkdir");
        fs::write(root.path().join("marker"), "x").expect("write");
        std::os::unix::fs::symlink("usr/bin", root.path().join("bin")).expect("symlink");
        let args: Vec<String> = root_binds(root.path())
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = |name: &str| root.path().join(name).display().to_string();
        assert_eq!(
            args,
            [
                "--symlink".to_owned(),
                "usr/bin".to_owned(),
                "/bin".to_owned(),
                "--ro-bind".to_owned(),
                at("marker"),
                "/marker".to_owned(),
                "--ro-bind".to_owned(),
                at("usr"),
                "/usr".to_owned(),
            ]
        );
    }

    fn limits(network_enabled: bool) -> SandboxLimits {
        SandboxLimits {
            memory_mb: Some(512),
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
            binds: &[Bind {
                src: "/tmp/pristine/test_x.py".into(),
                dest: workdir.join("test_x.py"),
                read_only: true,
            }],
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
        // KiB, seconds, 512-byte blocks, files, processes.
        assert_eq!(l.launcher_arg(), "524288 4 131072 1024 256");
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
        // Extra binds come after the workspace they lie over.
        let extra = closed.iter().position(|a| a == "/tmp/pristine/test_x.py");
        assert!(bind < extra, "{closed:?}");
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
    fn every_sandbox_is_unprivileged_filtered_and_bounded() {
        let mut c = Confinement::unsandboxed(&limits(false));
        c.bwrap = Some("bubblewrap test".to_owned());
        let args = args_of(&c, Path::new("/tmp/bench-run-x"));
        let has = |pair: &[&str]| args.windows(pair.len()).any(|w| w == pair);
        assert!(
            has(&["--unshare-user", "--uid", "65534", "--gid", "65534"]),
            "{args:?}"
        );
        assert!(has(&["--disable-userns"]));
        assert!(has(&["--cap-drop", "ALL"]));
        assert!(has(&["--add-seccomp-fd", "8"]) && has(&["--add-seccomp-fd", "9"]));
        assert!(has(&["--proc", "/proc", "--remount-ro", "/proc"]));
        assert!(has(&["--ro-bind", "/dev/null", "/proc/keys"]));
        // /tmp is sized by disk_mb and mounted before every bind, which go on top of it.
        let sized = args
            .windows(4)
            .position(|w| w == ["--size", "67108864", "--tmpfs", "/tmp"])
            .expect("sized /tmp");
        let first_bind = args
            .iter()
            .position(|a| a.starts_with("--ro-bind") || a == "--bind")
            .expect("binds");
        assert!(sized < first_bind, "{args:?}");

        let info = c.info(Some(1000), 2000);
        assert_eq!(info.uid_inside, Some(SANDBOX_UID));
        assert_eq!(info.uid_outside, Some(nix::unistd::getuid().as_raw()));
        assert_eq!(info.user_namespace, Some(true));
        assert_eq!(info.capabilities_dropped, Some(true));
        assert_eq!(info.seccomp, Some(true));
        assert_eq!(info.network, Some(SandboxNetwork::None));
        assert!(info
            .enforced
            .iter()
            .any(|l| l.limit == "tmp_bytes" && l.value == 64 << 20 && l.by == "tmpfs"));
    }

    #[test]
    fn read_only_paths_the_sandbox_cannot_show_are_refused() {
        let dir = tempfile::tempdir().expect("dir");
        assert_eq!(
            mountable_read_only(&[dir.path().to_path_buf()]).expect("mountable"),
            vec![dir.path().canonicalize().expect("canonical")]
        );
        for refused in [
            PathBuf::from("/"),
            std::env::temp_dir(),
            PathBuf::from("/proc/self"),
            PathBuf::from("/sys"),
            dir.path().join("missing"),
        ] {
            assert!(
                mountable_read_only(std::slice::from_ref(&refused)).is_err(),
                "{}",
                refused.display()
            );
        }
    }

    #[test]
    fn unsandboxed_runs_say_none() {
        let info = Confinement::unsandboxed(&limits(true)).info(Some(1000), 2000);
        assert_eq!(info.kind, "none");
        assert_eq!(info.version, None);
        assert!(!info.network_isolated);
        assert_eq!(info.user_namespace, Some(false));
        assert_eq!(info.seccomp, Some(false));
        assert_eq!(info.network, Some(SandboxNetwork::Host));
        assert!(info
            .enforced
            .iter()
            .any(|l| l.limit == "execution_timeout_ms" && l.value == 2000 && l.by == "runner"));
    }

    /// The launcher wires bwrap's status pipe to [`STATUS_FD`] beside the seccomp filters
    /// on [`SECCOMP_FDS`]: a command that ran reports its setup whatever it exited with,
    /// a bind bwrap cannot make reports none, and the command's stdin is not the pipe.
    #[tokio::test]
    async fn bwrap_says_on_its_status_fd_whether_it_set_the_sandbox_up() {
        let confinement =
            Confinement::for_run(&limits(false), false).expect("bwrap works on the test host");
        let dir = tempfile::tempdir().expect("dir");
        let workdir = dir.path().canonicalize().expect("canonical");
        let run = |read_only: Vec<PathBuf>, script: &'static str| {
            let (confinement, workdir) = (confinement.clone(), workdir.clone());
            async move {
                let args = ["-c".into(), script.into()];
                let (mut command, tree) = confinement
                    .command(&SandboxedCommand {
                        program: "/bin/sh".as_ref(),
                        args: &args,
                        workdir: &workdir,
                        read_only: &read_only,
                        env: &[],
                        binds: &[],
                    })
                    .expect("sandboxed command");
                let out = command.output().await.expect("ran");
                (out.status.code(), tree.setup_completed(), out.stdout)
            }
        };
        // stdin is /dev/null: reading it ends at once, and exit 3 is the command's own.
        let (code, set_up, stdout) = run(Vec::new(), "cat; echo read; exit 3").await;
        assert_eq!((code, set_up), (Some(3), true));
        assert_eq!(stdout, b"read\n");
        let (code, set_up, _) = run(vec![workdir.join("missing")], "exit 0").await;
        assert_eq!(code, Some(1), "bwrap cannot bind a missing path");
        assert!(
            !set_up,
            "a sandbox bwrap could not make was reported as set up"
        );
    }
}
