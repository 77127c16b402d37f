//! The `--config FILE` of the binaries: reading a TOML settings file into its typed
//! layer, with the one error type every binary reports for it.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// Why a settings file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not TOML, or not the settings `T` holds.
    #[error("config file {path} is invalid: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: toml::de::Error,
    },
}

/// Reads the TOML file at `path` as `T`.
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<T, ConfigFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    toml::from_str(&text).map_err(|source| ConfigFileError::Parse {
        path: path.to_owned(),
        source,
    })
}
