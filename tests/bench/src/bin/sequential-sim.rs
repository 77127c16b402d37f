//! `sequential-sim`: the error rates and the cost of `bench-analysis compare
//! --sequential`, by simulation, against the fixed-sample design `bench-analysis plan`
//! gives. No server: the statistics of the analysis crate on simulated outcomes.
//!
//! The setting: 50 tasks, each with a baseline solve rate drawn from Beta(2, 2) (the
//! median of three uniforms); the candidate's rate is the baseline's plus the true
//! difference, capped at 1; the runs of a task are independent given its rate; one
//! round = one run of every task by each policy; α = 0.05; at most 20 rounds, a look
//! after each. Per true difference, `--experiments` simulated experiments report:
//!
//! - for each of two sequences on the same data, its bets learnt (aGRAPA, `compare
//!   --sequential`) and tuned to 0.1 (`--detect 0.1`): how often it decided (0 left it)
//!   at some look, at difference 0 the Type I error under continuous monitoring; the
//!   runs until it decided (20 rounds when it never did) against the runs of `plan
//!   --baseline-rate 0.5 --detect D --icc 0.2` (one run per task, so the icc does not
//!   enter), and away from 0.1 against the plan for 0.1 too; the coverage of the true
//!   mean difference at the stopping time;
//! - how often the naive fixed-sample test `compare` reports (the exact sign test on
//!   per-task rate differences, p < 0.05) rejected at some look, on the same data;
//! - the fixed design with the setting's own variance (plan's formula with the mean
//!   over tasks of `p(1 − p) + q(1 − q)` instead of plan's value at p = 0.5), and the
//!   fewest rounds at which a single look (a z-test on the per-task differences) reaches
//!   power 0.8 in this simulation;
//! - the runs of a gambler told in advance the sign of the truth, with a constant bet
//!   (0.5, the best for 0.1): near what no anytime-valid test looking after whole
//!   rounds can beat.
//!
//! `cargo run --release -p benchstream-bench --bin sequential-sim -- [--experiments
//! 10000] [--seed 1]`

use bench_analysis::compare::analyze::Decision;
use bench_analysis::compare::sequential::{Bet, ConfidenceSequence};
use bench_analysis::compare::stats::binomial_two_sided;
use bench_analysis::plan::{plan, PlanInput};
use clap::Parser;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

