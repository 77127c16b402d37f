//! Expansion: a [`SweepFile`] and its base config → the distinct configs (arms) and the
//! configurations (arm × task × seed) to run, each with the claim key every worker
//! computes the same way. Pure: no I/O.
//!
//! Steps, in order: the cartesian product of the matrix axes is applied to the base
//! config; strategy hyper-parameters the strategy does not use are dropped (so
//! `raw × summary_keep=[2,4]` is one config, not two); configs equal after that are merged
//! (same `cfg_hash`); configs failing a constraint are excluded; configs the runner would
//! refuse (e.g. `summary_keep >= summary_interval` without a constraint saying so) are
//! reported as invalid and excluded.

use bench_schemas::{sha256_hex, Canonical, ContextStrategy, Hash256, RunConfig};
use serde_json::Value;

use super::file::{Constraint, Method, Operand, SweepFile};
use super::SweepError;

/// `strategy_params` fields, by the strategies that use them.
const STRATEGY_PARAMS: [&str; 4] = [
    "observation_window",
    "summary_interval",
    "summary_keep",
    "summarizer_model",
];

/// One distinct config of the sweep (a bandit arm for `adaptive`).
#[derive(Debug, Clone, PartialEq)]
pub struct Arm {
    /// Position in [`Expansion::arms`].
    pub index: usize,
    /// The full run config.
    pub config: RunConfig,
    /// Its `cfg_hash`, as on the run's events.
    pub cfg_hash: Hash256,
    /// The matrix values that define it, e.g. `model=a strategy=raw`.
    pub label: String,
}

/// One run to do: an arm on a task with a seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Configuration {
    /// Index of the arm.
    pub arm: usize,
    /// The task.
    pub task_id: String,
    /// The run's seed.
    pub seed: u64,
    /// Claim key, `<sweep name>.<32 hex>`: the same on every worker, independent of the
    /// file's layout, so an edited sweep does not rerun what already ran.
    pub key: String,
}

/// The result of expanding a sweep.
#[derive(Debug, Clone, Default)]
pub struct Expansion {
    /// Distinct configs that passed the constraints.
    pub arms: Vec<Arm>,
    /// What to run, in the order workers try them (see [`expand`]).
    pub configurations: Vec<Configuration>,
    /// Points of the raw cartesian product.
    pub points: usize,
    /// Points equal to an earlier one once unused hyper-parameters are dropped.
    pub merged: usize,
    /// Distinct configs a constraint excluded.
    pub excluded: usize,
    /// Distinct configs the runner would refuse, with the reason.
    pub invalid: Vec<(String, String)>,
}

/// Expands `sweep` over `base` (the scenario's config) for `tasks`, seeds from
/// `base_seed`. Configurations come repeat by repeat (every arm and task once before any
/// second seed); `random` keeps `samples` of them in a seeded shuffle, the same on every
/// worker.
pub fn expand(
    sweep: &SweepFile,
    base: &RunConfig,
    tasks: &[String],
    base_seed: u64,
) -> Result<Expansion, SweepError> {
    let axes = sweep.axes().map_err(SweepError::Invalid)?;
    let base_json = serde_json::to_value(base).map_err(|e| SweepError::Invalid(e.to_string()))?;
    let paths: Vec<&str> = axes.iter().map(|(path, _)| path.as_str()).collect();
    let constraints = resolve_constraints(sweep, &paths, &base_json)?;

    let mut expansion = Expansion {
        arms: Vec::new(),
        configurations: Vec::new(),
        points: 0,
        merged: 0,
        excluded: 0,
        invalid: Vec::new(),
    };
    let mut seen = std::collections::HashSet::new();
    let mut point = vec![0usize; axes.len()];
    loop {
        expansion.points += 1;
        let values: Vec<(&str, Value)> = axes
            .iter()
            .zip(&point)
            .map(|((path, values), &i)| (path.as_str(), values[i].clone()))
            .collect();
        let (config, json, label) = apply(&base_json, &values)?;
        let cfg_hash = config.canonical_hash();
        if !seen.insert(cfg_hash.clone()) {
            expansion.merged += 1;
        } else if !constraints.iter().all(|c| c.holds(&json)) {
            expansion.excluded += 1;
        } else if let Err(reason) = bench_task::ContextPlan::from_config(&config) {
            expansion.invalid.push((label, reason));
        } else {
            expansion.arms.push(Arm {
                index: expansion.arms.len(),
                config,
                cfg_hash,
                label,
            });
        }
        if !advance(&mut point, &axes) {
            break;
        }
    }

    for seed in sweep.seed_list(base_seed) {
        for arm in &expansion.arms {
            for task_id in tasks {
                expansion.configurations.push(Configuration {
                    arm: arm.index,
                    task_id: task_id.clone(),
                    seed,
                    key: claim_key(&sweep.name, &arm.cfg_hash, task_id, seed),
                });
            }
        }
    }
    if let (Method::Random, Some(samples)) = (sweep.method, sweep.samples) {
        shuffle(&mut expansion.configurations, base_seed);
        expansion.configurations.truncate(samples);
    }
    Ok(expansion)
}

