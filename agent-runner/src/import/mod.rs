//! Importing runs recorded by other agent frameworks as benchstream events, so they sit
//! beside native runs in the same tables. `agent-runner import swe-agent <dir>`.
//!
//! - [`traj`]: the SWE-agent `.traj` file format (lenient serde types).
//! - [`swe_agent`]: one trajectory → the events of one run, deterministic ids and times.
//! - [`args`]: the command line and the import loop ([`import_dir`]).
//!
//! Importing is idempotent: the same file yields the same event ids, so importing it
//! again stores nothing new. A file that cannot be read or parsed is reported and
//! skipped; the others are still imported.

pub mod args;
pub mod swe_agent;
pub mod traj;

use std::path::PathBuf;

pub use args::{import_dir, ImportArgs, ImportCommand, ImportReport};

use crate::error::Exit;

/// Why a file, or the whole import, failed.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a SWE-agent trajectory: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: event {seq}: {source}")]
    TooLarge {
        path: PathBuf,
        seq: u64,
        source: schemas::truncate::EventTooLarge,
    },
    #[error(transparent)]
    Publish(#[from] crate::publish::PublishFailure),
    #[error(transparent)]
    Runner(#[from] crate::Error),
}

impl ImportError {
    /// The exit code this error ends the process with.
    pub fn exit(&self) -> Exit {
        match self {
            ImportError::Runner(e) => e.exit(),
            ImportError::Publish(e) => e.exit(),
            ImportError::Read { .. } | ImportError::Parse { .. } | ImportError::TooLarge { .. } => {
                Exit::Usage
            }
        }
    }
}
