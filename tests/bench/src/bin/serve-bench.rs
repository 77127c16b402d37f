//! `serve-bench`: how long the pages of `bench-analysis serve` take at scale, and the
//! report with its runs table capped. Loads one experiment of `--runs` finished runs
//! (policies × tasks, each run with its run_start, run_stop and their events_raw rows)
//! and one run of `--steps` steps into a ClickHouse 18.16 the harness starts, serves it
//! in-process on loopback (no NATS: live updates off), and prints for each page the min
//! and median time from request to the last byte over `--repeats` requests; then the
//! report's time and size.
//!
//! `cargo run --release -p benchstream-bench --bin serve-bench -- [--runs 100000]
//! [--policies 10] [--steps 500] [--repeats 5]`

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bench_analysis::command::{Cli, Command};
use bench_analysis::{generate_report, ReportOptions};
use benchstream_bench::data_dir_line;
use benchstream_tests::harness::http::request;
use benchstream_tests::ClickHouseServer;
use clap::Parser;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Parser)]
struct Args {
    /// Finished runs of the experiment.
    #[arg(long, default_value_t = 100_000)]
    runs: usize,
    /// Policies they are spread over (tasks = runs / policies).
    #[arg(long, default_value_t = 10)]
    policies: usize,
    /// Steps of the long run whose page is timed.
    #[arg(long, default_value_t = 500)]
    steps: usize,
    /// Requests of each page.
    #[arg(long, default_value_t = 5)]
    repeats: usize,
}

const DATABASE: &str = "benchstream";
const EXPERIMENT: &str = "bench-exp";
/// The run with `--steps` steps.
const LONG_RUN: &str = "00000000-0000-4000-9000-000000000001";
const TS: u64 = 1_764_000_000; // 2025-11-24

/// The JSONEachRow lines of run_starts, run_stops and events_raw.
fn rows(args: &Args) -> [String; 3] {
    let (mut starts, mut stops, mut raw) = (String::new(), String::new(), String::new());
    let tasks = (args.runs / args.policies).max(1);
    for n in 0..args.runs {
        let (policy, task) = (n % args.policies, n / args.policies % tasks);
        let run = format!("00000000-0000-4000-8000-{n:012x}");
        let envelope = format!(
            "\"run_id\":\"{run}\",\"task_id\":\"task-{task:05}\",\"policy_id\":\"policy-{policy:02}\",\
             \"ts\":{ts},\"ts_ms\":{ms},\"received_at\":{ts}",
            ts = TS + n as u64,
            ms = (TS + n as u64) * 1000
        );
        let _ = writeln!(
            starts,
            "{{\"event_id\":\"{run}\",\"seq\":0,{envelope},\"experiment\":\"{EXPERIMENT}\",\
             \"planned_runs\":{},\"model\":\"m{policy}\",\"strategy\":\"raw\",\"scoring_version\":\"1\"}}",
            args.runs
        );
        let _ = writeln!(
            stops,
            "{{\"event_id\":\"{run}\",\"seq\":1,{envelope},\"success\":{},\"exit_status\":\"submitted\",\
             \"cost_usd\":0.01,\"turns\":3}}",
            u8::from((n * 7919) % 10 < 3 + policy % 5)
        );
        for (seq, kind) in [(0, "run_start"), (1, "run_stop")] {
            let body = format!("{{\\\"run_id\\\":\\\"{run}\\\",\\\"seq\\\":{seq},\\\"type\\\":\\\"{kind}\\\",\\\"data\\\":{{}}}}");
            let _ = writeln!(
                raw,
                "{{\"event_id\":\"{run}\",\"seq\":{seq},\"type\":\"{kind}\",{envelope},\"raw\":\"{body}\"}}"
            );
        }
    }
    long_run(args, &mut raw);
    [starts, stops, raw]
}

