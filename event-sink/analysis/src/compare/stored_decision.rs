//! One decision an experiment run until decided stored ([`StoredDecision`]), as
//! [`decisions`](super::decisions) reads it and the comparison, the report and the viewer
//! show it.

use chrono::DateTime;
use clickhouse::Row;
use serde::{Deserialize, Serialize};

/// One stored `experiment_decision`.
#[derive(Debug, Clone, PartialEq, Row, Serialize, Deserialize)]
pub struct StoredDecision {
    /// The experiment's name.
    pub experiment: String,
    /// The baseline's `policy_id`.
    pub baseline: String,
    /// The candidate's `policy_id`.
    pub candidate: String,
    /// `candidate_better`, `baseline_better`, `equivalent` or `undecided`.
    pub decision: String,
    /// The confidence sequence's ends at the deciding look; `None` when no round was
    /// complete.
    pub cs_low: Option<f64>,
    /// Upper end.
    pub cs_high: Option<f64>,
    /// Complete rounds the decision used.
    pub rounds: u64,
    /// Its level.
    pub alpha: f64,
    /// When it was decided (the event's time), Unix milliseconds.
    pub decided_ms: i64,
}

impl StoredDecision {
    /// When it was decided, `YYYY-MM-DD HH:MM:SS UTC`.
    pub fn decided_at(&self) -> String {
        DateTime::from_timestamp_millis(self.decided_ms).map_or_else(
            || format!("{} ms", self.decided_ms),
            |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        )
    }

    /// One line: the decision, its sequence, its rounds and when it was made.
    pub fn summary(&self) -> String {
        let interval = match (self.cs_low, self.cs_high) {
            (Some(low), Some(high)) => format!("{low:+.4} .. {high:+.4}"),
            _ => "no sequence".to_owned(),
        };
        format!(
            "{} after {} rounds ({interval}, alpha {}), decided {}",
            self.decision,
            self.rounds,
            self.alpha,
            self.decided_at()
        )
    }
}
