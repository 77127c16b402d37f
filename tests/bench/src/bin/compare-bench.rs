//! `compare-bench`: how long `bench-analysis compare` takes on a large study, bootstrap
//! included. Loads 10 policies × 500 tasks × 5 seeds (25,000 finished, judged runs, each
//! with its run_start, run_stop and their events_raw rows) into a ClickHouse 18.16 the
//! harness starts, then runs `compare` in-process (the `paired_outcomes` query, grouping,
//! every statistic, rendering) with a baseline (9 comparisons) and for every pair (45),
//! printing the wall time of each (min and median of `--repeats`), and of its two parts
//! measured apart: the query with the grouping, and the statistics. Target: under 2 s for the baseline run with the default 10,000
//! resamples.
//!
//! `cargo run --release -p benchstream-bench --bin compare-bench -- [--policies 10]
//! [--tasks 500] [--seeds 5] [--resamples 10000] [--repeats 3]`

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bench_analysis::command::{self, CompareArgs};
use bench_analysis::compare::resample::DEFAULT_SEED;
use bench_analysis::compare::{self as stats, Dimension, Settings};
use bench_analysis::Format;
use bench_clickhouse::{ClickHouseArgs, ConnectionArgs};
use benchstream_bench::data_dir_line;
use benchstream_tests::ClickHouseServer;
use clap::Parser;

#[derive(Debug, Parser)]
struct Args {
    /// Policies compared.
    #[arg(long, default_value_t = 10)]
    policies: usize,
    /// Tasks every policy ran.
    #[arg(long, default_value_t = 500)]
    tasks: usize,
    /// Runs of each policy on each task (seeds).
    #[arg(long, default_value_t = 5)]
    seeds: usize,
    /// Bootstrap resamples per interval.
    #[arg(long, default_value_t = 10_000)]
    resamples: u32,
    /// Measurements of each case.
    #[arg(long, default_value_t = 3)]
    repeats: usize,
}

const DATABASE: &str = "benchstream";

/// Whether `policy` solves seed `seed` of `task`: a fixed pseudo-random draw whose
/// probability grows with the policy's number and falls with the task's difficulty.
fn solved(policy: usize, task: usize, seed: usize) -> bool {
    let mut h = (policy as u64) << 40 ^ (task as u64) << 16 ^ seed as u64;
    h = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^= h >> 29;
    let draw = (h % 1000) as f64 / 1000.0;
    let difficulty = (task % 10) as f64 / 10.0;
    draw < (0.3 + 0.04 * policy as f64 + 0.4 * (1.0 - difficulty)).min(0.95)
}

/// The JSONEachRow lines of every run: run_starts, run_stops and events_raw.
fn rows(args: &Args) -> [String; 3] {
    let (mut starts, mut stops, mut raw) = (String::new(), String::new(), String::new());
    let ts = 1_764_000_000u64; // 2025-11-24
    let mut n = 0u64;
    for policy in 0..args.policies {
        for task in 0..args.tasks {
            for seed in 0..args.seeds {
                n += 1;
                let run = format!("00000000-0000-4000-8000-{n:012x}");
                let id = |k: u64| format!("{:08x}-0000-4000-8000-{n:012x}", k + 1);
                // events_raw has the envelope but no seed.
                let envelope = format!(
                    "\"run_id\":\"{run}\",\"task_id\":\"task-{task:03}\",\
                     \"policy_id\":\"policy-{policy:02}\",\"ts\":{ts},\
                     \"ts_ms\":{ms},\"received_at\":{ts}",
                    ms = ts * 1000
                );
                let common = format!("{envelope},\"seed\":{seed}");
                let _ = writeln!(
                    starts,
                    "{{\"event_id\":\"{}\",\"seq\":0,{common},\"model\":\"m{policy}\",\
                     \"strategy\":\"raw\",\"scoring_version\":\"1\"}}",
                    id(0)
                );
                let _ = writeln!(
                    stops,
                    "{{\"event_id\":\"{}\",\"seq\":1,{common},\"success\":{},\
                     \"exit_status\":\"submitted\",\"cost_usd\":{:.4},\"turns\":{},\
                     \"total_tokens\":{}}}",
                    id(1),
                    u8::from(solved(policy, task, seed)),
                    0.01 + 0.001 * policy as f64,
                    3 + task % 7,
                    1000 + 10 * task
                );
                for (seq, kind) in [(0, "run_start"), (1, "run_stop")] {
                    let _ = writeln!(
                        raw,
                        "{{\"event_id\":\"{}\",\"seq\":{seq},\"type\":\"{kind}\",{envelope}}}",
                        id(seq)
                    );
                }
            }
        }
    }
    [starts, stops, raw]
}

