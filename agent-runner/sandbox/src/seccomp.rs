//! The seccomp filters every sandboxed process runs under, compiled once per runner process
//! with `seccompiler` (never hand-written BPF) and handed to `bwrap --add-seccomp-fd`,
//! which installs them just before it executes the agent's program, after its own mounts.
//!
//! What they deny, and why each matters even inside a user namespace without capabilities:
//! - new or changed mounts (`mount`, `umount2`, `pivot_root` and the mount-API calls
//!   `fsopen`, `fsconfig`, `fsmount`, `fspick`, `move_mount`, `open_tree`,
//!   `mount_setattr`): the read-only host paths stay as bwrap left them;
//! - file handles (`open_by_handle_at`, `name_to_handle_at`): opening a host file by handle
//!   bypasses every mount;
//! - keyrings (`keyctl`, `add_key`, `request_key`): the runner's session keyring and the
//!   user keyrings of other runs are out of reach;
//! - other processes and the kernel (`ptrace`, `process_vm_readv`/`writev`, `bpf`,
//!   `perf_event_open`, `userfaultfd`), and `io_uring`, whose operations this filter would
//!   not see;
//! - namespaces (`unshare`, `setns`, and `clone` with any `CLONE_NEW*` flag): no nested user
//!   namespace to regain capabilities in, on top of `bwrap --disable-userns`;
//! - terminal injection (`ioctl` `TIOCSTI`, `TIOCLINUX`) on a terminal the agent inherited;
//! - kexec, kernel modules, swap, reboot, `acct`, `quotactl`, `syslog`.
//!
//! Denied calls fail with `EPERM`. `clone3` fails with `ENOSYS` instead (a second filter):
//! its flags are in memory a filter cannot read, and `ENOSYS` is what makes the C library
//! fall back to `clone`, whose flags it can check.
//!
//! Each filter first checks the architecture of the call: a call of another ABI (32-bit
//! x86 through `int 0x80`) kills the process, since the numbers below would not mean the
//! same calls there. The x32 ABI of x86_64 kernels shares the x86_64 architecture value
//! with numbers offset by `0x40000000`, which these filters do not list: on a kernel with
//! x32 enabled (`CONFIG_X86_X32_ABI` and `syscall.x32=y`; off in Debian's by default) those
//! calls are not filtered.
//!
//! This module compiles and serialises the programs and keeps them in unlinked files that
//! a child opens by path ([`Filters::paths`]). Those files are held open by a holder
//! process, not by the runner: under an unprivileged runner the runner holds capabilities
//! over its own user namespace ([`super::workspace_fs`]) that its children lack, and the
//! kernel lets no less capable process open a more capable one's descriptors
//! (`/proc/<pid>/fd`, ptrace access mode). The holder is `/bin/sh` blocked reading a pipe
//! only the runner can write to: it exits when the runner does, SIGKILL included.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Seek, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use nix::fcntl::OFlag;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// Why the filters could not be built.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SeccompError {
    #[error("seccomp filters are not available for the {0} architecture")]
    Arch(String),
    #[error("cannot compile the seccomp filter: {0}")]
    Compile(String),
    #[error("cannot store the seccomp filter: {0}")]
    Store(String),
}

/// Namespace flags `clone` may not carry (`linux/sched.h`).
const CLONE_NAMESPACE_FLAGS: &[u64] = &[
    0x0002_0000, // CLONE_NEWNS
    0x0200_0000, // CLONE_NEWCGROUP
    0x0400_0000, // CLONE_NEWUTS
    0x0800_0000, // CLONE_NEWIPC
    0x1000_0000, // CLONE_NEWUSER
    0x2000_0000, // CLONE_NEWPID
    0x4000_0000, // CLONE_NEWNET
    0x0000_0080, // CLONE_NEWTIME
];

/// `ioctl` requests that push input into a terminal (`asm-generic/ioctls.h`).
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;

