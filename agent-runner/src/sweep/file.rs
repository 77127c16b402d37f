//! The sweep file (TOML): which scenario, which matrix of config values with which
//! constraints, which tasks and seeds, and how configurations are chosen. Format and
//! examples: `agent-runner/docs/sweeps.md`. This module only parses and checks; expansion
//! is [`super::expand`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Deserialize;

use super::SweepError;

/// A sweep file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepFile {
    /// Name of the sweep; the prefix of its claim keys, so every worker running the same
    /// name shares one set of claims. Letters, digits, `-` and `_` only.
    pub name: String,
    /// The base scenario: a path relative to the sweep file, or a scenario name in the
    /// scenarios directory. Its `[config]` is the starting point of every configuration.
    pub scenario: String,
    /// How configurations are chosen. Default `grid`.
    #[serde(default)]
    pub method: Method,
    /// Task ids (a subset of the scenario's). Default: every task of the scenario.
    #[serde(default)]
    pub tasks: Option<Vec<String>>,
    /// Runs per (config, task), each with its own seed `seed + repeat`. Default 1.
    #[serde(default = "one")]
    pub repeats: u32,
    /// Explicit seeds, one run per seed; replaces `repeats`.
    #[serde(default)]
    pub seeds: Option<Vec<u64>>,
    /// Base seed of `repeats`. Default: the scenario's seed.
    #[serde(default)]
    pub seed: Option<u64>,
    /// `random` only: configurations drawn (without replacement).
    #[serde(default)]
    pub samples: Option<usize>,
    /// `bayes` only (required there): finished trials after which the sweep stops; trial
    /// `n` (0-based) is the `n`-th proposal of the optimizer, run on every task with
    /// every seed (`repeats` or `seeds`).
    #[serde(default)]
    pub trials: Option<u64>,
    /// Conditions every config must meet, e.g. `"summary_keep < summary_interval"`.
    #[serde(default)]
    pub constraints: Vec<Constraint>,
    /// Config field → values. Keys are `RunConfig` field paths (`model`, `temperature`,
    /// `strategy_params.summary_keep`, nested tables allowed); every leaf is an array, or
    /// (`bayes` only) a range `{ min, max, log }`.
    #[serde(default)]
    pub matrix: toml::Table,
    /// `adaptive` only: what the bandit optimises.
    #[serde(default)]
    pub adaptive: AdaptiveSettings,
    /// `bayes` only: what the optimizer optimises and how it searches.
    #[serde(default)]
    pub bayes: BayesSettings,
}

fn one() -> u32 {
    1
}

/// How a sweep picks its configurations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Every configuration, in expansion order.
    #[default]
    Grid,
    /// `samples` configurations drawn with a seeded shuffle (the same on every worker).
    Random,
    /// A UCB1 bandit over the configs, fed by past results in ClickHouse.
    Adaptive,
    /// Tree-structured Parzen Estimator proposals over lists and ranges, fed by the
    /// sweep's finished trials in ClickHouse.
    Bayes,
}

impl Method {
    /// The name in the sweep file.
    pub const fn as_str(self) -> &'static str {
        match self {
            Method::Grid => "grid",
            Method::Random => "random",
            Method::Adaptive => "adaptive",
            Method::Bayes => "bayes",
        }
    }
}

