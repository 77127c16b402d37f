//! The decisions stored by experiments run until decided (`agent-runner run
//! --until-decided` publishes an `experiment_decision`, the sink stores it in
//! `experiment_decisions`): what `compare --sequential`, the report and the viewer's
//! experiment page show beside what they compute. Only the latest decision of each
//! experiment and pair is kept: an experiment run again until decided decides again.

use std::collections::BTreeMap;

use clickhouse::Client;

use super::analyze::Comparison;
use super::outcomes::PolicyRuns;
use super::stored_decision::StoredDecision;
use crate::table::Table;

/// `serve/sql/experiment_decisions.sql`: every stored decision of the experiments bound
/// (comma-separated, twice; empty: every experiment), oldest first.
const DECISIONS_SQL: &str = include_str!("../serve/sql/experiment_decisions.sql");

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::analyze::{compare, Settings};
    use crate::compare::sequential::{sequential, Bet};

    fn decision(experiment: &str, baseline: &str, candidate: &str, ms: i64) -> StoredDecision {
        StoredDecision {
            experiment: experiment.to_owned(),
            baseline: baseline.to_owned(),
            candidate: candidate.to_owned(),
            decision: "candidate_better".to_owned(),
            cs_low: Some(0.02),
            cs_high: Some(0.4),
            rounds: 3,
            alpha: 0.05,
            decided_ms: ms,
        }
    }

    fn policy(label: &str, experiment: &str) -> PolicyRuns {
        PolicyRuns {
            label: label.to_owned(),
            group: label.to_owned(),
            experiments: [experiment.to_owned()].into(),
            ..PolicyRuns::default()
        }
    }

    #[test]
    fn a_pair_gets_the_latest_decision_of_an_experiment_both_ran_either_way_round() {
        let policies = [policy("a", "ab"), policy("b", "ab")];
        let settings = Settings {
            baseline: Some("a".to_owned()),
            margin: 0.05,
            seed: 1,
            resamples: 10,
        };
        let mut comparison = compare(&policies, &settings);
        comparison.comparisons[0].sequential = Some(sequential(&[], 0.05, None, Bet::Adaptive));
        let stored = [
            decision("ab", "a", "b", 10),
            decision("ab", "b", "a", 20),
            decision("other", "a", "b", 30),
            decision("ab", "a", "c", 40),
        ];
        attach(&mut comparison, &policies, &stored);
        let shown = comparison.comparisons[0]
            .sequential
            .as_ref()
            .and_then(|s| s.stored_decision.clone());
        assert_eq!(
            shown,
            Some(stored[1].clone()),
            "the latest of ab's pair a, b"
        );
        assert_eq!(
            stored[1].summary(),
            "candidate_better after 3 rounds (+0.0200 .. +0.4000, alpha 0.05), decided 1970-01-01 00:00:00 UTC"
        );
    }
}
