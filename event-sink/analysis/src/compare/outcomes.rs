//! What `compare` reads: the rows of the shipped `paired_outcomes` query (per task and
//! policy config: the runs that count, their successes, cost, turns, tokens and integrity,
//! and the runs excluded, by reason), grouped into the policies being compared (`--by`), with
//! policies whose runs were judged under different `scoring_version`s split apart, and
//! runs of different experiments split apart unless pooling them was asked for. A
//! policy that is a config (`--by cfg`) is labelled by the settings that differ between
//! the configs shown, never by its hash.
//!
//! Which runs count is decided in one place, the SQL of `paired_outcomes` (see
//! `deploy/clickhouse/queries/paired_outcomes.sql`); this module only adds them up. No
//! statistics here ([`super::analyze`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

use crate::table::Table;

/// A config key runs are grouped by into the policies compared (`--by`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dimension {
    /// `policy_id` (the default).
    Policy,
    /// `cfg_hash`: exactly the same config, labelled by the settings that differ.
    Cfg,
    /// The model.
    Model,
    /// The context strategy.
    Strategy,
    /// The experiment the runs belong to (`run_start.experiment`).
    Experiment,
    /// The value of one tag of the runs (`tag:NAME`).
    Tag(String),
}

impl Dimension {
    /// Every dimension but `tag:NAME`, with its `--by` name.
    pub const NAMED: [(&'static str, Dimension); 5] = [
        ("policy", Dimension::Policy),
        ("cfg", Dimension::Cfg),
        ("model", Dimension::Model),
        ("strategy", Dimension::Strategy),
        ("experiment", Dimension::Experiment),
    ];

    /// The `--by` name.
    pub fn name(&self) -> String {
        match self {
            Dimension::Tag(name) => format!("tag:{name}"),
            other => Self::NAMED
                .iter()
                .find(|(_, d)| d == other)
                .map_or_else(String::new, |(name, _)| (*name).to_owned()),
        }
    }

    /// This dimension's value in `row` of a `paired_outcomes` answer; `None` when the
    /// runs do not say (a Smith run has no model, a run no such tag).
    pub(crate) fn value<'t>(&self, table: &'t Table, row: usize) -> Option<&'t str> {
        let column = match self {
            Dimension::Policy => "policy_id",
            Dimension::Cfg => "cfg_hash",
            Dimension::Model => "model",
            Dimension::Strategy => "strategy",
            Dimension::Experiment => "experiment",
            Dimension::Tag(name) => {
                return table.get(row, "tags")?.lines().find_map(|tag| {
                    tag.strip_prefix(name.as_str())
                        .and_then(|rest| rest.strip_prefix('='))
                });
            }
        };
        table.get(row, column)
    }
}

/// Parses `--by`: dimension names separated by commas (`model,strategy`,
/// `experiment,tag:arm`).
pub fn parse_by(text: &str) -> Result<Vec<Dimension>, String> {
    let mut dimensions = Vec::new();
    for name in text.split(',').map(str::trim) {
        let dimension = match name.strip_prefix("tag:") {
            Some("") => return Err("tag: names no tag (tag:NAME)".to_owned()),
            Some(tag) => Dimension::Tag(tag.to_owned()),
            None => Dimension::NAMED
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, d)| d.clone())
                .ok_or_else(|| {
                    let known: Vec<&str> = Dimension::NAMED.iter().map(|(n, _)| *n).collect();
                    format!(
                        "unknown key {name:?}; known: {}, tag:NAME",
                        known.join(", ")
                    )
                })?,
        };
        if !dimensions.contains(&dimension) {
            dimensions.push(dimension);
        }
    }
    Ok(dimensions)
}

/// The settings a config is labelled by (`--by cfg`): the `paired_outcomes` column and
/// the name the label gives it, in label order.
const SETTINGS: [(&str, &str); 14] = [
    ("model", "model"),
    ("strategy", "strategy"),
    ("temperature", "temperature"),
    ("context_window", "window"),
    ("max_iterations", "max_iterations"),
    ("observation_window", "observation_window"),
    ("summary_interval", "summary_interval"),
    ("summary_keep", "summary_keep"),
    ("summarizer_model", "summarizer_model"),
    ("endpoint", "endpoint"),
    ("max_tokens", "max_tokens"),
    ("system_prompt_sha256", "prompt"),
    ("tool_definitions_sha256", "tool_definitions"),
    ("tools", "tools"),
];

