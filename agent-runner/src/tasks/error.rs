//! What only `agent-runner tasks import` can meet ([`TasksError`]) and the exit code of
//! each kind.

use std::path::PathBuf;

use crate::error::{CommandError, Error, Exit};

/// What only `tasks import` can meet as a whole; an instance that cannot be imported is a
/// line of its report, not an error.
#[derive(Debug, thiserror::Error)]
pub enum TasksError {
    /// The instances file cannot be read or is neither a JSON array nor JSON lines.
    #[error("{path}: {message}")]
    Instances {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The scenario file cannot be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl CommandError for TasksError {
    fn exit(&self) -> Exit {
        match self {
            TasksError::Instances { .. } => Exit::Usage,
            TasksError::Write { .. } => Exit::Failure,
        }
    }
}

impl From<TasksError> for Error {
    fn from(e: TasksError) -> Error {
        Error::Command(e.into())
    }
}
