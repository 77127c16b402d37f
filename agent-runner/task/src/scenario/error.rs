//! What loading a scenario or a task can fail with ([`ScenarioError`], [`PinError`]), and
//! the TOML reader of every file here, whose errors name the file, line, column and key.

use std::io;
use std::path::{Path, PathBuf};

use bench_sandbox::TreeError;
use bench_schemas::Hash256;

/// Loading a scenario or a task failed.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A file is not valid TOML or JSON of its kind.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// A TOML file is not what it should hold: where, the key and why.
    #[error(transparent)]
    Toml(#[from] bench_cli::TomlError),
    /// A file parsed but a value in it is refused.
    #[error("{path}: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A fixture tree could not be read or hashed.
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// `--task` names a task the scenario does not have.
    #[error("task {task:?} is not part of scenario {scenario:?} (its tasks: {known})")]
    UnknownTask {
        /// The scenario.
        scenario: String,
        /// The task asked for.
        task: String,
        /// The scenario's tasks, comma-separated.
        known: String,
    },
    /// A file differs from its pin.
    #[error(transparent)]
    Pin(#[from] PinError),
}

impl ScenarioError {
    /// Whether the error is a pin check (a tampered or unpinned file), which the CLI
    /// reports with its own exit code.
    pub fn is_pin_error(&self) -> bool {
        matches!(self, ScenarioError::Pin(_))
    }
}

/// Something differs from its pin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    #[error("{what} is not pinned in {pins}; run `agent-runner scenarios hash` to pin it, or pass --allow-unpinned")]
    /// A file has no pin.
    NotPinned {
        /// The file (`scenario x.toml`, `task y`).
        what: String,
        /// The `pins.toml` looked in.
        pins: PathBuf,
    },
    #[error("{what} does not match its pin: sha256 is {actual}, {pins} says {expected}. It was changed since it was pinned; if that is intended run `agent-runner scenarios hash`, or pass --allow-unpinned")]
    /// A file's hash differs from its pin.
    Mismatch {
        /// The file (`scenario x.toml`, `task y`).
        what: String,
        /// The `pins.toml` holding the pin.
        pins: PathBuf,
        /// The pinned hash.
        expected: Hash256,
        /// The file's hash now.
        actual: Hash256,
    },
}

/// Parses TOML with the file, line, column and key in the error.
pub(super) fn parse_toml<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
) -> Result<T, ScenarioError> {
    Ok(bench_cli::config_file::parse(path, text)?)
}
