//! The `bayes` method: each trial's config is proposed by a Tree-structured Parzen
//! Estimator (the `tpe` crate, one optimizer per matrix key, as Optuna's default
//! independent TPE sampler) fed with the sweep's finished trials.
//!
//! What it optimises: a trial's objective ([`outcome`]), the mean over its runs (the
//! proposed config on every task of the sweep with every seed) of a run's reward,
//! `success - cost_weight * cost_usd - token_weight * total_tokens / 1e6 - time_weight *
//! wall_time_ms / 60000` ([`RewardWeights`](super::file::RewardWeights)); a trial whose
//! objective is unknown (a run without verdict, or an unknown cost or token count that
//! weighs in) is not told to the optimizer.
//!
//! A proposal is a pure function of the sweep seed, the trial index and the finished
//! trials it is given (sorted by trial index): the generator of trial `n` is seeded from
//! `(seed, n)`, so any worker computing trial `n` from the same results gets the same
//! config, and a sweep replays identically. While fewer than `startup_trials` trials are
//! finished, every key is drawn uniformly from its domain; after that, from the TPE.
//! Keys a strategy does not use (`summary_*` without `llm_summary`/`hybrid`,
//! `observation_window` without `observation_masking`/`hybrid`) are dropped from the
//! config and told to their optimizer as "not used" (NaN); a draw failing a constraint,
//! or that the runner would refuse, is discarded and the next one drawn, so no proposal
//! breaks a constraint.
//!
//! This module decides; it does not claim, run or read anything.

use std::collections::BTreeMap;

use bench_schemas::{Canonical, Hash256, OptimizerUpdate, RunConfig, RunStop, TrialOutcome};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde_json::Value;
use tpe::density_estimation::{BuildDensityEstimator, DefaultEstimatorBuilder, DensityEstimator};
use uuid::Uuid;

use super::expand::{self, Resolved};
use super::file::{BayesSettings, Domain, Range, RewardWeights, SweepFile};
use super::SweepError;

/// Draws tried per proposal before giving up on the constraints.
const MAX_DRAWS: usize = 1000;

/// One matrix key as the optimizer sees it.
#[derive(Debug, Clone)]
struct Param {
    /// Config field path.
    path: String,
    /// Its values or range.
    domain: Domain,
    /// The optimizer's space: list positions `[0, k)`; a range `[min, max)`, `[min,
    /// max + 1)` for integers, logarithms for a log range.
    space: tpe::range::Range,
}

impl Param {
    fn new(path: String, domain: Domain) -> Result<Param, String> {
        let (start, end) = match &domain {
            Domain::Values(values) => (0.0, values.len() as f64),
            Domain::Range(Range { min, max, log, .. }) if *log => (min.ln(), max.ln()),
            Domain::Range(Range {
                min, max, integer, ..
            }) if *integer => (*min, max + 1.0),
            Domain::Range(Range { min, max, .. }) => (*min, *max),
        };
        let space =
            tpe::range(start, end).map_err(|e| format!("matrix.{path}: {e} ({start}..{end})"))?;
        Ok(Param {
            path,
            domain,
            space,
        })
    }

    fn estimator(&self) -> DefaultEstimatorBuilder {
        match self.domain {
            Domain::Values(_) => tpe::histogram_estimator(),
            Domain::Range(_) => tpe::parzen_estimator(),
        }
    }

    /// The config value at optimizer coordinate `x`.
    fn value(&self, x: f64) -> Value {
        match &self.domain {
            Domain::Values(values) => {
                values[(x.floor().max(0.0) as usize).min(values.len() - 1)].clone()
            }
            Domain::Range(r) => {
                let v = if r.log { x.exp() } else { x };
                if r.integer {
                    Value::from(v.floor().clamp(r.min, r.max) as i64)
                } else {
                    serde_json::Number::from_f64(v.clamp(r.min, r.max))
                        .map_or(Value::Null, Value::Number)
                }
            }
        }
    }