/// A setting's value as a label shows it: windows in thousands of tokens (`8k`), hashes
/// by their first 8 characters, an unstated one as `null`.
fn setting_text(column: &str, value: Option<&str>) -> String {
    let Some(value) = value else {
        return "null".to_owned();
    };
    match column {
        "context_window" => match value.parse::<u64>() {
            Ok(n) if n > 0 && n % 1024 == 0 => format!("{}k", n / 1024),
            Ok(n) if n > 0 && n % 1000 == 0 => format!("{}k", n / 1000),
            _ => value.to_owned(),
        },
        "system_prompt_sha256" | "tool_definitions_sha256" => value.chars().take(8).collect(),
        _ => value.to_owned(),
    }
}

/// What `group` does with runs of different experiments in one policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Experiments {
    /// Keep them apart: one policy per experiment, labelled `@experiment=NAME`.
    #[default]
    Apart,
    /// Pool them (`--pool-experiments`): the policy lists the experiments it pools.
    Pooled,
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
    /// The label without the scoring and experiment split: what `--policy` and
    /// `--baseline` name.
    pub group: String,
    /// The experiments its runs belong to (`(none)` for runs outside any): one unless
    /// they were pooled.
    pub experiments: BTreeSet<String>,
    /// When its runs had several configs (`cfg_hash`; the `--by` keys do not include
    /// `cfg`): how many, and the settings that differ between them (`temperature`,
    /// `endpoint`; `other settings` when none of the listed ones do). `None` for one.
    pub pooled_configs: Option<(usize, Vec<String>)>,
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
/// whose runs carry several scoring versions, and (unless `experiments` pools them)
/// several experiments; sorted by label.
pub fn group(
    table: &Table,
    by: &[Dimension],
    experiments: Experiments,
) -> Result<Vec<PolicyRuns>, RowError> {
    // Keyed by the group label, scoring version and (kept apart) experiment.
    type Key = (String, Option<String>, Option<String>);
    let mut groups: BTreeMap<Key, PolicyRuns> = BTreeMap::new();
    // The configs of each group, to say when one pools several.
    let mut configs: BTreeMap<Key, BTreeSet<&str>> = BTreeMap::new();
    let settings = config_settings(table);
    let cfg_labels = if by.contains(&Dimension::Cfg) {
        config_labels(&settings)
    } else {
        BTreeMap::new()
    };
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
            .map(|d| {
                let value = d.value(table, row);
                match d {
                    Dimension::Cfg => value.and_then(|h| cfg_labels.get(h)).map(String::as_str),
                    _ => value,
                }
                .unwrap_or(UNKNOWN)
            })
            .collect::<Vec<_>>()
            .join(":");
        let scoring = text("scoring_version").map(str::to_owned);
        let experiment = text("experiment").unwrap_or(NO_EXPERIMENT).to_owned();
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
        let apart = (experiments == Experiments::Apart).then(|| experiment.clone());
        let key = (group_label.clone(), scoring.clone(), apart);
        if let Some(hash) = text("cfg_hash") {
            configs.entry(key.clone()).or_default().insert(hash);
        }
        let policy = groups.entry(key).or_insert_with(|| PolicyRuns {
            label: group_label.clone(),
            group: group_label,
            scoring_version: scoring,
            ..PolicyRuns::default()
        });
        policy.experiments.insert(experiment);
        policy.excluded.add(&excluded);
        if runs.runs > 0 {
            policy
                .tasks
                .entry(task_id.to_owned())
                .or_default()
                .add(&runs);
        }
    }
    for (key, policy) in &mut groups {
        let hashes = configs.get(key).map(|h| h.iter().collect::<Vec<_>>());
        policy.pooled_configs = hashes.filter(|h| h.len() > 1).map(|hashes| {
            let values: Vec<&Vec<String>> =
                hashes.iter().filter_map(|h| settings.get(**h)).collect();
            let mut names: Vec<String> = differing(&values)
                .into_iter()
                .map(|i| SETTINGS[i].1.to_owned())
                .collect();
            if names.is_empty() {
                names.push("other settings".to_owned());
            }
            (hashes.len(), names)
        });
    }
    let mut policies: Vec<PolicyRuns> = groups.into_values().collect();
    label_twins(&mut policies, experiments);
    policies.sort_by(|a, b| a.label.cmp(&b.label));
    Ok(policies)
}