/// Declares the settings of a sweep method that optimises the reward of one run: the
/// reward's weights (the keys `cost_weight`, `token_weight` and `time_weight`, default 0,
/// the same for every such method), the method's own keys with their defaults, and
/// [`RewardWeights`] read from them.
macro_rules! reward_settings {
    (
        $(#[$meta:meta])*
        $name:ident {
            $($(#[$field_meta:meta])* $field:ident: $ty:ty = $default:expr,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// Reward lost per USD of cost. Default 0.
            #[serde(default)]
            pub cost_weight: f64,
            /// Reward lost per million tokens. Default 0.
            #[serde(default)]
            pub token_weight: f64,
            /// Reward lost per minute of wall time. Default 0.
            #[serde(default)]
            pub time_weight: f64,
            $($(#[$field_meta])* pub $field: $ty,)*
        }

        impl $name {
            /// The reward of one run under these weights.
            pub fn weights(&self) -> RewardWeights {
                RewardWeights {
                    cost_weight: self.cost_weight,
                    token_weight: self.token_weight,
                    time_weight: self.time_weight,
                }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    cost_weight: 0.0,
                    token_weight: 0.0,
                    time_weight: 0.0,
                    $($field: $default,)*
                }
            }
        }
    };
}

reward_settings! {
    /// `[adaptive]`: the reward of one run is
    /// `success - cost_weight * cost_usd - token_weight * total_tokens / 1e6 -
    /// time_weight * wall_time_ms / 60000`; the defaults optimise the success rate alone.
    AdaptiveSettings {
        /// UCB1 exploration coefficient `c` in `mean + c * sqrt(2 ln N / n)`. Default 1.
        #[serde(default = "default_exploration")]
        exploration: f64 = default_exploration(),
    }
}

fn default_exploration() -> f64 {
    1.0
}

reward_settings! {
    /// `[bayes]`: the reward of one run (the same formula and weights as `[adaptive]`) and
    /// the TPE settings. Each proposal maximises the reward of one run.
    BayesSettings {
        /// Trials drawn uniformly at random before the model proposes. Default 10 (as
        /// Optuna's TPE sampler).
        #[serde(default = "default_startup_trials")]
        startup_trials: u64 = default_startup_trials(),
        /// Share of the finished trials counted as good (TPE's γ), in (0, 1). Default 0.25.
        #[serde(default = "default_gamma")]
        gamma: f64 = default_gamma(),
        /// Candidates drawn from the good density per parameter, the best l/g kept.
        /// Default 24.
        #[serde(default = "default_candidates")]
        candidates: usize = default_candidates(),
    }
}

fn default_startup_trials() -> u64 {
    10
}

fn default_gamma() -> f64 {
    0.25
}

fn default_candidates() -> usize {
    24
}

/// The weights of the reward of one run:
/// `success - cost_weight * cost_usd - token_weight * total_tokens / 1e6 -
/// time_weight * wall_time_ms / 60000`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RewardWeights {
    /// Reward lost per USD.
    pub cost_weight: f64,
    /// Reward lost per million tokens.
    pub token_weight: f64,
    /// Reward lost per minute of wall time.
    pub time_weight: f64,
}

impl RewardWeights {
    /// The reward of a run (or the mean reward of runs) with these outcomes; `None` when
    /// the cost, the token count or the wall time is unknown and weighs in: an unknown
    /// cost is never read as free.
    pub fn reward(
        &self,
        success: f64,
        cost_usd: Option<f64>,
        tokens: Option<f64>,
        wall_time_ms: Option<f64>,
    ) -> Option<f64> {
        // A term whose weight is 0 needs no value.
        let penalty = |weight: f64, value: Option<f64>| match value {
            Some(value) => Some(weight * value),
            None if weight == 0.0 => Some(0.0),
            None => None,
        };
        Some(
            success
                - penalty(self.cost_weight, cost_usd)?
                - penalty(self.token_weight, tokens)? / 1e6
                - penalty(self.time_weight, wall_time_ms)? / 60_000.0,
        )
    }

    /// The formula in words, e.g. `success - 1 * cost_usd`.
    pub fn describe(&self) -> String {
        let mut text = "success".to_owned();
        for (weight, what) in [
            (self.cost_weight, "cost_usd"),
            (self.token_weight, "Mtokens"),
            (self.time_weight, "wall minutes"),
        ] {
            if weight != 0.0 {
                text.push_str(&format!(" - {weight} * {what}"));
            }
        }
        text
    }
}

/// What one matrix key ranges over.
#[derive(Debug, Clone, PartialEq)]
pub enum Domain {
    /// The listed values.
    Values(Vec<serde_json::Value>),
    /// A range (`bayes` only).
    Range(Range),
}

/// `{ min, max, log }`: every value between `min` and `max` (both included); integers
/// when both bounds are TOML integers; `log = true` searches the logarithm (bounds > 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// Lowest value.
    pub min: f64,
    /// Highest value.
    pub max: f64,
    /// Integer values only.
    pub integer: bool,
    /// Searched on a log scale.
    pub log: bool,
}

/// `left op right`, where each side is a matrix field path (short names of
/// `strategy_params` fields allowed) and `right` may be a number or a quoted string.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    /// Field path on the left.
    pub left: String,
    /// Comparison.
    pub op: CompareOp,
    /// Field path or literal on the right.
    pub right: Operand,
    /// The text as written, for messages.
    pub text: String,
}

/// The right-hand side of a [`Constraint`].
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// Another config field.
    Field(String),
    /// A literal number or string.
    Literal(serde_json::Value),
}