#[derive(Debug, Parser)]
struct Args {
    /// Simulated experiments per true difference.
    #[arg(long, default_value_t = 10_000)]
    experiments: usize,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

const TASKS: usize = 50;
const ROUNDS: usize = 20;
const ALPHA: f64 = 0.05;
/// The intra-task correlation of Beta(2, 2) rates: Var(p) / (E p (1 − E p)) = 0.05 / 0.25.
const ICC: f64 = 0.2;
/// The true differences simulated.
const DIFFERENCES: [f64; 4] = [0.0, 0.05, 0.1, 0.2];

/// The bets compared: learnt from the data (`compare --sequential`), and tuned to the
/// difference the fixed design is planned for (`--detect 0.1`).
const BETS: [Bet; 2] = [Bet::Adaptive, Bet::Tuned(DESIGN_DIFFERENCE)];

/// What one bet's sequences gave over a setting's experiments.
#[derive(Debug, Default, Clone, Copy)]
struct SequenceTally {
    decided: usize,
    wrong: usize,
    covered: usize,
    rounds_to_stop: usize,
}

/// What one setting's experiments gave.
#[derive(Debug, Default)]
struct Tally {
    sequences: [SequenceTally; 2],
    naive_rejected: usize,
    naive_last_look: usize,
    /// Σ over experiments of the mean over tasks of the variance of one paired outcome,
    /// `p(1 − p) + q(1 − q)`, and of the true mean difference: the fixed design with the
    /// setting's own variance.
    pair_variance: f64,
    true_difference: f64,
    /// Rounds until a gambler told the truth's sign and a good size in advance (a constant
    /// one-sided bet) reaches 1/α: what no sequence can beat by much.
    oracle_rounds: usize,
    /// Per round, the experiments whose single-look z-test rejects there.
    z_rejects: [usize; ROUNDS],
}

fn median_of_three(rng: &mut ChaCha8Rng) -> f64 {
    let mut u = [rng.random::<f64>(), rng.random(), rng.random()];
    u.sort_by(f64::total_cmp);
    u[1]
}

fn experiment(rng: &mut ChaCha8Rng, difference: f64, tally: &mut Tally) {
    let baseline: Vec<f64> = (0..TASKS).map(|_| median_of_three(rng)).collect();
    let candidate: Vec<f64> = baseline.iter().map(|p| (p + difference).min(1.0)).collect();
    let truth = candidate
        .iter()
        .zip(&baseline)
        .map(|(c, b)| c - b)
        .sum::<f64>()
        / TASKS as f64;
    tally.true_difference += truth;
    tally.pair_variance += baseline
        .iter()
        .zip(&candidate)
        .map(|(b, c)| b * (1.0 - b) + c * (1.0 - c))
        .sum::<f64>()
        / TASKS as f64;
    let mut sequences = BETS.map(|bet| ConfidenceSequence::at(ALPHA, bet, &[truth]));
    let (mut solved_b, mut solved_c) = ([0u32; TASKS], [0u32; TASKS]);
    let mut stopped: [Option<usize>; 2] = [None, None];
    let mut naive = false;
    let (mut oracle_log_wealth, mut oracle_stop) = (0.0, None);
    let critical = 1.959_963_984_540_054;
    for round in 0..ROUNDS {
        let outcomes: Vec<f64> = (0..TASKS)
            .map(|t| {
                let b = rng.random::<f64>() < baseline[t];
                let c = rng.random::<f64>() < candidate[t];
                solved_b[t] += u32::from(b);
                solved_c[t] += u32::from(c);
                f64::from(u8::from(c)) - f64::from(u8::from(b))
            })
            .collect();
        for ((sequence, stopped), counts) in sequences
            .iter_mut()
            .zip(&mut stopped)
            .zip(&mut tally.sequences)
        {
            sequence.push_round(&outcomes);
            let decision = sequence.decision(None);
            if stopped.is_none() && decision != Decision::Undecided {
                *stopped = Some(round + 1);
                counts.decided += 1;
                let positive = decision == Decision::CandidateBetter;
                if (difference > 0.0) != positive || difference == 0.0 {
                    counts.wrong += 1;
                }
                counts.covered += usize::from(sequence.excludes(truth) == Some(false));
            }
        }
        oracle_log_wealth += outcomes
            .iter()
            .map(|z| (1.0 + ORACLE_BET * z / 2.0).ln())
            .sum::<f64>();
        if oracle_stop.is_none() && oracle_log_wealth >= (1.0 / ALPHA).ln() {
            oracle_stop = Some(round + 1);
        }
        let better = (0..TASKS).filter(|&t| solved_c[t] > solved_b[t]).count() as u64;
        let worse = (0..TASKS).filter(|&t| solved_c[t] < solved_b[t]).count() as u64;
        let rejects = binomial_two_sided(better, worse) < ALPHA;
        naive |= rejects;
        if round + 1 == ROUNDS {
            tally.naive_last_look += usize::from(rejects);
        }
        let d: Vec<f64> = (0..TASKS)
            .map(|t| (f64::from(solved_c[t]) - f64::from(solved_b[t])) / (round + 1) as f64)
            .collect();
        let mean = d.iter().sum::<f64>() / TASKS as f64;
        let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (TASKS - 1) as f64;
        if var > 0.0 && (mean / (var / TASKS as f64).sqrt()).abs() > critical {
            tally.z_rejects[round] += 1;
        }
    }
    tally.naive_rejected += usize::from(naive);
    for ((sequence, stopped), counts) in sequences.iter().zip(stopped).zip(&mut tally.sequences) {
        if stopped.is_none() {
            counts.covered += usize::from(sequence.excludes(truth) == Some(false));
        }
        counts.rounds_to_stop += stopped.unwrap_or(ROUNDS);
    }
    tally.oracle_rounds += oracle_stop.unwrap_or(ROUNDS);
}

/// The oracle's constant bet on `(z + 1) / 2 − 1/2`: the best of 0.3 to 0.7 at a true
/// difference of 0.1.
const ORACLE_BET: f64 = 0.5;

/// The difference a fixed design would be planned for.
const DESIGN_DIFFERENCE: f64 = 0.1;

/// `plan --baseline-rate 0.5 --detect DIFFERENCE --icc 0.2` (α 0.05, power 0.8, one run
/// per task).
fn fixed_design(difference: f64) -> anyhow::Result<bench_analysis::plan::Plan> {
    Ok(plan(&PlanInput {
        baseline_rate: 0.5,
        detect: difference,
        alpha: ALPHA,
        power: 0.8,
        repeats: 1,
        icc: ICC,
    })?)
}

/// The Monte-Carlo standard error of a proportion `p` over `n` draws.
fn se(p: f64, n: usize) -> f64 {
    (p * (1.0 - p) / n as f64).sqrt()
}

/// How `bet` is named in the output.
fn bet_name(bet: Bet) -> String {
    match bet {
        Bet::Adaptive => "aGRAPA (learnt)".to_owned(),
        Bet::Tuned(d) => format!("tuned to --detect {d}"),
    }
}

/// `(z(1 − α/2) + z(power))²` at α 0.05, power 0.8.
const Z_SUM_SQUARED: f64 = (1.959_963_984_540_054 + 0.841_621_233_572_914_3)
    * (1.959_963_984_540_054 + 0.841_621_233_572_914_3);

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.experiments > 0, "--experiments must be positive");
    let n = args.experiments;
    println!(
        "{TASKS} tasks, baseline rates ~ Beta(2, 2), alpha {ALPHA}, a look after each of {ROUNDS} rounds, {n} experiments per difference, seed {}",
        args.seed
    );
    for (i, &difference) in DIFFERENCES.iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(args.seed.wrapping_add(i as u64));
        let mut tally = Tally::default();
        for _ in 0..n {
            experiment(&mut rng, difference, &mut tally);
        }
        let rate = |count: usize| count as f64 / n as f64;
        println!("\ntrue difference {difference:.2}");
        let naive = rate(tally.naive_rejected);
        if difference == 0.0 {
            println!(
                "  naive repeated sign test rejects at some look (Type I) {naive:.4} (± {:.4}); at round {ROUNDS} only {:.4}",
                2.0 * se(naive, n),
                rate(tally.naive_last_look)
            );
        } else {
            println!("  naive repeated sign test rejects at some look {naive:.4}");
        }
        let design = fixed_design(DESIGN_DIFFERENCE)?;
        // At 0 nothing is planned for: only the Type I error and coverage are read.
        let planned = if difference == 0.0 {
            design.clone()
        } else {
            fixed_design(difference)?
        };
        if difference != 0.0 {
            let variance = tally.pair_variance / n as f64;
            let truth = tally.true_difference / n as f64;
            let pairs = Z_SUM_SQUARED * variance / (truth * truth);
            println!(
                "  plan --baseline-rate 0.5 --detect {difference} --icc {ICC} (--repeats 1, so the icc has no effect): {} tasks x 1 run x 2 = {} runs",
                planned.tasks, planned.runs
            );
            println!(
                "  fixed design with this setting's own variance (paired outcome variance {variance:.3} against plan's {:.3}, true mean difference {truth:.4}): {:.0} runs",
                0.5 * 0.5 + (0.5 + difference) * (0.5 - difference),
                2.0 * pairs
            );
            match tally.z_rejects.iter().position(|&r| rate(r) >= 0.8) {
                Some(k) => println!(
                    "  fixed 50-task design reaching power 0.8 in this simulation (z-test, one look): {} rounds = {} runs (power {:.3})",
                    k + 1,
                    (k + 1) * TASKS * 2,
                    rate(tally.z_rejects[k]),
                ),
                None => println!("  no fixed design of at most {ROUNDS} rounds reaches power 0.8"),
            }
            let oracle = tally.oracle_rounds as f64 / n as f64;
            println!(
                "  a constant one-sided bet of {ORACLE_BET} fixed knowing the truth: {:.0} runs ({oracle:.2} rounds); ratio to plan {:.3}",
                oracle * (TASKS * 2) as f64,
                oracle * (TASKS * 2) as f64 / planned.runs as f64
            );
        }
        for (bet, counts) in BETS.iter().zip(&tally.sequences) {
            let decided = rate(counts.decided);
            let covered = rate(counts.covered);
            let coverage = format!(
                "coverage at the stopping time {covered:.4} (± {:.4}; target >= {:.2})",
                2.0 * se(covered, n),
                1.0 - ALPHA
            );
            if difference == 0.0 {
                println!(
                    "  sequence, {}: Type I error under continuous monitoring {decided:.4} (± {:.4}); {coverage}",
                    bet_name(*bet),
                    2.0 * se(decided, n)
                );
                continue;
            }
            let mean_rounds = counts.rounds_to_stop as f64 / n as f64;
            let runs = mean_rounds * (TASKS * 2) as f64;
            let mut against = format!("ratio to plan {:.3}", runs / planned.runs as f64);
            if difference != DESIGN_DIFFERENCE {
                against.push_str(&format!(
                    ", to the plan for {DESIGN_DIFFERENCE} ({} runs) {:.3}",
                    design.runs,
                    runs / design.runs as f64
                ));
            }
            println!(
                "  sequence, {}: decided within {ROUNDS} rounds {decided:.4} (wrong direction {:.4}); runs to a decision (undecided counted at {ROUNDS} rounds) {runs:.0} ({mean_rounds:.2} rounds), {against}; {coverage}",
                bet_name(*bet),
                rate(counts.wrong)
            );
        }
    }
    Ok(())
}
