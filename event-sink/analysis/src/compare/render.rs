//! `compare`'s answer in the three output formats: JSON (the [`Comparison`] itself), and
//! two tables, policies then comparisons, as aligned text or as CSV (two CSV tables
//! separated by an empty line), through [`Table`] so labels are defused as in `query`.

use crate::table::{Column, Format, Table};

use super::analyze::{Comparison, PairComparison, PolicySummary};
use super::decisions::StoredDecision;

/// `comparison` in `format`.
pub fn render(comparison: &Comparison, format: Format) -> String {
    match format {
        Format::Json => {
            let mut out = serde_json::to_string_pretty(comparison).unwrap_or_default();
            out.push('\n');
            out
        }
        Format::Table | Format::Csv => {
            let policies = policy_table(&comparison.policies).render(format);
            let pairs = pair_table(&comparison.comparisons).render(format);
            let notes: String = comparison
                .notes
                .iter()
                .map(|note| format!("note: {note}\n"))
                .chain(comparison.comparisons.iter().filter_map(|c| {
                    let note = c.note.as_deref()?;
                    Some(format!("note: {} vs {}: {note}\n", c.baseline, c.candidate))
                }))
                .chain(comparison.comparisons.iter().filter_map(|c| {
                    let reading = c.reading.as_deref()?;
                    Some(format!(
                        "reading: {} vs {}: {reading}\n",
                        c.baseline, c.candidate
                    ))
                }))
                .collect();
            let notes = if format == Format::Table {
                notes
            } else {
                String::new()
            };
            let sequential = sequential_table(&comparison.comparisons)
                .map(|t| format!("\n{}", t.render(format)))
                .unwrap_or_default();
            format!("{policies}\n{pairs}{sequential}{notes}")
        }
    }
}

/// A column: its name and whether it holds numbers (right-aligned, never defused).
pub(super) fn columns(spec: &[(&str, bool)]) -> Vec<Column> {
    spec.iter()
        .map(|(name, numeric)| Column {
            name: (*name).to_owned(),
            ty: if *numeric {
                "Nullable(Float64)"
            } else {
                "String"
            }
            .to_owned(),
        })
        .collect()
}

pub(super) fn number(value: Option<f64>, decimals: usize) -> Option<String> {
    value.map(|v| format!("{v:.decimals$}"))
}

fn count(value: u64) -> Option<String> {
    Some(value.to_string())
}

