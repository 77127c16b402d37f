//! What `compare` reads: the rows of the shipped `paired_outcomes` query (per task and
//! policy config: the runs that count, their successes, cost, turns, tokens and integrity,
//! and the runs excluded, by reason), grouped into the policies being compared (`--by`), with
//! policies whose runs were judged under different `scoring_version`s split apart.
//!
//! Which runs count is decided in one place, the SQL of `paired_outcomes` (see
//! `deploy/clickhouse/queries/paired_outcomes.sql`); this module only adds them up. No
//! statistics here ([`super::analyze`]).

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::table::Table;

/// A config key runs are grouped by into the policies compared (`--by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    /// `policy_id` (the default).
    Policy,
    /// `cfg_hash`: exactly the same config.
    Cfg,
    /// The model.
    Model,
    /// The context strategy.
    Strategy,
}

impl Dimension {
    /// Every dimension, with its `--by` name.
    pub const ALL: [(&'static str, Dimension); 4] = [
        ("policy", Dimension::Policy),
        ("cfg", Dimension::Cfg),
        ("model", Dimension::Model),
        ("strategy", Dimension::Strategy),
    ];

    /// The `--by` name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, d)| *d == self)
            .map_or("", |(name, _)| name)
    }

    /// The `paired_outcomes` column holding this dimension.
    pub(crate) fn column(self) -> &'static str {
        match self {
            Dimension::Policy => "policy_id",
            Dimension::Cfg => "cfg_hash",
            Dimension::Model => "model",
            Dimension::Strategy => "strategy",
        }
    }
}

/// Parses `--by`: dimension names separated by commas (`model,strategy`).
pub fn parse_by(text: &str) -> Result<Vec<Dimension>, String> {
    let mut dimensions = Vec::new();
    for name in text.split(',').map(str::trim) {
        let dimension = Dimension::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, d)| *d)
            .ok_or_else(|| {
                let known: Vec<&str> = Dimension::ALL.iter().map(|(n, _)| *n).collect();
                format!("unknown key {name:?}; known: {}", known.join(", "))
            })?;
        if !dimensions.contains(&dimension) {
            dimensions.push(dimension);
        }
    }
    Ok(dimensions)
}

/// What a label shows for a dimension nobody reported (a Smith run has no model).
pub(crate) const UNKNOWN: &str = "(unknown)";

/// Runs left out of the comparison, by reason (see `paired_outcomes.sql`). Only the
/// reasons that occur are serialized.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Exclusions {
    /// The latest validation of the run's task (`task_validations`) found it broken.
    #[serde(skip_serializing_if = "is_zero")]
    pub broken_task: u64,
    /// No `run_stop`: still running, or its runner died.
    #[serde(skip_serializing_if = "is_zero")]
    pub unfinished: u64,
    /// A gap in the run's seq numbers: events were lost.
    #[serde(skip_serializing_if = "is_zero")]
    pub lost_events: u64,
    /// The environment or the provider failed before the agent acted.
    #[serde(skip_serializing_if = "is_zero")]
    pub infrastructure: u64,
    /// Finished, but nobody judged it (success NULL).
    #[serde(skip_serializing_if = "is_zero")]
    pub unjudged: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Exclusions {
    /// Every excluded run.
    pub fn total(&self) -> u64 {
        self.broken_task + self.unfinished + self.lost_events + self.infrastructure + self.unjudged
    }

    fn add(&mut self, other: &Exclusions) {
        self.broken_task += other.broken_task;
        self.unfinished += other.unfinished;
        self.lost_events += other.lost_events;
        self.infrastructure += other.infrastructure;
        self.unjudged += other.unjudged;
    }
}

impl fmt::Display for Exclusions {
    /// `unfinished 2, unjudged 1`, or nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts = [
            ("broken_task", self.broken_task),
            ("unfinished", self.unfinished),
            ("lost_events", self.lost_events),
            ("infrastructure", self.infrastructure),
            ("unjudged", self.unjudged),
        ];
        let shown: Vec<String> = parts
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        f.write_str(&shown.join(", "))
    }
}

