//! The decisions stored by experiments run until decided (`agent-runner run
//! --until-decided` publishes an `experiment_decision`, the sink stores it in
//! `experiment_decisions`): what `compare --sequential`, the report and the viewer's
//! experiment page show beside what they compute. Only the latest decision of each
//! experiment and pair is kept: an experiment run again until decided decides again.

use std::collections::BTreeMap;

use chrono::DateTime;
use clickhouse::{Client, Row};
use serde::{Deserialize, Serialize};

/// `serve/sql/experiment_decisions.sql`: every stored decision of the experiments bound
/// (comma-separated, twice; empty: every experiment), oldest first.
const DECISIONS_SQL: &str = include_str!("../serve/sql/experiment_decisions.sql");

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
    /// The difference in solve rate the sequence's bets were tuned to (`--detect`);
    /// `None` when they were learnt from the outcomes (aGRAPA).
    pub detect: Option<f64>,
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

    /// How the sequence bet: `tuned to D` or `learnt`.
    pub fn bets(&self) -> String {
        self.detect
            .map_or_else(|| "learnt".to_owned(), |d| format!("tuned to {d}"))
    }

    /// One line: the decision, its sequence, its rounds, its bets and when it was made.
    pub fn summary(&self) -> String {
        let interval = match (self.cs_low, self.cs_high) {
            (Some(low), Some(high)) => format!("{low:+.4} .. {high:+.4}"),
            _ => "no sequence".to_owned(),
        };
        format!(
            "{} after {} rounds ({interval}, alpha {}, bets {}), decided {}",
            self.decision,
            self.rounds,
            self.alpha,
            self.bets(),
            self.decided_at()
        )
    }
}

/// The latest stored decision of each experiment and pair (of `experiments`; every
/// experiment when empty), by experiment, baseline and candidate.
pub async fn latest(
    client: &Client,
    experiments: &[String],
) -> Result<Vec<StoredDecision>, clickhouse::error::Error> {
    let names = experiments.join(",");
    let all: Vec<StoredDecision> = client
        .query(DECISIONS_SQL)
        .bind(&names)
        .bind(&names)
        .fetch_all()
        .await?;
    let mut latest = BTreeMap::new();
    for d in all {
        let key = (
            d.experiment.clone(),
            d.baseline.clone(),
            d.candidate.clone(),
        );
        latest.insert(key, d);
    }
    Ok(latest.into_values().collect())
}