/// Comparison operators of constraints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl CompareOp {
    /// Longest first, so `<=` is not read as `<`.
    const ALL: [(&'static str, CompareOp); 6] = [
        ("<=", CompareOp::Le),
        (">=", CompareOp::Ge),
        ("==", CompareOp::Eq),
        ("!=", CompareOp::Ne),
        ("<", CompareOp::Lt),
        (">", CompareOp::Gt),
    ];

    /// Whether `ordering` (left compared to right) satisfies the operator.
    pub fn holds(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            CompareOp::Lt => ordering == Less,
            CompareOp::Le => ordering != Greater,
            CompareOp::Gt => ordering == Greater,
            CompareOp::Ge => ordering != Less,
            CompareOp::Eq => ordering == Equal,
            CompareOp::Ne => ordering != Equal,
        }
    }
}

impl FromStr for Constraint {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (at, symbol, op) = CompareOp::ALL
            .iter()
            .filter_map(|(symbol, op)| text.find(symbol).map(|at| (at, *symbol, *op)))
            .min_by_key(|(at, symbol, _)| (*at, usize::MAX - symbol.len()))
            .ok_or_else(|| format!("constraint {text:?} has no comparison (< <= > >= == !=)"))?;
        let left = text[..at].trim();
        let right = text[at + symbol.len()..].trim();
        if !is_field_path(left) {
            return Err(format!(
                "constraint {text:?}: left side must be a field name"
            ));
        }
        let right = if is_field_path(right) {
            Operand::Field(right.to_owned())
        } else if let Ok(number) = serde_json::from_str::<serde_json::Number>(right) {
            Operand::Literal(serde_json::Value::Number(number))
        } else if let Some(s) = right.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
            Operand::Literal(serde_json::Value::String(s.to_owned()))
        } else {
            return Err(format!(
                "constraint {text:?}: right side must be a field name, a number or a \"string\""
            ));
        };
        Ok(Constraint {
            left: left.to_owned(),
            op,
            right,
            text: text.to_owned(),
        })
    }
}

