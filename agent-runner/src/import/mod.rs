//! Importing runs recorded by other agent frameworks as benchstream events, so they sit
//! beside native runs in the same tables. `agent-runner import swe-agent <dir>`.
//!
//! - [`traj`]: the SWE-agent `.traj` file format (lenient serde types).
//! - [`swe_agent`]: one trajectory → the events of one run, deterministic ids and times.
//! - [`args`]: the command line → [`ImportConfig`], the import loop ([`run`],
//!   [`import_dir`]) and its [`ImportReport`].
//!
//! Importing is idempotent: the same file yields the same event ids, so importing it
//! again stores nothing new. A file that cannot be read or parsed is reported and
//! skipped; the others are still imported.

pub mod args;
pub mod swe_agent;
pub mod traj;

use std::path::PathBuf;

pub use args::{
    import_dir, run, Destination, ImportArgs, ImportCommand, ImportConfig, ImportReport,
};

/// What only an import can meet: a trajectory that cannot be read or converted (the file
/// is then skipped, or the import refused when the directory itself cannot be read).
/// Everything else an import meets is a [`crate::Error`] of its own.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A file or directory cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not a SWE-agent trajectory.
    #[error("{path}: not a SWE-agent trajectory: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// An event of a trajectory is too large even after truncation.
    #[error("{path}: event {seq}: {source}")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The event's `seq`.
        seq: u64,
        /// Why.
        source: schemas::truncate::EventTooLarge,
    },
}
