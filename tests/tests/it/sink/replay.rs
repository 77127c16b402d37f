//! A row the real ClickHouse refuses every time is dead-lettered (after its refusal
//! repeats for the row alone) while the rows inserted with it land; once the cause is
//! fixed, `dead-letters replay` brings it back through the sink, once, and says what it
//! skipped and why.

use bench_schemas::{EventType, SubjectPrefix};
use event_sink::replay::{self, Outcome, Selection, Skip};
use event_sink::Config;

use super::setup::{RunningSink, World, LANDING};
use crate::common::wait_for;
use benchstream_tests::events::{fixture, publish, publish_all, publish_raw, Run};

/// A check that refuses the steps of one run, as a materialized view a table's owner
/// added would: code 395 for that row, every time, from the real server.
fn refuse_steps_of(run: &Run) -> String {
    format!(
        "CREATE MATERIALIZED VIEW benchstream.refuse_one_run ENGINE = Null AS \
         SELECT throwIf(run_id = toUUID('{}')) AS refused FROM benchstream.steps",
        run.run_id
    )
}

async fn replayed(config: &Config, selection: Selection) -> replay::Report {
    replay::replay(config, &selection)
        .await
        .expect("replay runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_clickhouse_always_refuses_is_dead_lettered_and_replayed_once_the_cause_is_fixed() {
    let world = World::start().await;
    let config = world.args().resolve().expect("valid settings");
    let sink = RunningSink::start(config.clone());
    let mut good = Run::default();
    publish(&world.js, &good.stamp(fixture(EventType::Step))).await;
    // Migrated and ingesting before the check is added.
    tokio::task::block_in_place(|| world.wait_landed(&good, 1));
    let mut refused = Run::default();
    world.query(&refuse_steps_of(&refused));

    // The refused step is published among good events: they share inserts.
    let mut events = good.events(20);
    let bad_step = refused.stamp(fixture(EventType::Step));
    events.insert(10, bad_step.clone());
    publish_all(&world.js, events, 64).await;
    let subject = SubjectPrefix::default().event_subject(good.run_id, EventType::Step);
    let malformed = publish_raw(&world.js, subject, None, b"{\"type\": ".to_vec()).await;
    tokio::task::block_in_place(|| {
        world.wait_landed(&good, 21);
        wait_for(
            &world.clickhouse,
            "SELECT error_class, toString(event_id), position(error, 'Code: 395') > 0 \
             FROM benchstream.dead_letters FINAL ORDER BY stream_seq",
            &format!(
                "rejected_by_clickhouse\t{}\t1\nmalformed_json\t\\N\t0",
                bad_step.event_id
            ),
            LANDING,
        );
    });
    world.wait_acked(malformed).await;
    assert_eq!(
        world.query(&format!(
            "SELECT count() FROM benchstream.events_raw WHERE run_id = '{}'",
            refused.run_id
        )),
        "0"
    );

    // A dry run while the cause is still there: it would replay (the sink decides about
    // ClickHouse), and publishes nothing.
    let dry = replayed(
        &config,
        Selection {
            class: Some("rejected_by_clickhouse".into()),
            dry_run: true,
            ..Selection::default()
        },
    )
    .await;
    assert_eq!((dry.replayed(), dry.skipped()), (1, 0), "{dry}");
    assert_eq!(dry.considered[0].event_id, Some(bad_step.event_id));
    assert_eq!(
        dry.considered[0].outcome,
        Outcome::Replayed { new_seq: None }
    );
    assert_eq!(
        world.consumer_info().await.num_pending,
        0,
        "dry run published"
    );

    // The cause is fixed; every class is replayed: the refused step lands, once, and
    // the malformed message is skipped as still malformed.
    world.query("DROP TABLE benchstream.refuse_one_run");
    let report = replayed(&config, Selection::default()).await;
    assert_eq!((report.replayed(), report.skipped()), (1, 1), "{report}");
    let Outcome::Replayed { new_seq: Some(seq) } = report.considered[0].outcome else {
        panic!("not replayed: {report}");
    };
    assert!(
        matches!(&report.considered[1].outcome,
            Outcome::Skipped(Skip::StillRefused { class, .. }) if class == "malformed_json"),
        "{report}"
    );
    tokio::task::block_in_place(|| world.wait_landed(&refused, 1));
    world.wait_acked(seq).await;

    // Replaying again changes nothing: the event is stored.
    let again = replayed(
        &config,
        Selection {
            class: Some("rejected_by_clickhouse".into()),
            ..Selection::default()
        },
    )
    .await;
    assert_eq!(
        again.considered[0].outcome,
        Outcome::Skipped(Skip::AlreadyStored)
    );
    assert_eq!(again.replayed(), 0, "{again}");
    // Nothing newer than now.
    let later = replayed(
        &config,
        Selection {
            since: Some(u32::MAX),
            ..Selection::default()
        },
    )
    .await;
    assert!(later.considered.is_empty(), "{later}");
    sink.stop().await.expect("clean stop");
    assert_eq!(
        world.query(&format!(
            "SELECT count(), uniqExact(event_id) FROM benchstream.steps FINAL \
             WHERE run_id = '{}'",
            refused.run_id
        )),
        "1\t1"
    );
    assert_eq!(
        world.query("SELECT count() FROM benchstream.dead_letters FINAL"),
        "2",
        "the replay dead-lettered something again"
    );
}