/// Verdicts of different judge versions are never pooled, nor (unless asked) runs of
/// different experiments: a group seen under several is one policy each, and its label
/// says which.
fn label_twins(policies: &mut [PolicyRuns], experiments: Experiments) {
    let labels: Vec<String> = policies
        .iter()
        .map(|p| {
            let twins = |same: &dyn Fn(&PolicyRuns) -> bool| {
                policies
                    .iter()
                    .filter(|q| q.group == p.group && !same(q))
                    .count()
                    > 0
            };
            let mut label = p.group.clone();
            if twins(&|q| q.scoring_version == p.scoring_version) {
                let version = p.scoring_version.as_deref().unwrap_or(UNKNOWN);
                label.push_str(&format!(" @scoring={version}"));
            }
            if experiments == Experiments::Apart && twins(&|q| q.experiments == p.experiments) {
                let names: Vec<&str> = p.experiments.iter().map(String::as_str).collect();
                label.push_str(&format!(" @experiment={}", names.join(",")));
            }
            label
        })
        .collect();
    for (policy, label) in policies.iter_mut().zip(labels) {
        policy.label = label;
    }
}

/// The label of a run outside any experiment.
pub const NO_EXPERIMENT: &str = "(none)";

/// The [`SETTINGS`] of every cfg_hash of `table` (a `paired_outcomes` answer), as labels
/// show them.
fn config_settings(table: &Table) -> BTreeMap<&str, Vec<String>> {
    let mut settings: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for row in 0..table.rows.len() {
        if let Some(hash) = table.get(row, "cfg_hash") {
            settings.entry(hash).or_insert_with(|| {
                SETTINGS
                    .iter()
                    .map(|(column, _)| setting_text(column, table.get(row, column)))
                    .collect()
            });
        }
    }
    settings
}

/// The positions in [`SETTINGS`] of the settings whose values differ among `configs`.
fn differing(configs: &[&Vec<String>]) -> Vec<usize> {
    (0..SETTINGS.len())
        .filter(|&i| configs.iter().map(|s| &s[i]).collect::<BTreeSet<_>>().len() > 1)
        .collect()
}