/// The events_raw rows of a run of `--steps` steps of about 2 KB each.
fn long_run(args: &Args, raw: &mut String) {
    let text = "x".repeat(2000);
    for seq in 0..args.steps {
        let body = format!(
            "{{\\\"run_id\\\":\\\"{LONG_RUN}\\\",\\\"seq\\\":{seq},\\\"type\\\":\\\"step\\\",\
             \\\"data\\\":{{\\\"step_type\\\":\\\"act\\\",\\\"content\\\":\\\"{text}\\\"}}}}"
        );
        let _ = writeln!(
            raw,
            "{{\"event_id\":\"00000000-0000-4000-9000-{seq:012x}\",\"run_id\":\"{LONG_RUN}\",\
             \"task_id\":\"task-00000\",\"policy_id\":\"policy-00\",\"seq\":{seq},\"type\":\"step\",\
             \"ts\":{TS},\"ts_ms\":{ms},\"received_at\":{TS},\"raw\":\"{body}\"}}",
            ms = TS * 1000
        );
    }
}

/// min and median of `samples`, ms.
fn summary(mut samples: Vec<Duration>) -> String {
    samples.sort();
    format!(
        "min {:>8.1} ms  median {:>8.1} ms",
        samples[0].as_secs_f64() * 1000.0,
        samples[samples.len() / 2].as_secs_f64() * 1000.0
    )
}

/// Starts the viewer of `server` on a free loopback port; its port.
async fn viewer(server: &ClickHouseServer, stop: CancellationToken) -> anyhow::Result<u16> {
    let url = server.http_url();
    let argv = [
        "bench-analysis",
        "serve",
        "--clickhouse-url",
        &url,
        "--clickhouse-database",
        DATABASE,
        "--query-timeout-ms",
        "60000",
    ];
    let Command::Serve(args) = Cli::try_parse_from(argv)?.command else {
        anyhow::bail!("not serve");
    };
    let config = args.into_config()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(bench_analysis::serve::serve(listener, config, stop));
    Ok(port)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(
        args.repeats > 0 && args.policies > 0 && args.runs >= args.policies,
        "need runs, policies and a repeat"
    );
    println!(
        "serve-bench: {} runs of {} policies in one experiment, a {}-step run; {}",
        args.runs,
        args.policies,
        args.steps,
        data_dir_line()
    );
    let server = tokio::task::spawn_blocking(ClickHouseServer::start)
        .await
        .context("clickhouse starts")?;
    let root = clickhouse::Client::default()
        .with_url(server.http_url())
        .with_validation(false);
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

    let stop = CancellationToken::new();
    let port = viewer(&server, stop.clone()).await?;
    let first = "00000000-0000-4000-8000-000000000000";
    let second = "00000000-0000-4000-8000-00000000000a";
    let pages = [
        ("/".to_owned(), "home"),
        (format!("/experiments/{EXPERIMENT}"), "experiment"),
        (format!("/runs/{LONG_RUN}"), "run page, long run"),
        (format!("/api/runs/{LONG_RUN}"), "run JSON, long run"),
        ("/tasks/task-00000".to_owned(), "task"),
        (
            format!("/tasks/task-00000?a={first}&b={second}"),
            "task side by side",
        ),
        (
            format!("/compare?experiment={EXPERIMENT}&baseline=policy-00"),
            "compare",
        ),
    ];
    for (target, name) in pages {
        let mut samples = Vec::new();
        for _ in 0..args.repeats {
            let target = target.clone();
            let start = Instant::now();
            let response = tokio::task::spawn_blocking(move || {
                request(port, "GET", &target, b"", Duration::from_secs(120))
            })
            .await??;
            samples.push(start.elapsed());
            anyhow::ensure!(
                response.status == 200,
                "{name}: status {}: {}",
                response.status,
                String::from_utf8_lossy(&response.body)
            );
        }
        println!("{name:<22} {}", summary(samples));
    }
    stop.cancel();

    let start = Instant::now();
    let page = generate_report(&client, &ReportOptions::default()).await?;
    println!(
        "report (runs capped at {}): {:.1} s, {:.2} MB",
        bench_analysis::report::DEFAULT_RUNS_CAP,
        start.elapsed().as_secs_f64(),
        page.len() as f64 / 1e6
    );
    Ok(())
}
