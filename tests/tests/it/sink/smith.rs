//! Smith protocol events land: the 49 events Smith's own code produced, each published
//! twice with fresh (non-UUID) message ids, are stored once each in the same typed
//! tables as native events, with `protocol = 'smith'`, mapped values, NULL where Smith
//! is silent, the original bytes in `events_raw`, and no false seq gap.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use async_nats::HeaderMap;
use bench_analysis::{Query, Table};
use bench_schemas::subject::headers;
use bench_schemas::{decode_message, Decoded, EventType, SubjectPrefix};
use serde_json::{json, Map, Value};

use super::setup::{RunningSink, World};
use crate::common::wait_for;
use benchstream_tests::events::publish_raw;

/// sha256 of the Smith fixture (also pinned by `schemas/tests/smith.rs`).
const FIXTURE_SHA256: &str = "2a7171ad3a40e3eb9f84bfca24eab95f4e107c303598fadb3c74db10a389417a";

/// The fixture's lines, each a Smith event exactly as its producer emitted it.
pub(crate) fn smith_events() -> Vec<Vec<u8>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../schemas/tests/fixtures/smith/smith-events.jsonl");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(bench_schemas::sha256_hex(&bytes).as_str(), FIXTURE_SHA256);
    bytes
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// Publishes a Smith event on its run's subject with `msg_id` as `Nats-Msg-Id`, as a
/// Smith producer that sets its own (non-UUID) ids would.
async fn publish_smith(world: &World, bytes: &[u8], msg_id: &str) -> (uuid::Uuid, EventType) {
    let Ok(Decoded::Smith(event)) = decode_message(bytes, None) else {
        panic!("not a Smith event: {}", String::from_utf8_lossy(bytes))
    };
    let subject = SubjectPrefix::default().event_subject(event.run_id, event.event_type());
    let mut h = HeaderMap::new();
    h.insert(headers::MSG_ID, msg_id);
    publish_raw(&world.js, subject, Some(h), bytes.to_vec()).await;
    (event.event_id, event.event_type())
}

/// The shipped `lost_events` query's answer, as `bench-analysis query` runs it.
async fn lost_events(world: &World, stale_minutes: &str) -> Table {
    let client = world.clickhouse.client_of("benchstream");
    let params = [("stale_minutes".to_owned(), stale_minutes.to_owned())].into();
    Query::find("lost_events")
        .expect("shipped query")
        .run(&client, &params)
        .await
        .expect("lost_events answers")
}

/// Rows of a `SELECT … FORMAT JSONEachRow`.
fn rows(world: &World, sql: &str) -> Vec<Map<String, Value>> {
    world
        .query(&format!("{sql} FORMAT JSONEachRow"))
        .lines()
        .map(|line| match serde_json::from_str(line) {
            Ok(Value::Object(row)) => row,
            other => panic!("{line}: {other:?}"),
        })
        .collect()
}

/// The rows of a typed table that came from Smith, keyed by event id.
fn smith_rows(world: &World, event_type: EventType) -> BTreeMap<String, Map<String, Value>> {
    let table = event_sink::rows::typed_table(event_type);
    rows(
        world,
        &format!("SELECT * FROM benchstream.{table} FINAL WHERE protocol = 'smith'"),
    )
    .into_iter()
    .map(|row| (row["event_id"].as_str().unwrap_or_default().to_owned(), row))
    .collect()
}

