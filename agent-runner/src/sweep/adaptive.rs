//! The `adaptive` method: a UCB1 bandit whose arms are the sweep's distinct configs.
//!
//! What it optimises: the mean reward of an arm's finished runs (over the sweep's tasks),
//! where one run's reward is
//! `success - cost_weight * cost_usd - token_weight * total_tokens / 1e6 -
//! time_weight * wall_time_ms / 60000` ([`AdaptiveSettings`]); with the default weights,
//! the success rate. Each pick takes the arm maximising `mean + c * sqrt(2 ln N / n)`
//! (`n` runs of the arm, `N` of all arms, `c` = `exploration`); untried arms come first,
//! in expansion order. Results come from ClickHouse (`run_stops`, read with `FINAL`,
//! matched by `cfg_hash` and task), so every worker and every later sweep sees the
//! runs of all workers once the sink has stored them. Each pick is announced as an
//! `optimizer_update` event with its suggestion and reasoning.
//!
//! This module decides; it does not run or claim anything.

use std::collections::HashMap;

use bench_clickhouse::ClickHouseConfig;
use bench_schemas::OptimizerUpdate;
use serde::Deserialize;

use super::expand::Arm;
use super::file::AdaptiveSettings;
use super::SweepError;

/// The arm statistics query (`?` = cfg hashes, task ids, whether the reward needs the
/// cost, whether it needs the token count).
const ARM_STATS_SQL: &str = include_str!("arm_stats.sql");

/// Finished runs of one arm, as ClickHouse reports them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, clickhouse::Row)]
pub struct ArmStats {
    /// `cfg_hash` of the arm.
    pub cfg_hash: String,
    /// Finished runs.
    pub runs: u64,
    /// Mean of `success`.
    pub success_rate: f64,
    /// Mean `cost_usd`; `None` when unknown (only read where the reward needs it, and
    /// then every counted run's cost is known).
    pub avg_cost_usd: Option<f64>,
    /// Mean `total_tokens`, known on the same terms as `avg_cost_usd`.
    pub avg_tokens: Option<f64>,
    /// Mean `wall_time_ms`, known on the same terms as `avg_cost_usd`.
    pub avg_wall_time_ms: Option<f64>,
}

/// Reads the statistics of `arms` on `tasks`, keyed by `cfg_hash`: only runs whose
/// reward under `settings` is known count (judged, and with a known cost / token count
/// where it weighs in).
pub async fn read_stats(
    source: &ClickHouseConfig,
    arms: &[Arm],
    tasks: &[String],
    settings: &AdaptiveSettings,
) -> Result<HashMap<String, ArmStats>, SweepError> {
    let hashes: Vec<String> = arms.iter().map(|a| a.cfg_hash.to_string()).collect();
    let weights = settings.weights();
    let rows = source
        .client()
        .query(ARM_STATS_SQL)
        .bind(hashes)
        .bind(tasks)
        .bind(u8::from(weights.cost_weight != 0.0))
        .bind(u8::from(weights.token_weight != 0.0))
        .bind(u8::from(weights.time_weight != 0.0))
        .fetch_all::<ArmStats>()
        .await
        .map_err(|e| SweepError::ClickHouse(format!("{}: {e}", source.url)))?;
    Ok(rows.into_iter().map(|r| (r.cfg_hash.clone(), r)).collect())
}

/// The bandit's choice and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    /// Index of the chosen arm.
    pub arm: usize,
    /// The `optimizer_update` payload announcing it.
    pub update: OptimizerUpdate,
}

/// UCB1 over the arms in `eligible` (arms with a configuration left to claim).
#[derive(Debug)]
pub struct Bandit<'a> {
    arms: &'a [Arm],
    settings: &'a AdaptiveSettings,
}

impl<'a> Bandit<'a> {
    /// A bandit over `arms`.
    pub fn new(arms: &'a [Arm], settings: &'a AdaptiveSettings) -> Self {
        Bandit { arms, settings }
    }

    /// The reward mean of an arm with `stats`; `None` when a value it needs is unknown
    /// ([`read_stats`] counts only runs whose reward is known, so only an arm without
    /// such runs has none).
    pub fn mean_reward(&self, stats: &ArmStats) -> Option<f64> {
        self.settings.weights().reward(
            stats.success_rate,
            stats.avg_cost_usd,
            stats.avg_tokens,
            stats.avg_wall_time_ms,
        )
    }

