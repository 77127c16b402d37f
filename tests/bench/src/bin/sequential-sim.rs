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
//! - how often the confidence sequence decided (0 left it) at some look, and how often
//!   the naive fixed-sample test `compare` reports (the exact sign test on per-task rate
//!   differences, p < 0.05) rejected at some look, on the same data: at difference 0
//!   that is the Type I error under continuous monitoring;
//! - the runs until the sequence decided (20 rounds when it never did), against the runs
//!   of `plan --baseline-rate 0.5 --detect D --icc 0.2` (the Beta(2, 2) rates' intra-task
//!   correlation), and against the fewest rounds at which a single look (a z-test on the
//!   per-task differences) reaches power 0.8 in this simulation;
//! - the runs of a gambler told in advance the sign of the truth, with a constant bet
//!   (0.5, the best for 0.1): a bound on what any anytime-valid test can save;
//! - at a true difference of 0.2, the runs against the plan for 0.1 too: what stopping
//!   early saves when the truth is larger than planned;
//! - the coverage of the true mean difference by the sequence at the stopping time.
//!
//! `cargo run --release -p benchstream-bench --bin sequential-sim -- [--experiments
//! 10000] [--seed 1]`

use bench_analysis::compare::analyze::Decision;
use bench_analysis::compare::sequential::ConfidenceSequence;
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
const DIFFERENCES: [f64; 3] = [0.0, 0.1, 0.2];

/// What one setting's experiments gave.
#[derive(Debug, Default)]
struct Tally {
    sequence_decided: usize,
    sequence_wrong: usize,
    naive_rejected: usize,
    naive_last_look: usize,
    covered: usize,
    rounds_to_stop: usize,
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
    let mut sequence = ConfidenceSequence::at(ALPHA, &[truth]);
    let (mut solved_b, mut solved_c) = ([0u32; TASKS], [0u32; TASKS]);
    let mut stopped: Option<usize> = None;
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
        sequence.push_round(&outcomes);
        oracle_log_wealth += outcomes
            .iter()
            .map(|z| (1.0 + ORACLE_BET * z / 2.0).ln())
            .sum::<f64>();
        if oracle_stop.is_none() && oracle_log_wealth >= (1.0 / ALPHA).ln() {
            oracle_stop = Some(round + 1);
        }
        if stopped.is_none() && sequence.decision(None) != Decision::Undecided {
            stopped = Some(round + 1);
            tally.sequence_decided += 1;
            let positive = sequence.decision(None) == Decision::CandidateBetter;
            if (difference > 0.0) != positive || difference == 0.0 {
                tally.sequence_wrong += 1;
            }
            tally.covered += usize::from(sequence.excludes(truth) == Some(false));
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
    if stopped.is_none() {
        tally.covered += usize::from(sequence.excludes(truth) == Some(false));
    }
    tally.rounds_to_stop += stopped.unwrap_or(ROUNDS);
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
        let decided = rate(tally.sequence_decided);
        let naive = rate(tally.naive_rejected);
        if difference == 0.0 {
            println!(
                "  Type I error, continuous monitoring: sequence {decided:.4} (± {:.4}), naive repeated sign test {naive:.4} (± {:.4}), sign test at round {ROUNDS} only {:.4}",
                2.0 * se(decided, n),
                2.0 * se(naive, n),
                rate(tally.naive_last_look)
            );
        } else {
            println!(
                "  decided within {ROUNDS} rounds: sequence {decided:.4} (wrong direction {:.4}), naive repeated sign test rejects at some look {naive:.4}",
                rate(tally.sequence_wrong)
            );
            let mean_rounds = tally.rounds_to_stop as f64 / n as f64;
            let runs = mean_rounds * (TASKS * 2) as f64;
            let planned = fixed_design(difference)?;
            println!(
                "  expected runs to a decision (undecided counted at {ROUNDS} rounds): {runs:.0} ({mean_rounds:.2} rounds)"
            );
            println!(
                "  plan (--baseline-rate 0.5 --detect {difference} --icc {ICC}): {} runs; ratio {:.2}",
                planned.runs,
                runs / planned.runs as f64
            );
            let oracle = tally.oracle_rounds as f64 / n as f64;
            println!(
                "  a constant one-sided bet of {ORACLE_BET} fixed knowing the truth: {:.0} runs ({oracle:.2} rounds); ratio to plan {:.2}",
                oracle * (TASKS * 2) as f64,
                oracle * (TASKS * 2) as f64 / planned.runs as f64
            );
            if difference != DESIGN_DIFFERENCE {
                let design = fixed_design(DESIGN_DIFFERENCE)?;
                println!(
                    "  against the plan for {DESIGN_DIFFERENCE} ({} runs), when the truth is {difference}: ratio {:.2}",
                    design.runs,
                    runs / design.runs as f64
                );
            }
            match tally.z_rejects.iter().position(|&r| rate(r) >= 0.8) {
                Some(k) => println!(
                    "  fixed 50-task design reaching power 0.8 in this simulation (z-test, one look): {} rounds = {} runs (power {:.3}); ratio {:.2}",
                    k + 1,
                    (k + 1) * TASKS * 2,
                    rate(tally.z_rejects[k]),
                    runs / ((k + 1) * TASKS * 2) as f64
                ),
                None => println!("  no fixed design of at most {ROUNDS} rounds reaches power 0.8"),
            }
        }
        let covered = rate(tally.covered);
        println!(
            "  coverage of the true mean difference at the stopping time: {covered:.4} (± {:.4}; target >= {:.2})",
            2.0 * se(covered, n),
            1.0 - ALPHA
        );
    }
    Ok(())
}