/// The claim key of one configuration.
fn claim_key(sweep: &str, cfg_hash: &Hash256, task_id: &str, seed: u64) -> String {
    let identity = serde_json::json!({ "cfg_hash": cfg_hash, "task_id": task_id, "seed": seed });
    let digest = sha256_hex(bench_schemas::canonical_json(&identity).as_bytes());
    format!("{sweep}.{}", &digest.as_str()[..32])
}

/// Next point of the cartesian product (odometer, last axis fastest); false after the
/// last one.
fn advance(point: &mut [usize], axes: &[(String, Vec<Value>)]) -> bool {
    for i in (0..point.len()).rev() {
        point[i] += 1;
        if point[i] < axes[i].1.len() {
            return true;
        }
        point[i] = 0;
    }
    false
}

/// The config with `values` (field path, value) set on the base, unused strategy
/// parameters dropped. Also returns its JSON (for constraints) and its label.
pub(super) fn apply(
    base_json: &Value,
    values: &[(&str, Value)],
) -> Result<(RunConfig, Value, String), SweepError> {
    let mut json = base_json.clone();
    for (path, value) in values {
        set_path(&mut json, path, value.clone());
    }
    let config: RunConfig = serde_json::from_value(json.clone())
        .map_err(|e| SweepError::Invalid(format!("matrix: {e}")))?;
    // `RunConfig` ignores unknown keys; a typo in the matrix must not be ignored.
    let known = serde_json::to_value(&config).map_err(|e| SweepError::Invalid(e.to_string()))?;
    if let Some((path, _)) = values
        .iter()
        .find(|(path, _)| get_path(&known, path).is_none())
    {
        return Err(SweepError::Invalid(format!(
            "matrix.{path} is not a field of the run config"
        )));
    }
    let mut config = config;
    drop_unused_params(&mut config);
    // The tool definitions hashed into `cfg_hash` are those of the tools this config
    // offers, not the base's.
    crate::policy::identity::refresh(&mut config);
    let json = serde_json::to_value(&config).map_err(|e| SweepError::Invalid(e.to_string()))?;
    let label = label(
        values
            .iter()
            .filter_map(|(path, _)| get_path(&json, path).map(|v| (*path, v))),
    );
    Ok((config, json, label))
}

