//! `publish-bench`: what the runner's publishing costs, against a nats-server it starts
//! itself (needs `nats-server` on PATH).
//!
//! 1. Throughput: events/s through the runner's [`Publisher`] (acked, windowed, spool
//!    ready) against raw async-nats JetStream publishes of the same payloads with the
//!    same headers and the same in-flight window, alternating, several rounds. Target:
//!    runner / raw >= 0.8.
//! 2. Agent-loop overhead: the time [`RunRecorder::emit`] takes per event (stamp, limits,
//!    `events.jsonl` write, hand-off to the publisher) while the publisher runs. Target:
//!    p99 <= 50 µs.
//!
//! `cargo run --release -p benchstream-bench --bin publish-bench -- [--events N] [--rounds R]`
//!
//! It lives in the bench package (`tests/bench/`), not in agent-runner, because it starts
//! its nats-server with the test harness, which the runner must not depend on.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use agent_runner::RunRecorder;
use anyhow::Context as _;
use async_nats::jetstream;
use bench_delivery::{Outgoing, PublishConfig, Publisher, SpoolConfig, DEFAULT_WINDOW};
use bench_nats::{NatsConfig, StreamSpec};
use bench_schemas::{
    sha256_hex, BenchmarkEvent, EvidenceFootprint, ExitKind, Payload, RunSequencer, Step, StepType,
    SubjectPrefix, ToolCall,
};
use benchstream_tests::NatsServer;
use bytes::Bytes;
use clap::Parser;
use uuid::Uuid;

#[derive(Debug, Parser)]
struct Args {
    /// Events per measurement.
    #[arg(long, default_value_t = 20_000)]
    events: usize,
    /// Alternating rounds of runner and raw publishing.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// In-flight window of both publishers.
    #[arg(long, default_value_t = DEFAULT_WINDOW)]
    window: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let nats = NatsServer::start();
    let client = bench_nats::connect(&NatsConfig::plain(nats.url()), false).await?;
    let js = jetstream::new(client.clone());
    let runner_prefix: SubjectPrefix = "bench".parse()?;
    let raw_prefix: SubjectPrefix = "raw".parse()?;
    for (name, prefix) in [("BENCH_RUNNER", &runner_prefix), ("BENCH_RAW", &raw_prefix)] {
        let spec = StreamSpec {
            name: name.to_owned(),
            prefix: prefix.clone(),
            ..StreamSpec::default()
        };
        // The deployed stream reserves 50 GiB; two of them do not fit the server's store
        // limit, and a benchmark needs far less.
        js.create_stream(jetstream::stream::Config {
            max_bytes: 4 << 30,
            ..spec.config()
        })
        .await?;
    }
    let events = sample_events(args.events);
    let bytes: Vec<Bytes> = events.iter().map(|e| Bytes::from(e.to_json())).collect();
    let avg = bytes.iter().map(Bytes::len).sum::<usize>() / bytes.len().max(1);
    println!(
        "publish-bench: {} events/round (avg {avg} B), window {}, {} rounds, nats-server on loopback",
        args.events, args.window, args.rounds
    );

    let dir = tempfile::tempdir()?;
    let mut runner_rates = Vec::new();
    let mut raw_rates = Vec::new();
    for round in 0..args.rounds {
        let spool = dir.path().join(format!("spool-{round}"));
        runner_rates
            .push(runner_rate(&client, &runner_prefix, &events, &bytes, args.window, spool).await?);
        raw_rates.push(raw_rate(&js, &raw_prefix, &events, &bytes, args.window).await?);
        println!(
            "  round {}: runner {:>9.0} ev/s   raw {:>9.0} ev/s",
            round + 1,
            runner_rates[round],
            raw_rates[round]
        );
    }
    let runner = median(&mut runner_rates);
    let raw = median(&mut raw_rates);
    println!(
        "throughput (median): runner {runner:.0} ev/s, raw async-nats {raw:.0} ev/s, ratio {:.2} (target >= 0.80)",
        runner / raw
    );

    let latencies = emit_latencies(
        &client,
        &runner_prefix,
        args.events,
        args.window,
        dir.path(),
    )
    .await?;
    let p = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q) as usize];
    println!(
        "agent-loop overhead per event (RunRecorder::emit, with events.jsonl): p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs (target p99 <= 50 µs)",
        p(0.50).as_secs_f64() * 1e6,
        p(0.99).as_secs_f64() * 1e6,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e6,
    );
    nats.stop();
    Ok(())
}

/// Events of one run: act / tool_call / observe steps, the shape of a real run.
fn sample_events(n: usize) -> Vec<BenchmarkEvent> {
    let mut seq = sequencer();
    (0..n)
        .map(|i| {
            let step_id = Some(Uuid::now_v7());
            seq.next(step_id, payload(i))
        })
        .collect()
}

