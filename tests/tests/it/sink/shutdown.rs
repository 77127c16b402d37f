//! Shutdown drains: what was inserted is acked, nothing is acked that was not inserted,
//! and a drain that cannot finish (ClickHouse away) gives up in bounded time, leaving
//! the messages to JetStream for the next sink.

use std::time::{Duration, Instant};

use event_sink::config::{BatchArgs, ConsumerArgs};
use event_sink::SinkError;

use super::setup::{RunningSink, World, LANDING};
use benchstream_tests::events::{publish, Run};

async fn publish_run(world: &World, run: &mut Run, count: usize) {
    for event in run.events(count) {
        publish(&world.js, &event).await;
    }
}

/// Distinct events of the run in ClickHouse; 0 before the sink created the tables.
fn stored(world: &World, run: &Run) -> u64 {
    world
        .clickhouse
        .try_query(&format!(
            "SELECT uniqExact(event_id) FROM benchstream.events_raw WHERE run_id = '{}'",
            run.run_id
        ))
        .ok()
        .and_then(|count| count.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_acks_exactly_what_was_inserted() {
    let world = World::start().await;
    let mut run = Run::default();
    publish_run(&world, &mut run, 3000).await;
    let mut args = world.args();
    // Small batches, so the stop lands between flushes.
    args.batch.max_rows = Some(200);
    let sink = RunningSink::start(args.resolve().expect("valid settings"));
    let start = Instant::now();
    while stored(&world, &run) == 0 {
        assert!(start.elapsed() < LANDING, "nothing landed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sink.stop().await.expect("clean stop");

    let info = world.settled_consumer_info().await;
    assert_eq!(
        info.num_ack_pending, 0,
        "a delivered message was left unacked"
    );
    assert_eq!(
        info.delivered.stream_sequence, info.ack_floor.stream_sequence,
        "acks have no gaps"
    );
    assert_eq!(
        stored(&world, &run),
        info.ack_floor.stream_sequence,
        "acked messages and stored events differ"
    );
    assert!(
        info.ack_floor.stream_sequence < 3000,
        "stopped before the end"
    );

    // A new sink takes over from there; all land, once.
    let sink = RunningSink::start_in(&world);
    world.wait_landed(&run, 3000);
    sink.stop().await.expect("clean stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_acked_before_it_is_inserted() {
    let world = World::start().await;
    let mut args = world.args();
    args.consumer = ConsumerArgs {
        ack_wait_ms: Some(3000),
        ..ConsumerArgs::default()
    };
    args.batch = BatchArgs {
        drain_timeout_ms: Some(1000),
        ..args.batch
    };
    let config = args.resolve().expect("valid settings");
    let sink = RunningSink::start(config.clone());
    let mut run = Run::default();
    publish_run(&world, &mut run, 1).await;
    world.wait_acked(1).await;

    tokio::task::block_in_place(|| world.clickhouse.stop());
    publish_run(&world, &mut run, 500).await;
    // Longer than ack_wait: progress acks must keep the held messages from redelivery.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let held = world.consumer_info().await;
    assert_eq!(held.ack_floor.stream_sequence, 1, "acked without insert");
    assert_eq!(held.num_redelivered, 0, "held messages were redelivered");

    let stopping = Instant::now();
    let stopped = sink.stop().await;
    assert!(
        matches!(stopped, Err(SinkError::DrainTimeout(_))),
        "got {stopped:?}"
    );
    assert!(
        stopping.elapsed() < Duration::from_secs(10),
        "drain not bounded"
    );
    let info = world.consumer_info().await;
    assert_eq!(info.ack_floor.stream_sequence, 1, "acked without insert");

    tokio::task::block_in_place(|| world.clickhouse.restart());
    let sink = RunningSink::start(config);
    world.wait_landed(&run, 501);
    sink.stop().await.expect("clean stop");
}
