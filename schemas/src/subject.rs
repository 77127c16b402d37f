//! NATS subject naming and header names, as plain strings (this crate has no NATS
//! dependency). Subjects are `<prefix>.events.<run_id>.<type>`: `run_id` is a UUID and
//! `type` a fixed word, so no user text ever becomes a subject token.

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

use crate::payload::EventType;

/// Header names every published event carries.
pub mod headers {
    /// JetStream's dedup header; the value is the `event_id`.
    pub const MSG_ID: &str = "Nats-Msg-Id";
    /// The `schema_version`.
    pub const SCHEMA: &str = "Bench-Schema";
    /// The event `type`.
    pub const TYPE: &str = "Bench-Type";
    /// The `task_id`, made header-safe by [`super::header_safe`].
    pub const TASK: &str = "Bench-Task";
}

/// A validated subject prefix (`bench` by default): dot-separated tokens without
/// whitespace or wildcards.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SubjectPrefix(String);

/// Why a string is not a usable subject prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid subject prefix {prefix:?}: {reason}")]
pub struct SubjectPrefixError {
    prefix: String,
    reason: &'static str,
}

impl SubjectPrefix {
    /// The subject of one event.
    pub fn event_subject(&self, run_id: Uuid, event_type: EventType) -> String {
        format!("{}.events.{}.{}", self.0, run_id, event_type.as_str())
    }

    /// The filter of every event under this prefix (the stream's subject).
    pub fn all_events(&self) -> String {
        format!("{}.events.>", self.0)
    }

    /// The filter of one run's events.
    pub fn run_events(&self, run_id: Uuid) -> String {
        format!("{}.events.{}.>", self.0, run_id)
    }

    /// The prefix itself.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for SubjectPrefix {
    fn default() -> Self {
        SubjectPrefix("bench".to_owned())
    }
}

impl FromStr for SubjectPrefix {
    type Err = SubjectPrefixError;

    fn from_str(s: &str) -> Result<Self, SubjectPrefixError> {
        let err = |reason| {
            Err(SubjectPrefixError {
                prefix: s.to_owned(),
                reason,
            })
        };
        if s.is_empty() {
            return err("empty");
        }
        if s.split('.').any(str::is_empty) {
            return err("empty token");
        }
        if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return err("whitespace or control character");
        }
        if s.split('.').any(|t| t == "*" || t == ">") || s.contains(['*', '>']) {
            return err("wildcards are not allowed");
        }
        Ok(SubjectPrefix(s.to_owned()))
    }
}

impl fmt::Display for SubjectPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Makes any UTF-8 safe for a NATS header value: bytes outside printable ASCII, and `%`
/// itself, are percent-encoded (`%0A`, `%C3%A9`...). Reversible; the JSON body keeps the
/// original.
pub fn header_safe(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if (0x20..0x7f).contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_layout() {
        let p = SubjectPrefix::default();
        let run = Uuid::nil();
        assert_eq!(
            p.event_subject(run, EventType::ToolCall),
            "bench.events.00000000-0000-0000-0000-000000000000.tool_call"
        );
        assert_eq!(p.all_events(), "bench.events.>");
        let team: SubjectPrefix = "team-a.bench".parse().expect("valid prefix");
        assert_eq!(team.run_events(run), format!("team-a.bench.events.{run}.>"));
    }

    #[test]
    fn bad_prefixes_are_refused() {
        for bad in ["", "a..b", "a b", "a.*", "a.>", ".a", "a.", "x>y"] {
            assert!(bad.parse::<SubjectPrefix>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn header_values_are_escaped() {
        assert_eq!(header_safe("django__django-11099"), "django__django-11099");
        assert_eq!(header_safe("a\r\nb%é"), "a%0D%0Ab%25%C3%A9");
    }
}
