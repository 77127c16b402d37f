//! Valid-looking input that must not change what users read: timestamps that would
//! explode the partitions, a different body under a stored event_id (first write wins),
//! subjects that disagree with the body, and a policy with no finished run (no made-up
//! averages).

use std::collections::BTreeSet;

use bench_analysis::{ParamValues, Query, Table, QUERIES};
use bench_schemas::subject::headers;
use bench_schemas::{BenchmarkEvent, EventType, SubjectPrefix};
use chrono::{DateTime, Datelike, Months, TimeZone, Utc};
use event_sink::migrations::{self, MIGRATIONS};
use serde_json::Value;
use uuid::Uuid;

use super::setup::{RunningSink, World, LANDING};
use crate::common::wait_for;
use benchstream_tests::events::{envelope, fixture, publish, publish_all, publish_raw, Run};
use benchstream_tests::ClickHouseServer;

/// How many months the hostile producer spreads its events over.
const MONTHS: u32 = 1_000;

/// The first of those months: 1990-01, so the window (2015-01-01 .. now + 1 day) cuts
/// the range on both sides.
fn first_month() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(1990, 1, 1, 12, 0, 0)
        .single()
        .expect("valid date")
}

/// The ts of month `i`.
fn month(i: u32) -> DateTime<Utc> {
    first_month() + Months::new(i)
}

/// Whether the sink accepts a ts (the documented window, against the clock now).
fn plausible(ts: DateTime<Utc>) -> bool {
    let earliest = Utc
        .with_ymd_and_hms(2015, 1, 1, 0, 0, 0)
        .single()
        .expect("valid date");
    ts >= earliest && ts <= Utc::now() + chrono::Duration::days(1)
}

/// Runs every shipped query (with `run_id`, and a sweep name, where one is required) and
/// returns the answers; panics naming the first query that fails.
async fn every_query_answers(client: &clickhouse::Client, run_id: Uuid) -> Vec<Table> {
    let mut answers = Vec::new();
    for query in QUERIES {
        let mut values = ParamValues::new();
        let params = query.params().expect("declared parameters");
        if params.iter().any(|p| p.name == "run_id") {
            values.insert("run_id".into(), run_id.to_string());
        }
        if params.iter().any(|p| p.name == "sweep") {
            values.insert("sweep".into(), "no-such-sweep".into());
        }
        let table = query
            .run(client, &values)
            .await
            .unwrap_or_else(|e| panic!("query {} fails: {e}", query.name));
        answers.push(table);
    }
    answers
}

