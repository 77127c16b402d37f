//! `serve-bench`: how long the pages of `bench-analysis serve` take at scale, and
//! `bench-analysis report`. Loads one experiment of `--runs` finished runs (policies ×
//! tasks) of 41 events each (run_start, 13 rounds of an LLM call, a tool call and a step,
//! run_stop: 4.1 million events at 100,000 runs, in their typed tables and in events_raw)
//! and one run of `--steps` steps of about 2 KB into a ClickHouse 18.16 the harness
//! starts, merges the tables' parts, serves it in-process on loopback (no NATS: live
//! updates off, changes seen by polling), and prints: the background's warm-up (from the
//! server's start until the experiment's standing and the comparison its page links are
//! kept); for each page the time from request to last byte of the first request after
//! the warm-up and the min and median of `--repeats` more; after one more run finished,
//! the time of the next request of the compare and experiment pages (the kept answer,
//! labelled stale) and how long until the fresh answers were kept; with a second viewer,
//! the time of the experiment and compare pages asked before its warm-up ended (a page
//! saying its answer is being computed) and until they showed the answer; then
//! the report: its time split into its queries and its rendering, its size, and each of
//! its queries' time over every run. Each figure with the machine's load average.
//! `--skip-report` times the pages alone, `--report-only` the report alone.
//!
//! `cargo run --release -p benchstream-bench --bin serve-bench -- [--runs 100000]
//! [--policies 10] [--runs-per-task 1] [--steps 500] [--repeats 5] [--skip-report | --report-only]`

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bench_analysis::command::{Cli, Command};
use bench_analysis::queries::{ParamValues, Query};
use bench_analysis::report::{gather as gather_report, render as render_report};
use bench_analysis::ReportOptions;
use benchstream_bench::data_dir_line;
use benchstream_tests::harness::http::{request, Response};
use benchstream_tests::ClickHouseServer;
use clap::Parser;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Parser)]
struct Args {
    /// Finished runs of the experiment.
    #[arg(long, default_value_t = 100_000)]
    runs: usize,
    /// Policies they are spread over.
    #[arg(long, default_value_t = 10)]
    policies: usize,
    /// Runs of each task by each policy (`repeat` 0, 1, ...): tasks = runs / policies /
    /// this. 1 is the widest task set (10,000 tasks at the defaults); 20 is the shape of
    /// 500 tasks run 20 times each, as SWE-bench Verified with repeats.
    #[arg(long, default_value_t = 1)]
    runs_per_task: usize,
    /// Steps of the long run whose page is timed.
    #[arg(long, default_value_t = 500)]
    steps: usize,
    /// Requests of each page.
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Load the data, print how to reach the server, and keep it up until Ctrl-C
    /// (SIGINT) instead of measuring (to time queries by hand).
    #[arg(long)]
    hold: bool,
    /// Time the viewer's pages only, not `report`.
    #[arg(long)]
    skip_report: bool,
    /// Time the report only, not the pages.
    #[arg(long)]
    report_only: bool,
}

const DATABASE: &str = "benchstream";
const EXPERIMENT: &str = "bench-exp";
/// The run with `--steps` steps.
const LONG_RUN: &str = "00000000-0000-4000-9000-000000000001";
const TS: u64 = 1_764_000_000; // 2025-11-24

/// Events of each seeded run between its run_start and its run_stop: rounds of an LLM
/// call, a tool call and a step.
const ROUNDS: usize = 13;
/// Events per seeded run.
const EVENTS_PER_RUN: usize = 2 + 3 * ROUNDS;
/// Runs seeded per insert.
const CHUNK: usize = 10_000;
/// The tables seeded, in the order of [`chunk_rows`]' answer.
const TABLES: [&str; 6] = [
    "run_starts",
    "run_stops",
    "deliberations",
    "tool_calls",
    "steps",
    "events_raw",
];
const TOOLS: [&str; 4] = ["bash", "read_file", "write_file", "search"];

