//! Bad input never blocks good events: each bad-data class gets one `dead_letters` row
//! with the exact bytes and a readable reason, is terminated, and the valid events
//! published around it all land.

use bench_schemas::{EventType, SubjectPrefix};
use serde_json::Value;

use super::setup::{RunningSink, World, LANDING};
use crate::common::wait_for;
use benchstream_tests::events::{fixture, publish, publish_raw, Run};

/// A bad message: its expected class, a word its error must contain, and its bytes.
struct Bad {
    class: &'static str,
    mentions: &'static str,
    bytes: Vec<u8>,
}

/// The step fixture as JSON, changed by `edit`.
fn edited(edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Vec<u8> {
    let mut value: Value =
        serde_json::from_slice(&fixture(EventType::Step).to_json()).expect("fixture JSON");
    if let Value::Object(map) = &mut value {
        edit(map);
    }
    serde_json::to_vec(&value).expect("serialize")
}

fn bad_messages() -> Vec<Bad> {
    let mut invalid_utf8 = edited(|m| {
        m.insert("host".into(), Value::from("HOST"));
    });
    let at = invalid_utf8
        .windows(4)
        .position(|w| w == b"HOST")
        .expect("marker");
    invalid_utf8[at] = 0xff;
    let oversize = edited(|m| {
        // Over the 1 MiB event limit, under the stream's 1.1 MB message limit.
        m["data"]["content"] = Value::from("x".repeat(1_049_000));
    });
    vec![
        Bad {
            class: "malformed_json",
            mentions: "JSON",
            bytes: b"{\"schema_version\": 1, \"type\": ".to_vec(),
        },
        Bad {
            class: "invalid_utf8",
            mentions: "UTF-8",
            bytes: invalid_utf8,
        },
        Bad {
            class: "not_an_object",
            mentions: "array",
            bytes: b"[1, 2, 3]".to_vec(),
        },
        Bad {
            class: "unknown_version",
            mentions: "schema_version 2",
            bytes: edited(|m| {
                m.insert("schema_version".into(), Value::from(2));
            }),
        },
        Bad {
            class: "unknown_type",
            mentions: "telepathy",
            bytes: edited(|m| {
                m.insert("type".into(), Value::from("telepathy"));
            }),
        },
        Bad {
            class: "oversize",
            mentions: "limit",
            bytes: oversize,
        },
        Bad {
            class: "invalid_field",
            mentions: "host",
            bytes: edited(|m| {
                m.remove("host");
            }),
        },
        Bad {
            class: "invalid_field",
            mentions: "seq",
            bytes: edited(|m| {
                m.insert("seq".into(), Value::from("seven"));
            }),
        },
        Bad {
            class: "invalid_field",
            mentions: "data.tokens_in",
            bytes: edited(|m| {
                m["data"]["tokens_in"] = Value::from(-1);
            }),
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_bad_data_class_goes_to_dead_letters_while_good_events_land() {
    let world = World::start().await;
    let sink = RunningSink::start_in(&world);
    let mut run = Run::default();
    let subject = SubjectPrefix::default().event_subject(run.run_id, EventType::Step);
    let bad = bad_messages();

    let mut good = 0;
    let mut bad_seqs = Vec::new();
    for message in &bad {
        publish(&world.js, &run.stamp(fixture(EventType::Step))).await;
        good += 1;
        let seq = publish_raw(&world.js, subject.clone(), None, message.bytes.clone()).await;
        bad_seqs.push(seq);
    }
    publish(&world.js, &run.stamp(fixture(EventType::Deliberation))).await;
    good += 1;

    world.wait_landed(&run, good);
    wait_for(
        &world.clickhouse,
        "SELECT count() FROM benchstream.dead_letters FINAL",
        &bad.len().to_string(),
        LANDING,
    );
    for (message, seq) in bad.iter().zip(&bad_seqs) {
        let row = world.query(&format!(
            "SELECT error_class, subject, stream, delivered, error \
             FROM benchstream.dead_letters FINAL WHERE stream_seq = {seq} FORMAT JSONEachRow"
        ));
        let row: Value = serde_json::from_str(&row).expect("one dead letter row");
        assert_eq!(row["error_class"], message.class, "{row}");
        assert_eq!(row["subject"], subject.as_str());
        assert_eq!(row["stream"], "BENCH_EVENTS");
        assert_eq!(row["delivered"], "1");
        let raw = world.query(&format!(
            "SELECT hex(raw) FROM benchstream.dead_letters FINAL WHERE stream_seq = {seq}"
        ));
        let sent: String = message.bytes.iter().map(|b| format!("{b:02X}")).collect();
        assert!(raw == sent, "{}: raw bytes differ", message.class);
        let error = row["error"].as_str().expect("error text");
        assert!(
            error.contains(message.mentions),
            "{}: error {error:?} does not mention {:?}",
            message.class,
            message.mentions
        );
    }

    // Terminated and acked: nothing pending, nothing waiting for an ack.
    let last = bad_seqs.last().copied().unwrap_or_default() + 1;
    world.wait_acked(last).await;
    let info = world.consumer_info().await;
    assert_eq!(info.num_ack_pending, 0);
    assert_eq!(info.num_pending, 0);
    sink.stop().await.expect("clean stop");
}
