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

/// Resamples summed side by side: a resample's sum is a chain of additions in the order
/// drawn, each waiting on the one before; the chains of [`LANES`] resamples are
/// independent, so the processor runs them at once.
const LANES: usize = 4;

/// Generator words read at a time.
const WORDS: usize = 1024;

/// Task indices drawn exactly as `rng.random_range(0..tasks)` draws them one by one (the
/// same stream, hence the same intervals), from the generator's words read [`WORDS`] at
/// a time and mapped in bulk.
struct Draws {
    rng: ChaCha8Rng,
    words: Vec<u32>,
    /// The next unread word of `words`.
    next: usize,
}

impl Draws {
    fn new(seed: u64) -> Draws {
        Draws {
            rng: ChaCha8Rng::seed_from_u64(seed),
            words: vec![0; WORDS],
            next: WORDS,
        }
    }

    /// The next word of the generator's stream.
    fn word(&mut self) -> u32 {
        if self.next == WORDS {
            self.rng.fill(&mut self.words[..]);
            self.next = 0;
        }
        self.next += 1;
        self.words[self.next - 1]
    }

    /// One index in `0..range` as rand draws it for a `u32` range (Lemire's widening
    /// multiply; a second word when the first lands in the biased zone, carrying 1 when
    /// the two overflow).
    fn index(&mut self, range: u32) -> usize {
        let (mut high, low) = widening(self.word(), range);
        if low > range.wrapping_neg() {
            let (carry, _) = widening(self.word(), range);
            high += u32::from(low.checked_add(carry).is_none());
        }
        high as usize
    }

    /// `out.len()` indices in `0..tasks`, in the order drawn.
    fn fill(&mut self, tasks: usize, out: &mut [usize]) {
        let Ok(range) = u32::try_from(tasks) else {
            // rand draws from 64-bit words past u32::MAX tasks; no buffered word is
            // pending, as this path is the only one taken for such a count.
            for index in out {
                *index = self.rng.random_range(0..tasks);
            }
            return;
        };
        let mut done = 0;
        while done < out.len() {
            if self.next == WORDS {
                self.rng.fill(&mut self.words[..]);
                self.next = 0;
            }
            let take = (out.len() - done).min(WORDS - self.next);
            let stretch = &mut out[done..done + take];
            // One word per index, unless one lands in the biased zone (about one word in
            // 2^32 / tasks): then the stretch is drawn again one index at a time.
            let mut biased = false;
            for (index, &word) in stretch.iter_mut().zip(&self.words[self.next..]) {
                let (high, low) = widening(word, range);
                *index = high as usize;
                biased |= low > range.wrapping_neg();
            }
            if biased {
                for index in stretch {
                    *index = self.index(range);
                }
            } else {
                self.next += take;
            }
            done += take;
        }
    }
}

/// The high and low halves of `word × range`.
fn widening(word: u32, range: u32) -> (u32, u32) {
    let product = u64::from(word) * u64::from(range);
    ((product >> 32) as u32, product as u32)
}

/// Percentile intervals at [`CONFIDENCE`] of `K` statistics of a resample of `tasks`
/// (each task's `C` values): `resamples` resamples of as many task indices, drawn with
/// the generator seeded by `seed` as `random_range` draws them.
///
/// `statistic` gets the sums of each of the `C` values over one resample (each summed
/// from −0.0 in the order drawn: a task drawn twice counts twice) and returns each
/// statistic, `None` where it is undefined on that resample (a cost per solved task of
/// a resample without a solved task): such resamples are left out of that statistic's
/// interval. An interval is `None` when no resample defined it, or there are no tasks.
pub fn bootstrap<const C: usize, const K: usize>(
    tasks: &[[f64; C]],
    resamples: usize,
    seed: u64,
    mut statistic: impl FnMut([f64; C]) -> [Option<f64>; K],
) -> [Option<Interval>; K] {
    let n = tasks.len();
    if n == 0 {
        return [None; K];
    }
    let mut draws = Draws::new(seed);
    let mut indices = vec![0; LANES * n];
    let mut values: [Vec<f64>; K] = std::array::from_fn(|_| Vec::with_capacity(resamples));
    let mut done = 0;
    while done < resamples {
        let lanes = LANES.min(resamples - done);
        // Resample after resample, as they come in the stream.
        draws.fill(n, &mut indices[..lanes * n]);
        // Every lane summed, those past `lanes` over indices of an earlier batch and
        // thrown away: a constant count of lanes keeps the sums in registers.
        let mut sums = [[-0.0; C]; LANES];
        for position in 0..n {
            for (lane, sum) in sums.iter_mut().enumerate() {
                let task = &tasks[indices[lane * n + position]];
                for (total, value) in sum.iter_mut().zip(task) {
                    *total += value;
                }
            }
        }
        for sum in &sums[..lanes] {
            for (kept, value) in values.iter_mut().zip(statistic(*sum)) {
                kept.extend(value.filter(|v| v.is_finite()));
            }
        }
        done += lanes;
    }
    intervals(values)
}