/// `name=value` pairs of matrix values (`strategy_params.` dropped, strings bare), e.g.
/// `strategy=hybrid summary_keep=3`.
pub(super) fn label<'a>(values: impl IntoIterator<Item = (&'a str, &'a Value)>) -> String {
    values
        .into_iter()
        .map(|(path, v)| format!("{}={}", short_name(path), plain(v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Clears the hyper-parameters `config.strategy` does not read.
fn drop_unused_params(config: &mut RunConfig) {
    let params = &mut config.strategy_params;
    let strategy = config.strategy;
    if !strategy.is_some_and(ContextStrategy::masks) {
        params.observation_window = None;
    }
    if !strategy.is_some_and(ContextStrategy::summarises) {
        params.summary_interval = None;
        params.summary_keep = None;
        params.summarizer_model = None;
    }
}

fn short_name(path: &str) -> &str {
    path.strip_prefix("strategy_params.").unwrap_or(path)
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn set_path(json: &mut Value, path: &str, value: Value) {
    let mut at = json;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        let Value::Object(map) = at else { return };
        if parts.peek().is_none() {
            map.insert(part.to_owned(), value);
            return;
        }
        at = map
            .entry(part.to_owned())
            .or_insert_with(|| Value::Object(Default::default()));
    }
}

pub(super) fn get_path<'a>(json: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(json, |at, part| at.get(part))
        .filter(|v| !v.is_null())
}

/// A constraint with its field names resolved to full paths.
#[derive(Debug, Clone)]
pub(super) struct Resolved {
    left: String,
    right: Operand,
    constraint: Constraint,
}

impl Resolved {
    /// Holds, or does not apply (a side is absent: a parameter the strategy does not
    /// use).
    pub(super) fn holds(&self, json: &Value) -> bool {
        let Some(left) = get_path(json, &self.left) else {
            return true;
        };
        let right = match &self.right {
            Operand::Field(path) => get_path(json, path),
            Operand::Literal(v) => Some(v),
        };
        let Some(right) = right else { return true };
        let ordering = match (left, right) {
            (Value::Number(a), Value::Number(b)) => a
                .as_f64()
                .zip(b.as_f64())
                .and_then(|(a, b)| a.partial_cmp(&b)),
            (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
            (a, b) => Some(a.to_string().cmp(&b.to_string())),
        };
        ordering.is_some_and(|o| self.constraint.op.holds(o))
    }
}

/// The sweep's constraints, field names resolved against the matrix `paths` and the
/// base config.
pub(super) fn resolve_constraints(
    sweep: &SweepFile,
    paths: &[&str],
    base: &Value,
) -> Result<Vec<Resolved>, SweepError> {
    sweep
        .constraints
        .iter()
        .map(|c| resolve_constraint(c, paths, base))
        .collect()
}

fn resolve_constraint(
    constraint: &Constraint,
    paths: &[&str],
    base: &Value,
) -> Result<Resolved, SweepError> {
    let resolve = |name: &str| -> Result<String, SweepError> {
        let known = |path: &str| {
            paths.contains(&path)
                || get_path(base, path).is_some()
                || path
                    .strip_prefix("strategy_params.")
                    .is_some_and(|p| STRATEGY_PARAMS.contains(&p))
        };
        [name.to_owned(), format!("strategy_params.{name}")]
            .into_iter()
            .find(|path| known(path))
            .ok_or_else(|| {
                SweepError::Invalid(format!(
                    "constraint {constraint}: {name} is not a field of the run config"
                ))
            })
    };
    Ok(Resolved {
        left: resolve(&constraint.left)?,
        right: match &constraint.right {
            Operand::Field(name) => Operand::Field(resolve(name)?),
            literal => literal.clone(),
        },
        constraint: constraint.clone(),
    })
}

/// Fisher–Yates with splitmix64: the same order for the same seed on every machine and
/// Rust version (unlike `std`'s hashers).
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    for i in (1..items.len()).rev() {
        let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// The next output of splitmix64 from `state`: portable, for seeds and shuffles.
pub(super) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use bench_schemas::ContextStrategy;

    use super::*;
    use crate::sweep::test_inputs::{smoke_config, sweep};

    const MATRIX: &str = r#"
name = "strategies"
scenario = "smoke"
repeats = 2
constraints = ["summary_keep < summary_interval"]

[matrix]
model = ["a", "b"]
strategy = ["raw", "observation_masking", "llm_summary"]
strategy_params.observation_window = [5, 10]
strategy_params.summary_interval = [4, 8]
strategy_params.summary_keep = [2, 6]
"#;

    #[test]
    fn expansion_honours_constraints_and_counts() {
        let tasks = ["t1".to_owned(), "t2".to_owned(), "t3".to_owned()];
        let e = expand(&sweep(MATRIX), &smoke_config(), &tasks, 100).expect("expands");
        // Per model: raw 1 config, masking 2 (window), llm_summary (N,K) in
        // {(4,2),(8,2),(8,6)} = 3; (4,6) breaks K < N.
        assert_eq!(e.points, 2 * 3 * 2 * 2 * 2);
        assert_eq!(e.arms.len(), 2 * (1 + 2 + 3));
        assert_eq!(e.excluded, 2);
        assert!(e.invalid.is_empty());
        assert_eq!(e.merged, e.points - e.arms.len() - e.excluded);
        for arm in &e.arms {
            let p = &arm.config.strategy_params;
            if let (Some(k), Some(n)) = (p.summary_keep, p.summary_interval) {
                assert!(k < n, "{}", arm.label);
            }
            match arm.config.strategy.expect("a strategy") {
                ContextStrategy::Raw => assert_eq!(p, &Default::default()),
                ContextStrategy::ObservationMasking => assert!(p.summary_keep.is_none()),
                _ => assert!(p.observation_window.is_none()),
            }
        }
        assert_eq!(e.configurations.len(), e.arms.len() * tasks.len() * 2);
        let keys: std::collections::HashSet<_> = e.configurations.iter().map(|c| &c.key).collect();
        assert_eq!(keys.len(), e.configurations.len(), "claim keys are unique");
        let seeds: std::collections::BTreeSet<_> =
            e.configurations.iter().map(|c| c.seed).collect();
        assert_eq!(seeds.into_iter().collect::<Vec<_>>(), vec![100, 101]);
    }

    #[test]
    fn without_the_constraint_the_runner_rule_still_excludes_k_ge_n() {
        let text = MATRIX.replace("constraints = [\"summary_keep < summary_interval\"]", "");
        let e = expand(&sweep(&text), &smoke_config(), &["t".to_owned()], 1).expect("expands");
        assert_eq!(e.arms.len(), 12);
        assert_eq!(e.invalid.len(), 2);
        assert_eq!(e.excluded, 0);
    }

    #[test]
    fn random_draws_the_same_sample_everywhere() {
        let text = MATRIX.replace("repeats = 2", "method = \"random\"\nsamples = 5");
        let tasks = ["t1".to_owned(), "t2".to_owned()];
        let a = expand(&sweep(&text), &smoke_config(), &tasks, 9).expect("expands");
        let b = expand(&sweep(&text), &smoke_config(), &tasks, 9).expect("expands");
        assert_eq!(a.configurations.len(), 5);
        assert_eq!(a.configurations, b.configurations);
        let c = expand(&sweep(&text), &smoke_config(), &tasks, 10).expect("expands");
        assert_ne!(a.configurations, c.configurations);
    }

    #[test]
    fn typos_are_errors() {
        let typo = MATRIX.replace("model = [", "modle = [");
        assert!(expand(&sweep(&typo), &smoke_config(), &["t".to_owned()], 1).is_err());
        let bad = MATRIX.replace("summary_keep < summary_interval", "keep < summary_interval");
        assert!(expand(&sweep(&bad), &smoke_config(), &["t".to_owned()], 1).is_err());
    }

    #[test]
    fn explicit_seeds_replace_repeats() {
        let text = MATRIX.replace("repeats = 2", "seeds = [7, 8, 9]");
        let e = expand(&sweep(&text), &smoke_config(), &["t".to_owned()], 1).expect("expands");
        assert_eq!(e.configurations.len(), e.arms.len() * 3);
    }
}
