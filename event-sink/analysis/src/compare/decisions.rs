//! The decisions stored by experiments run until decided (`agent-runner run
//! --until-decided` publishes an `experiment_decision`, the sink stores it in
//! `experiment_decisions`): what `compare --sequential`, the report and the viewer's
//! experiment page show beside what they compute. Only the latest decision of each
//! experiment and pair is kept: an experiment run again until decided decides again.

use std::collections::BTreeMap;

use chrono::DateTime;
use clickhouse::{Client, Row};
use serde::{Deserialize, Serialize};

use super::analyze::Comparison;
use super::outcomes::PolicyRuns;
use crate::table::Table;

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

/// Files the stored decisions beside the sequences of `comparison`: a pair gets the
/// latest decision of an experiment both its policies ran in whose two policies
/// (either way round) are the pair's.
pub fn attach(comparison: &mut Comparison, policies: &[PolicyRuns], stored: &[StoredDecision]) {
    let of = |label: &str| policies.iter().find(|p| p.label == label);
    for pair in &mut comparison.comparisons {
        let (Some(b), Some(c)) = (of(&pair.baseline), of(&pair.candidate)) else {
            continue;
        };
        let Some(sequential) = &mut pair.sequential else {
            continue;
        };
        sequential.stored_decision = stored
            .iter()
            .filter(|d| {
                let named = (d.baseline == b.group && d.candidate == c.group)
                    || (d.baseline == c.group && d.candidate == b.group);
                named
                    && b.experiments.contains(&d.experiment)
                    && c.experiments.contains(&d.experiment)
            })
            .max_by_key(|d| d.decided_ms)
            .cloned();
    }
}

/// The decisions as a table (the report's section): experiment, pair, decision,
/// sequence, rounds, level, when.
pub fn table(decisions: &[StoredDecision]) -> Table {
    let columns = super::render::columns(&[
        ("experiment", false),
        ("baseline", false),
        ("candidate", false),
        ("decision", false),
        ("cs_low", true),
        ("cs_high", true),
        ("rounds", true),
        ("alpha", true),
        ("decided_at", false),
    ]);
    Table {
        columns,
        rows: decisions
            .iter()
            .map(|d| {
                vec![
                    Some(d.experiment.clone()),
                    Some(d.baseline.clone()),
                    Some(d.candidate.clone()),
                    Some(d.decision.clone()),
                    d.cs_low.map(|v| format!("{v:.4}")),
                    d.cs_high.map(|v| format!("{v:.4}")),
                    Some(d.rounds.to_string()),
                    Some(d.alpha.to_string()),
                    Some(d.decided_at()),
                ]
            })
            .collect(),
    }
}
