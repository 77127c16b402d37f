//! What only `agent-runner sweep` can meet ([`SweepError`]) and the exit code of each kind.

use std::path::PathBuf;

use crate::error::{CommandError, Error, Exit};

/// What only a sweep can meet; everything else a sweep meets is a [`Error`] of its
/// own.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The sweep file cannot be read or parsed.
    #[error("{path}: {message}")]
    File {
        /// The sweep file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The sweep file is not the TOML of a sweep: where, the key and why.
    #[error(transparent)]
    Toml(#[from] bench_cli::TomlError),
    /// The sweep is well-formed but describes no valid run (constraints, matrix values).
    #[error("invalid sweep: {0}")]
    Invalid(String),
    /// The claim bucket could not be opened, read or written.
    #[error("sweep claims: {0}")]
    Claims(String),
    /// Past results could not be read from ClickHouse.
    #[error("reading past results from clickhouse: {0}")]
    ClickHouse(String),
}

impl CommandError for SweepError {
    fn exit(&self) -> Exit {
        match self {
            SweepError::File { .. } | SweepError::Toml(_) | SweepError::Invalid(_) => Exit::Usage,
            SweepError::Claims(_) | SweepError::ClickHouse(_) => Exit::Failure,
        }
    }
}

impl From<SweepError> for Error {
    fn from(e: SweepError) -> Error {
        Error::Command(e.into())
    }
}
