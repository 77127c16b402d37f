//! The `--config FILE` of the binaries: reading a TOML settings file into its typed
//! layer, with the one error type every binary reports for it, and the one error (and
//! checks) of a setting whose value is out of range, whichever layer it came from.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// Defines a section of settings: every field an optional flag `--<flag>` with environment
/// variable `<env>` (the flag is also the clap id, hence the value name in `--help`),
/// further `#[arg]`s as given; and `merge`, field by field. The one way the binaries
/// declare a section of their settings (flags, environment, the `[section]` of the file).
#[macro_export]
macro_rules! section {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$attr:meta])*
                pub $field:ident: $ty:ty = ($flag:literal, $env:literal),
            )+
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $(
                $(#[$attr])*
                #[arg(id = $flag, long = $flag, env = $env)]
                pub $field: $ty,
            )+
        }

        impl $name {
            /// Field by field, `self` wins over `lower`.
            pub fn merge(self, lower: $name) -> $name {
                $name { $($field: self.$field.or(lower.$field)),+ }
            }
        }
    };
}

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

/// A setting whose value is out of its range: named as `section.key` of the config file
/// (`batch.max_rows`), with what it must be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid setting {field}: {reason}")]
pub struct InvalidSetting {
    /// The setting, as `section.key` of the config file.
    pub field: &'static str,
    /// What it must be.
    pub reason: &'static str,
}

/// `field` is invalid for `reason`.
pub fn invalid(field: &'static str, reason: &'static str) -> InvalidSetting {
    InvalidSetting { field, reason }
}

/// `value`, unless it is given and blank.
pub fn nonempty(
    field: &'static str,
    value: Option<String>,
) -> Result<Option<String>, InvalidSetting> {
    match value {
        Some(v) if v.trim().is_empty() => Err(invalid(field, "must not be empty")),
        other => Ok(other),
    }
}

/// `value`, unless it is given and zero.
pub fn positive<T: PartialEq + Default>(
    field: &'static str,
    value: Option<T>,
) -> Result<Option<T>, InvalidSetting> {
    match value {
        Some(v) if v == T::default() => Err(invalid(field, "must be positive")),
        other => Ok(other),
    }
}