fn sequencer() -> RunSequencer {
    RunSequencer::new(
        Uuid::now_v7(),
        "py-slugify-unicode",
        "scripted:reference",
        sha256_hex(b"cfg"),
        sha256_hex(b"env"),
        Some(42),
        "bench-host",
    )
}

fn payload(i: usize) -> Payload {
    let step = |step_type, content: String| Step {
        step_type,
        content,
        content_truncated: false,
        tokens_in: None,
        tokens_out: None,
        wall_time_ms: Some(3),
        planned_step: None,
        context_kb: Some(1.5),
    };
    match i % 3 {
        0 => Payload::Step(step(StepType::Act, "bash: python3 -m unittest -q".into())),
        1 => Payload::ToolCall(ToolCall {
            tool_name: "bash".into(),
            call_id: None,
            tool_args_hash: sha256_hex(i.to_string().as_bytes()),
            latency_ms: Some(41),
            retries: Some(0),
            exit_kind: ExitKind::Ok,
            exit_message: None,
            evidence_footprint: EvidenceFootprint {
                files_read: vec!["slugify.py".into()],
                bytes_read: 1800,
                ..EvidenceFootprint::default()
            },
            user_feedback_score: None,
            intent_accuracy: None,
        }),
        _ => Payload::Step(step(
            StepType::Observe,
            "....... ok\nRan 7 tests in 0.004s\n".repeat(24),
        )),
    }
}

/// Events/s through the runner's publisher, until every ack is in.
async fn runner_rate(
    client: &async_nats::Client,
    prefix: &SubjectPrefix,
    events: &[BenchmarkEvent],
    bytes: &[Bytes],
    window: usize,
    spool: std::path::PathBuf,
) -> anyhow::Result<f64> {
    let publisher = Publisher::start(client.clone(), publish_config(prefix, window, spool))?;
    let handle = publisher.handle();
    let started = Instant::now();
    for (event, payload) in events.iter().zip(bytes) {
        handle.send(event, payload.clone());
    }
    drop(handle);
    let report = publisher.finish().await?;
    let elapsed = started.elapsed();
    anyhow::ensure!(
        report.published == events.len() as u64 && report.spooled == 0,
        "not all acked directly: {report:?}"
    );
    Ok(events.len() as f64 / elapsed.as_secs_f64())
}

/// Events/s of plain async-nats: publish with the same headers, at most `window` acks
/// outstanding, until every ack is in.
async fn raw_rate(
    js: &jetstream::Context,
    prefix: &SubjectPrefix,
    events: &[BenchmarkEvent],
    bytes: &[Bytes],
    window: usize,
) -> anyhow::Result<f64> {
    let started = Instant::now();
    let mut inflight = VecDeque::with_capacity(window);
    for (event, payload) in events.iter().zip(bytes) {
        if inflight.len() >= window {
            let ack: jetstream::context::PublishAckFuture =
                inflight.pop_front().context("window not empty")?;
            ack.await?;
        }
        let message = Outgoing::new(prefix, event, payload.clone());
        inflight.push_back(
            js.publish_with_headers(message.subject.clone(), message.headers(), payload.clone())
                .await?,
        );
    }
    for ack in inflight {
        ack.await?;
    }
    Ok(events.len() as f64 / started.elapsed().as_secs_f64())
}

/// Duration of each `emit` of a fresh run, publisher running, journal on disk.
async fn emit_latencies(
    client: &async_nats::Client,
    prefix: &SubjectPrefix,
    n: usize,
    window: usize,
    dir: &std::path::Path,
) -> anyhow::Result<Vec<Duration>> {
    let publisher = Publisher::start(
        client.clone(),
        publish_config(prefix, window, dir.join("spool-emit")),
    )?;
    let mut recorder = RunRecorder::new(sequencer(), Some(publisher.handle()), Some(dir))?;
    let mut latencies = Vec::with_capacity(n);
    for i in 0..n {
        let payload = payload(i);
        let started = Instant::now();
        recorder.emit(Some(Uuid::now_v7()), payload)?;
        latencies.push(started.elapsed());
        if i % 3 == 2 {
            // An agent does work between events; let the publisher run as it would.
            tokio::task::yield_now().await;
        }
    }
    drop(recorder);
    publisher.finish().await?;
    latencies.sort_unstable();
    Ok(latencies)
}

fn publish_config(
    prefix: &SubjectPrefix,
    window: usize,
    spool: std::path::PathBuf,
) -> PublishConfig {
    PublishConfig {
        prefix: prefix.clone(),
        window,
        ack_timeout: Duration::from_secs(5),
        drain_timeout: Duration::from_secs(30),
        spool: SpoolConfig {
            path: spool,
            max_bytes: 1 << 30,
        },
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
