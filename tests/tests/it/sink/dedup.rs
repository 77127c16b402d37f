//! Each event counts once, however often it reaches ClickHouse: replays of the same
//! event (outside JetStream's duplicate window) and several sinks sharing the consumer.

use bench_schemas::{BenchmarkEvent, EventType};

use super::setup::{RunningSink, World};
use benchstream_tests::events::{envelope, publish_raw, Run};

/// Publishes `event` without `Nats-Msg-Id`, as a replay after the duplicate window
/// looks to JetStream: a new message with the same event.
async fn publish_replay(world: &World, event: &BenchmarkEvent) {
    let (subject, mut headers) = envelope(event);
    headers.insert(
        bench_schemas::subject::headers::MSG_ID,
        uuid::Uuid::now_v7().to_string().as_str(),
    );
    publish_raw(&world.js, subject, Some(headers), event.to_json()).await;
}

/// Every table, read with FINAL, holds each of the run's events once.
fn assert_counted_once(world: &World, run: &Run, expected: usize) {
    world.wait_landed(run, expected);
    let typed: usize = EventType::ALL
        .into_iter()
        .map(|t| {
            world
                .query(&format!(
                    "SELECT count() FROM benchstream.{} FINAL WHERE run_id = '{}'",
                    event_sink::rows::typed_table(t),
                    run.run_id
                ))
                .parse::<usize>()
                .expect("count")
        })
        .sum();
    assert_eq!(typed, expected);
    let distinct = world.query(&format!(
        "SELECT uniqExact(event_id) FROM benchstream.events_raw WHERE run_id = '{}'",
        run.run_id
    ));
    assert_eq!(distinct, expected.to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_delivery_is_counted_once() {
    let world = World::start().await;
    let sink = RunningSink::start_in(&world);
    let mut run = Run::default();
    let events = run.events(16);
    for event in &events {
        publish_replay(&world, event).await;
    }
    assert_counted_once(&world, &run, events.len());
    // The same events again, after the first copies are stored: separate inserts.
    for event in &events {
        publish_replay(&world, event).await;
    }
    world.wait_acked(2 * events.len() as u64).await;
    assert_counted_once(&world, &run, events.len());
    sink.stop().await.expect("clean stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sinks_share_the_consumer_and_count_each_event_once() {
    let world = World::start().await;
    let first = RunningSink::start_in(&world);
    let second = RunningSink::start_in(&world);
    let mut run = Run::default();
    let events = run.events(400);
    for event in events.iter().chain(&events) {
        publish_replay(&world, event).await;
    }
    assert_counted_once(&world, &run, events.len());
    first.stop().await.expect("clean stop");
    second.stop().await.expect("clean stop");
    let info = world.consumer_info().await;
    assert_eq!(info.num_pending, 0);
    assert_eq!(info.num_ack_pending, 0);
    assert_eq!(info.ack_floor.stream_sequence, 2 * events.len() as u64);
}
