//! Which events a tail shows: the subject filters that JetStream applies (run ids and
//! event types are subject tokens), and the payload checks it cannot (task, policy).
//! No I/O.

use bench_schemas::{EventType, SubjectPrefix};
use serde_json::Value;
use uuid::Uuid;

/// What to show. Empty lists match everything; values of one list are alternatives, and
/// all lists must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// `run_id`s (subject token).
    pub runs: Vec<Uuid>,
    /// Event types (subject token).
    pub types: Vec<EventType>,
    /// `task_id`s (payload).
    pub tasks: Vec<String>,
    /// `policy_id`s (payload).
    pub policies: Vec<String>,
}

impl Filter {
    /// The consumer's subject filters under `prefix`: one per (run, type) pair, `*` for
    /// an open position, so the server sends only what can match.
    pub fn subjects(&self, prefix: &SubjectPrefix) -> Vec<String> {
        let runs: Vec<String> = if self.runs.is_empty() {
            vec!["*".to_owned()]
        } else {
            self.runs.iter().map(Uuid::to_string).collect()
        };
        let types: Vec<&str> = if self.types.is_empty() {
            vec!["*"]
        } else {
            self.types.iter().map(|t| t.as_str()).collect()
        };
        runs.iter()
            .flat_map(|run| {
                types
                    .iter()
                    .map(move |t| format!("{}.events.{run}.{t}", prefix.as_str()))
            })
            .collect()
    }

    /// Whether the filters only the payload can answer hold for `event` (a JSON object;
    /// anything else matches only when there are no such filters).
    pub fn matches_payload(&self, event: &Value) -> bool {
        let field_in = |name: &str, wanted: &[String]| {
            wanted.is_empty()
                || event
                    .get(name)
                    .and_then(Value::as_str)
                    .is_some_and(|v| wanted.iter().any(|w| w == v))
        };
        field_in("task_id", &self.tasks) && field_in("policy_id", &self.policies)
    }

    /// Whether every filter is answered by subjects alone.
    pub fn subjects_only(&self) -> bool {
        self.tasks.is_empty() && self.policies.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_types_become_subjects() {
        let prefix = SubjectPrefix::default();
        assert_eq!(
            Filter::default().subjects(&prefix),
            vec!["bench.events.*.*"]
        );
        let run = Uuid::nil();
        let filter = Filter {
            runs: vec![run],
            types: vec![EventType::RunStop, EventType::Failure],
            ..Filter::default()
        };
        assert_eq!(
            filter.subjects(&prefix),
            vec![
                format!("bench.events.{run}.run_stop"),
                format!("bench.events.{run}.failure"),
            ]
        );
    }

    #[test]
    fn task_and_policy_are_checked_in_the_payload() {
        let filter = Filter {
            tasks: vec!["a".into(), "b".into()],
            policies: vec!["p".into()],
            ..Filter::default()
        };
        let event =
            |task: &str, policy: &str| serde_json::json!({"task_id": task, "policy_id": policy});
        assert!(filter.matches_payload(&event("b", "p")));
        assert!(!filter.matches_payload(&event("c", "p")));
        assert!(!filter.matches_payload(&event("a", "q")));
        assert!(!filter.matches_payload(&Value::Null));
        assert!(Filter::default().matches_payload(&Value::Null));
    }
}