/// The percentile interval at [`CONFIDENCE`] of each statistic's resampled values.
fn intervals<const K: usize>(values: [Vec<f64>; K]) -> [Option<Interval>; K] {
    let tail = (1.0 - CONFIDENCE) / 2.0;
    values.map(|mut values| {
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
        let values: Vec<[f64; 1]> = (0..50).map(|i| [f64::from(i % 3) - 1.0]).collect();
        let run = |seed| bootstrap(&values, 2_000, seed, |[sum]| [Some(sum / 50.0)]);
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
        let [interval] = run(1);
        let interval = interval.expect("defined");
        assert!(interval.low < 0.0 && interval.high > 0.0);
    }

    #[test]
    fn a_statistic_never_defined_has_no_interval() {
        let [none, some] = bootstrap(&[[0.0]; 3], 100, 7, |_| [None, Some(1.0)]);
        assert_eq!(none, None);
        assert_eq!(
            some,
            Some(Interval {
                low: 1.0,
                high: 1.0
            })
        );
        assert_eq!(bootstrap(&[[0.0]; 0], 100, 7, |_| [Some(1.0)]), [None]);
    }

    #[test]
    fn indices_are_those_random_range_draws_one_by_one() {
        // 3e9 and u32::MAX land in the biased zone at most draws (a second word each).
        for tasks in [1, 3, 10_000, 3_000_000_000, u32::MAX as usize] {
            let mut rng = ChaCha8Rng::seed_from_u64(9);
            let mut draws = Draws::new(9);
            // Stretches of an odd length, across the buffer's ends.
            let mut drawn = vec![0; 777];
            for _ in 0..30 {
                draws.fill(tasks, &mut drawn);
                let expected: Vec<usize> = (0..drawn.len())
                    .map(|_| rng.random_range(0..tasks))
                    .collect();
                assert_eq!(drawn, expected, "{tasks} tasks");
            }
        }
    }

    #[test]
    fn intervals_are_those_of_resamples_drawn_and_summed_one_at_a_time() {
        // The bootstrap as first written: each resample's indices from `random_range`,
        // then its sums in the order drawn.
        fn one_at_a_time(tasks: &[[f64; 2]], resamples: usize, seed: u64) -> [Option<Interval>; 2] {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut values = [Vec::new(), Vec::new()];
            for _ in 0..resamples {
                let (mut cost, mut solved) = (-0.0, -0.0);
                for _ in 0..tasks.len() {
                    let [c, s] = tasks[rng.random_range(0..tasks.len())];
                    (cost, solved) = (cost + c, solved + s);
                }
                values[0].push(cost / tasks.len() as f64);
                if solved > 0.0 {
                    values[1].push(cost / solved);
                }
            }
            intervals(values)
        }
        let tasks: Vec<[f64; 2]> = (0..301)
            .map(|i| {
                [
                    0.0104 + f64::from(i % 7) * 1.3e-4,
                    f64::from(u8::from(i % 9 == 0)),
                ]
            })
            .collect();
        // A count of resamples that is no multiple of the resamples summed side by side.
        for resamples in [1, 2, 999] {
            let batched = bootstrap(&tasks, resamples, 42, |[cost, solved]| {
                [
                    Some(cost / tasks.len() as f64),
                    (solved > 0.0).then(|| cost / solved),
                ]
            });
            assert_eq!(batched, one_at_a_time(&tasks, resamples, 42), "{resamples}");
        }
    }
}