/// The label of every config of `settings` ([`config_settings`]): the settings that
/// differ between its configs (`temperature=0.2 window=8k`). Configs whose listed
/// settings are all alike differ in another one, and say so with the start of their hash;
/// a lone config is `one config`.
fn config_labels(settings: &BTreeMap<&str, Vec<String>>) -> BTreeMap<String, String> {
    let differing = differing(&settings.values().collect::<Vec<_>>());
    let labels: BTreeMap<&str, String> = settings
        .iter()
        .map(|(hash, values)| {
            let label = differing
                .iter()
                .map(|&i| format!("{}={}", SETTINGS[i].1, values[i]))
                .collect::<Vec<_>>()
                .join(" ");
            (*hash, label)
        })
        .collect();
    labels
        .iter()
        .map(|(hash, label)| {
            let alike = labels.values().filter(|l| *l == label).count() > 1;
            let label = match (alike, label.is_empty()) {
                (false, false) => label.clone(),
                (false, true) => "one config".to_owned(),
                (true, _) => {
                    let short: String = hash.chars().take(8).collect();
                    let other = format!("other settings (cfg {short})");
                    if label.is_empty() {
                        other
                    } else {
                        format!("{label} {other}")
                    }
                }
            };
            ((*hash).to_owned(), label)
        })
        .collect()
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
        let policies = group(&table, &[Dimension::Policy], Experiments::Apart).expect("reads");
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
        let policies = group(&table, &by, Experiments::Apart).expect("reads");
        assert_eq!(policies[0].label, "(unknown):raw");
        let gpt = &policies[1];
        assert_eq!(gpt.label, "gpt:raw");
        let t1 = gpt.tasks["t1"];
        assert_eq!((t1.runs, t1.successes), (3, 2));
        assert!((t1.cost_usd - 0.3).abs() < 1e-12 && t1.cost_known());
        assert!(parse_by("model,colour").is_err());
        assert!(parse_by("tag:").is_err());
    }

    /// A `paired_outcomes` answer of one counted, solved run per row, with the config
    /// columns `extra` names (all String) and each row's values for them.
    fn with_columns(extra: &[&str], rows: &[&[&str]]) -> Table {
        let counts = [
            "runs",
            "successes",
            "priced_runs",
            "turn_runs",
            "token_runs",
            "flagged_runs",
            "integrity_unknown_runs",
            "clean_runs",
            "clean_successes",
            "broken_task",
            "unfinished",
            "lost_events",
            "infrastructure",
            "unjudged",
        ];
        let names: Vec<&str> = extra.iter().copied().chain(counts).collect();
        let types: Vec<&str> = extra
            .iter()
            .map(|_| "Nullable(String)")
            .chain(counts.iter().map(|_| "UInt64"))
            .collect();
        let mut text = format!("{}\n{}\n", names.join("\t"), types.join("\t"));
        for row in rows {
            let values: Vec<&str> = row
                .iter()
                .copied()
                .chain([
                    "1", "1", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0",
                ])
                .collect();
            text.push_str(&values.join("\t"));
            text.push('\n');
        }
        Table::from_tsv_with_names_and_types(&text).expect("parses")
    }

    #[test]
    fn configs_are_labelled_by_the_settings_that_differ_never_by_their_hash() {
        let extra = [
            "task_id",
            "cfg_hash",
            "model",
            "temperature",
            "context_window",
            "endpoint",
        ];
        let table = with_columns(
            &extra,
            &[
                &["t1", "aaaa1111", "m", "0.2", "8192", "http://h:80/v1"],
                &["t1", "bbbb2222", "m", "0.7", "8192", "http://h:80/v1"],
                &["t1", "cccc3333", "m", "0.2", "32000", "http://h:80/v1"],
                // Alike in every listed setting: another one differs.
                &["t1", "dddd4444", "m", "0.2", "32000", "http://h:80/v1"],
            ],
        );
        let policies = group(&table, &[Dimension::Cfg], Experiments::Apart).expect("reads");
        let labels: Vec<&str> = policies.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "temperature=0.2 window=32k other settings (cfg cccc3333)",
                "temperature=0.2 window=32k other settings (cfg dddd4444)",
                "temperature=0.2 window=8k",
                "temperature=0.7 window=8k",
            ]
        );
        // Two endpoints are two configs, named by their endpoint.
        let table = with_columns(
            &extra,
            &[
                &[
                    "t1",
                    "aaaa1111",
                    "m",
                    "0.2",
                    "8192",
                    "http://127.0.0.1:8000/v1",
                ],
                &[
                    "t1",
                    "bbbb2222",
                    "m",
                    "0.2",
                    "8192",
                    "http://localhost:8000/v1",
                ],
            ],
        );
        let policies = group(&table, &[Dimension::Cfg], Experiments::Apart).expect("reads");
        let labels: Vec<&str> = policies.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "endpoint=http://127.0.0.1:8000/v1",
                "endpoint=http://localhost:8000/v1"
            ]
        );
        assert!(policies.iter().all(|p| p.pooled_configs.is_none()));
        // Grouped by model, the two endpoints are one policy that says it pools them.
        let pooled = group(&table, &[Dimension::Model], Experiments::Apart).expect("reads");
        assert_eq!(pooled.len(), 1);
        assert_eq!(
            pooled[0].pooled_configs,
            Some((2, vec!["endpoint".to_owned()]))
        );
    }

    #[test]
    fn runs_of_different_experiments_are_pooled_only_when_asked() {
        let extra = ["task_id", "policy_id", "experiment", "tags"];
        let table = with_columns(
            &extra,
            &[
                &["t1", "p", "exp-a", "arm=a\\nowner=ci"],
                &["t1", "p", "exp-b", "arm=b"],
                &["t1", "q", "exp-a", "\\N"],
            ],
        );
        let apart = group(&table, &[Dimension::Policy], Experiments::Apart).expect("reads");
        let labels: Vec<&str> = apart.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(labels, ["p @experiment=exp-a", "p @experiment=exp-b", "q"]);
        assert!(apart.iter().all(|p| p.tasks["t1"].runs == 1));

        let pooled = group(&table, &[Dimension::Policy], Experiments::Pooled).expect("reads");
        assert_eq!(pooled[0].label, "p");
        assert_eq!(pooled[0].tasks["t1"].runs, 2);
        assert_eq!(
            pooled[0].experiments.iter().collect::<Vec<_>>(),
            ["exp-a", "exp-b"]
        );

        let by = parse_by("experiment,tag:arm").expect("known keys");
        let tagged = group(&table, &by, Experiments::Pooled).expect("reads");
        let labels: Vec<&str> = tagged.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(labels, ["exp-a:(unknown)", "exp-a:a", "exp-b:b"]);
    }
}