    /// The optimizer coordinate of a config value; NaN (not used) when absent or outside
    /// the domain (a trial of an earlier version of the sweep file).
    fn coordinate(&self, value: Option<&Value>) -> f64 {
        let Some(value) = value else { return f64::NAN };
        let x = match &self.domain {
            Domain::Values(values) => values.iter().position(|v| v == value).map(|i| i as f64),
            Domain::Range(r) => value.as_f64().map(|v| if r.log { v.ln() } else { v }),
        };
        x.filter(|x| self.space.contains(*x)).unwrap_or(f64::NAN)
    }

    /// `path=min..max` or `path=[a, b]`, for the dry run.
    fn describe(&self) -> String {
        match &self.domain {
            Domain::Values(values) => format!(
                "{} in [{}]",
                self.path,
                values
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Domain::Range(r) => format!(
                "{} in {}..={} ({}{})",
                self.path,
                r.min,
                r.max,
                if r.integer { "integer" } else { "float" },
                if r.log { ", log scale" } else { "" }
            ),
        }
    }
}

/// A finished trial, as told to the optimizer.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// Its index.
    pub trial: u64,
    /// The values of the matrix keys its config used (field path → value).
    pub values: BTreeMap<String, Value>,
    /// Its reward.
    pub reward: f64,
}

/// How a proposal was drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Uniformly at random (fewer than `startup_trials` finished trials).
    Startup,
    /// From the TPE: the candidate with the highest l(x)/g(x) per key.
    Model,
}

/// The config proposed for one trial, and the optimizer's account of it.
#[derive(Debug, Clone)]
pub struct Proposal {
    /// The trial index.
    pub trial: u64,
    /// Seed of the generator that drew it (from the sweep seed and the trial index).
    pub rng_seed: u64,
    /// The full run config.
    pub config: RunConfig,
    /// Its `cfg_hash`, as on the run's events.
    pub cfg_hash: Hash256,
    /// Values of the matrix keys the config uses (field path → value).
    pub values: BTreeMap<String, Value>,
    /// The matrix values, e.g. `strategy=hybrid summary_keep=3`.
    pub label: String,
    /// Random start or model.
    pub phase: Phase,
    /// Draws discarded because they broke a constraint or the runner's rules.
    pub rejected: usize,
    /// The `optimizer_update` payload announcing it.
    pub update: OptimizerUpdate,
}

/// The search space of a `bayes` sweep and its seeded TPE.
#[derive(Debug, Clone)]
pub struct SearchSpace {
    name: String,
    base_json: Value,
    params: Vec<Param>,
    constraints: Vec<Resolved>,
    settings: BayesSettings,
    seed: u64,
}

