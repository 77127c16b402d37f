//! The closed-form statistics of `compare`: the Wilson interval of a rate, the exact
//! two-sided binomial (sign) test behind exact McNemar, Holm's adjustment, the unbiased
//! pass@k and pass^k estimators, and the minimum detectable difference of a paired test.
//!
//! Distributions come from `statrs`; nothing here hand-rolls a special function. Every
//! function is pure (no I/O, no randomness: resampling is [`super::resample`]), and the
//! known answers in `tests/fixtures/known_answers.json`, computed with scipy and
//! statsmodels, hold them to independent implementations.

use statrs::distribution::{Binomial, ContinuousCDF, DiscreteCDF, Normal};

/// The two-sided confidence level of every interval `compare` reports.
pub const CONFIDENCE: f64 = 0.95;

/// The power the minimum detectable difference is computed for.
pub const POWER: f64 = 0.80;

/// A two-sided interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// The lower bound.
    pub low: f64,
    /// The upper bound.
    pub high: f64,
}

/// The standard normal quantile of `p` (in 0..1).
fn normal_quantile(p: f64) -> f64 {
    // Normal::new(0, 1) cannot fail: the standard deviation is positive.
    Normal::new(0.0, 1.0).map_or(f64::NAN, |n| n.inverse_cdf(p))
}

/// `z` of a two-sided interval at [`CONFIDENCE`] (1.959964…).
fn z_two_sided() -> f64 {
    normal_quantile(1.0 - (1.0 - CONFIDENCE) / 2.0)
}

/// The Wilson score interval of `successes` out of `trials` at [`CONFIDENCE`], as
/// statsmodels' `proportion_confint(method="wilson")`; `None` without trials.
pub fn wilson(successes: u64, trials: u64) -> Option<Interval> {
    if trials == 0 || successes > trials {
        return None;
    }
    let n = trials as f64;
    let p = successes as f64 / n;
    let z = z_two_sided();
    let z2 = z * z;
    let denominator = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denominator;
    let half = z / denominator * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(Interval {
        low: (center - half).max(0.0),
        high: (center + half).min(1.0),
    })
}

/// A mean over observations grouped in clusters (a task's runs), with its standard error
/// clustered by cluster and the normal interval at [`CONFIDENCE`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusteredMean {
    /// The mean over every observation.
    pub mean: f64,
    /// Its standard error, clustered.
    pub se: f64,
    /// `mean ± z·se`.
    pub interval: Interval,
}

/// The mean of observations given per cluster as (sum, count), with the task-clustered
/// standard error of Miller (2024, "Adding error bars to evals"):
/// `Var = Σ_c (Σ_{i∈c} (x_i − x̄))² / n²`, which is statsmodels' OLS on a constant with
/// `cov_type="cluster"` and `use_correction=False`. Runs of one task are not independent
/// (the task's difficulty is shared), so this is wider than the naive error when tasks
/// are run several times. `None` without observations.
pub fn clustered_mean(clusters: &[(f64, f64)]) -> Option<ClusteredMean> {
    let n: f64 = clusters.iter().map(|(_, count)| count).sum();
    if n <= 0.0 {
        return None;
    }
    let mean = clusters.iter().map(|(sum, _)| sum).sum::<f64>() / n;
    let spread: f64 = clusters
        .iter()
        .map(|(sum, count)| (sum - count * mean).powi(2))
        .sum();
    let se = spread.sqrt() / n;
    let half = z_two_sided() * se;
    Some(ClusteredMean {
        mean,
        se,
        interval: Interval {
            low: mean - half,
            high: mean + half,
        },
    })
}

/// [`clustered_mean`] of one value per cluster (a per-task estimate: pass^k, a paired
/// difference), its interval clipped to `bounds`.
pub fn mean_over_tasks(values: &[f64], bounds: (f64, f64)) -> Option<ClusteredMean> {
    let clusters: Vec<(f64, f64)> = values.iter().map(|&v| (v, 1.0)).collect();
    clustered_mean(&clusters).map(|m| ClusteredMean {
        interval: Interval {
            low: m.interval.low.max(bounds.0),
            high: m.interval.high.min(bounds.1),
        },
        ..m
    })
}

/// The exact two-sided p-value of `a` against `b` outcomes, each equally likely under
/// the null (a binomial test at 0.5 on `a + b` trials, doubling the smaller tail, capped
/// at 1). On the discordant pairs of one run per task and policy this is the exact
/// McNemar test (statsmodels `mcnemar(exact=True)`); on the signs of per-task
/// differences it is the exact sign test. 1 when there is nothing to test.
pub fn binomial_two_sided(a: u64, b: u64) -> f64 {
    let n = a + b;
    if n == 0 {
        return 1.0;
    }
    // Binomial::new(0.5, n) cannot fail: 0.5 is a probability.
    Binomial::new(0.5, n).map_or(f64::NAN, |d| (2.0 * d.cdf(a.min(b))).min(1.0))
}

