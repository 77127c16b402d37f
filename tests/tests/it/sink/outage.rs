//! Servers going away under load lose nothing: the sink waits (retrying with backoff,
//! holding what it has, pulling nothing more) and everything lands once they are back.

use std::time::Duration;

use bench_schemas::EventType;
use benchstream_tests::free_port;
use event_sink::config::MetricsArgs;

use super::setup::{http_get, sample, RunningSink, World, LANDING};
use crate::common::wait_for;
use benchstream_tests::events::{publish, Run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clickhouse_stopped_under_load_the_sink_waits_then_everything_lands() {
    let world = World::start().await;
    let metrics_port = free_port();
    let mut args = world.args();
    args.metrics = MetricsArgs {
        listen: Some(format!("127.0.0.1:{metrics_port}")),
        ..MetricsArgs::default()
    };
    let sink = RunningSink::start(args.resolve().expect("valid settings"));
    let mut run = Run::default();
    let events = run.events(3000);
    let (before, during) = events.split_at(1000);

    for event in before {
        publish(&world.js, event).await;
    }
    // The sink is past its start-up (migrations, which fail fast without ClickHouse).
    world.wait_acked(1).await;
    tokio::task::block_in_place(|| world.clickhouse.stop());
    for event in during {
        publish(&world.js, event).await;
    }
    // Let the sink fail and back off a few times while holding a batch.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(http_get(metrics_port, "/healthz").await, "ok\n");
    let waiting = http_get(metrics_port, "/metrics").await;
    assert!(sample(&waiting, "bench_sink_retries_total{cause=\"clickhouse\"}") >= 1.0);
    assert!(sample(&waiting, "bench_sink_messages_waiting") >= 1.0);
    tokio::task::block_in_place(|| world.clickhouse.restart());

    wait_for(
        &world.clickhouse,
        &format!(
            "SELECT count(), uniqExact(event_id) FROM benchstream.events_raw FINAL \
             WHERE run_id = '{}'",
            run.run_id
        ),
        "3000\t3000",
        LANDING,
    );
    world.wait_acked(events.len() as u64).await;
    let done = http_get(metrics_port, "/metrics").await;
    assert!(sample(&done, "bench_sink_messages_acked_total{outcome=\"ack\"}") >= 3000.0);
    let steps = events
        .iter()
        .filter(|e| e.event_type() == EventType::Step)
        .count();
    assert!(sample(&done, "bench_sink_rows_inserted_total{table=\"steps\"}") >= steps as f64);
    assert_eq!(sample(&done, "bench_sink_messages_waiting"), 0.0);
    sink.stop().await.expect("clean stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_restart_loses_nothing() {
    let world = World::start().await;
    let sink = RunningSink::start_in(&world);
    let mut run = Run::default();
    let events = run.events(600);
    let (before, after) = events.split_at(300);
    for event in before {
        publish(&world.js, event).await;
    }
    world.wait_acked(before.len() as u64).await;
    tokio::task::block_in_place(|| world.nats.restart());
    for event in after {
        publish(&world.js, event).await;
    }
    world.wait_landed(&run, events.len());
    world.wait_acked(events.len() as u64).await;
    sink.stop().await.expect("clean stop");
    // Every seq of the run is in ClickHouse, each once.
    let seqs = world.clickhouse.query(&format!(
        "SELECT uniqExact(seq), min(seq), max(seq), count() FROM benchstream.events_raw FINAL \
         WHERE run_id = '{}'",
        run.run_id
    ));
    assert_eq!(seqs.trim(), "600\t0\t599\t600");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clickhouse_back_after_an_outage_is_used_at_the_next_probe_not_after_the_backoff() {
    let world = World::start().await;
    let metrics_port = free_port();
    let mut args = world.args();
    // A backoff far longer than the outage: only a probe can end the wait early.
    args.batch.retry_initial_ms = Some(60_000);
    args.batch.retry_max_ms = Some(60_000);
    // An insert caught by the shutdown must not hang for the default 30 s.
    args.clickhouse.insert_timeout_ms = Some(5000);
    args.metrics = MetricsArgs {
        listen: Some(format!("127.0.0.1:{metrics_port}")),
        ..MetricsArgs::default()
    };
    let sink = RunningSink::start(args.resolve().expect("valid settings"));
    let mut run = Run::default();
    let events = run.events(20);
    publish(&world.js, &events[0]).await;
    world.wait_acked(1).await;
    tokio::task::block_in_place(|| world.clickhouse.stop());
    for event in &events[1..] {
        publish(&world.js, event).await;
    }
    // The flush fails and starts its minute of backoff.
    tokio::time::sleep(Duration::from_secs(3)).await;
    tokio::task::block_in_place(|| world.clickhouse.restart());
    let restarted = std::time::Instant::now();
    world.wait_landed(&run, events.len());
    eprintln!(
        "events stored {:.1} s after ClickHouse answered again (backoff 60 s)",
        restarted.elapsed().as_secs_f64()
    );
    // Acked once the flush is done: its counts are final.
    world.wait_acked(events.len() as u64).await;
    let metrics = http_get(metrics_port, "/metrics").await;
    assert!(sample(&metrics, "bench_sink_probes_answered_total") >= 1.0);
    assert_eq!(sample(&metrics, "bench_sink_flush_recoveries_total"), 1.0);
    assert_eq!(sample(&metrics, "bench_sink_messages_waiting"), 0.0);
    sink.stop().await.expect("clean stop");
}