/// The distinct values of `column` over rows.
fn values<'a>(
    rows: impl IntoIterator<Item = &'a Map<String, Value>>,
    column: &str,
) -> BTreeSet<String> {
    rows.into_iter().map(|r| r[column].to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smith_events_land_once_each_mapped_into_the_typed_tables() {
    let world = World::start().await;
    let sink = RunningSink::start_in(&world);
    let events = smith_events();
    assert_eq!(events.len(), 49);
    let mut expected = BTreeMap::<EventType, BTreeSet<String>>::new();
    for (copy, _) in ["first", "second"].iter().enumerate() {
        for (i, bytes) in events.iter().enumerate() {
            // Fresh ids per publish: JetStream's duplicate window does not catch the
            // second copy; the id derived from the event does.
            let (id, event_type) = publish_smith(&world, bytes, &format!("smith-{copy}-{i}")).await;
            expected
                .entry(event_type)
                .or_default()
                .insert(id.to_string());
        }
    }
    world.wait_acked(98).await;
    wait_for(
        &world.clickhouse,
        "SELECT count() FROM benchstream.events_raw FINAL WHERE protocol = 'smith'",
        "49",
        super::setup::LANDING,
    );
    assert_eq!(
        world.query("SELECT count() FROM benchstream.dead_letters"),
        "0"
    );

    // Each event once, in its type's table, under its derived id.
    for event_type in EventType::ALL {
        let got: BTreeSet<String> = smith_rows(&world, event_type).into_keys().collect();
        assert_eq!(
            got,
            expected.remove(&event_type).unwrap_or_default(),
            "{event_type}"
        );
    }
    // events_raw keeps every original byte.
    let raw: BTreeSet<Vec<u8>> = world
        .query(
            "SELECT raw FROM benchstream.events_raw FINAL WHERE protocol = 'smith' FORMAT TSVRaw",
        )
        .lines()
        .map(|l| l.as_bytes().to_vec())
        .collect();
    assert_eq!(raw, events.iter().cloned().collect());
    let raw_envelope = rows(
        &world,
        "SELECT DISTINCT seq, host FROM benchstream.events_raw FINAL WHERE protocol = 'smith'",
    );
    assert_eq!(
        raw_envelope,
        vec![json!({"seq": null, "host": null})
            .as_object()
            .cloned()
            .unwrap_or_default()]
    );

    check_run_starts(&world);
    check_run_stops(&world);
    check_steps(&world);
    check_tool_calls(&world);
    check_context_decisions_and_failures(&world);
    check_optimizer_updates(&world);

    // No run is reported lost: none has a seq, and every one has its run_stop.
    let lost = lost_events(&world, "0").await;
    assert!(
        lost.rows.is_empty(),
        "lost_events reports a Smith run: {lost:?}"
    );
    sink.stop().await.expect("clean stop");
}

fn check_run_starts(world: &World) {
    let starts = smith_rows(world, EventType::RunStart);
    assert_eq!(starts.len(), 3);
    for row in starts.values() {
        // Smith does not say which model, provider or strategy ran, nor pin a scenario.
        for silent in [
            "model",
            "provider",
            "strategy",
            "scenario_name",
            "scenario_sha256",
            "fixture_sha256",
            "scoring_version",
            "runner_version",
            "host",
            "seq",
            "cost_limit_usd",
        ] {
            assert_eq!(row[silent], Value::Null, "run_starts.{silent}");
        }
        assert_eq!(row["sandbox_cpu_cores"], json!(2));
        assert_eq!(row["protocol"], json!("smith"));
    }
    // Durations `{secs, nanos}` in milliseconds: (300 s, 60 s) and twice (600 s, 300 s).
    let timeouts: BTreeSet<(String, String)> = starts
        .values()
        .map(|r| {
            (
                r["execution_timeout_ms"].to_string(),
                r["no_progress_timeout_ms"].to_string(),
            )
        })
        .collect();
    assert_eq!(
        timeouts,
        [("\"300000\"", "\"60000\""), ("\"600000\"", "\"300000\"")]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
            .into()
    );
    // Widened f32 values are stored as the decimals the producer set.
    assert_eq!(
        values(starts.values(), "temperature"),
        ["0.4", "0.7"].map(str::to_owned).into()
    );
    assert_eq!(
        values(starts.values(), "pruning_threshold"),
        ["0.8".to_owned()].into()
    );
    // The producers' own short DefaultHasher hashes, verbatim.
    assert_eq!(
        values(starts.values(), "cfg_hash"),
        [
            "\"25a3a0e68d21ae40\"",
            "\"95fe0a1ae5b653cf\"",
            "\"bea1728aeeb092ec\""
        ]
        .map(str::to_owned)
        .into()
    );
}

fn check_run_stops(world: &World) {
    let stops = smith_rows(world, EventType::RunStop);
    assert_eq!(stops.len(), 3);
    for row in stops.values() {
        for silent in [
            "exit_status",
            "cost_usd",
            "api_calls",
            "turns",
            "host",
            "seq",
        ] {
            assert_eq!(row[silent], Value::Null, "run_stops.{silent}");
        }
    }
    let first = stops
        .values()
        .find(|r| r["run_id"] == json!("56f729de-84ee-4dc9-9471-0ecaa04dc88f"))
        .expect("run 56f729de stopped");
    assert_eq!(first["success"], json!(1));
    assert_eq!(first["wall_time_ms"], json!("48210"));
    assert_eq!(first["total_tokens"], json!("18443"));
    assert_eq!(first["final_score"], json!(95));
}

fn check_steps(world: &World) {
    let steps = smith_rows(world, EventType::Step);
    assert_eq!(steps.len(), 15);
    assert_eq!(
        values(steps.values(), "step_type"),
        ["act", "conclude", "debate", "observe", "plan", "reason"]
            .map(|s| format!("\"{s}\""))
            .into()
    );
    // Smith says whether a step was planned, not which plan item: the index is NULL.
    assert_eq!(
        values(steps.values(), "planned_step"),
        ["null".to_owned()].into()
    );
    let plan = steps
        .values()
        .find(|r| r["content"] == json!("1. find separability_matrix 2. fix nesting 3. run tests"))
        .expect("plan step");
    assert_eq!(plan["planned"], json!(1));
    assert_eq!(plan["context_kb"], json!(13));
    assert_eq!(plan["wall_time_ms"], json!("475"));
}

fn check_tool_calls(world: &World) {
    let calls = smith_rows(world, EventType::ToolCall);
    assert_eq!(calls.len(), 9);
    let by_kind: BTreeMap<String, Value> = calls
        .values()
        .map(|r| {
            (
                r["exit_kind"].as_str().unwrap_or_default().to_owned(),
                r["exit_message"].clone(),
            )
        })
        .collect();
    assert_eq!(
        by_kind.keys().cloned().collect::<BTreeSet<_>>(),
        [
            "deterministic",
            "flake",
            "ok",
            "oom",
            "system_error",
            "timeout",
            "user_error"
        ]
        .map(str::to_owned)
        .into()
    );
    for silent in ["ok", "oom", "timeout"] {
        assert_eq!(by_kind[silent], Value::Null, "{silent} carries no message");
    }
    for with_message in ["deterministic", "flake", "system_error", "user_error"] {
        assert!(by_kind[with_message].is_string(), "{with_message}");
    }
    assert_eq!(
        values(calls.values(), "intent_accuracy"),
        ["0.2", "0.9"].map(str::to_owned).into()
    );
    assert_eq!(
        values(calls.values(), "user_feedback_score"),
        ["4.5", "null"].map(str::to_owned).into()
    );
}

fn check_context_decisions_and_failures(world: &World) {
    let decisions = smith_rows(world, EventType::ContextDecision);
    assert_eq!(decisions.len(), 8);
    assert_eq!(
        values(decisions.values(), "segment_type"),
        [
            "conversation_history",
            "documentation",
            "error_logs",
            "file_content",
            "reasoning_context",
            "search_results",
            "tool_output",
        ]
        .map(|s| format!("\"{s}\""))
        .into()
    );
    let failures = smith_rows(world, EventType::Failure);
    assert_eq!(failures.len(), 8);
    assert_eq!(
        values(failures.values(), "root_kind"),
        ["build", "context", "flake", "import", "path", "planning", "semantic", "tool"]
            .map(|s| format!("\"{s}\""))
            .into()
    );
    for row in failures.values() {
        let root: Value = serde_json::from_str(row["first_failure_root"].as_str().unwrap_or("{}"))
            .expect("root JSON");
        assert_eq!(root["kind"], row["root_kind"]);
    }
}

fn check_optimizer_updates(world: &World) {
    let updates = smith_rows(world, EventType::OptimizerUpdate);
    assert_eq!(updates.len(), 3);
    for row in updates.values() {
        assert_eq!(row["suggested_model"], Value::Null);
        assert_eq!(row["suggested_strategy"], Value::Null);
        let config: Value =
            serde_json::from_str(row["suggested_config"].as_str().unwrap_or("{}")).expect("JSON");
        let timeouts = (
            &config["execution_timeout_ms"],
            &config["no_progress_timeout_ms"],
        );
        assert!(
            [
                (json!(300_000), json!(60_000)),
                (json!(600_000), json!(300_000))
            ]
            .iter()
            .any(|(e, n)| timeouts == (e, n)),
            "{timeouts:?}"
        );
        // 0.20000000298023224 and 0.6000000238418579 on the wire.
        assert_eq!(config["temperature"], json!(0.2));
        assert_eq!(config["pruning_threshold"], json!(0.6));
        assert!(config.get("model").is_none(), "no model is made up");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_smith_run_without_run_stop_is_reported_lost_but_never_for_a_seq_gap() {
    let world = World::start().await;
    let sink = RunningSink::start_in(&world);
    let run_id = uuid::Uuid::now_v7();
    // A run of which only two steps arrived, built by hand in Smith's shape, an hour ago.
    let ts = (chrono::Utc::now() - chrono::Duration::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
    for step_type in ["Reason", "Act"] {
        let body = json!({"Step": {"content": step_type, "context_kb": 1, "planned_step": false,
            "step_type": step_type, "tokens_in": 1, "tokens_out": 1, "wall_time_ms": 1}});
        let event = json!({
            "cfg_hash": "1", "data": body, "env_hash": "2", "event_type": body,
            "policy_id": "p", "run_id": run_id, "seed": 0,
            "step_id": uuid::Uuid::now_v7(), "task_id": "t", "ts": ts});
        publish_smith(
            &world,
            event.to_string().as_bytes(),
            &format!("hand-{step_type}"),
        )
        .await;
    }
    world.wait_acked(2).await;
    wait_for(
        &world.clickhouse,
        &format!("SELECT count() FROM benchstream.steps FINAL WHERE run_id = '{run_id}'"),
        "2",
        super::setup::LANDING,
    );
    let lost = lost_events(&world, "30").await;
    assert_eq!(lost.rows.len(), 1, "{lost:?}");
    assert_eq!(lost.get(0, "run_id"), Some(run_id.to_string().as_str()));
    assert_eq!(lost.get(0, "problem"), Some("no_run_stop"));
    assert_eq!(
        lost.get(0, "missing"),
        None,
        "unknown: a Smith run has no seq"
    );
    sink.stop().await.expect("clean stop");
}