/// Holm's step-down adjustment of `p_values` (statsmodels `multipletests(method="holm")`),
/// in the given order.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0_f64;
    for (rank, &i) in order.iter().enumerate() {
        // Each adjusted p is at least the one before it, so the order of the raw
        // p-values is kept.
        running = running.max(((m - rank) as f64 * p_values[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// The unbiased estimate of pass@k for a task with `successes` out of `runs`
/// (Chen et al. 2021): the probability that at least one of `k` runs drawn without
/// replacement succeeds, `1 - C(n-c, k) / C(n, k)`, as the paper's stable product.
/// `None` when `k` is 0 or more than `runs`.
pub fn pass_at_k(runs: u64, successes: u64, k: u64) -> Option<f64> {
    if k == 0 || k > runs || successes > runs {
        return None;
    }
    if runs - successes < k {
        return Some(1.0);
    }
    let product: f64 = (runs - successes + 1..=runs)
        .map(|i| 1.0 - k as f64 / i as f64)
        .product();
    Some(1.0 - product)
}

/// The unbiased estimate of pass^k for a task with `successes` out of `runs`: the
/// probability that all of `k` runs drawn without replacement succeed, `C(c, k) / C(n, k)`.
/// `None` when `k` is 0 or more than `runs`.
pub fn pass_hat_k(runs: u64, successes: u64, k: u64) -> Option<f64> {
    if k == 0 || k > runs || successes > runs {
        return None;
    }
    Some(
        (0..k)
            .map(|i| successes.saturating_sub(i) as f64 / (runs - i) as f64)
            .product(),
    )
}

/// The paired tasks a two-sided test at [`CONFIDENCE`] needs to detect a difference of
/// `difference` with [`POWER`], when a random pair of runs disagrees with probability
/// `discordance` (Connor 1987, the normal approximation of McNemar's test):
/// `n = (z_a √ψ + z_b √(ψ − δ²))² / δ²`. `None` when `difference` is 0 or not below √ψ.
pub fn tasks_needed(difference: f64, discordance: f64) -> Option<f64> {
    let d2 = difference * difference;
    // NaN inputs answer None too.
    if difference == 0.0 || discordance.partial_cmp(&d2) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let (za, zb) = (z_two_sided(), normal_quantile(POWER));
    Some((za * discordance.sqrt() + zb * (discordance - d2).sqrt()).powi(2) / d2)
}

/// The smallest difference a two-sided test at [`CONFIDENCE`] detects with [`POWER`] on
/// `tasks` paired tasks whose pairs of runs disagree with probability `discordance`:
/// the inverse of [`tasks_needed`] in the difference (found by bisection: the tasks
/// needed fall as the difference grows). `None` without tasks or discordance (no
/// disagreement seen: nothing says how large a difference would show).
pub fn min_detectable_difference(tasks: u64, discordance: f64) -> Option<f64> {
    if tasks == 0 || discordance.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let n = tasks as f64;
    let top = discordance.min(1.0).sqrt();
    // Even the largest possible difference (√ψ) needs more tasks than there are.
    if tasks_needed(top * (1.0 - 1e-12), discordance).is_none_or(|needed| needed > n) {
        return None;
    }
    let (mut low, mut high) = (0.0_f64, top);
    for _ in 0..100 {
        let mid = (low + high) / 2.0;
        match tasks_needed(mid, discordance) {
            Some(needed) if needed <= n => high = mid,
            _ => low = mid,
        }
    }
    Some(high)
}

/// The percentile of sorted `values` at `q` (0..1), interpolating linearly between
/// order statistics (numpy's default); `None` when empty.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let h = last as f64 * q;
    let below = h.floor() as usize;
    let above = (below + 1).min(last);
    Some(sorted[below] + (h - below as f64) * (sorted[above] - sorted[below]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_without_trials_has_no_interval_and_bounds_stay_in_0_1() {
        assert_eq!(wilson(0, 0), None);
        let all = wilson(4, 4).expect("interval");
        assert!((all.high - 1.0).abs() < 1e-12 && all.low > 0.4);
        let none = wilson(0, 11).expect("interval");
        assert!(none.low.abs() < 1e-12 && none.high < 0.3);
    }

    #[test]
    fn no_discordant_pair_gives_p_1_and_holm_keeps_the_order() {
        assert_eq!(binomial_two_sided(0, 0), 1.0);
        assert_eq!(binomial_two_sided(3, 3), 1.0);
        let adjusted = holm(&[0.04, 0.01, 0.03]);
        assert!((adjusted[1] - 0.03).abs() < 1e-12);
        assert!((adjusted[2] - 0.06).abs() < 1e-12);
        assert!((adjusted[0] - 0.06).abs() < 1e-12);
    }

    #[test]
    fn pass_at_k_edges() {
        assert_eq!(pass_at_k(5, 0, 3), Some(0.0));
        assert_eq!(pass_at_k(5, 3, 3), Some(1.0));
        assert_eq!(pass_at_k(2, 1, 3), None);
        assert_eq!(pass_hat_k(5, 5, 5), Some(1.0));
        assert_eq!(pass_hat_k(5, 4, 5), Some(0.0));
        assert_eq!(pass_hat_k(5, 4, 1), Some(0.8));
    }

    #[test]
    fn the_detectable_difference_needs_exactly_the_tasks_there_are() {
        let mdd = min_detectable_difference(100, 0.3).expect("detectable");
        let needed = tasks_needed(mdd, 0.3).expect("defined");
        assert!((needed - 100.0).abs() < 1e-6, "{needed}");
        assert_eq!(min_detectable_difference(100, 0.0), None);
        assert_eq!(min_detectable_difference(0, 0.3), None);
        // One task cannot settle anything.
        assert_eq!(min_detectable_difference(1, 0.5), None);
    }

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 1.0), Some(4.0));
        assert!((percentile(&v, 0.025).expect("some") - 1.075).abs() < 1e-12);
        assert_eq!(percentile(&[], 0.5), None);
    }
}
