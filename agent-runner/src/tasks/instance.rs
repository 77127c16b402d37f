//! SWE-bench instance records, with the dataset's field names: a JSON array of objects or
//! JSON lines (one object a line), as the published datasets are exported.
//! `FAIL_TO_PASS` and `PASS_TO_PASS` are lists or, as in the published dataset, strings
//! holding a JSON list; `version` a string or a number. Fields the import does not use
//! (`created_at`, ...) are ignored. This module does no I/O.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

/// One instance record.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Instance {
    pub instance_id: String,
    /// `owner/name`.
    pub repo: String,
    pub base_commit: String,
    #[serde(default)]
    pub problem_statement: String,
    #[serde(default, deserialize_with = "nullable_string")]
    pub hints_text: String,
    /// The gold patch.
    #[serde(default)]
    pub patch: String,
    pub test_patch: String,
    #[serde(rename = "FAIL_TO_PASS", deserialize_with = "test_list")]
    pub fail_to_pass: Vec<String>,
    #[serde(rename = "PASS_TO_PASS", default, deserialize_with = "test_list")]
    pub pass_to_pass: Vec<String>,
    #[serde(default, deserialize_with = "version")]
    pub version: Option<String>,
    #[serde(default)]
    pub environment_setup_commit: Option<String>,
    /// A shell command preparing the environment (run once per repository and version,
    /// with the environment's `bin/` first on `PATH`).
    #[serde(default)]
    pub install: Option<String>,
    /// Packages `pip install`ed into the environment: a list, or one string split on
    /// whitespace.
    #[serde(default, deserialize_with = "word_list")]
    pub pip_packages: Vec<String>,
    /// The test command (default `python -m pytest -rA`, or the import's `--test-cmd`).
    #[serde(default)]
    pub test_cmd: Option<String>,
}

impl Instance {
    /// The clone's directory name under `--repos`: `owner__name`.
    pub fn clone_name(&self) -> String {
        self.repo.replace('/', "__")
    }

    /// The environment's key: `owner__name__<version>` (`__none` without a version),
    /// with anything but letters, digits, `.`, `-` and `_` replaced by `_`.
    pub fn environment_key(&self) -> String {
        let version = self.version.as_deref().unwrap_or("none");
        format!("{}__{version}", self.clone_name())
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }

    /// What is wrong with the record for an import, if anything.
    pub fn check(&self) -> Result<(), String> {
        let id = &self.instance_id;
        if id.is_empty()
            || id.starts_with('.')
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        {
            return Err(format!(
                "instance_id {id:?} cannot name a task directory (letters, digits, . - _)"
            ));
        }
        let mut parts = self.repo.split('/');
        let valid = |p: Option<&str>| {
            p.is_some_and(|p| !p.is_empty() && p != "." && p != ".." && !p.contains("__"))
        };
        if !(valid(parts.next()) && valid(parts.next()) && parts.next().is_none()) {
            return Err(format!("repo {:?} is not owner/name", self.repo));
        }
        if self.base_commit.is_empty() || !self.base_commit.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!(
                "base_commit {:?} is not a commit id",
                self.base_commit
            ));
        }
        if self.problem_statement.trim().is_empty() {
            return Err("problem_statement is empty".into());
        }
        Ok(())
    }
}

/// Parses an instances file: a JSON array, or JSON lines. Each record is parsed on its
/// own, so one bad record is that record's error (with its position), not the file's.
pub fn parse_instances(text: &str) -> Result<Vec<Result<Instance, String>>, String> {
    let records: Vec<(String, serde_json::Value)> = if text.trim_start().starts_with('[') {
        let values: Vec<serde_json::Value> =
            serde_json::from_str(text).map_err(|e| format!("not a JSON array: {e}"))?;
        values
            .into_iter()
            .enumerate()
            .map(|(i, v)| (format!("record {}", i + 1), v))
            .collect()
    } else {
        text.lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(i, line)| {
                let v = serde_json::from_str(line)
                    .map_err(|e| format!("line {}: not JSON: {e}", i + 1))?;
                Ok((format!("line {}", i + 1), v))
            })
            .collect::<Result<_, String>>()?
    };
    Ok(records
        .into_iter()
        .map(|(at, value)| {
            let id = value
                .get("instance_id")
                .and_then(|v| v.as_str())
                .map(|id| format!(" ({id})"))
                .unwrap_or_default();
            serde_json::from_value::<Instance>(value).map_err(|e| format!("{at}{id}: {e}"))
        })
        .collect())
}

/// `null` as the empty string.
fn nullable_string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// A list of strings, or a string holding a JSON list of strings (the published dataset).
fn test_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrJson {
        List(Vec<String>),
        Json(String),
    }
    match ListOrJson::deserialize(d)? {
        ListOrJson::List(list) => Ok(list),
        ListOrJson::Json(text) => serde_json::from_str(&text)
            .map_err(|e| D::Error::custom(format!("not a JSON list of test ids: {e}"))),
    }
}

/// A list of strings, or one string of whitespace-separated words.
fn word_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrWords {
        List(Vec<String>),
        Words(String),
    }
    Ok(match Option::<ListOrWords>::deserialize(d)? {
        None => Vec::new(),
        Some(ListOrWords::List(list)) => list,
        Some(ListOrWords::Words(words)) => words.split_whitespace().map(str::to_owned).collect(),
    })
}

/// A string or a number (`"3.0"`, `3.0`), as text.
fn version<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        Some(other) => return Err(D::Error::custom(format!("version {other} is no version"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = r#"{"instance_id":"o__n-1","repo":"o/n","base_commit":"abc1","problem_statement":"p","hints_text":null,"patch":"x","test_patch":"y","FAIL_TO_PASS":"[\"t.py::a\"]","PASS_TO_PASS":["t.py::b"],"version":3.0,"created_at":"2020"}"#;

    #[test]
    fn the_published_datasets_shapes_are_read_as_lines_or_an_array() {
        let lines = parse_instances(&format!("{RECORD}\n\n{RECORD}\n")).expect("lines");
        let array = parse_instances(&format!("[{RECORD}, {RECORD}]")).expect("array");
        assert_eq!(lines, array);
        let one = lines[0].as_ref().expect("record");
        assert_eq!(one.fail_to_pass, ["t.py::a"]);
        assert_eq!(one.pass_to_pass, ["t.py::b"]);
        assert_eq!(one.version.as_deref(), Some("3.0"));
        assert_eq!(one.environment_key(), "o__n__3.0");
        assert_eq!(one.check(), Ok(()));
    }

    #[test]
    fn a_bad_record_is_its_own_error_with_its_position() {
        let bad = r#"{"instance_id":"o__n-2","repo":"o/n"}"#;
        let parsed = parse_instances(&format!("{RECORD}\n{bad}\n")).expect("lines");
        assert!(parsed[0].is_ok());
        let err = parsed[1].as_ref().expect_err("missing fields");
        assert!(err.starts_with("line 2 (o__n-2): "), "{err}");
        assert!(parse_instances("{not json\n").is_err());
    }
}