/// The JSONEachRow lines of runs `range` for each of [`TABLES`]: each run's run_start,
/// [`ROUNDS`] rounds of a deliberation, a tool call and a step, its run_stop, and every
/// one of them in events_raw with a short raw body.
fn chunk_rows(args: &Args, range: std::ops::Range<usize>) -> [String; 6] {
    let mut out: [String; 6] = Default::default();
    let [starts, stops, calls, tools, steps, raw] = &mut out;
    let tasks = args.tasks();
    for n in range {
        let (policy, task) = (n % args.policies, n / args.policies % tasks);
        let repeat = n / (args.policies * tasks) % args.runs_per_task;
        let run = format!("00000000-0000-4000-8000-{n:012x}");
        let ts = TS + n as u64;
        let envelope = format!(
            "\"run_id\":\"{run}\",\"task_id\":\"task-{task:05}\",\"policy_id\":\"policy-{policy:02}\",\
             \"ts\":{ts},\"received_at\":{ts}"
        );
        let event = |seq: usize| {
            format!(
                "\"event_id\":\"{seq:08x}-0000-4000-8000-{n:012x}\",\"seq\":{seq},{envelope},\"ts_ms\":{}",
                ts * 1000 + seq as u64
            )
        };
        let mut raw_row = |seq: usize, kind: &str, data: &str| {
            let _ = writeln!(
                raw,
                "{{{},\"type\":\"{kind}\",\"raw\":\"{{\\\"run_id\\\":\\\"{run}\\\",\\\"seq\\\":{seq},\\\"type\\\":\\\"{kind}\\\",\\\"data\\\":{{{data}}}}}\"}}",
                event(seq)
            );
        };
        let _ = writeln!(
            starts,
            "{{{},\"experiment\":\"{EXPERIMENT}\",\"planned_runs\":{},\"repeat\":{repeat},\
             \"model\":\"m{policy}\",\"strategy\":\"raw\",\"scoring_version\":\"1\"}}",
            event(0),
            args.runs
        );
        raw_row(0, "run_start", "");
        for round in 0..ROUNDS {
            let seq = 1 + 3 * round;
            let draw = (n * 7919 + round * 104_729) % 1000;
            let _ = writeln!(
                calls,
                "{{{},\"agent\":\"agent\",\"provider\":\"openai\",\"model\":\"m{policy}\",\
                 \"status\":\"{}\",\"latency_ms\":{},\"input_tokens\":{},\"output_tokens\":200,\
                 \"cost_usd\":0.0008,\"pricing_source\":\"table\"}}",
                event(seq),
                if draw < 5 { "timeout" } else { "ok" },
                300 + draw * 20,
                2000 + 100 * round
            );
            raw_row(seq, "deliberation", "\\\"model\\\":\\\"m\\\"");
            let _ = writeln!(
                tools,
                "{{{},\"tool_name\":\"{}\",\"exit_kind\":\"{}\",\"latency_ms\":{}}}",
                event(seq + 1),
                TOOLS[(n + round) % TOOLS.len()],
                if draw % 10 == 0 { "error" } else { "ok" },
                10 + draw
            );
            raw_row(seq + 1, "tool_call", "\\\"tool_name\\\":\\\"bash\\\"");
            let _ = writeln!(
                steps,
                "{{{},\"step_type\":\"act\",\"content\":\"step {round} of run {n}\"}}",
                event(seq + 2)
            );
            raw_row(seq + 2, "step", "\\\"step_type\\\":\\\"act\\\"");
        }
        let _ = writeln!(
            stops,
            "{{{},\"success\":{},\"exit_status\":\"submitted\",\"cost_usd\":0.0104,\"turns\":{ROUNDS}}}",
            event(EVENTS_PER_RUN - 1),
            u8::from((n * 7919) % 10 < 3 + policy % 5)
        );
        raw_row(EVENTS_PER_RUN - 1, "run_stop", "");
    }
    out
}

