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
    #[error("invalid config file {0}")]
    Parse(#[from] TomlError),
}

/// A TOML file that is not what it should hold: the file, where in it (line, column, the
/// line itself), the key (`batch.max_rows`) and why, shown over several lines:
///
/// ```text
/// sink.toml, line 3, column 12, key batch.max_rows:
///     max_rows = "many"
///                ^^^^^^
///   invalid type: string "many", expected u64
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct TomlError {
    /// The file.
    pub path: PathBuf,
    /// Where in it, when the parser knows.
    pub at: Option<Box<TomlPosition>>,
    /// The key, as `section.key` (`tasks[2]` for an array element), when known.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// Where in a TOML file an error is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TomlPosition {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// The line's text.
    pub text: String,
    /// Characters of the offending text on it.
    pub width: usize,
}

impl std::fmt::Display for TomlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(at) = &self.at {
            write!(f, ", line {}, column {}", at.line, at.column)?;
        }
        if let Some(key) = &self.key {
            write!(f, ", key {key}")?;
        }
        writeln!(f, ":")?;
        if let Some(at) = &self.at {
            writeln!(f, "    {}", at.text)?;
            let pad: String = at
                .text
                .chars()
                .take(at.column - 1)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            writeln!(f, "    {pad}{}", "^".repeat(at.width.max(1)))?;
        }
        let mut lines = self.message.trim_end().lines();
        write!(f, "  {}", lines.next().unwrap_or_default())?;
        for line in lines {
            write!(f, "\n  {line}")?;
        }
        Ok(())
    }
}

/// Reads the TOML file at `path` as `T`.
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<T, ConfigFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    Ok(parse(path, &text)?)
}

/// Parses `text`, the contents of the TOML file `path`, as `T`; an error names the file,
/// the line, the column and the key.
pub fn parse<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, TomlError> {
    let deserializer =
        toml::Deserializer::parse(text).map_err(|e| toml_error(path, text, &e, None))?;
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let key = e.path().to_string();
        let key = (key != "." && !key.is_empty()).then_some(key);
        toml_error(path, text, e.inner(), key)
    })
}

/// The [`TomlError`] of `error`, met in `text` (the file `path`) at `key`.
fn toml_error(path: &Path, text: &str, error: &toml::de::Error, key: Option<String>) -> TomlError {
    let at = error.span().map(|span| {
        let start = span.start.min(text.len());
        let before = &text[..start];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Box::new(TomlPosition {
            line: before.matches('\n').count() + 1,
            column: text[line_start..start].chars().count() + 1,
            text: text[line_start..]
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
            width: text[start..span.end.min(text.len())]
                .lines()
                .next()
                .map_or(1, |t| t.chars().count()),
        })
    });
    TomlError {
        path: path.to_owned(),
        at,
        key,
        message: error.message().to_owned(),
    }
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
