//! What only `agent-runner import` can meet ([`ImportError`]) and its exit code.

use std::path::PathBuf;

use crate::error::{CommandError, Error, Exit};

/// What only an import can meet: a trajectory that cannot be read or converted (the file
/// is then skipped, or the import refused when the directory itself cannot be read).
/// Everything else an import meets is a [`Error`] of its own.
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
        source: bench_schemas::truncate::EventTooLarge,
    },
}

impl CommandError for ImportError {
    fn exit(&self) -> Exit {
        match self {
            ImportError::Read { .. } | ImportError::Parse { .. } | ImportError::TooLarge { .. } => {
                Exit::Usage
            }
        }
    }
}

impl From<ImportError> for Error {
    fn from(e: ImportError) -> Error {
        Error::Command(e.into())
    }
}
