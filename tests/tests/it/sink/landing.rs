//! Valid events land: each type in its table with the values it was sent with, and every
//! one in `events_raw` byte for byte, hostile strings included.

use bench_schemas::{BenchmarkEvent, EventType, Payload};
use serde_json::Value;

use super::setup::{RunningSink, World};
use benchstream_tests::events::{fixture, publish, Run};

/// The row of `event_id` in `table`, as JSON.
fn row(world: &World, table: &str, event_id: uuid::Uuid) -> serde_json::Map<String, Value> {
    let text = world.query(&format!(
        "SELECT * FROM benchstream.{table} FINAL WHERE event_id = '{event_id}' FORMAT JSONEachRow"
    ));
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => map,
        other => panic!("{table}: no single row for {event_id}: {other:?} from {text:?}"),
    }
}

/// A JSON value in the form both sides can be compared in: ClickHouse's JSONEachRow
/// writes booleans as 0/1, 64-bit integers as strings and `1.0` as `1`, so every number
/// (or numeric string) becomes the text of its f64 value.
fn normalized(value: &Value) -> Value {
    match value {
        Value::Bool(b) => Value::from(u8::from(*b).to_string()),
        Value::Number(n) => Value::from(n.as_f64().map(|f| f.to_string()).unwrap_or_default()),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        Value::String(s) => match s.parse::<f64>() {
            Ok(f) => Value::from(f.to_string()),
            Err(_) => value.clone(),
        },
        other => other.clone(),
    }
}

fn assert_column(row: &serde_json::Map<String, Value>, table: &str, column: &str, want: &Value) {
    let got = row
        .get(column)
        .unwrap_or_else(|| panic!("{table} has no column {column}"));
    assert_eq!(
        normalized(got),
        normalized(want),
        "{table}.{column} differs"
    );
}

/// Envelope columns, every payload field stored under its own name, and the flattened or
/// JSON-text columns of each type.
fn check_typed_row(world: &World, event: &BenchmarkEvent) {
    let table = event_sink::rows::typed_table(event.event_type());
    let row = row(world, table, event.event_id);
    let wire: Value = serde_json::from_slice(&event.to_json()).expect("event JSON");
    for column in [
        "event_id",
        "run_id",
        "task_id",
        "step_id",
        "seq",
        "policy_id",
        "cfg_hash",
        "env_hash",
        "seed",
        "host",
    ] {
        assert_column(&row, table, column, &wire[column]);
    }
    assert_column(
        &row,
        table,
        "ts_ms",
        &Value::from(event.ts.timestamp_millis()),
    );
    let data = wire["data"].as_object().expect("data object");
    // Nested objects are flattened or stored as JSON text: checked below.
    let nested =
        |v: &Value| v.is_object() || v.as_array().is_some_and(|a| a.iter().any(Value::is_object));
    for (field, value) in data {
        if row.contains_key(field) && !nested(value) {
            assert_column(&row, table, field, value);
        }
    }
    let json_column = |column: &str| -> Value {
        let text = row[column].as_str().expect("JSON text column");
        serde_json::from_str(text).expect("column holds JSON")
    };
    match &event.payload {
        Payload::RunStart(p) => {
            assert_column(
                &row,
                table,
                "retry_max_retries",
                &data["retry_policy"]["max_retries"],
            );
            assert_column(
                &row,
                table,
                "sandbox_memory_mb",
                &data["sandbox_limits"]["memory_mb"],
            );
            assert_column(&row, table, "scenario_sha256", &data["scenario"]["sha256"]);
            assert_column(&row, table, "image_reference", &data["image"]["reference"]);
            assert_column(&row, table, "image_digest", &data["image"]["digest"]);
            assert_column(
                &row,
                table,
                "observation_window",
                &Value::from(p.config.strategy_params.observation_window),
            );
        }
        Payload::ToolCall(_) => {
            let footprint = &data["evidence_footprint"];
            assert_column(&row, table, "files_read", &footprint["files_read"]);
            assert_column(&row, table, "bytes_written", &footprint["bytes_written"]);
        }
        Payload::Deliberation(p) => {
            let reasons: Vec<&str> = p.actions.iter().map(|a| a.reason.as_str()).collect();
            assert_column(&row, table, "action_reasons", &Value::from(reasons));
            assert_column(&row, table, "cost_usd", &Value::from(p.cost_usd));
        }
        Payload::Failure(p) => {
            assert_column(
                &row,
                table,
                "root_kind",
                &Value::from(p.first_failure_root.kind()),
            );
            assert_eq!(
                json_column("first_failure_root"),
                data["first_failure_root"]
            );
            assert_eq!(json_column("recovery_attempts"), data["recovery_attempts"]);
            assert_column(
                &row,
                table,
                "error_category",
                &data["final_error_state"]["error_category"],
            );
        }
        Payload::OptimizerUpdate(_) => {
            assert_eq!(json_column("suggested_config"), data["suggested_config"]);
        }
        Payload::RunStop(_)
        | Payload::Step(_)
        | Payload::ContextDecision(_)
        | Payload::TestOutcome(_)
        | Payload::TaskValidation(_)
        | Payload::GenaiEvent(_) => {}
        Payload::ExperimentDecision(_) => {}
    }
}