impl Args {
    /// Tasks of the experiment: runs / policies / runs per task.
    fn tasks(&self) -> usize {
        (self.runs / self.policies / self.runs_per_task).max(1)
    }
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
        ms(samples[0]),
        ms(samples[samples.len() / 2])
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
        args.repeats > 0
            && args.policies > 0
            && args.runs_per_task > 0
            && args.runs >= args.policies * args.runs_per_task,
        "need runs, policies, runs per task and a repeat"
    );
    println!(
        "serve-bench: {} runs of {} policies × {} tasks × {} runs each in one experiment, a {}-step run; {}",
        args.runs,
        args.policies,
        args.tasks(),
        args.runs_per_task,
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
    for first in (0..args.runs).step_by(CHUNK) {
        let rows = chunk_rows(&args, first..(first + CHUNK).min(args.runs));
        for (table, lines) in TABLES.iter().zip(rows) {
            insert(&server, table, &lines)?;
        }
    }
    let mut raw = String::new();
    long_run(&args, &mut raw);
    insert(&server, "events_raw", &raw)?;
    let events = args.runs * EVENTS_PER_RUN + args.steps;
    println!(
        "loaded {events} events in {:.1} s",
        loading.elapsed().as_secs_f64()
    );
    // Parts merged, as a store that has been up a while has them (FINAL reads fewer).
    let merging = Instant::now();
    for table in TABLES {
        server
            .try_query(&format!("OPTIMIZE TABLE {DATABASE}.{table} FINAL"))
            .map_err(|e| anyhow::anyhow!("merging {table}: {e}"))?;
    }
    println!("merged in {:.1} s", merging.elapsed().as_secs_f64());
    if args.hold {
        println!(
            "holding until Ctrl-C: clickhouse-client --port {} -d {DATABASE}",
            server.tcp_port()
        );
        // Returning stops the server and removes its data.
        tokio::signal::ctrl_c().await?;
        return Ok(());
    }
    if args.report_only {
        return report(&client, args.repeats).await;
    }

    // The viewer computes the standing and the linked comparison of the experiment (the
    // newest) in the background from its start; no request until it says it is done.
    let stop = CancellationToken::new();
    let started = Instant::now();
    let port = viewer(&server, stop.clone()).await?;
    let warm = warmed_up(port).await?;
    println!(
        "warm-up (server start until the standing and the comparison are kept): {:.1} s \
         (the server's own count: {:.1} s); {}",
        started.elapsed().as_secs_f64(),
        warm as f64 / 1000.0,
        load_average()
    );
    let first = "00000000-0000-4000-8000-000000000000";
    let second = "00000000-0000-4000-8000-00000000000a";
    let experiment = format!("/experiments/{EXPERIMENT}");
    let compare = format!("/compare?experiment={EXPERIMENT}&baseline=policy-00");
    let pages = [
        ("/".to_owned(), "home"),
        (experiment.clone(), "experiment"),
        (format!("/api/experiments/{EXPERIMENT}"), "experiment JSON"),
        (format!("/runs/{LONG_RUN}"), "run page, long run"),
        (format!("/api/runs/{LONG_RUN}"), "run JSON, long run"),
        (format!("/runs/{second}"), "run page, 41 events"),
        ("/tasks/task-00000".to_owned(), "task"),
        (
            format!("/tasks/task-00000?a={first}&b={second}"),
            "task side by side",
        ),
        (compare.clone(), "compare"),
    ];
    println!(
        "page after warm-up (first request; then min and median of {}):",
        args.repeats
    );
    for (target, name) in pages {
        let (first, samples) = timed(port, &target, args.repeats).await?;
        println!(
            "{name:<22} first {:>8.1} ms  {}",
            ms(first),
            summary(samples)
        );
    }
    println!("({})", load_average());
    // One more finished run of the experiment: the next request of each page gets the
    // answer kept, marked stale, while the fresh one is computed in the background.
    let n = args.runs;
    let rows = chunk_rows(&args, n..n + 1);
    for (table, lines) in TABLES.iter().zip(rows) {
        insert(&server, table, &lines)?;
    }
    let finished = Instant::now();
    for (target, name) in [(&compare, "compare"), (&experiment, "experiment")] {
        let (took, response) = get(port, target).await?;
        let stale = String::from_utf8_lossy(&response.body).contains("data-stale=\"true\"");
        println!(
            "{name:<22} a run later: {:>8.1} ms ({})",
            ms(took),
            if stale {
                "stale, labelled updating"
            } else {
                "fresh"
            }
        );
    }
    let api = format!("/api/compare?experiment={EXPERIMENT}&baseline=policy-00");
    let compared = until_fresh(port, &api, n as u64 + 1).await?;
    let api = format!("/api/experiments/{EXPERIMENT}");
    let standing = until_fresh(port, &api, n as u64 + 1).await?;
    println!(
        "fresh answers kept after the run finished (asked every {} ms): comparison {:.1} s, \
         standing {:.1} s; {}",
        POLL.as_millis(),
        (compared - finished).as_secs_f64(),
        (standing - finished).as_secs_f64(),
        load_average()
    );
    stop.cancel();

    // A new viewer, asked for the experiment page and then the compare page at once:
    // each waits at most --page-wait-ms for the computation of the background under way
    // (single flight), then says it is being computed and is asked again (as its script
    // does) until it shows the answer.
    let stop = CancellationToken::new();
    let started = Instant::now();
    let port = viewer(&server, stop.clone()).await?;
    for (target, name) in [(&experiment, "experiment"), (&compare, "compare")] {
        let asked = Instant::now();
        let (took, mut response) = get(port, target).await?;
        let said = if computing(&response) {
            "being computed"
        } else {
            "the answer"
        };
        while computing(&response) {
            tokio::time::sleep(POLL).await;
            response = get(port, target).await?.1;
        }
        println!(
            "{name:<22} asked {:.1} s after the start, before warm-up ended: answered in {:>8.1} ms \
             ({said}); the answer shown {:.1} s after it was asked",
            (asked - started).as_secs_f64(),
            ms(took),
            asked.elapsed().as_secs_f64()
        );
    }
    let warm = warmed_up(port).await?;
    println!(
        "warm-up of that viewer: {:.1} s; {}",
        warm as f64 / 1000.0,
        load_average()
    );
    stop.cancel();

    if args.skip_report {
        return Ok(());
    }
    report(&client, args.repeats).await
}