    /// The runs and mean reward of an arm with runs whose reward is known.
    fn known<'s>(
        &self,
        stats: &'s HashMap<String, ArmStats>,
        arm: &Arm,
    ) -> Option<(&'s ArmStats, f64)> {
        let stats = stats.get(arm.cfg_hash.as_str()).filter(|s| s.runs > 0)?;
        Some((stats, self.mean_reward(stats)?))
    }

    /// The best eligible arm under UCB1; `None` when nothing is eligible. `local` counts
    /// the runs this worker made per arm: an arm it ran is no longer untried even before
    /// ClickHouse has the result (its mean counts as 0 until then), so the sink's delay
    /// does not make the worker repeat an arm.
    pub fn pick(
        &self,
        stats: &HashMap<String, ArmStats>,
        eligible: &[usize],
        local: &[u64],
    ) -> Option<Pick> {
        let plays = |i: usize| -> (u64, f64) {
            let (runs, mean) = self
                .known(stats, &self.arms[i])
                .map_or((0, 0.0), |(s, mean)| (s.runs, mean));
            (runs.max(local.get(i).copied().unwrap_or(0)), mean)
        };
        let total: u64 = (0..self.arms.len()).map(|i| plays(i).0).sum();
        let ln_total = (total.max(1) as f64).ln();
        let score = |i: usize| -> (f64, f64) {
            match plays(i) {
                (0, _) => (f64::INFINITY, f64::INFINITY),
                (n, mean) => (
                    mean,
                    self.settings.exploration * (2.0 * ln_total / n as f64).sqrt(),
                ),
            }
        };
        // Highest bound wins; on a tie, the earlier arm (expansion order).
        let chosen = eligible.iter().copied().max_by(|&a, &b| {
            let ((ma, ba), (mb, bb)) = (score(a), score(b));
            (ma + ba).total_cmp(&(mb + bb)).then(b.cmp(&a))
        })?;
        let best_tried = self
            .arms
            .iter()
            .filter_map(|a| self.known(stats, a).map(|(s, mean)| (a, s, mean)))
            .max_by(|(_, _, a), (_, _, b)| a.total_cmp(b));
        let untried = eligible.iter().filter(|&&i| plays(i).0 == 0).count();
        let (n, mean) = plays(chosen);
        let (_, bonus) = score(chosen);
        Some(Pick {
            arm: chosen,
            update: self.explain(chosen, n, mean, bonus, best_tried, untried, total),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn explain(
        &self,
        chosen: usize,
        runs: u64,
        mean: f64,
        bonus: f64,
        best: Option<(&Arm, &ArmStats, f64)>,
        untried: usize,
        total: u64,
    ) -> OptimizerUpdate {
        let arm = &self.arms[chosen];
        let objective = self.objective();
        let best_text = match best {
            Some((b, s, mean)) => format!(
                "best so far is config #{} ({}) with mean reward {mean:.3} over {} runs",
                b.index, b.label, s.runs
            ),
            None => "no config has finished runs yet".to_owned(),
        };
        let best_mean = best.map_or(0.0, |(_, _, mean)| mean);
        let header = format!(
            "UCB1 maximising {objective} over {} configs ({total} finished or running runs)",
            self.arms.len()
        );
        if runs == 0 {
            return OptimizerUpdate {
                suggested_config: arm.config.clone(),
                confidence: 0.0,
                expected_improvement: (1.0 - best_mean).max(0.0),
                exploration_vs_exploitation: 1.0,
                reasoning: format!(
                    "{header}: config #{chosen} ({}) has no finished run yet, and untried \
                     configs come first ({untried} left); {best_text}",
                    arm.label
                ),
                trial: None,
                outcome: None,
            };
        }
        OptimizerUpdate {
            suggested_config: arm.config.clone(),
            confidence: runs as f64 / (runs as f64 + 1.0),
            expected_improvement: (mean + bonus - best_mean).max(0.0),
            exploration_vs_exploitation: (bonus / (mean.abs() + bonus)).clamp(0.0, 1.0),
            reasoning: format!(
                "{header}: config #{chosen} ({}) has the highest bound, mean {mean:.3} over \
                 {runs} runs + exploration bonus {bonus:.3} = {:.3}; {best_text}",
                arm.label,
                mean + bonus
            ),
            trial: None,
            outcome: None,
        }
    }

    /// The reward formula in words.
    fn objective(&self) -> String {
        self.settings.weights().describe()
    }
}

#[cfg(test)]
mod tests {
    use bench_schemas::Canonical;

    use super::*;
    use crate::sweep::test_inputs::smoke_config;

    fn arms(n: usize) -> Vec<Arm> {
        let base = smoke_config();
        (0..n)
            .map(|i| {
                let mut config = base.clone();
                config.temperature = Some(i as f64 / 10.0);
                Arm {
                    index: i,
                    cfg_hash: config.canonical_hash(),
                    config,
                    label: format!("temperature={}", i as f64 / 10.0),
                }
            })
            .collect()
    }

    fn stats(arm: &Arm, runs: u64, success_rate: f64, cost: f64) -> (String, ArmStats) {
        (
            arm.cfg_hash.to_string(),
            ArmStats {
                cfg_hash: arm.cfg_hash.to_string(),
                runs,
                success_rate,
                avg_cost_usd: Some(cost),
                ..ArmStats::default()
            },
        )
    }

    #[test]
    fn untried_arms_come_first_then_the_upper_bound() {
        let arms = arms(3);
        let settings = AdaptiveSettings::default();
        let bandit = Bandit::new(&arms, &settings);
        let mut known: HashMap<_, _> = [stats(&arms[0], 4, 0.5, 0.0)].into();
        let pick = bandit.pick(&known, &[0, 1, 2], &[]).expect("a pick");
        assert_eq!(pick.arm, 1);
        assert_eq!(pick.update.exploration_vs_exploitation, 1.0);
        assert!(pick.update.reasoning.contains("no finished run"));
        let pick = bandit.pick(&known, &[0, 1, 2], &[0, 1, 0]).expect("a pick");
        assert_eq!(
            pick.arm, 2,
            "an arm this worker ran is not untried any more"
        );

        known.extend([stats(&arms[1], 4, 1.0, 0.0), stats(&arms[2], 40, 0.6, 0.0)]);
        let pick = bandit.pick(&known, &[0, 1, 2], &[]).expect("a pick");
        assert_eq!(pick.arm, 1, "{}", pick.update.reasoning);
        assert!(pick.update.reasoning.contains("highest bound"));
        assert_eq!(bandit.pick(&known, &[], &[]), None);
        assert_eq!(bandit.pick(&known, &[2], &[]).map(|p| p.arm), Some(2));
    }

    /// Reward `success - 1 * cost_usd`, no exploration bonus.
    fn cost_weighted() -> AdaptiveSettings {
        AdaptiveSettings {
            cost_weight: 1.0,
            exploration: 0.0,
            ..AdaptiveSettings::default()
        }
    }

    #[test]
    fn cost_weight_changes_the_winner() {
        let arms = arms(2);
        let settings = cost_weighted();
        let bandit = Bandit::new(&arms, &settings);
        let known: HashMap<_, _> = [
            stats(&arms[0], 10, 0.9, 0.5),
            stats(&arms[1], 10, 0.8, 0.01),
        ]
        .into();
        assert_eq!(bandit.pick(&known, &[0, 1], &[]).map(|p| p.arm), Some(1));
        assert!(bandit
            .pick(&known, &[0, 1], &[])
            .expect("pick")
            .update
            .reasoning
            .contains("success - 1 * cost_usd"));
    }

    #[test]
    fn an_arm_whose_needed_cost_is_unknown_is_never_ranked_as_free() {
        let arms = arms(2);
        let settings = cost_weighted();
        let bandit = Bandit::new(&arms, &settings);
        let (hash, mut unpriced) = stats(&arms[0], 10, 1.0, 0.0);
        unpriced.avg_cost_usd = None;
        let known: HashMap<_, _> = [(hash, unpriced.clone()), stats(&arms[1], 10, 0.5, 0.1)].into();
        assert_eq!(bandit.mean_reward(&unpriced), None);
        // Not a tried arm with reward 1.0: it has no run with a known reward.
        let pick = bandit.pick(&known, &[0, 1], &[]).expect("a pick");
        assert_eq!(pick.arm, 0);
        assert!(
            pick.update.reasoning.contains("no finished run"),
            "{}",
            pick.update.reasoning
        );
        assert!(
            pick.update.reasoning.contains("best so far is config #1"),
            "{}",
            pick.update.reasoning
        );
        // Without a cost weight the same arm's reward needs no cost.
        let free = AdaptiveSettings::default();
        assert_eq!(Bandit::new(&arms, &free).mean_reward(&unpriced), Some(1.0));
    }
}