/// The counted runs of one policy on one task.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TaskRuns {
    /// Runs that count (finished, judged, not an infrastructure failure, no lost event).
    pub runs: u64,
    /// Of those, the successes.
    pub successes: u64,
    /// Of those, the runs whose cost is known.
    pub priced_runs: u64,
    /// The summed cost of the priced runs, USD.
    pub cost_usd: f64,
    /// Runs whose turns are known, and their summed turns.
    pub turn_runs: u64,
    /// The turns of those runs, summed.
    pub turns: f64,
    /// Runs whose total tokens are known, and their summed tokens.
    pub token_runs: u64,
    /// The tokens of those runs, summed.
    pub tokens: f64,
    /// Runs an integrity flag singles out (edited test files, history read, network
    /// tried while off).
    pub flagged_runs: u64,
    /// Runs with a flag nobody could establish (and none set): neither clean nor flagged.
    pub integrity_unknown_runs: u64,
    /// Runs whose every flag is known and clear.
    pub clean_runs: u64,
    /// Successes among `clean_runs`.
    pub clean_successes: u64,
}

impl TaskRuns {
    /// The success rate of these runs; `None` without runs.
    pub fn rate(&self) -> Option<f64> {
        (self.runs > 0).then(|| self.successes as f64 / self.runs as f64)
    }

    /// Whether every counted run's cost is known.
    pub fn cost_known(&self) -> bool {
        self.priced_runs == self.runs
    }

    /// Adds `other`'s runs to these.
    pub fn add(&mut self, other: &TaskRuns) {
        self.runs += other.runs;
        self.successes += other.successes;
        self.priced_runs += other.priced_runs;
        self.cost_usd += other.cost_usd;
        self.turn_runs += other.turn_runs;
        self.turns += other.turns;
        self.token_runs += other.token_runs;
        self.tokens += other.tokens;
        self.flagged_runs += other.flagged_runs;
        self.integrity_unknown_runs += other.integrity_unknown_runs;
        self.clean_runs += other.clean_runs;
        self.clean_successes += other.clean_successes;
    }
}

/// One policy being compared: its counted runs per task and its excluded runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicyRuns {
    /// The policy's label: its value of the `--by` keys (`policy_id`, or
    /// `model:strategy`), with ` @scoring=<v>` when its runs were judged under several
    /// scoring versions and it was split.
    pub label: String,
    /// The label without the scoring split: what `--policy` and `--baseline` name.
    pub group: String,
    /// The judge version of its runs; `None` when the runs do not say (Smith).
    pub scoring_version: Option<String>,
    /// Counted runs per task id; tasks with only excluded runs are absent.
    pub tasks: BTreeMap<String, TaskRuns>,
    /// Runs left out, by reason.
    pub excluded: Exclusions,
}

/// Why the rows of `paired_outcomes` could not be read.
#[derive(Debug, thiserror::Error)]
#[error("paired_outcomes row {row}: {reason}")]
pub struct RowError {
    row: usize,
    reason: String,
}

/// Groups the answer of `paired_outcomes` into policies by `by`, splitting a policy
/// whose runs carry several scoring versions; sorted by label.
pub fn group(table: &Table, by: &[Dimension]) -> Result<Vec<PolicyRuns>, RowError> {
    let mut groups: BTreeMap<(String, Option<String>), PolicyRuns> = BTreeMap::new();
    for row in 0..table.rows.len() {
        let text = |name: &str| table.get(row, name);
        let count = |name: &str| -> Result<u64, RowError> {
            text(name)
                .ok_or_else(|| missing(row, name))?
                .parse()
                .map_err(|e| RowError {
                    row,
                    reason: format!("{name}: {e}"),
                })
        };
        // A NULL sum is "none of the runs knows it", with a count of 0: adds nothing.
        let sum = |name: &str| -> Result<f64, RowError> {
            text(name).map_or(Ok(0.0), |t| {
                t.parse().map_err(|e| RowError {
                    row,
                    reason: format!("{name}: {e}"),
                })
            })
        };
        let task_id = text("task_id").ok_or_else(|| missing(row, "task_id"))?;
        let group_label = by
            .iter()
            .map(|d| text(d.column()).unwrap_or(UNKNOWN))
            .collect::<Vec<_>>()
            .join(":");
        let scoring = text("scoring_version").map(str::to_owned);
        let runs = TaskRuns {
            runs: count("runs")?,
            successes: count("successes")?,
            priced_runs: count("priced_runs")?,
            cost_usd: sum("cost_usd")?,
            turn_runs: count("turn_runs")?,
            turns: sum("turns")?,
            token_runs: count("token_runs")?,
            tokens: sum("tokens")?,
            flagged_runs: count("flagged_runs")?,
            integrity_unknown_runs: count("integrity_unknown_runs")?,
            clean_runs: count("clean_runs")?,
            clean_successes: count("clean_successes")?,
        };
        let excluded = Exclusions {
            broken_task: count("broken_task")?,
            unfinished: count("unfinished")?,
            lost_events: count("lost_events")?,
            infrastructure: count("infrastructure")?,
            unjudged: count("unjudged")?,
        };
        let policy = groups
            .entry((group_label.clone(), scoring.clone()))
            .or_insert_with(|| PolicyRuns {
                label: group_label.clone(),
                group: group_label,
                scoring_version: scoring,
                ..PolicyRuns::default()
            });
        policy.excluded.add(&excluded);
        if runs.runs > 0 {
            policy
                .tasks
                .entry(task_id.to_owned())
                .or_default()
                .add(&runs);
        }
    }
    let mut policies: Vec<PolicyRuns> = groups.into_values().collect();
    // Verdicts of different judge versions are never pooled: a group seen under
    // several versions becomes one policy per version, and says so in its label.
    for i in 0..policies.len() {
        let split = policies
            .iter()
            .filter(|p| p.group == policies[i].group)
            .count()
            > 1;
        if split {
            let version = policies[i].scoring_version.as_deref().unwrap_or(UNKNOWN);
            policies[i].label = format!("{} @scoring={version}", policies[i].group);
        }
    }
    Ok(policies)
}