/// System calls denied whatever their arguments.
fn denied_outright() -> Vec<i64> {
    vec![
        syscall::MOUNT,
        syscall::UMOUNT2,
        syscall::PIVOT_ROOT,
        syscall::FSOPEN,
        syscall::FSCONFIG,
        syscall::FSMOUNT,
        syscall::FSPICK,
        syscall::MOVE_MOUNT,
        syscall::OPEN_TREE,
        syscall::MOUNT_SETATTR,
        syscall::OPEN_BY_HANDLE_AT,
        syscall::NAME_TO_HANDLE_AT,
        syscall::KEYCTL,
        syscall::ADD_KEY,
        syscall::REQUEST_KEY,
        syscall::PTRACE,
        syscall::PROCESS_VM_READV,
        syscall::PROCESS_VM_WRITEV,
        syscall::BPF,
        syscall::PERF_EVENT_OPEN,
        syscall::USERFAULTFD,
        syscall::IO_URING_SETUP,
        syscall::IO_URING_ENTER,
        syscall::IO_URING_REGISTER,
        syscall::UNSHARE,
        syscall::SETNS,
        syscall::KEXEC_LOAD,
        syscall::KEXEC_FILE_LOAD,
        syscall::INIT_MODULE,
        syscall::FINIT_MODULE,
        syscall::DELETE_MODULE,
        syscall::SWAPON,
        syscall::SWAPOFF,
        syscall::REBOOT,
        syscall::ACCT,
        syscall::QUOTACTL,
        syscall::SYSLOG,
    ]
}

/// System call numbers of the architecture the runner is built for, from `libc` (the
/// kernel's `asm/unistd*.h`), never typed in by hand.
mod syscall {
    pub use libc::{
        SYS_acct as ACCT, SYS_add_key as ADD_KEY, SYS_bpf as BPF, SYS_clone as CLONE,
        SYS_clone3 as CLONE3, SYS_delete_module as DELETE_MODULE, SYS_finit_module as FINIT_MODULE,
        SYS_fsconfig as FSCONFIG, SYS_fsmount as FSMOUNT, SYS_fsopen as FSOPEN,
        SYS_fspick as FSPICK, SYS_init_module as INIT_MODULE, SYS_io_uring_enter as IO_URING_ENTER,
        SYS_io_uring_register as IO_URING_REGISTER, SYS_io_uring_setup as IO_URING_SETUP,
        SYS_ioctl as IOCTL, SYS_kexec_file_load as KEXEC_FILE_LOAD, SYS_kexec_load as KEXEC_LOAD,
        SYS_keyctl as KEYCTL, SYS_mount as MOUNT, SYS_mount_setattr as MOUNT_SETATTR,
        SYS_move_mount as MOVE_MOUNT, SYS_name_to_handle_at as NAME_TO_HANDLE_AT,
        SYS_open_by_handle_at as OPEN_BY_HANDLE_AT, SYS_open_tree as OPEN_TREE,
        SYS_perf_event_open as PERF_EVENT_OPEN, SYS_pivot_root as PIVOT_ROOT,
        SYS_process_vm_readv as PROCESS_VM_READV, SYS_process_vm_writev as PROCESS_VM_WRITEV,
        SYS_ptrace as PTRACE, SYS_quotactl as QUOTACTL, SYS_reboot as REBOOT,
        SYS_request_key as REQUEST_KEY, SYS_setns as SETNS, SYS_swapoff as SWAPOFF,
        SYS_swapon as SWAPON, SYS_syslog as SYSLOG, SYS_umount2 as UMOUNT2, SYS_unshare as UNSHARE,
        SYS_userfaultfd as USERFAULTFD,
    };
}

/// The two compiled filters, each in an unlinked file the holder process keeps open,
/// read-only: the one answering `EPERM` as its stdout, the one answering `clone3` with
/// `ENOSYS` as its stderr.
#[derive(Debug)]
pub struct Filters {
    /// The holder: `/bin/sh` blocked reading its stdin, the read end of a pipe.
    holder: Child,
    /// The write end of the holder's pipe, never written and never inherited: closed when
    /// this process exits, which ends the holder's read and so the holder.
    _lifeline: OwnedFd,
}

/// The holder's script: wait for the end of the pipe on its stdin. A builtin with no
/// redirection, so that fds 1 and 2 stay the filters throughout.
const HOLDER: &str = "read -r _";

