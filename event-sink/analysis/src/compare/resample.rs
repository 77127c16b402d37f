//! The bootstrap of `compare`: tasks resampled with replacement, each task's runs kept
//! together (a task is one unit: its runs of both policies share its difficulty), and a
//! percentile interval per statistic.
//!
//! The generator is ChaCha8 seeded from `--seed` and the identity of what is resampled
//! ([`stream_seed`]), so an answer is reproducible, and does not change when other
//! policies join the call. No I/O.

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

use super::stats::{percentile, Interval, CONFIDENCE};

/// The resamples drawn per interval unless `--resamples` says otherwise.
pub const DEFAULT_RESAMPLES: u32 = 10_000;

/// The `--seed` used unless one is given.
pub const DEFAULT_SEED: u64 = 20_260_101;

/// The seed of one bootstrap: `seed` mixed with `label` (FNV-1a), so each comparison
/// draws its own stream whatever else the call holds.
pub fn stream_seed(seed: u64, label: &str) -> u64 {
    label
        .bytes()
        .fold(seed ^ 0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// Percentile intervals at [`CONFIDENCE`] of `K` statistics of `tasks` tasks, from
/// `resamples` resamples of the task indices drawn with the generator seeded by `seed`.
///
/// `statistic` gets the indices of one resample (with repeats) and returns each
/// statistic, `None` where it is undefined on that resample (a cost per solved task of
/// a resample without a solved task): such resamples are left out of that statistic's
/// interval. An interval is `None` when no resample defined it, or there are no tasks.
pub fn bootstrap<const K: usize>(
    tasks: usize,
    resamples: usize,
    seed: u64,
    mut statistic: impl FnMut(&[usize]) -> [Option<f64>; K],
) -> [Option<Interval>; K] {
    if tasks == 0 {
        return [None; K];
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut indices = vec![0; tasks];
    let mut draws: [Vec<f64>; K] = std::array::from_fn(|_| Vec::with_capacity(resamples));
    for _ in 0..resamples {
        for index in indices.iter_mut() {
            *index = rng.random_range(0..tasks);
        }
        for (values, value) in draws.iter_mut().zip(statistic(&indices)) {
            values.extend(value.filter(|v| v.is_finite()));
        }
    }
    let tail = (1.0 - CONFIDENCE) / 2.0;
    draws.map(|mut values| {
        values.sort_by(f64::total_cmp);
        Some(Interval {
            low: percentile(&values, tail)?,
            high: percentile(&values, 1.0 - tail)?,
        })
    })
}

/// The mean of `values` at `indices`.
pub fn mean_at(values: &[f64], indices: &[usize]) -> f64 {
    indices.iter().map(|&i| values[i]).sum::<f64>() / indices.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_interval_and_another_seed_another() {
        let values: Vec<f64> = (0..50).map(|i| f64::from(i % 3) - 1.0).collect();
        let run = |seed| {
            bootstrap(values.len(), 2_000, seed, |idx| {
                [Some(mean_at(&values, idx))]
            })
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
        let [interval] = run(1);
        let interval = interval.expect("defined");
        assert!(interval.low < 0.0 && interval.high > 0.0);
    }

    #[test]
    fn a_statistic_never_defined_has_no_interval() {
        let [none, some] = bootstrap(3, 100, 7, |_| [None, Some(1.0)]);
        assert_eq!(none, None);
        assert_eq!(
            some,
            Some(Interval {
                low: 1.0,
                high: 1.0
            })
        );
        assert_eq!(bootstrap(0, 100, 7, |_| [Some(1.0)]), [None]);
    }
}
