//! bench-sandbox: the room an agent works in. Every process an agent causes (a `bash` tool
//! call, a judge test, an `exec` agent with all its children) runs confined, in a scratch
//! copy of its task's fixture, and nothing it does reaches the host, the runner or another
//! run.
//!
//! The one entry point is the [`Confinement`] of a run ([`SandboxMode::confinement`]):
//! [`Confinement::command`] turns a [`SandboxedCommand`] into a process inside bubblewrap
//! with the run's limits, and [`run_confined`] runs one to its end with a timeout and an
//! output cap. The agent works in a [`Scratch`] copy of the fixture, on a bounded file
//! system of its own where the runner entered its own mount namespace
//! ([`enter_mount_namespace`], once, before any thread starts).
//!
//! It knows nothing of agents, policies, judges or events: it takes limits and commands.
//! What it guarantees, and the test of each guarantee, is in its README.
//!
//! # Layout
//!
//! - `bwrap`: [`Confinement`], the process sandbox and the limits every command runs
//!   under, and [`SandboxInfo`](bench_schemas::SandboxInfo), what was in force.
//! - `seccomp`: the system calls denied inside it.
//! - `network`: the network of a sandbox with `network_enabled` (pasta, no host loopback).
//! - `workspace_fs`: the bounded file system (size and inodes) the scratch copy lives on,
//!   and the mount namespace of the runner's own it is mounted in.
//! - `shell`: commands run to their end in the sandbox, with timeout, tree kill and
//!   output cap ([`run_confined`], [`run_shell`]).
//! - `scratch`: the scratch copy of a fixture and the paths that stay inside it
//!   ([`Scratch`]).
//! - `fixture_tree`: fixture trees and their hash ([`Tree`]), and the one directory walk
//!   ([`walk`]).
//! - `base_repo`: one-commit git repositories, the only history an agent sees, and the
//!   diffs against them.
//! - `terminal`: what reaches the operator from the agent: control characters escaped in
//!   every log field and in the agent's stderr, agent-caused warnings held to a bound.

#![warn(missing_docs)]
// The module docs link the crate's private modules too, for readers of
// `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

mod base_repo;
mod bwrap;
mod fixture_tree;
mod network;
mod scratch;
mod seccomp;
mod shell;
mod terminal;
mod workspace_fs;

pub use base_repo::{
    apply as apply_patch, commit_tree, diff_against_commit, export as export_commit, git_dir,
    init as init_base_repo, BaseRepoError,
};
pub use bwrap::{
    host, mountable_read_only, sandbox_path, Bind, Confinement, ImageRoot, SandboxMode,
    SandboxUnavailable, SandboxedCommand, TreeGuard, UnmountablePath, SANDBOX_UID,
};
pub use fixture_tree::{
    is_ignored, walk, FileEntry, Symlinks, Tree, TreeError, TreeLink, WalkError, IGNORED_DIRS,
};
pub use scratch::{PathError, Scratch, ScratchError};
pub use shell::{run_confined, run_shell, Capture, ShellError, ShellOutput, ShellSpec};
pub use terminal::{Admit, Escaped, EscapingFields, WarnLimiter};
pub use workspace_fs::{
    enter_mount_namespace, MountNamespaceError, RunnerNamespace, WorkspaceBound,
};