fn connection(server: &ClickHouseServer) -> ConnectionArgs {
    ConnectionArgs {
        clickhouse: ClickHouseArgs {
            url: Some(server.http_url()),
            database: Some(DATABASE.to_owned()),
            ..ClickHouseArgs::default()
        },
        ..ConnectionArgs::default()
    }
}

fn compare_args(args: &Args, server: &ClickHouseServer, baseline: Option<String>) -> CompareArgs {
    CompareArgs {
        baseline,
        resamples: args.resamples,
        ..CompareArgs::every_policy(connection(server), Format::Json)
    }
}

/// min and median of `samples`.
fn summary(mut samples: Vec<Duration>) -> String {
    samples.sort();
    format!(
        "min {:>7.3} s  median {:>7.3} s",
        samples[0].as_secs_f64(),
        samples[samples.len() / 2].as_secs_f64()
    )
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(
        args.repeats > 0 && args.policies >= 2,
        "need 2 policies and a repeat"
    );
    let runs = args.policies * args.tasks * args.seeds;
    println!(
        "compare-bench: {} policies x {} tasks x {} seeds = {runs} runs, {} resamples; {}",
        args.policies,
        args.tasks,
        args.seeds,
        args.resamples,
        data_dir_line()
    );
    let server = tokio::task::spawn_blocking(ClickHouseServer::start)
        .await
        .context("clickhouse starts")?;
    let root = server.client();
    event_sink::migrations::ensure_database(&root, DATABASE, None).await?;
    let client = root.with_database(DATABASE);
    event_sink::migrations::migrate(&client, None).await?;
    let loading = Instant::now();
    for (table, lines) in ["run_starts", "run_stops", "events_raw"]
        .iter()
        .zip(rows(&args))
    {
        server
            .try_query(&format!(
                "INSERT INTO {DATABASE}.{table} FORMAT JSONEachRow\n{lines}"
            ))
            .map_err(|e| anyhow::anyhow!("loading {table}: {e}"))?;
    }
    println!("loaded in {:.1} s", loading.elapsed().as_secs_f64());

    let baseline = Some("policy-00".to_owned());
    for (case, baseline, pairs) in [
        ("--baseline policy-00", baseline.clone(), args.policies - 1),
        ("every pair", None, args.policies * (args.policies - 1) / 2),
    ] {
        let mut whole = Vec::new();
        let mut query = Vec::new();
        let mut statistics = Vec::new();
        for _ in 0..args.repeats {
            let start = Instant::now();
            let out = command::compare(compare_args(&args, &server, baseline.clone())).await?;
            whole.push(start.elapsed());
            anyhow::ensure!(out.contains("\"comparisons\""), "no answer: {out}");
            // The same work without the query: grouping is cheap, the bootstrap is not.
            let start = Instant::now();
            let policies = stats::load(
                &client,
                &Default::default(),
                &[Dimension::Policy],
                Default::default(),
            )
            .await?;
            query.push(start.elapsed());
            let settings = Settings {
                baseline: baseline.clone(),
                margin: 0.05,
                seed: DEFAULT_SEED,
                resamples: args.resamples as usize,
            };
            let start = Instant::now();
            let answer = stats::compare(&policies, &settings);
            statistics.push(start.elapsed());
            anyhow::ensure!(
                answer.comparisons.len() == pairs,
                "{pairs} comparisons expected"
            );
        }
        println!(
            "compare {case:<22} ({pairs:>2} comparisons):\n  whole            {}\n  query + grouping {}\n  statistics       {}",
            summary(whole),
            summary(query),
            summary(statistics)
        );
    }
    Ok(())
}
