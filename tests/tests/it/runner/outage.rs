//! Guarantee 3: a runner that loses the broker keeps running and delivers everything
//! later, each event once in the stream and once in ClickHouse, without seq gaps.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use agent_runner::Outcome as _;
use bench_schemas::SubjectPrefix;
use tokio_util::sync::CancellationToken;

use crate::common::{
    create_stream, journal_events, publish_setup, slow_steps_config, sorted_seqs, stream_messages,
    SinkToClickHouse,
};
use benchstream_tests::runs;
use benchstream_tests::spool::{ids, spool_with, step_messages};
use benchstream_tests::{ClickHouseServer, NatsServer};

async fn wait_for_events(runs: &Path, at_least: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while runs::journal_lines(runs) < at_least {
        assert!(
            Instant::now() < deadline,
            "run stalled before {at_least} events"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_down_at_start_and_mid_run_loses_nothing() {
    // ClickHouse takes a few seconds to start: in parallel with the run.
    let clickhouse = std::thread::spawn(ClickHouseServer::start);
    let nats = NatsServer::start();
    let prefix = SubjectPrefix::default();
    let spec = create_stream(&nats.url(), &prefix).await;
    nats.stop();

    let dir = tempfile::tempdir().expect("tempdir");
    let runs = dir.path().join("runs");
    let config = slow_steps_config(publish_setup(&nats.url(), &prefix, dir.path()), dir.path());
    let runner = tokio::spawn(agent_runner::run(config, CancellationToken::new()));

    wait_for_events(&runs, 10).await;
    tokio::task::block_in_place(|| nats.restart());
    wait_for_events(&runs, 35).await;
    tokio::task::block_in_place(|| nats.stop());
    wait_for_events(&runs, 55).await;
    tokio::task::block_in_place(|| nats.restart());

    let report = runner.await.expect("runner task").expect("run");
    let run = &report.runs[0];
    assert_eq!(
        run.result.turns,
        Some(26),
        "the run went on while the broker was away"
    );
    let delivery = report.delivery.expect("published");
    assert_eq!(delivery.left_in_spool, 0, "{delivery:?}");
    assert!(
        delivery.spooled > 0 && delivery.replayed > 0,
        "{delivery:?}"
    );

    let messages = stream_messages(&nats.url(), &spec).await;
    let ids: BTreeSet<_> = messages.iter().map(|m| m.event.event_id).collect();
    assert_eq!(ids.len(), messages.len(), "an event was stored twice");
    assert_eq!(messages.len() as u64, run.events, "{delivery:?}");
    assert_eq!(
        sorted_seqs(&messages, run.run_id),
        (0..run.events).collect::<Vec<_>>()
    );

    let journal_ids: BTreeSet<_> = journal_events(run).iter().map(|e| e.event_id).collect();
    assert_eq!(
        ids, journal_ids,
        "the stream holds exactly the run's events"
    );

    // And once each in ClickHouse, seq 0..n-1 without gaps (guarantees 2 and 5).
    let clickhouse = tokio::task::block_in_place(|| clickhouse.join()).expect("clickhouse");
    let sink = SinkToClickHouse::start(clickhouse, &nats.url());
    let n = run.events;
    sink.wait_for(
        &format!(
            "SELECT count(), uniqExact(event_id), min(seq), max(seq) \
             FROM benchstream.events_raw FINAL WHERE run_id = '{}'",
            run.run_id
        ),
        &format!("{n}\t{n}\t0\t{}", n - 1),
    )
    .await;
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_spool_stops_the_runs_with_a_clear_error() {
    // Nobody listens on this port: everything goes to a spool too small to hold the run.
    let url = format!("nats://127.0.0.1:{}", benchstream_tests::free_port());
    let dir = tempfile::tempdir().expect("tempdir");
    let mut setup = publish_setup(&url, &SubjectPrefix::default(), dir.path());
    setup.publish.spool.max_bytes = 16 * 1024;
    let config = slow_steps_config(setup, dir.path());

    let started = Instant::now();
    let err = agent_runner::run(config, CancellationToken::new())
        .await
        .expect_err("a full spool is an error");
    assert_eq!(err.exit(), agent_runner::Exit::Spool, "{err}");
    assert!(err.to_string().contains("--spool-max-bytes"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the run was not stopped"
    );

    // The run still ended properly, locally.
    let summary = runs::summary(&runs::only_run_dir(&dir.path().join("runs")));
    assert_eq!(summary["result"]["exit_status"], "exit_error");
    assert_eq!(summary["result"]["early_stop_reason"], "shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_run_is_not_stuck_behind_an_undeliverable_record() {
    let nats = NatsServer::start();
    let prefix = SubjectPrefix::default();
    let spec = create_stream(&nats.url(), &prefix).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let setup = publish_setup(&nats.url(), &prefix, dir.path());
    // Left by a runner of another --subject-prefix: no stream captures it.
    let stranded = step_messages("team-a", 1);
    spool_with(&setup.publish.spool.path, &stranded);

    let config = slow_steps_config(setup, dir.path());
    let report = agent_runner::run(config, CancellationToken::new())
        .await
        .expect("run");
    let run = &report.runs[0];
    let delivery = report.delivery.expect("published");
    assert_eq!(
        (
            delivery.published,
            delivery.quarantined,
            delivery.left_in_spool
        ),
        (run.events, 1, 0),
        "{delivery:?}"
    );
    assert_eq!(delivery.exit(), agent_runner::Exit::Quarantined);

    let stored = stream_messages(&nats.url(), &spec).await;
    assert_eq!(
        stored.len() as u64,
        run.events,
        "every event of the run, once"
    );
    assert_eq!(
        sorted_seqs(&stored, run.run_id),
        (0..run.events).collect::<Vec<_>>()
    );
    let quarantine = bench_delivery::spool_status(&dir.path().join("spool/runner.spool"))
        .expect("status")
        .quarantine;
    assert_eq!(
        quarantine
            .entries
            .iter()
            .map(|e| e.msg_id.clone().unwrap_or_default())
            .collect::<Vec<_>>(),
        ids(&stranded)
    );
}