impl Filters {
    /// Paths a child of this process can open to read each filter from its start:
    /// `/proc/<holder pid>/fd/{1,2}`, a fresh open file description each time, so
    /// concurrent sandboxes never share a read offset.
    pub fn paths(&self) -> [PathBuf; 2] {
        let pid = self.holder.id();
        [1, 2].map(|fd| PathBuf::from(format!("/proc/{pid}/fd/{fd}")))
    }

    /// Starts the holder of `deny` and `no_clone3`, in a process group of its own (a
    /// Ctrl-C at the runner's terminal must not end it before the runner).
    fn hold(deny: File, no_clone3: File) -> Result<Filters, SeccompError> {
        let store = |e: io::Error| SeccompError::Store(e.to_string());
        let (read_end, write_end) =
            nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| store(e.into()))?;
        let holder = Command::new("/bin/sh")
            .args(["-c", HOLDER])
            .env_clear()
            .stdin(Stdio::from(read_end))
            .stdout(Stdio::from(read_only(&deny).map_err(store)?))
            .stderr(Stdio::from(read_only(&no_clone3).map_err(store)?))
            .process_group(0)
            .spawn()
            .map_err(store)?;
        Ok(Filters {
            holder,
            _lifeline: write_end,
        })
    }
}

/// The filters, compiled on first use.
pub fn filters() -> Result<&'static Filters, SeccompError> {
    static FILTERS: OnceLock<Result<Filters, SeccompError>> = OnceLock::new();
    FILTERS.get_or_init(build).as_ref().map_err(Clone::clone)
}

fn build() -> Result<Filters, SeccompError> {
    let arch: TargetArch = std::env::consts::ARCH
        .try_into()
        .map_err(|_| SeccompError::Arch(std::env::consts::ARCH.to_owned()))?;
    let compile = |e: seccompiler::BackendError| SeccompError::Compile(e.to_string());
    let condition = |arg: u8, len, op, value| {
        SeccompCondition::new(arg, len, op, value)
            .and_then(|c| SeccompRule::new(vec![c]))
            .map_err(compile)
    };

    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = denied_outright()
        .into_iter()
        .map(|nr| (nr, Vec::new()))
        .collect();
    // One rule per flag: rules of a call are alternatives, conditions of a rule all hold.
    let clone_rules = CLONE_NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            condition(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(syscall::CLONE, clone_rules);
    let ioctl_rules = [TIOCSTI, TIOCLINUX]
        .into_iter()
        .map(|request| condition(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(syscall::IOCTL, ioctl_rules);

    let deny = compile_to_file(
        rules,
        SeccompAction::Errno(nix::errno::Errno::EPERM as u32),
        arch,
    )?;
    let no_clone3 = compile_to_file(
        BTreeMap::from([(syscall::CLONE3, Vec::new())]),
        SeccompAction::Errno(nix::errno::Errno::ENOSYS as u32),
        arch,
    )?;
    Filters::hold(deny, no_clone3)
}

/// A read-only description of `file`: what the holder keeps, so that nothing it might
/// print can change a filter.
fn read_only(file: &File) -> io::Result<File> {
    File::open(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// Compiles `rules` (matching calls get `action`, the rest are allowed) and stores the
/// program as the kernel reads it: `struct sock_filter` records in native byte order.
fn compile_to_file(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    action: SeccompAction,
    arch: TargetArch,
) -> Result<File, SeccompError> {
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, action, arch)
        .map_err(|e| SeccompError::Compile(e.to_string()))?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| SeccompError::Compile(e.to_string()))?;
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for insn in &program {
        bytes.extend_from_slice(&insn.code.to_ne_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_ne_bytes());
    }
    let store = |e: io::Error| SeccompError::Store(e.to_string());
    let mut file = tempfile::tempfile().map_err(store)?;
    file.write_all(&bytes).map_err(store)?;
    file.rewind().map_err(store)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_compile_to_whole_instructions() {
        let filters = filters().expect("filters");
        for path in filters.paths() {
            let len = std::fs::metadata(&path).expect("filter file").len();
            assert!(len > 0 && len % 8 == 0, "{}: {len} bytes", path.display());
        }
    }
}