/// Active partitions of `table`.
fn partitions(world_clickhouse: &ClickHouseServer, table: &str) -> usize {
    world_clickhouse
        .query(&format!(
            "SELECT uniqExact(partition) FROM system.parts \
             WHERE database = 'benchstream' AND table = '{table}' AND active"
        ))
        .trim()
        .parse()
        .expect("a count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_months_of_ts_stay_in_a_few_partitions_and_every_query_answers() {
    let world = World::start().await;
    let sink = RunningSink::start_in(&world);
    let mut run = Run::default();
    let events: Vec<BenchmarkEvent> = (0..MONTHS)
        .map(|i| {
            let mut event = run.stamp(fixture(EventType::Step));
            event.ts = month(i);
            event
        })
        .collect();
    let accepted: Vec<DateTime<Utc>> = events
        .iter()
        .map(|e| e.ts)
        .filter(|ts| plausible(*ts))
        .collect();
    let years: BTreeSet<i32> = accepted.iter().map(|ts| ts.year()).collect();
    publish_all(&world.js, events, 64).await;

    world.wait_landed(&run, accepted.len());
    wait_for(
        &world.clickhouse,
        "SELECT count() FROM benchstream.dead_letters FINAL WHERE error_class = 'implausible_ts'",
        &(MONTHS as usize - accepted.len()).to_string(),
        LANDING,
    );
    world.wait_acked(u64::from(MONTHS)).await;
    assert_eq!(partitions(&world.clickhouse, "events_raw"), years.len());
    assert_eq!(partitions(&world.clickhouse, "steps"), years.len());
    assert!(years.len() <= 13, "one partition per year since 2015");
    let error = world.query(
        "SELECT error FROM benchstream.dead_letters FINAL \
         WHERE error_class = 'implausible_ts' ORDER BY stream_seq LIMIT 1",
    );
    assert!(error.contains("1990-01-01"), "{error}");

    let answers = every_query_answers(&world.clickhouse.client_of("benchstream"), run.run_id).await;
    let timeline = &answers[QUERIES
        .iter()
        .position(|q| q.name == "run_timeline")
        .expect("run_timeline")];
    assert_eq!(timeline.rows.len(), accepted.len());
    sink.stop().await.expect("clean stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migration_moves_a_thousand_months_into_bounded_partitions_and_every_query_answers() {
    let server = tokio::task::spawn_blocking(ClickHouseServer::start)
        .await
        .expect("server starts");
    let root = server.client();
    migrations::ensure_database(&root, "benchstream", None)
        .await
        .expect("database");
    let db = server.client_of("benchstream");
    // The schema as it was before 0005, filled the way the old partitioning allowed:
    // one event per month for 1,000 months.
    for migration in &MIGRATIONS[..4] {
        for statement in migration.statements() {
            db.query(statement).execute().await.expect("old schema");
        }
    }
    let run_id = Uuid::now_v7();
    let columns = format!(
        "SELECT generateUUIDv4() AS event_id, toUUID('{run_id}') AS run_id, 'task' AS task_id, \
         number AS seq, addMonths(toDateTime({first}), number) AS ts, \
         toInt64(toUInt32(ts)) * 1000 AS ts_ms, 'p' AS policy_id, 'h' AS host, \
         toDateTime({now}) AS received_at, number + 1 AS stream_seq \
         FROM system.numbers LIMIT {MONTHS}",
        first = first_month().timestamp(),
        now = Utc::now().timestamp(),
    );
    server.query(&format!(
        "INSERT INTO benchstream.events_raw (event_id, run_id, task_id, type, seq, ts, ts_ms, \
         host, policy_id, raw, subject, stream_seq, received_at) \
         SELECT event_id, run_id, task_id, 'step', seq, ts, ts_ms, host, policy_id, \
         concat('{{\"seq\":', toString(seq), '}}'), 'bench.events.x.step', stream_seq, \
         received_at FROM ({columns})"
    ));
    server.query(&format!(
        "INSERT INTO benchstream.steps (event_id, run_id, task_id, seq, ts, ts_ms, policy_id, \
         host, received_at, step_type) \
         SELECT event_id, run_id, task_id, seq, ts, ts_ms, policy_id, host, received_at, 'act' \
         FROM ({columns})"
    ));
    assert_eq!(partitions(&server, "events_raw"), MONTHS as usize);

    // 1-4 were applied by hand above, unrecorded: they run again (idempotent), then 5
    // to the last (which alter the moved tables).
    let applied = migrations::migrate(&db, None)
        .await
        .expect("migrations from 0005 on apply");
    let all: Vec<u32> = MIGRATIONS.iter().map(|m| m.version).collect();
    assert_eq!(applied, all);
    let accepted: Vec<DateTime<Utc>> = (0..MONTHS).map(month).filter(|ts| plausible(*ts)).collect();
    let years: BTreeSet<i32> = accepted.iter().map(|ts| ts.year()).collect();
    let count = |sql: &str| server.query(sql).trim().to_owned();
    assert_eq!(
        count("SELECT count() FROM benchstream.events_raw FINAL"),
        accepted.len().to_string()
    );
    assert_eq!(
        count("SELECT count() FROM benchstream.steps FINAL"),
        accepted.len().to_string()
    );
    assert_eq!(
        count("SELECT count() FROM benchstream.event_ids FINAL"),
        accepted.len().to_string()
    );
    assert_eq!(
        count(
            "SELECT count() FROM benchstream.dead_letters FINAL \
             WHERE error_class = 'implausible_ts' AND isNotNull(event_id)"
        ),
        (MONTHS as usize - accepted.len()).to_string()
    );
    assert_eq!(partitions(&server, "events_raw"), years.len());
    assert_eq!(partitions(&server, "steps"), years.len());
    assert_eq!(
        count("SELECT count() FROM system.tables WHERE database = 'benchstream' AND name LIKE '%_000_'"),
        "0",
        "no table left behind"
    );
    // event_ids hashes what events_raw holds, with the sink's own hash.
    assert_eq!(
        count(
            "SELECT count() FROM benchstream.event_ids \
             WHERE body_hash IN (SELECT sipHash64(raw) FROM benchstream.events_raw)"
        ),
        accepted.len().to_string()
    );

    let answers = every_query_answers(&db, run_id).await;
    let lost = &answers[QUERIES
        .iter()
        .position(|q| q.name == "lost_events")
        .expect("lost_events")];
    assert_eq!(
        lost.rows.len(),
        1,
        "the run has gaps where events were moved out"
    );
    assert_eq!(
        migrations::migrate(&db, None).await.expect("nothing left"),
        Vec::<u32>::new()
    );
}

/// The run_stop fixture's JSON with its result flipped, as a forger would send it.
pub(crate) fn flipped(run_stop: &BenchmarkEvent) -> Vec<u8> {
    let mut value: Value = serde_json::from_slice(&run_stop.to_json()).expect("JSON");
    let success = value["data"]["success"].as_bool().expect("success");
    value["data"]["success"] = Value::from(!success);
    value["data"]["exit_status"] = Value::from("exit_error");
    serde_json::to_vec(&value).expect("serialize")
}

/// The headers of `event` under a fresh `Nats-Msg-Id`: what a publish after JetStream's
/// duplicate window amounts to.
pub(crate) fn past_the_dedup_window(event: &BenchmarkEvent) -> (String, async_nats::HeaderMap) {
    let (subject, mut h) = envelope(event);
    h.insert(headers::MSG_ID, Uuid::now_v7().to_string().as_str());
    (subject, h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_run_stop_after_the_dedup_window_changes_nothing_and_is_listed() {
    let world = World::start().await;
    let sink = RunningSink::start_in(&world);
    let mut run = Run::default();
    let start = run.stamp(fixture(EventType::RunStart));
    let stop = run.stamp(fixture(EventType::RunStop));
    publish(&world.js, &start).await;
    let original_seq = publish(&world.js, &stop).await;
    world.wait_landed(&run, 2);
    let db = world.clickhouse.client_of("benchstream");
    let leaderboard = Query::find("leaderboard").expect("shipped");
    let before = leaderboard
        .run(&db, &ParamValues::new())
        .await
        .expect("leaderboard");

    // The same bytes again, and a flipped result, both past the dedup window.
    let (subject, h) = past_the_dedup_window(&stop);
    let same_seq = publish_raw(&world.js, subject, Some(h), stop.to_json()).await;
    let (subject, h) = past_the_dedup_window(&stop);
    let forged_seq = publish_raw(&world.js, subject, Some(h), flipped(&stop)).await;
    wait_for(
        &world.clickhouse,
        "SELECT count() FROM benchstream.dead_letters FINAL WHERE error_class = 'conflict'",
        "1",
        LANDING,
    );
    world.wait_acked(forged_seq).await;

    let after = leaderboard
        .run(&db, &ParamValues::new())
        .await
        .expect("leaderboard");
    assert_eq!(after.rows, before.rows, "the leaderboard is unchanged");
    let success = stop_success(&stop);
    assert_eq!(
        world.query(&format!(
            "SELECT count(), any(success), any(exit_status) FROM benchstream.run_stops FINAL \
             WHERE run_id = '{}'",
            run.run_id
        )),
        format!("1\t{}\t{}", u8::from(success), stop_exit_status(&stop))
    );
    // The identical copy is a duplicate, not a conflict: nothing was written for it.
    assert_eq!(
        world.query(&format!(
            "SELECT count() FROM benchstream.events_raw WHERE stream_seq = {same_seq}"
        )),
        "0"
    );

    let conflicts = Query::find("conflicts")
        .expect("shipped")
        .run(&db, &ParamValues::new())
        .await
        .expect("conflicts");
    assert_eq!(conflicts.rows.len(), 1);
    let event_id = stop.event_id.to_string();
    let original = original_seq.to_string();
    let forged = forged_seq.to_string();
    assert_eq!(conflicts.get(0, "event_id"), Some(event_id.as_str()));
    assert_eq!(conflicts.get(0, "type"), Some("run_stop"));
    assert_eq!(
        conflicts.get(0, "stored_stream_seq"),
        Some(original.as_str())
    );
    assert_eq!(
        conflicts.get(0, "conflict_stream_seq"),
        Some(forged.as_str())
    );
    let conflict_raw = String::from_utf8(flipped(&stop)).expect("UTF-8");
    assert_eq!(
        conflicts.get(0, "conflict_raw"),
        Some(conflict_raw.as_str())
    );
    let error = world
        .query("SELECT error FROM benchstream.dead_letters FINAL WHERE error_class = 'conflict'");
    assert!(
        error.contains(&format!("stream message {original_seq}")),
        "{error}"
    );
    sink.stop().await.expect("clean stop");
}

pub(crate) fn stop_success(stop: &BenchmarkEvent) -> bool {
    let value: Value = serde_json::from_slice(&stop.to_json()).expect("JSON");
    value["data"]["success"].as_bool().expect("success")
}

pub(crate) fn stop_exit_status(stop: &BenchmarkEvent) -> String {
    let value: Value = serde_json::from_slice(&stop.to_json()).expect("JSON");
    value["data"]["exit_status"]
        .as_str()
        .expect("exit_status")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subject_that_disagrees_with_the_body_is_dead_lettered() {
    let world = World::start().await;
    let sink = RunningSink::start_in(&world);
    let mut run = Run::default();
    let prefix = SubjectPrefix::default();
    let step = run.stamp(fixture(EventType::Step));
    let other_type = run.stamp(fixture(EventType::Step));
    let other_run = run.stamp(fixture(EventType::Step));
    publish(&world.js, &step).await;
    let (_, h) = envelope(&other_type);
    let spoofed_type = prefix.event_subject(run.run_id, EventType::Failure);
    let type_seq = publish_raw(&world.js, spoofed_type, Some(h), other_type.to_json()).await;
    let (_, h) = envelope(&other_run);
    let spoofed_run = prefix.event_subject(Uuid::now_v7(), EventType::Step);
    let run_seq = publish_raw(&world.js, spoofed_run, Some(h), other_run.to_json()).await;

    world.wait_landed(&run, 1);
    wait_for(
        &world.clickhouse,
        "SELECT count() FROM benchstream.dead_letters FINAL WHERE error_class = 'subject_mismatch'",
        "2",
        LANDING,
    );
    world.wait_acked(run_seq).await;
    for (seq, event) in [(type_seq, &other_type), (run_seq, &other_run)] {
        assert_eq!(
            world.query(&format!(
                "SELECT toString(event_id) FROM benchstream.dead_letters FINAL \
                 WHERE stream_seq = {seq} AND error_class = 'subject_mismatch'"
            )),
            event.event_id.to_string()
        );
    }
    assert_eq!(
        world.query(&format!(
            "SELECT count() FROM benchstream.events_raw FINAL WHERE run_id = '{}'",
            run.run_id
        )),
        "1",
        "only the event on its own subject is stored"
    );
    sink.stop().await.expect("clean stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_whose_runs_have_not_finished_shows_no_made_up_averages() {
    let world = World::start().await;
    let sink = RunningSink::start_in(&world);
    let mut run = Run::default();
    let start = run.stamp(fixture(EventType::RunStart));
    publish(&world.js, &start).await;
    world.wait_landed(&run, 1);
    let board = leaderboard(&world).await;
    assert_eq!(board.rows.len(), 1);
    assert_eq!(board.get(0, "runs"), Some("1"));
    assert_eq!(board.get(0, "finished"), Some("0"));
    // Nothing finished and no call made: every average over finished runs is unknown,
    // not 0, and so is a cache hit rate without input tokens.
    assert_unknown(
        &board,
        &[
            "success_rate",
            "avg_cost_usd",
            "avg_turns",
            "avg_wall_time_s",
            "cache_hit_rate",
        ],
    );
    sink.stop().await.expect("clean stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_total_without_its_calls_is_not_summed_as_zero_tokens() {
    let world = World::start().await;
    let sink = RunningSink::start_in(&world);
    // A finished run with a known total_tokens but no deliberation in the stream, as an
    // imported trajectory sends it.
    let mut run = Run::default();
    for event_type in [EventType::RunStart, EventType::RunStop] {
        publish(&world.js, &run.stamp(fixture(event_type))).await;
    }
    world.wait_landed(&run, 2);
    let board = leaderboard(&world).await;
    assert_eq!(board.get(0, "finished"), Some("1"));
    assert_eq!(board.get(0, "token_runs"), Some("0"));
    assert_unknown(&board, &["input_tokens", "output_tokens", "cache_hit_rate"]);
    sink.stop().await.expect("clean stop");
}

/// The shipped leaderboard over the world's database.
async fn leaderboard(world: &World) -> Table {
    Query::find("leaderboard")
        .expect("shipped")
        .run(
            &world.clickhouse.client_of("benchstream"),
            &ParamValues::new(),
        )
        .await
        .expect("leaderboard")
}

/// Each of `columns` exists in `board` and is NULL in its first row.
fn assert_unknown(board: &Table, columns: &[&str]) {
    for column in columns {
        assert!(board.column(column).is_some(), "no column {column}");
        assert_eq!(board.get(0, column), None, "{column}");
    }
}