/// The per-policy table (also the report's).
pub fn policy_table(policies: &[PolicySummary]) -> Table {
    let mut table = Table {
        columns: columns(&[
            ("policy_id", false),
            ("scoring_version", false),
            ("tasks", true),
            ("runs", true),
            ("solved", true),
            ("rate", true),
            ("rate_ci_low", true),
            ("rate_ci_high", true),
            ("rate_se_clustered", true),
            ("rate_ci_clustered_low", true),
            ("rate_ci_clustered_high", true),
            ("tasks_solved_at_least_once", true),
            ("tasks_solved_in_every_repeat", true),
            ("excluded", false),
            ("flagged_runs", true),
            ("integrity_unknown_runs", true),
            ("clean_runs", true),
            ("clean_rate", true),
            ("clean_rate_ci_low", true),
            ("clean_rate_ci_high", true),
            ("priced_runs", true),
            ("mean_cost_usd", true),
            ("mean_cost_ci_low", true),
            ("mean_cost_ci_high", true),
            ("cost_per_solved_usd", true),
            ("mean_turns", true),
            ("mean_tokens", true),
            ("pass_at_k", false),
            ("outcome_variance", true),
        ]),
        rows: Vec::new(),
    };
    for p in policies {
        let pass = p.repeats.as_ref().map(|r| {
            r.pass_at_k
                .iter()
                .map(|k| {
                    format!(
                        "k={} pass@k {:.3} [{:.3}, {:.3}] pass^k {:.3} [{:.3}, {:.3}] (n={})",
                        k.k,
                        k.pass_at_k,
                        k.pass_at_k_ci_low,
                        k.pass_at_k_ci_high,
                        k.pass_hat_k,
                        k.pass_hat_k_ci_low,
                        k.pass_hat_k_ci_high,
                        k.tasks
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        });
        table.rows.push(vec![
            Some(p.policy_id.clone()),
            p.scoring_version.clone(),
            count(p.tasks),
            count(p.runs),
            count(p.solved),
            number(p.rate, 4),
            number(p.rate_ci_low, 4),
            number(p.rate_ci_high, 4),
            number(p.rate_se_clustered, 4),
            number(p.rate_ci_clustered_low, 4),
            number(p.rate_ci_clustered_high, 4),
            count(p.tasks_solved_once),
            count(p.tasks_solved_every_repeat),
            Some(p.excluded.to_string()),
            count(p.flagged_runs),
            count(p.integrity_unknown_runs),
            count(p.clean_runs),
            number(p.clean_rate, 4),
            number(p.clean_rate_ci_low, 4),
            number(p.clean_rate_ci_high, 4),
            count(p.priced_runs),
            number(p.mean_cost_usd, 6),
            number(p.mean_cost_ci_low, 6),
            number(p.mean_cost_ci_high, 6),
            number(p.cost_per_solved_usd, 6),
            number(p.mean_turns, 2),
            number(p.mean_tokens, 1),
            pass,
            number(p.repeats.as_ref().map(|r| r.outcome_variance), 4),
        ]);
    }
    table
}

/// The per-comparison table (also the report's).
pub fn pair_table(pairs: &[PairComparison]) -> Table {
    let mut table = Table {
        columns: columns(&[
            ("baseline", false),
            ("candidate", false),
            ("tasks", true),
            ("difference", true),
            ("ci_low", true),
            ("ci_high", true),
            ("difference_se_clustered", true),
            ("clustered_ci_low", true),
            ("clustered_ci_high", true),
            ("p_value", true),
            ("p_adjusted", true),
            ("method", false),
            ("non_inferior", false),
            ("cost_difference", true),
            ("cost_ci_low", true),
            ("cost_ci_high", true),
            ("min_detectable_difference", true),
            ("tasks_needed", true),
        ]),
        rows: Vec::new(),
    };
    for c in pairs {
        table.rows.push(vec![
            Some(c.baseline.clone()),
            Some(c.candidate.clone()),
            count(c.tasks),
            number(c.difference, 4),
            number(c.ci_low, 4),
            number(c.ci_high, 4),
            number(c.difference_se_clustered, 4),
            number(c.clustered_ci_low, 4),
            number(c.clustered_ci_high, 4),
            number(c.p_value, 4),
            number(c.p_adjusted, 4),
            c.method.map(str::to_owned),
            c.non_inferior
                .map(|v| if v { "yes" } else { "no" }.to_owned()),
            number(c.cost_difference, 6),
            number(c.cost_ci_low, 6),
            number(c.cost_ci_high, 6),
            number(c.min_detectable_difference, 4),
            c.tasks_needed.and_then(count),
        ]);
    }
    table
}
/// The `--sequential` table: per comparison, the sequence and the decision; `None`
/// when no comparison has one.
fn sequential_table(pairs: &[PairComparison]) -> Option<Table> {
    let mut table = Table {
        columns: columns(&[
            ("baseline", false),
            ("candidate", false),
            ("rounds", true),
            ("cs_low", true),
            ("cs_high", true),
            ("decision", false),
            ("stored_decision", false),
        ]),
        rows: Vec::new(),
    };
    for pair in pairs {
        let Some(s) = &pair.sequential else { continue };
        table.rows.push(vec![
            Some(pair.baseline.clone()),
            Some(pair.candidate.clone()),
            Some(s.rounds.to_string()),
            number(s.cs_low, 4),
            number(s.cs_high, 4),
            Some(s.decision.name().to_owned()),
            s.stored_decision.as_ref().map(StoredDecision::summary),
        ]);
    }
    (!table.rows.is_empty()).then_some(table)
}

/// The decisions as a table (the report's section): experiment, pair, decision,
/// sequence, rounds, level, the difference the bets were tuned to (NULL: learnt), when.
pub fn decisions_table(decisions: &[StoredDecision]) -> Table {
    let columns = columns(&[
        ("experiment", false),
        ("baseline", false),
        ("candidate", false),
        ("decision", false),
        ("cs_low", true),
        ("cs_high", true),
        ("rounds", true),
        ("alpha", true),
        ("detect", true),
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
                    d.detect.map(|v| v.to_string()),
                    Some(d.decided_at()),
                ]
            })
            .collect(),
    }
}