/// Whether a page says its answer is being computed for the first time.
fn computing(response: &Response) -> bool {
    String::from_utf8_lossy(&response.body).contains("data-computing=\"true\"")
}

/// How often [`warmed_up`], [`until_fresh`] and a page being computed are asked.
const POLL: Duration = Duration::from_millis(250);

/// Waits until the viewer on `port` has looked at everything once; the server's count of
/// ms from its start.
async fn warmed_up(port: u16) -> anyhow::Result<u64> {
    loop {
        let (_, response) = get(port, "/api/status").await?;
        let status: serde_json::Value = serde_json::from_slice(&response.body)?;
        if let Some(ms) = status["ahead"]["warmed_up_ms"].as_u64() {
            return Ok(ms);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Asks for `target` until its `freshness` is fresh over `finished` runs; when.
async fn until_fresh(port: u16, target: &str, finished: u64) -> anyhow::Result<Instant> {
    loop {
        let (_, response) = get(port, target).await?;
        let answer: serde_json::Value = serde_json::from_slice(&response.body)?;
        let freshness = &answer["freshness"];
        if freshness["stale"] == false && freshness["runs_finished"].as_u64() == Some(finished) {
            return Ok(Instant::now());
        }
        tokio::time::sleep(POLL).await;
    }
}

/// `load average 1.20 1.05 0.90` (1, 5, 15 minutes), as `/proc/loadavg` says.
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let three: Vec<&str> = text.split_whitespace().take(3).collect();
    format!("load average {}", three.join(" "))
}

/// Inserts JSONEachRow `lines` into `table`.
fn insert(server: &ClickHouseServer, table: &str, lines: &str) -> anyhow::Result<()> {
    server
        .try_query(&format!(
            "INSERT INTO {DATABASE}.{table} FORMAT JSONEachRow\n{lines}"
        ))
        .map(drop)
        .map_err(|e| anyhow::anyhow!("loading {table}: {e}"))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// One request of `target`: its time and answer (status 200, or an error).
async fn get(port: u16, target: &str) -> anyhow::Result<(Duration, Response)> {
    let path = target.to_owned();
    let start = Instant::now();
    let response = tokio::task::spawn_blocking(move || {
        request(port, "GET", &path, b"", Duration::from_secs(120))
    })
    .await??;
    let took = start.elapsed();
    anyhow::ensure!(
        response.status == 200,
        "{target}: status {}: {}",
        response.status,
        String::from_utf8_lossy(&response.body)
    );
    Ok((took, response))
}

/// The time of the first of `repeats` + 1 requests of `target`, and of the others.
async fn timed(
    port: u16,
    target: &str,
    repeats: usize,
) -> anyhow::Result<(Duration, Vec<Duration>)> {
    let mut samples = Vec::new();
    for _ in 0..=repeats {
        samples.push(get(port, target).await?.0);
    }
    let first = samples.remove(0);
    Ok((first, samples))
}

/// `report` with its default caps: its time in its parts (the queries, then the
/// rendering), the time of each window query over every run, and the page's size.
async fn report(client: &clickhouse::Client, repeats: usize) -> anyhow::Result<()> {
    let options = ReportOptions::default();
    let load_before = load_average();
    let mut gathering = Vec::new();
    let mut rendering = Vec::new();
    let mut size = 0;
    for _ in 0..repeats {
        let start = Instant::now();
        let data = gather_report(client, &options).await?;
        gathering.push(start.elapsed());
        let start = Instant::now();
        size = render_report(&data).len();
        rendering.push(start.elapsed());
    }
    let whole: Vec<Duration> = gathering
        .iter()
        .zip(&rendering)
        .map(|(a, b)| *a + *b)
        .collect();
    println!(
        "report ({} windows computed): {:.2} MB, {load_before} before, {} after\n  \
         whole     {}\n  queries   {}\n  rendering {}",
        gather_report(client, &options).await?.distinct_windows(),
        size as f64 / 1e6,
        load_average(),
        summary(whole),
        summary(gathering),
        summary(rendering)
    );
    println!(
        "report queries over every run, each once ({} before):",
        load_average()
    );
    for name in bench_analysis::report::WINDOW_QUERIES
        .iter()
        .chain(&["lost_events"])
    {
        let query = Query::find(name)?;
        let start = Instant::now();
        let answer = query.run(client, &ParamValues::new()).await?;
        println!(
            "  {name:<22} {:>8.1} ms  {:>7} rows",
            ms(start.elapsed()),
            answer.rows.len()
        );
    }
    Ok(())
}
