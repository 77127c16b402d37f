//! The file system a run's scratch copy lives on, and the mount namespace it is mounted in.
//!
//! Where the runner may mount one, the scratch directory gets a tmpfs of `disk_mb` bytes
//! with a capped number of inodes before the fixture is copied in, so that everything the
//! agent writes there (through its commands and the file tools alike) counts against
//! `disk_mb` and the inode cap. Without it only each file is bounded (`RLIMIT_FSIZE`), not
//! their total or count.
//!
//! Mounting needs `CAP_SYS_ADMIN` over the runner's mount namespace. The binary's commands
//! that run agents therefore give the runner a mount namespace of its own at start-up,
//! before any thread exists ([`enter_mount_namespace`], called by `main` before it builds
//! the async runtime):
//! - a root runner unshares its mount namespace (`CLONE_NEWNS`);
//! - an unprivileged runner unshares a user namespace together with it (`CLONE_NEWUSER |
//!   CLONE_NEWNS`), mapping its own uid and gid to themselves (`setgroups` denied): it
//!   stays the same user for every file and process outside, and holds `CAP_SYS_ADMIN`
//!   over its own mount namespace only, where a tmpfs may be mounted. Its children (bwrap,
//!   git, the judge's commands) are exec'd as that non-root uid and so start without any
//!   capability; Debian's bwrap, not setuid, nests the sandbox's user namespace inside.
//!
//! Either way `/` is then made a recursive slave: the host's mounts still propagate in,
//! but the runner's (workspace file systems, the network namespaces pasta is attached to)
//! never propagate out. They exist only as long as the runner does: a runner killed with
//! SIGKILL leaves no mount behind, only the empty scratch directories.
//!
//! Where no namespace can be had (user namespaces disabled by sysctl or by a container, a
//! caller already threaded), a root runner mounts in the namespace it is in, as a process
//! that embeds the library without calling [`enter_mount_namespace`] does (the test
//! suite's in-process runs): there a runner killed with SIGKILL leaves its workspace file
//! systems mounted (at most `disk_mb` of memory each) until an operator unmounts them. An
//! unprivileged runner without a namespace gets no bound. [`probe`] says which held;
//! `run_start.sandbox.enforced` lists `workspace_bytes` and `workspace_inodes` (by
//! `tmpfs`) only where it did, and `uid_outside` says whose runner it was.
//!
//! The mount is made and removed (lazily, when the scratch copy is dropped, before its
//! directory is removed) by the runner itself, with `mount(2)` and `umount2(2)`: a
//! `mount` program it started would run without the capabilities of an unprivileged
//! runner's user namespace.
//!
//! Its pages are memory: those the agent writes during a command are charged to that
//! command's `memory` cgroup (`memory_mb`), and the tmpfs as a whole never holds more
//! than `disk_mb`, so a run's workspace uses at most `disk_mb` of the host's memory.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bench_schemas::SandboxLimits;
use nix::mount::{MntFlags, MsFlags};
use nix::sched::CloneFlags;
use nix::unistd::{getegid, geteuid};

/// Bytes of `disk_mb` per inode of the cap: one file per 16 KiB on average, what source
/// trees with their build output need, and far fewer than a file-creating loop makes.
const BYTES_PER_INODE: u64 = 16 << 10;

/// The fewest inodes a workspace gets, whatever `disk_mb`: room for a fixture and its
/// build output under the smallest disks.
const MIN_INODES: u64 = 4096;

/// The bounds of one run's workspace file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkspaceBound {
    /// Its size (`disk_mb`), bytes.
    pub bytes: u64,
    /// The files, directories and links it can hold, its root included.
    pub inodes: u64,
}

impl WorkspaceBound {
    /// The bound of a run with `limits`.
    pub fn from_limits(limits: &SandboxLimits) -> WorkspaceBound {
        let bytes = limits.disk_mb.saturating_mul(1 << 20);
        WorkspaceBound {
            bytes,
            inodes: (bytes / BYTES_PER_INODE).max(MIN_INODES),
        }
    }
}

/// The mount namespace of its own the runner entered ([`enter_mount_namespace`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunnerNamespace {
    /// A root runner: a mount namespace of its own (`CLONE_NEWNS`).
    Mount,
    /// An unprivileged runner: a user namespace of its own, its uid and gid mapped to
    /// themselves, and a mount namespace owned by it.
    UserAndMount,
}

/// Why the runner has no mount namespace of its own.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MountNamespaceError {
    /// `unshare` affects the calling thread alone (and `CLONE_NEWUSER` refuses a threaded
    /// process): the other threads would keep mounting in the host's namespace.
    #[error("the process already has {0} threads; a mount namespace must be entered before any")]
    Threaded(usize),
    /// `unshare` refused: user namespaces disabled, or not allowed here.
    #[error("cannot create a {namespaces} namespace (user namespaces disabled?): {errno}")]
    Unshare {
        /// The namespaces asked for (`mount`, `user and mount`).
        namespaces: &'static str,
        /// Why.
        errno: nix::Error,
    },
    /// The runner's uid or gid could not be mapped to itself in its user namespace.
    #[error("cannot map the runner's uid and gid in its user namespace ({file}): {reason}")]
    Map {
        /// The `/proc/self` file written (`uid_map`, `gid_map`, `setgroups`).
        file: &'static str,
        /// Why.
        reason: String,
    },
    /// `/` could not be made a recursive slave mount.
    #[error(
        "cannot keep the runner's mounts from propagating to the host (making / a slave): {0}"
    )]
    Slave(nix::Error),
}

