//! `compare-stats-bench`: how long `compare`'s statistics take alone (every policy's
//! summary and every pair's, bootstrap intervals included), on runs built in memory: no
//! server, no query, no rendering. The shape of `serve-bench` by default: 10 policies ×
//! 10,000 tasks × 1 run, every pair compared (45) as the viewer's compare page does, 10,000
//! resamples. Prints the wall time (min and median of `--repeats`) and a fingerprint of
//! the answer (FNV-1a of its JSON), which a change of speed must leave as it is; `--json
//! FILE` writes the answer itself, to diff. The process to profile with `perf record -g`.
//!
//! `cargo run --release -p benchstream-bench --bin compare-stats-bench -- [--policies 10]
//! [--tasks 10000] [--seeds 1] [--resamples 10000] [--baseline] [--repeats 3] [--json FILE]`

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bench_analysis::compare::analyze::{compare, Settings};
use bench_analysis::compare::outcomes::{PolicyRuns, TaskRuns};
use bench_analysis::compare::resample::DEFAULT_SEED;
use clap::Parser;

#[derive(Debug, Parser)]
struct Args {
    /// Policies compared.
    #[arg(long, default_value_t = 10)]
    policies: usize,
    /// Tasks every policy ran.
    #[arg(long, default_value_t = 10_000)]
    tasks: usize,
    /// Runs of each policy on each task (seeds).
    #[arg(long, default_value_t = 1)]
    seeds: usize,
    /// Bootstrap resamples per interval.
    #[arg(long, default_value_t = 10_000)]
    resamples: usize,
    /// Compare with the first policy only (9 pairs) instead of every pair.
    #[arg(long)]
    baseline: bool,
    /// Measurements.
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Write the answer's JSON here.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

/// A fixed pseudo-random draw in [0, 1) from `policy`, `task` and `seed`.
fn draw(policy: usize, task: usize, seed: usize) -> f64 {
    let mut h = (policy as u64) << 40 ^ (task as u64) << 16 ^ seed as u64;
    h = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^= h >> 29;
    (h % 1000) as f64 / 1000.0
}

/// The runs of `policy`: a solve probability growing with the policy's number and
/// falling with the task's difficulty, a cost per run that varies by task.
fn policy(args: &Args, policy: usize) -> PolicyRuns {
    let tasks: BTreeMap<String, TaskRuns> = (0..args.tasks)
        .map(|task| {
            let difficulty = (task % 10) as f64 / 10.0;
            let p = (0.3 + 0.04 * policy as f64 + 0.4 * (1.0 - difficulty)).min(0.95);
            let mut runs = TaskRuns::default();
            for seed in 0..args.seeds {
                let success = u64::from(draw(policy, task, seed) < p);
                let cost = 0.01 + 0.002 * policy as f64 + draw(policy + 100, task, seed) * 0.05;
                runs.add(&TaskRuns {
                    runs: 1,
                    successes: success,
                    priced_runs: 1,
                    cost_usd: cost,
                    turn_runs: 1,
                    turns: 5.0 + (task % 7) as f64,
                    token_runs: 1,
                    tokens: 10_000.0 + (task % 13) as f64 * 100.0,
                    flagged_runs: 0,
                    integrity_unknown_runs: 0,
                    clean_runs: 1,
                    clean_successes: success,
                });
            }
            (format!("task-{task:05}"), runs)
        })
        .collect();
    let label = format!("policy-{policy:02}");
    PolicyRuns {
        label: label.clone(),
        group: label,
        experiments: ["bench".to_string()].into(),
        tasks,
        ..PolicyRuns::default()
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let policies: Vec<PolicyRuns> = (0..args.policies).map(|p| policy(&args, p)).collect();
    let settings = Settings {
        baseline: args.baseline.then(|| policies[0].group.clone()),
        margin: 0.05,
        seed: DEFAULT_SEED,
        resamples: args.resamples,
    };
    let mut times: Vec<Duration> = Vec::new();
    let mut answer = None;
    for _ in 0..args.repeats.max(1) {
        let start = Instant::now();
        answer = Some(compare(&policies, &settings));
        times.push(start.elapsed());
    }
    let json = serde_json::to_string_pretty(&answer).context("serializing the answer")?;
    let fingerprint = json.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    times.sort();
    println!(
        "compare statistics: {} policies × {} tasks × {} runs, {} pairs, {} resamples: \
         min {:.3} s, median {:.3} s; answer fingerprint {fingerprint:016x}",
        args.policies,
        args.tasks,
        args.seeds,
        answer.as_ref().map_or(0, |a| a.comparisons.len()),
        args.resamples,
        times[0].as_secs_f64(),
        times[times.len() / 2].as_secs_f64(),
    );
    if let Some(path) = &args.json {
        std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