/// `events_raw.raw` of the event, hex-encoded by ClickHouse.
fn raw_hex(world: &World, event: &BenchmarkEvent) -> String {
    world.query(&format!(
        "SELECT hex(raw) FROM benchstream.events_raw FINAL WHERE event_id = '{}'",
        event.event_id
    ))
}

fn hex_upper(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_type_lands_in_its_table_with_its_values() {
    let world = World::start().await;
    let sink = RunningSink::start_in(&world);
    let mut run = Run::default();
    let events = run.one_of_each();
    for event in &events {
        publish(&world.js, event).await;
    }

    world.wait_landed(&run, events.len());
    for event in &events {
        check_typed_row(&world, event);
        assert_eq!(raw_hex(&world, event), hex_upper(&event.to_json()));
        let typed = event_sink::rows::typed_table(event.event_type());
        assert_eq!(
            world.query(&format!("SELECT count() FROM benchstream.{typed} FINAL")),
            "1",
            "{typed} holds exactly its event"
        );
    }
    let raw_types = world.query(&format!(
        "SELECT groupArray(type) FROM (SELECT type FROM benchstream.events_raw FINAL \
         WHERE run_id = '{}' ORDER BY seq)",
        run.run_id
    ));
    let every_type: Vec<String> = EventType::ALL
        .iter()
        .map(|t| format!("'{}'", t.as_str()))
        .collect();
    assert_eq!(raw_types, format!("[{}]", every_type.join(",")));
    sink.stop().await.expect("clean stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_strings_read_back_byte_for_byte() {
    const HOSTILE: &str = "quote ' double \" back \\ nl \n cr \r tab \t nul \0 emoji 😀 \
                           sql '); DROP TABLE steps; -- \u{202e} \\N end";
    let world = World::start().await;
    let sink = RunningSink::start_in(&world);
    let mut run = Run::default();

    let mut step = run.stamp(fixture(EventType::Step));
    step.task_id = HOSTILE.to_owned();
    step.host = format!("{HOSTILE} host");
    if let Payload::Step(s) = &mut step.payload {
        s.content = HOSTILE.repeat(3);
    }
    let mut call = run.stamp(fixture(EventType::ToolCall));
    if let Payload::ToolCall(c) = &mut call.payload {
        c.tool_name = HOSTILE.to_owned();
        c.evidence_footprint.files_read = vec![HOSTILE.to_owned(), String::new()];
    }
    for event in [&step, &call] {
        publish(&world.js, event).await;
    }
    world.wait_landed(&run, 2);

    let hex_of = |sql: &str| world.query(sql);
    assert_eq!(
        hex_of(&format!(
            "SELECT hex(task_id), hex(host), hex(content) FROM benchstream.steps FINAL \
             WHERE event_id = '{}'",
            step.event_id
        )),
        format!(
            "{}\t{}\t{}",
            hex_upper(HOSTILE.as_bytes()),
            hex_upper(format!("{HOSTILE} host").as_bytes()),
            hex_upper(HOSTILE.repeat(3).as_bytes())
        )
    );
    assert_eq!(
        hex_of(&format!(
            "SELECT hex(tool_name), hex(files_read[1]), length(files_read[2]) \
             FROM benchstream.tool_calls FINAL WHERE event_id = '{}'",
            call.event_id
        )),
        format!(
            "{}\t{}\t0",
            hex_upper(HOSTILE.as_bytes()),
            hex_upper(HOSTILE.as_bytes())
        )
    );
    for event in [&step, &call] {
        assert_eq!(raw_hex(&world, event), hex_upper(&event.to_json()));
    }
    assert_eq!(
        world.query("SELECT count() FROM benchstream.dead_letters"),
        "0"
    );
    sink.stop().await.expect("clean stop");
}