/// What [`enter_mount_namespace`] did, once per process; `None` = never called (the
/// library embedded in a process of its own: mounts are made in the namespace it is in).
static NAMESPACE: OnceLock<Result<RunnerNamespace, MountNamespaceError>> = OnceLock::new();

/// Gives the runner a mount namespace of its own (see the module doc), in which the
/// workspace file systems of its runs are mounted, never visible to the host and gone
/// with the runner. Must be called before the process starts any thread (before the
/// async runtime is built); later calls return the first outcome.
///
/// # Errors
///
/// No namespace could be had: the runner then mounts in the namespace it is in (root) or
/// bounds no workspace (unprivileged), and says so in `run_start.sandbox`.
pub fn enter_mount_namespace() -> Result<RunnerNamespace, MountNamespaceError> {
    NAMESPACE.get_or_init(unshare_namespaces).clone()
}

fn unshare_namespaces() -> Result<RunnerNamespace, MountNamespaceError> {
    // Each thread is a task of its own in /proc/self/task; unreadable = assume one.
    let threads = fs::read_dir("/proc/self/task").map_or(1, Iterator::count);
    if threads > 1 {
        return Err(MountNamespaceError::Threaded(threads));
    }
    let (uid, gid) = (geteuid(), getegid());
    let namespace = if uid.is_root() {
        nix::sched::unshare(CloneFlags::CLONE_NEWNS).map_err(|errno| {
            MountNamespaceError::Unshare {
                namespaces: "mount",
                errno,
            }
        })?;
        RunnerNamespace::Mount
    } else {
        nix::sched::unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).map_err(
            |errno| MountNamespaceError::Unshare {
                namespaces: "user and mount",
                errno,
            },
        )?;
        // An unprivileged process may map its own ids only, and its gid only once it has
        // given up setgroups(2) (which could otherwise drop a group that denies access).
        for (file, map) in [
            ("/proc/self/setgroups", "deny".to_owned()),
            ("/proc/self/uid_map", format!("{uid} {uid} 1")),
            ("/proc/self/gid_map", format!("{gid} {gid} 1")),
        ] {
            fs::write(file, map).map_err(|e| MountNamespaceError::Map {
                file,
                reason: e.to_string(),
            })?;
        }
        RunnerNamespace::UserAndMount
    };
    nix::mount::mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_SLAVE,
        None::<&str>,
    )
    .map_err(MountNamespaceError::Slave)?;
    Ok(namespace)
}

/// Whether the runner can mount a bounded file system for its workspaces here, probed
/// once per process by mounting one on a temp dir; else why not.
pub fn probe() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            let unprivileged = !geteuid().is_root();
            match NAMESPACE.get() {
                Some(Ok(_)) => {}
                Some(Err(e)) if unprivileged => {
                    return Err(format!("no user namespace of the runner's own: {e}"))
                }
                None if unprivileged => {
                    return Err("the runner entered no user namespace of its own".into())
                }
                // Root mounts in the namespace it is in.
                Some(Err(_)) | None => {}
            }
            let dir = tempfile::tempdir().map_err(|e| format!("no temp dir to probe: {e}"))?;
            let bound = WorkspaceBound {
                bytes: 1 << 20,
                inodes: MIN_INODES,
            };
            TmpfsMount::mount(dir.path(), bound)
                .map(drop)
                .map_err(|e| e.to_string())
        })
        .clone()
}

/// A tmpfs mounted on a scratch directory; lazily unmounted on drop.
#[derive(Debug)]
pub struct TmpfsMount {
    dir: PathBuf,
}

impl TmpfsMount {
    /// Mounts a tmpfs of `bound` on `dir` (mode `0700`, owned by the runner).
    pub fn mount(dir: &Path, bound: WorkspaceBound) -> io::Result<TmpfsMount> {
        let options = format!("size={},nr_inodes={},mode=0700", bound.bytes, bound.inodes);
        nix::mount::mount(
            Some("bench-workspace"),
            dir,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some(options.as_str()),
        )
        .map_err(|errno| {
            io::Error::other(format!(
                "mount -t tmpfs -o {options},nosuid,nodev on {}: {errno}",
                dir.display()
            ))
        })?;
        Ok(TmpfsMount {
            dir: dir.to_path_buf(),
        })
    }
}

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        // Lazy: a process that still has it open (none should) cannot keep it mounted.
        if let Err(errno) = nix::mount::umount2(&self.dir, MntFlags::MNT_DETACH) {
            tracing::warn!(dir = %self.dir.display(), %errno, "cannot unmount a workspace file system");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inode_cap_follows_the_disk_with_a_floor() {
        let limits = |disk_mb| SandboxLimits {
            memory_mb: Some(512),
            cpu_cores: 1.0,
            disk_mb,
            network_enabled: false,
            execution_timeout_ms: 1000,
        };
        assert_eq!(
            WorkspaceBound::from_limits(&limits(16)),
            WorkspaceBound {
                bytes: 16 << 20,
                inodes: MIN_INODES
            }
        );
        assert_eq!(WorkspaceBound::from_limits(&limits(1024)).inodes, 65536);
    }
}