impl SearchSpace {
    /// The space of `sweep` over `base` (the scenario's config), proposals seeded from
    /// `seed`.
    pub fn new(sweep: &SweepFile, base: &RunConfig, seed: u64) -> Result<SearchSpace, SweepError> {
        let params = sweep
            .domains()
            .and_then(|domains| {
                domains
                    .into_iter()
                    .map(|(path, domain)| Param::new(path, domain))
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(SweepError::Invalid)?;
        let base_json =
            serde_json::to_value(base).map_err(|e| SweepError::Invalid(e.to_string()))?;
        let paths: Vec<&str> = params.iter().map(|p| p.path.as_str()).collect();
        let constraints = expand::resolve_constraints(sweep, &paths, &base_json)?;
        let space = SearchSpace {
            name: sweep.name.clone(),
            base_json,
            params,
            constraints,
            settings: sweep.bayes.clone(),
            seed,
        };
        // A key that is not a config field fails here, not at the first trial.
        space.propose(0, &[])?;
        Ok(space)
    }

    /// The proposal of trial `trial` given the finished trials `observations`.
    pub fn propose(
        &self,
        trial: u64,
        observations: &[Observation],
    ) -> Result<Proposal, SweepError> {
        let mut observations: Vec<&Observation> = observations.iter().collect();
        observations.sort_by_key(|o| o.trial);
        // What each key's optimizer is told: (coordinate or NaN, loss = -reward).
        let told: Vec<Vec<(f64, f64)>> = self
            .params
            .iter()
            .map(|p| {
                observations
                    .iter()
                    .map(|o| (p.coordinate(o.values.get(&p.path)), -o.reward))
                    .collect()
            })
            .collect();
        let phase = if (observations.len() as u64) < self.settings.startup_trials {
            Phase::Startup
        } else {
            Phase::Model
        };
        let mut optimizers = self
            .params
            .iter()
            .zip(&told)
            .map(|(p, told)| {
                let mut optimizer = tpe::TpeOptimizerBuilder::new()
                    .gamma(self.settings.gamma)
                    .candidates(self.settings.candidates)
                    .build(p.estimator(), p.space)
                    .map_err(|e| SweepError::Invalid(format!("bayes settings: {e}")))?;
                for &(x, loss) in told {
                    optimizer
                        .tell(x, loss)
                        .map_err(|e| SweepError::Invalid(format!("{}: {e}", p.path)))?;
                }
                Ok(optimizer)
            })
            .collect::<Result<Vec<_>, SweepError>>()?;

        let rng_seed = trial_seed(self.seed, trial);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(rng_seed);
        for rejected in 0..MAX_DRAWS {
            let mut xs = Vec::with_capacity(self.params.len());
            for (p, optimizer) in self.params.iter().zip(&mut optimizers) {
                xs.push(match phase {
                    Phase::Startup => rng.random_range(p.space.start()..p.space.end()),
                    Phase::Model => match optimizer.ask(&mut rng) {
                        Ok(x) => x,
                        Err(never) => match never {},
                    },
                });
            }
            let values: Vec<(&str, Value)> = self
                .params
                .iter()
                .zip(&xs)
                .map(|(p, &x)| (p.path.as_str(), p.value(x)))
                .collect();
            let (config, json, label) = expand::apply(&self.base_json, &values)?;
            if !self.constraints.iter().all(|c| c.holds(&json))
                || bench_task::ContextPlan::from_config(&config).is_err()
            {
                continue;
            }
            let used: BTreeMap<String, Value> = self
                .params
                .iter()
                .filter_map(|p| {
                    expand::get_path(&json, &p.path).map(|v| (p.path.clone(), v.clone()))
                })
                .collect();
            let cfg_hash = config.canonical_hash();
            let mut proposal = Proposal {
                trial,
                rng_seed,
                update: OptimizerUpdate {
                    suggested_config: config.clone(),
                    confidence: 0.0,
                    expected_improvement: 0.0,
                    exploration_vs_exploitation: 0.0,
                    reasoning: String::new(),
                    trial: Some(trial),
                    outcome: None,
                },
                config,
                cfg_hash,
                values: used,
                label,
                phase,
                rejected,
            };
            proposal.update = self.explain(&proposal, &told, &observations);
            return Ok(proposal);
        }
        Err(SweepError::Invalid(format!(
            "sweep {}: no draw of trial {trial} meets the constraints in {MAX_DRAWS} tries",
            self.name
        )))
    }

    /// The `optimizer_update` of `proposal`: the TPE's acquisition at the proposed point.
    ///
    /// With l and g the good and bad densities of each used key (the crate's estimators,
    /// the same γ split of the told trials as its `ask`) and r = Π l(x)/g(x):
    /// `expected_improvement` = (γ + (1 − γ)/r)⁻¹, the EI of Bergstra et al. (2011) up to
    /// a positive factor (1 = no better than a point the model knows nothing about);
    /// `confidence` = γ·r / (γ·r + 1 − γ), the model's probability that the point is
    /// among the good; `exploration_vs_exploitation` = 1 for a random start, else the
    /// prior's share of the good density the candidates were drawn from, averaged over
    /// the used keys (1/(n_good + 1) for a range, k/(n_good + k) for k listed values).
    fn explain(
        &self,
        proposal: &Proposal,
        told: &[Vec<(f64, f64)>],
        observations: &[&Observation],
    ) -> OptimizerUpdate {
        let gamma = self.settings.gamma;
        let mut log_ratio = 0.0;
        let mut prior_shares = Vec::new();
        for (p, told) in self.params.iter().zip(told) {
            let Some(value) = proposal.values.get(&p.path) else {
                continue;
            };
            let x = p.coordinate(Some(value));
            let mut sorted = told.clone();
            sorted.sort_by(|a, b| a.1.total_cmp(&b.1));
            let split = (sorted.len() as f64 * gamma).ceil() as usize;
            let (good, bad) = sorted.split_at(split);
            let finite = |set: &[(f64, f64)]| -> Vec<f64> {
                set.iter().map(|t| t.0).filter(|x| x.is_finite()).collect()
            };
            let (good, bad) = (finite(good), finite(bad));
            let builder = p.estimator();
            let density =
                |xs: &[f64]| match builder.build_density_estimator(xs.iter().copied(), p.space) {
                    Ok(estimator) => estimator.log_pdf(x),
                    Err(never) => match never {},
                };
            log_ratio += density(&good) - density(&bad);
            let n = good.len() as f64;
            prior_shares.push(match &p.domain {
                Domain::Values(values) => values.len() as f64 / (n + values.len() as f64),
                Domain::Range(_) => 1.0 / (n + 1.0),
            });
        }
        let ratio = log_ratio.exp();
        let expected_improvement = 1.0 / (gamma + (1.0 - gamma) / ratio);
        let confidence = gamma * ratio / (gamma * ratio + 1.0 - gamma);
        let exploration = match proposal.phase {
            Phase::Startup => 1.0,
            Phase::Model if prior_shares.is_empty() => 1.0,
            Phase::Model => prior_shares.iter().sum::<f64>() / prior_shares.len() as f64,
        };
        let how = match proposal.phase {
            Phase::Startup => format!(
                "random start ({} of {} startup trials finished)",
                observations.len(),
                self.settings.startup_trials
            ),
            Phase::Model => format!(
                "TPE (gamma {gamma}, best of {} candidates per key)",
                self.settings.candidates
            ),
        };
        let best = observations
            .iter()
            .max_by(|a, b| a.reward.total_cmp(&b.reward).then(b.trial.cmp(&a.trial)))
            .map_or_else(
                || "no trial has finished yet".to_owned(),
                |o| {
                    format!(
                        "best so far is trial {} ({}) with reward {:.4}",
                        o.trial,
                        expand::label(o.values.iter().map(|(p, v)| (p.as_str(), v))),
                        o.reward
                    )
                },
            );
        let told_trials = observations
            .iter()
            .map(|o| o.trial.to_string())
            .collect::<Vec<_>>()
            .join(",");
        OptimizerUpdate {
            suggested_config: proposal.config.clone(),
            confidence,
            expected_improvement,
            exploration_vs_exploitation: exploration,
            reasoning: format!(
                "trial {} of sweep {}: {how} maximising {} over {} finished trials [{told_trials}] \
                 proposes {} (seed {}, {} draws rejected by constraints); l/g = {ratio:.4}, \
                 EI factor {expected_improvement:.4}, P(good) {confidence:.4}; {best}",
                proposal.trial,
                self.name,
                self.settings.weights().describe(),
                observations.len(),
                proposal.label,
                proposal.rng_seed,
                proposal.rejected,
            ),
            trial: Some(proposal.trial),
            outcome: None,
        }
    }

    /// The objective's weights.
    pub fn settings(&self) -> &BayesSettings {
        &self.settings
    }

    /// One line per key: its domain.
    pub fn describe(&self) -> Vec<String> {
        self.params.iter().map(Param::describe).collect()
    }
}

/// The result of a trial whose runs ended with `runs` (run id and `run_stop`), under
/// `weights`: totals over the runs, and the objective, the mean reward of a run
/// ([`RewardWeights::reward`] of the success rate and the mean cost, tokens and wall
/// time). A total is unknown when some run's part is; the objective is unknown when
/// some run has no verdict, or a part it weighs is unknown.
pub fn outcome(runs: &[(Uuid, &RunStop)], weights: &RewardWeights) -> TrialOutcome {
    let solved: Option<u32> = runs.iter().map(|(_, r)| r.success.map(u32::from)).sum();
    let cost_usd: Option<f64> = runs.iter().map(|(_, r)| r.cost_usd).sum();
    let total_tokens: Option<u64> = runs.iter().map(|(_, r)| r.total_tokens).sum();
    let wall_time_ms: Option<u64> = runs.iter().map(|(_, r)| r.wall_time_ms).sum();
    let n = runs.len() as f64;
    let mean = |total: Option<f64>| total.map(|t| t / n);
    let objective = solved.filter(|_| !runs.is_empty()).and_then(|solved| {
        weights.reward(
            f64::from(solved) / n,
            mean(cost_usd),
            mean(total_tokens.map(|t| t as f64)),
            mean(wall_time_ms.map(|t| t as f64)),
        )
    });
    TrialOutcome {
        run_ids: runs.iter().map(|(id, _)| *id).collect(),
        solved,
        cost_usd,
        total_tokens,
        wall_time_ms,
        objective,
    }
}

/// The generator seed of trial `trial`: splitmix64 of the pair, the same everywhere.
fn trial_seed(seed: u64, trial: u64) -> u64 {
    let mut state = seed ^ trial.wrapping_mul(0xD1B5_4A32_D192_ED03);
    expand::splitmix64(&mut state)
}

#[cfg(test)]
mod tests {
    use bench_schemas::ContextStrategy;

    use super::*;
    use crate::sweep::test_inputs::{smoke_config, sweep};

    /// The four context strategies with conditional, constrained hyper-parameters.
    const STRATEGIES: &str = r#"
name = "strategies-bayes"
scenario = "smoke"
method = "bayes"
trials = 200
constraints = ["summary_keep < summary_interval", "temperature <= 0.8"]

[matrix]
strategy = ["raw", "observation_masking", "llm_summary", "hybrid"]
temperature = { min = 0.0, max = 1.0 }
strategy_params.observation_window = { min = 2, max = 40 }
strategy_params.summary_interval = { min = 2, max = 12 }
strategy_params.summary_keep = { min = 1, max = 10 }

[bayes]
startup_trials = 5
"#;

    fn space(text: &str) -> SearchSpace {
        SearchSpace::new(&sweep(text), &smoke_config(), 7).expect("space")
    }

    /// A made-up objective: best with hybrid, a window near 10 and a low temperature.
    fn reward(p: &Proposal) -> f64 {
        let c = &p.config;
        let window = c.strategy_params.observation_window.map_or(30.0, f64::from);
        f64::from(u8::from(c.strategy == Some(ContextStrategy::Hybrid)))
            - (window - 10.0).abs() / 40.0
            - c.temperature.expect("a proposed temperature")
    }

    #[test]
    fn two_hundred_proposals_honour_constraints_and_conditions() {
        let space = space(STRATEGIES);
        let mut observations = Vec::new();
        let mut strategies = std::collections::BTreeSet::new();
        for trial in 0..200 {
            let p = space.propose(trial, &observations).expect("a proposal");
            let c = &p.config;
            let params = &c.strategy_params;
            let t = c.temperature.expect("a proposed temperature");
            assert!((0.0..=0.8).contains(&t), "{}", p.label);
            let strategy = c.strategy.expect("a proposed strategy");
            let (masks, summarises) = (strategy.masks(), strategy.summarises());
            assert_eq!(params.observation_window.is_some(), masks, "{}", p.label);
            assert_eq!(params.summary_interval.is_some(), summarises, "{}", p.label);
            assert_eq!(params.summary_keep.is_some(), summarises, "{}", p.label);
            if let (Some(k), Some(n)) = (params.summary_keep, params.summary_interval) {
                assert!(k < n, "trial {trial}: {}", p.label);
            }
            if let Some(w) = params.observation_window {
                assert!((2..=40).contains(&w), "{}", p.label);
            }
            assert_eq!(p.phase == Phase::Startup, trial < 5);
            let u = &p.update;
            assert!(u.expected_improvement > 0.0 && u.expected_improvement < 1.0 / 0.25 + 1e-9);
            assert!((0.0..=1.0).contains(&u.confidence));
            assert!((0.0..=1.0).contains(&u.exploration_vs_exploitation));
            strategies.insert(format!("{:?}", c.strategy));
            observations.push(Observation {
                trial,
                values: p.values.clone(),
                reward: reward(&p),
            });
        }
        assert_eq!(strategies.len(), 4, "every strategy was proposed");
    }

    #[test]
    fn the_same_results_give_the_same_proposals_in_any_order() {
        let a = space(STRATEGIES);
        let b = space(STRATEGIES);
        let mut observations = Vec::new();
        for trial in 0..12 {
            let p = a.propose(trial, &observations).expect("proposal");
            observations.push(Observation {
                trial,
                values: p.values.clone(),
                reward: reward(&p),
            });
        }
        let mut shuffled = observations.clone();
        shuffled.reverse();
        let (pa, pb) = (
            a.propose(12, &observations).expect("a"),
            b.propose(12, &shuffled).expect("b"),
        );
        assert_eq!(pa.phase, Phase::Model);
        assert_eq!((&pa.cfg_hash, &pa.update), (&pb.cfg_hash, &pb.update));
        let other = a.propose(13, &observations).expect("next trial");
        assert_ne!(pa.cfg_hash, other.cfg_hash, "each trial has its own draw");
    }

    #[test]
    fn the_model_moves_towards_good_trials() {
        let space = space(
            r#"
name = "band"
scenario = "smoke"
method = "bayes"
trials = 40
[matrix]
temperature = { min = 0.0, max = 1.0 }
[bayes]
startup_trials = 8
"#,
        );
        let mut observations = Vec::new();
        let mut model_distance = Vec::new();
        for trial in 0..40 {
            let p = space.propose(trial, &observations).expect("proposal");
            let t = p.config.temperature.expect("a proposed temperature");
            if p.phase == Phase::Model {
                model_distance.push((t - 0.66).abs());
                assert!(p.update.exploration_vs_exploitation < 1.0);
            } else {
                assert_eq!(p.update.exploration_vs_exploitation, 1.0);
            }
            observations.push(Observation {
                trial,
                values: p.values.clone(),
                reward: -(t - 0.66).abs(),
            });
        }
        let late = &model_distance[model_distance.len() - 10..];
        assert!(
            late.iter().sum::<f64>() / 10.0 < 0.1,
            "late proposals cluster near the optimum: {late:?}"
        );
    }

    /// Trials (1-based) until the first proposal in [0.62, 0.70), within `budget`, of a
    /// temperature sweep whose reward mimics the stand-in model of the fleet tests:
    /// solved in the band, tokens growing with the distance from 0.66.
    fn first_hit(seed: u64, budget: u64, startup: u64) -> Option<u64> {
        let text = format!(
            "name = \"band\"\nscenario = \"smoke\"\nmethod = \"bayes\"\ntrials = {budget}\n\
             [matrix]\ntemperature = {{ min = 0.0, max = 1.0 }}\n\
             [bayes]\ntoken_weight = 1.0\nstartup_trials = {startup}\n"
        );
        let space = SearchSpace::new(&sweep(&text), &smoke_config(), seed).expect("space");
        let mut observations = Vec::new();
        for trial in 0..budget {
            let p = space.propose(trial, &observations).expect("proposal");
            let t = p.config.temperature.expect("a proposed temperature");
            let solved = (0.62..0.70).contains(&t);
            if solved {
                return Some(trial + 1);
            }
            let tokens = 1020.0 + (200_000.0 * (t - 0.66).abs()).floor();
            observations.push(Observation {
                trial,
                values: p.values.clone(),
                reward: -tokens / 1e6,
            });
        }
        None
    }

    #[test]
    fn tpe_finds_a_narrow_band_sooner_than_uniform_draws() {
        let (budget, seeds) = (10, 0..40u64);
        let mean = |startup: u64| -> (f64, usize) {
            let hits: Vec<Option<u64>> = seeds
                .clone()
                .map(|s| first_hit(s, budget, startup))
                .collect();
            let trials: u64 = hits.iter().map(|h| h.unwrap_or(budget + 1)).sum();
            (
                trials as f64 / hits.len() as f64,
                hits.iter().filter(|h| h.is_none()).count(),
            )
        };
        // Every draw uniform (startup = budget) is random search over the same space.
        let ((tpe, tpe_missed), (random, random_missed)) = (mean(3), mean(budget));
        eprintln!(
            "band of 8%, budget {budget}, 40 seeds: mean trials to the band (miss = {}) \
             tpe {tpe:.2} ({tpe_missed} missed), random {random:.2} ({random_missed} missed)",
            budget + 1
        );
        assert!(tpe < random && tpe_missed < random_missed);
    }

    /// A `run_stop` with these results.
    fn stop(success: Option<bool>, cost: Option<f64>, tokens: Option<u64>) -> RunStop {
        serde_json::from_value(serde_json::json!({
            "success": success, "final_score": null, "wall_time_ms": 60_000,
            "total_tokens": tokens, "stability_variance": null, "failing_tests": [],
            "tests_passed": null, "tests_failed": null, "early_stopped": false,
            "early_stop_reason": null, "exit_status": "submitted", "cost_usd": cost,
            "turns": 1
        }))
        .expect("a run_stop")
    }

    #[test]
    fn a_trial_is_scored_by_the_mean_over_all_its_runs_and_unknown_parts_stay_unknown() {
        let weights = RewardWeights {
            cost_weight: 2.0,
            token_weight: 0.0,
            time_weight: 0.0,
        };
        let (a, b, c) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let runs = [
            stop(Some(true), Some(0.10), Some(1_000)),
            stop(Some(false), Some(0.20), None),
            stop(Some(true), Some(0.30), Some(3_000)),
        ];
        let of = |stops: &[RunStop]| {
            let ids = [a, b, c];
            let pairs: Vec<_> = ids.iter().copied().zip(stops).collect();
            outcome(&pairs, &weights)
        };
        let o = of(&runs);
        assert_eq!(o.run_ids, vec![a, b, c]);
        assert_eq!(o.solved, Some(2));
        assert!((o.cost_usd.expect("known cost") - 0.6).abs() < 1e-12);
        assert_eq!(o.total_tokens, None, "one run's tokens are unknown");
        assert_eq!(o.wall_time_ms, Some(180_000));
        // 2/3 solved, mean cost 0.2: 2/3 - 2 * 0.2; unknown tokens weigh nothing here.
        let objective = o.objective.expect("known objective");
        assert!((objective - (2.0 / 3.0 - 0.4)).abs() < 1e-12, "{objective}");

        let unjudged = [
            runs[0].clone(),
            stop(None, Some(0.1), Some(1)),
            runs[2].clone(),
        ];
        let o = of(&unjudged);
        assert_eq!(
            (o.solved, o.objective),
            (None, None),
            "a run without verdict"
        );
        let unpriced = [
            runs[0].clone(),
            stop(Some(true), None, Some(1)),
            runs[2].clone(),
        ];
        let o = of(&unpriced);
        assert_eq!((o.solved, o.cost_usd, o.objective), (Some(3), None, None));
    }

    #[test]
    fn unsatisfiable_constraints_are_an_error_not_a_run() {
        let sweep = sweep(
            r#"
name = "never"
scenario = "smoke"
method = "bayes"
trials = 3
constraints = ["temperature > 2"]
[matrix]
temperature = { min = 0.0, max = 1.0 }
"#,
        );
        let err = SearchSpace::new(&sweep, &smoke_config(), 1).expect_err("no proposal");
        assert!(err.to_string().contains("meets the constraints"), "{err}");
    }
}