fn missing(row: usize, name: &str) -> RowError {
    RowError {
        row,
        reason: format!("{name} is NULL or absent"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `paired_outcomes` answer of `rows`: task, policy, model, strategy, scoring
    /// version, runs, successes (every run priced at 0.1, nothing excluded).
    fn answer(rows: &[(&str, &str, &str, &str, &str, u64, u64)]) -> Table {
        let mut text = "task_id\tpolicy_id\tmodel\tstrategy\tscoring_version\truns\tsuccesses\t\
                        priced_runs\tcost_usd\tturn_runs\tturns\ttoken_runs\ttokens\t\
                        flagged_runs\tintegrity_unknown_runs\tclean_runs\tclean_successes\t\
                        broken_task\tunfinished\tlost_events\tinfrastructure\tunjudged\n\
                        String\tString\tNullable(String)\tNullable(String)\tNullable(String)\t\
                        UInt64\tUInt64\tUInt64\tNullable(Float64)\tUInt64\tNullable(Float64)\t\
                        UInt64\tNullable(Float64)\tUInt64\tUInt64\tUInt64\tUInt64\t\
                        UInt64\tUInt64\tUInt64\tUInt64\tUInt64\n"
            .to_owned();
        for (task, policy, model, strategy, version, runs, solved) in rows {
            text.push_str(&format!(
                "{task}\t{policy}\t{model}\t{strategy}\t{version}\t{runs}\t{solved}\t{runs}\t\
                 {}\t0\t\\N\t0\t\\N\t0\t{runs}\t0\t0\t0\t0\t0\t0\t0\n",
                0.1 * *runs as f64
            ));
        }
        Table::from_tsv_with_names_and_types(&text).expect("parses")
    }

    #[test]
    fn verdicts_of_different_scoring_versions_are_never_pooled() {
        let table = answer(&[
            ("t1", "p", "m", "raw", "1", 1, 1),
            ("t2", "p", "m", "raw", "2", 1, 0),
            ("t1", "q", "m", "raw", "1", 1, 0),
        ]);
        let policies = group(&table, &[Dimension::Policy]).expect("reads");
        let labels: Vec<&str> = policies.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(labels, ["p @scoring=1", "p @scoring=2", "q"]);
        assert!(policies.iter().all(|p| p.tasks.len() == 1));
        assert_eq!(policies[0].group, "p");
    }

    #[test]
    fn by_keys_pool_the_runs_of_a_task_and_name_unknown_values() {
        let table = answer(&[
            ("t1", "a", "gpt", "raw", "1", 1, 1),
            ("t1", "b", "gpt", "raw", "1", 2, 1),
            ("t1", "c", "\\N", "raw", "1", 1, 0),
        ]);
        let by = parse_by("model,strategy").expect("known keys");
        let policies = group(&table, &by).expect("reads");
        assert_eq!(policies[0].label, "(unknown):raw");
        let gpt = &policies[1];
        assert_eq!(gpt.label, "gpt:raw");
        let t1 = gpt.tasks["t1"];
        assert_eq!((t1.runs, t1.successes), (3, 2));
        assert!((t1.cost_usd - 0.3).abs() < 1e-12 && t1.cost_known());
        assert!(parse_by("model,colour").is_err());
    }
}
