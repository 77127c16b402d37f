//! The file system a run's scratch copy lives on: where the runner may mount one, a tmpfs
//! of `disk_mb` bytes with a capped number of inodes, mounted on the scratch directory
//! before the fixture is copied in, so that everything the agent writes there (through
//! its commands and the file tools alike) counts against `disk_mb` and the inode cap.
//! Without it only each file is bounded (`RLIMIT_FSIZE`), not their total or count.
//!
//! Mounting needs `CAP_SYS_ADMIN` in the runner's mount namespace, so a root runner gets
//! it and an unprivileged one does not: a loop-mounted image or an XFS/ext4 project quota
//! needs root as well, and an unprivileged user can mount a tmpfs only inside a user
//! namespace of its own, which the runner's in-process file tools and judge would then
//! have to enter. [`probe`] says which held; `run_start.sandbox.enforced` lists
//! `workspace_bytes` and `workspace_inodes` (by `tmpfs`) only where it did.
//!
//! The mount is made with util-linux `mount` and removed with a lazy `umount` when the
//! scratch copy is dropped (before its directory is removed). It lives in the host's
//! mount namespace: a runner killed with SIGKILL leaves it behind with its directory, at
//! most `disk_mb` of memory, until the host reboots or an operator unmounts it.
//!
//! Its pages are memory: those the agent writes during a command are charged to that
//! command's `memory` cgroup (`memory_mb`), and the tmpfs as a whole never holds more
//! than `disk_mb`, so a run's workspace uses at most `disk_mb` of the host's memory.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use bench_schemas::SandboxLimits;

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

/// Whether the runner can mount a bounded file system for its workspaces here, probed
/// once per process by mounting one on a temp dir; else why not.
pub fn probe() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            if !nix::unistd::geteuid().is_root() {
                return Err("mounting a bounded workspace needs a root runner".into());
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
        let options = format!(
            "size={},nr_inodes={},mode=0700,nosuid,nodev",
            bound.bytes, bound.inodes
        );
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &options, "bench-workspace"])
            .arg(dir)
            .stdin(Stdio::null())
            .output()?;
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "mount -t tmpfs -o {options} on {}: {}",
                dir.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(TmpfsMount {
            dir: dir.to_path_buf(),
        })
    }
}

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        // Lazy: a process that still has it open (none should) cannot keep it mounted.
        let unmounted = Command::new("umount")
            .arg("--lazy")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            tracing::warn!(dir = %self.dir.display(), "cannot unmount a workspace file system");
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
