//! `judge-bench`: what judging the submitted diff costs a run. Runs the shipped `smoke`
//! scenario (8 tasks, the scripted reference solutions) with the runner binary under test
//! and, when given, a baseline runner binary (one that judged the workspace in place),
//! alternating in rounds; prints each round's wall time per run of both, the medians, and
//! what the runner under test adds per run. Target: at most 2 s added per run.
//!
//! `cargo run --release -p benchstream-bench --bin judge-bench -- --runner
//! target/release/agent-runner [--baseline OTHER] [--rounds R]`
//!
//! Every run is judged as `agent-runner run smoke --no-publish` judges it: the submission
//! taken, applied to a fresh copy, judged, and the workspace judged as a cross-check.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;

#[derive(Debug, Parser)]
struct Args {
    /// The runner binary under test.
    #[arg(long)]
    runner: PathBuf,
    /// A runner binary to compare with.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Alternating rounds of each binary.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// The scenario to run.
    #[arg(long, default_value = "smoke")]
    scenario: String,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut binaries = vec![("under test", args.runner.clone())];
    if let Some(baseline) = &args.baseline {
        binaries.push(("baseline", baseline.clone()));
    }
    let mut per_run: Vec<Vec<Duration>> = vec![Vec::new(); binaries.len()];
    for round in 1..=args.rounds {
        for (i, (name, binary)) in binaries.iter().enumerate() {
            let (elapsed, runs) = run_scenario(binary, &scenarios, &args.scenario)?;
            let each = elapsed / u32::try_from(runs).unwrap_or(1).max(1);
            println!("round {round}: {name}: {runs} runs in {elapsed:.2?}, {each:.2?} per run");
            per_run[i].push(each);
        }
    }
    let medians: Vec<Duration> = per_run.iter_mut().map(|v| median(v)).collect();
    println!("median per run: under test {:.2?}", medians[0]);
    if let Some(baseline) = medians.get(1) {
        let added = medians[0].as_secs_f64() - baseline.as_secs_f64();
        println!(
            "median per run: baseline {baseline:.2?}; added {added:.3} s per run (target <= 2 s), ratio {:.2}",
            medians[0].as_secs_f64() / baseline.as_secs_f64()
        );
    }
    Ok(())
}

/// Runs `scenario` once with `binary`; how long it took and how many runs it made.
fn run_scenario(
    binary: &Path,
    scenarios: &Path,
    scenario: &str,
) -> anyhow::Result<(Duration, usize)> {
    let out = tempfile::tempdir()?;
    let started = Instant::now();
    let status = Command::new(binary)
        .args([
            "run",
            scenario,
            "--no-publish",
            "--no-progress",
            "--scenarios-dir",
        ])
        .arg(scenarios)
        .arg("--out")
        .arg(out.path())
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .status()
        .with_context(|| format!("cannot start {}", binary.display()))?;
    let elapsed = started.elapsed();
    anyhow::ensure!(status.success(), "{} exited {status}", binary.display());
    let runs = std::fs::read_dir(out.path())?.count();
    Ok((elapsed, runs))
}

/// The median of `values` (sorted in place).
fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values.get(values.len() / 2).copied().unwrap_or_default()
}