impl<'de> Deserialize<'de> for Constraint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn is_field_path(s: &str) -> bool {
    !s.is_empty()
        && s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

impl SweepFile {
    /// Reads and checks the sweep file at `path`.
    pub fn load(path: &Path) -> Result<SweepFile, SweepError> {
        let text = std::fs::read_to_string(path).map_err(|e| SweepError::File {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Self::parse(path, &text)
    }

    /// Parses and checks sweep text (`path` is for messages).
    pub fn parse(path: &Path, text: &str) -> Result<SweepFile, SweepError> {
        let invalid = |message: String| SweepError::File {
            path: path.to_path_buf(),
            message,
        };
        let sweep: SweepFile = bench_cli::config_file::parse(path, text)?;
        if sweep.name.is_empty()
            || !sweep
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(invalid(format!(
                "name {:?} must be letters, digits, '-' or '_' (it prefixes claim keys)",
                sweep.name
            )));
        }
        if sweep.repeats == 0 {
            return Err(invalid("repeats must be at least 1".into()));
        }
        if sweep.seeds.as_ref().is_some_and(Vec::is_empty) {
            return Err(invalid("seeds is empty".into()));
        }
        match (sweep.method, sweep.samples) {
            (Method::Random, None | Some(0)) => {
                return Err(invalid("method random needs samples >= 1".into()))
            }
            (Method::Grid | Method::Adaptive | Method::Bayes, Some(_)) => {
                return Err(invalid(format!(
                    "samples only applies to method random, not {}",
                    sweep.method.as_str()
                )))
            }
            _ => {}
        }
        if sweep.method == Method::Bayes {
            sweep.check_bayes().map_err(invalid)?;
        } else {
            if sweep.trials.is_some() {
                return Err(invalid(format!(
                    "trials only applies to method bayes, not {}",
                    sweep.method.as_str()
                )));
            }
            sweep.axes().map_err(invalid)?;
        }
        Ok(sweep)
    }

    /// The seeds each config runs with: `seeds`, else `repeats` seeds from `base_seed`
    /// on.
    pub fn seed_list(&self, base_seed: u64) -> Vec<u64> {
        match &self.seeds {
            Some(seeds) => seeds.clone(),
            None => (0..u64::from(self.repeats))
                .map(|r| base_seed.wrapping_add(r))
                .collect(),
        }
    }

    fn check_bayes(&self) -> Result<(), String> {
        match self.trials {
            None | Some(0) => return Err("method bayes needs trials >= 1".into()),
            Some(_) => {}
        }
        let b = &self.bayes;
        if !(b.gamma > 0.0 && b.gamma < 1.0) {
            return Err(format!("bayes.gamma must be in (0, 1), got {}", b.gamma));
        }
        if b.candidates == 0 {
            return Err("bayes.candidates must be at least 1".into());
        }
        if self.domains()?.is_empty() {
            return Err("method bayes needs at least one matrix key".into());
        }
        Ok(())
    }

    /// The matrix as (field path, values) pairs, nested tables flattened to dotted paths,
    /// in key order; a range is an error (only `bayes` searches ranges).
    pub fn axes(&self) -> Result<Vec<(String, Vec<serde_json::Value>)>, String> {
        self.domains()?
            .into_iter()
            .map(|(path, domain)| match domain {
                Domain::Values(values) => Ok((path, values)),
                Domain::Range(_) => Err(format!(
                    "matrix.{path} is a range: ranges need method bayes (or list the values)"
                )),
            })
            .collect()
    }

    /// The matrix as (field path, domain) pairs, nested tables flattened to dotted paths,
    /// in key order.
    pub fn domains(&self) -> Result<Vec<(String, Domain)>, String> {
        let mut domains = Vec::new();
        flatten(&self.matrix, "", &mut domains)?;
        Ok(domains)
    }

    /// Where the base scenario file is: relative to the sweep file if such a file exists,
    /// else a name (or file name) in `scenarios_dir`.
    pub fn scenario_path(&self, sweep_path: &Path, scenarios_dir: &Path) -> PathBuf {
        let beside = sweep_path
            .parent()
            .unwrap_or(Path::new("."))
            .join(&self.scenario);
        if beside.is_file() {
            return beside;
        }
        let file = if self.scenario.ends_with(".toml") {
            self.scenario.clone()
        } else {
            format!("{}.toml", self.scenario)
        };
        scenarios_dir.join(file)
    }
}

fn flatten(
    table: &toml::Table,
    prefix: &str,
    out: &mut Vec<(String, Domain)>,
) -> Result<(), String> {
    let sorted: BTreeMap<_, _> = table.iter().collect();
    for (key, value) in sorted {
        let path = format!("{prefix}{key}");
        match value {
            // No run config field is called `min` or `max`: such a table is a range.
            toml::Value::Table(inner) if inner.contains_key("min") || inner.contains_key("max") => {
                out.push((path.clone(), Domain::Range(range(&path, inner)?)));
            }
            toml::Value::Table(inner) => flatten(inner, &format!("{path}."), out)?,
            toml::Value::Array(values) if values.is_empty() => {
                return Err(format!("matrix.{path} is empty"))
            }
            toml::Value::Array(values) => {
                let values = values
                    .iter()
                    .map(|v| serde_json::to_value(v).map_err(|e| format!("matrix.{path}: {e}")))
                    .collect::<Result<_, _>>()?;
                out.push((path, Domain::Values(values)));
            }
            _ => {
                return Err(format!(
                    "matrix.{path} must be an array of values or a range {{ min, max }}"
                ))
            }
        }
    }
    Ok(())
}

/// `{ min, max, log }` at `path`.
fn range(path: &str, table: &toml::Table) -> Result<Range, String> {
    if let Some(key) = table
        .keys()
        .find(|k| !["min", "max", "log"].contains(&k.as_str()))
    {
        return Err(format!(
            "matrix.{path}: a range has min, max and log, not {key}"
        ));
    }
    let bound = |key: &str| match table.get(key) {
        Some(toml::Value::Integer(i)) => Ok((*i as f64, true)),
        Some(toml::Value::Float(f)) if f.is_finite() => Ok((*f, false)),
        Some(_) => Err(format!("matrix.{path}.{key} must be a finite number")),
        None => Err(format!("matrix.{path}: a range needs {key}")),
    };
    let ((min, int_min), (max, int_max)) = (bound("min")?, bound("max")?);
    let log = match table.get("log") {
        None => false,
        Some(toml::Value::Boolean(log)) => *log,
        Some(_) => return Err(format!("matrix.{path}.log must be true or false")),
    };
    if min >= max {
        return Err(format!("matrix.{path}: min {min} must be below max {max}"));
    }
    if log && min <= 0.0 {
        return Err(format!("matrix.{path}: a log range needs min > 0"));
    }
    Ok(Range {
        min,
        max,
        integer: int_min && int_max,
        log,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraints_parse_with_the_longest_operator() {
        let c: Constraint = "summary_keep <= summary_interval".parse().expect("valid");
        assert_eq!(c.left, "summary_keep");
        assert_eq!(c.op, CompareOp::Le);
        assert_eq!(c.right, Operand::Field("summary_interval".into()));
        let c: Constraint = "temperature < 0.5".parse().expect("valid");
        assert_eq!(c.right, Operand::Literal(serde_json::json!(0.5)));
        let c: Constraint = "model != \"gpt-4o\"".parse().expect("valid");
        assert_eq!(c.op, CompareOp::Ne);
        assert!("no operator".parse::<Constraint>().is_err());
        assert!("1 < model".parse::<Constraint>().is_err());
    }

    #[test]
    fn random_needs_samples_and_names_are_key_safe() {
        let path = Path::new("s.toml");
        let base = "scenario = \"smoke\"\n[matrix]\nmodel = [\"a\"]\n";
        assert!(SweepFile::parse(path, &format!("name = \"ok\"\n{base}")).is_ok());
        assert!(SweepFile::parse(path, &format!("name = \"a.b\"\n{base}")).is_err());
        let random = format!("name = \"r\"\nmethod = \"random\"\n{base}");
        assert!(SweepFile::parse(path, &random).is_err());
        let empty = "name = \"e\"\nscenario = \"smoke\"\n[matrix]\nmodel = []\n";
        assert!(SweepFile::parse(path, empty).is_err());
    }

    #[test]
    fn ranges_parse_and_need_method_bayes() {
        let path = Path::new("s.toml");
        let head = "name = \"b\"\nscenario = \"smoke\"\n";
        let matrix = "[matrix]\ntemperature = { min = 0.0, max = 1.0 }\n\
                      strategy_params.observation_window = { min = 2, max = 40 }\n\
                      cost_limit_usd = { min = 0.01, max = 10.0, log = true }\n";
        let sweep = SweepFile::parse(
            path,
            &format!("{head}method = \"bayes\"\ntrials = 5\n{matrix}"),
        )
        .expect("valid bayes sweep");
        let domains = sweep.domains().expect("domains");
        assert_eq!(
            domains[1],
            (
                "strategy_params.observation_window".to_owned(),
                Domain::Range(Range {
                    min: 2.0,
                    max: 40.0,
                    integer: true,
                    log: false
                })
            )
        );
        assert!(matches!(
            domains[0].1,
            Domain::Range(Range { log: true, .. })
        ));
        for bad in [
            format!("{head}{matrix}"),
            format!("{head}method = \"bayes\"\n{matrix}"),
            format!("{head}method = \"bayes\"\ntrials = 5\n[matrix]\ntemperature = {{ min = 1.0, max = 0.5 }}\n"),
            format!("{head}method = \"bayes\"\ntrials = 5\n[matrix]\ntemperature = {{ min = 0.0, max = 1.0, step = 2 }}\n"),
            format!("{head}method = \"bayes\"\ntrials = 5\n[matrix]\ncost_limit_usd = {{ min = 0.0, max = 1.0, log = true }}\n"),
            format!("{head}trials = 5\n[matrix]\nmodel = [\"a\"]\n"),
        ] {
            assert!(SweepFile::parse(path, &bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_unknown_cost_is_never_read_as_free() {
        let weights = RewardWeights {
            cost_weight: 1.0,
            token_weight: 0.0,
            time_weight: 0.0,
        };
        assert_eq!(weights.reward(1.0, None, Some(0.0), Some(0.0)), None);
        assert_eq!(
            weights.reward(1.0, Some(0.25), Some(0.0), Some(0.0)),
            Some(0.75)
        );
        let free = RewardWeights {
            cost_weight: 0.0,
            ..weights
        };
        assert_eq!(free.reward(1.0, None, Some(0.0), Some(0.0)), Some(1.0));
        let per_token = RewardWeights {
            token_weight: 1.0,
            ..free
        };
        assert_eq!(per_token.reward(1.0, Some(0.0), None, Some(0.0)), None);
        assert_eq!(per_token.reward(1.0, None, Some(5e5), Some(0.0)), Some(0.5));
        let per_minute = RewardWeights {
            time_weight: 1.0,
            ..free
        };
        assert_eq!(per_minute.reward(1.0, None, None, None), None);
        assert_eq!(
            per_minute.reward(1.0, None, None, Some(30_000.0)),
            Some(0.5)
        );
        assert_eq!(free.reward(1.0, None, None, None), Some(1.0));
    }
}
