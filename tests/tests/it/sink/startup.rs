//! Start-up: migrations are applied once and recorded, one that makes a column
//! Nullable keeps the values written before it, one that adds columns keeps every old
//! row with the new ones NULL or empty; wrong credentials, unreachable
//! servers and a missing stream under `--no-create` are clear errors before any
//! message is taken. (Exit codes of the binary: `event-sink/tests/process.rs`.)

use std::time::Duration;

use bench_clickhouse::ClickHouseArgs;
use benchstream_tests::{free_port, ClickHouseServer, NatsAuth, NatsOptions, NatsServer};
use event_sink::config::StreamArgs;
use event_sink::migrations::{MigrationError, MIGRATIONS};
use event_sink::SinkError;

use super::setup::World;
use crate::common::sink_args;

/// `run` must fail on its own, quickly: it never got to consume.
async fn run_fails(world_args: event_sink::SinkArgs) -> SinkError {
    let config = world_args.resolve().expect("valid settings");
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        event_sink::run(config, tokio_util::sync::CancellationToken::new()),
    )
    .await
    .expect("run returns by itself");
    result.expect_err("run must fail")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_are_applied_once_and_recorded() {
    let clickhouse = tokio::task::spawn_blocking(ClickHouseServer::start)
        .await
        .expect("start");
    let config = event_sink::SinkArgs {
        clickhouse: ClickHouseArgs {
            url: Some(clickhouse.http_url()),
            ..ClickHouseArgs::default()
        },
        ..event_sink::SinkArgs::default()
    }
    .resolve()
    .expect("valid");
    let first = event_sink::migrate(&config.clickhouse)
        .await
        .expect("migrate");
    let all: Vec<u32> = MIGRATIONS.iter().map(|m| m.version).collect();
    assert_eq!(first, all);
    let second = event_sink::migrate(&config.clickhouse)
        .await
        .expect("migrate again");
    assert!(second.is_empty(), "applied again: {second:?}");
    let recorded = clickhouse.query(
        "SELECT groupArray(name) FROM (SELECT name FROM benchstream.schema_migrations FINAL ORDER BY version)",
    );
    let names: Vec<String> = MIGRATIONS
        .iter()
        .map(|m| format!("'{}'", m.name()))
        .collect();
    assert_eq!(recorded.trim(), format!("[{}]", names.join(",")));
    let tables =
        clickhouse.query("SELECT count() FROM system.tables WHERE database = 'benchstream'");
    // A typed table per event type, events_raw, dead_letters, schema_migrations,
    // event_ids and its feed view; no `_0004`/`_0005` copy and no lock left.
    assert_eq!(
        tables.trim(),
        (bench_schemas::EventType::ALL.len() + 5).to_string()
    );
    // Facts a protocol may not send are Nullable; `planned` exists; a call's token counts
    // may be unknown.
    let columns = clickhouse.query(
        "SELECT groupArray(concat(table, '.', name, ' ', type)) FROM (SELECT table, name, type \
         FROM system.columns WHERE database = 'benchstream' AND name IN ('exit_status', \
         'host', 'planned', 'input_tokens', 'cached_input_tokens', 'cache_write_tokens', \
         'output_tokens', 'reasoning_tokens') \
         AND table IN ('run_stops', 'steps', 'deliberations') ORDER BY table, name)",
    );
    assert_eq!(
        columns.trim(),
        "['deliberations.cache_write_tokens Nullable(UInt64)',\
         'deliberations.cached_input_tokens Nullable(UInt64)',\
         'deliberations.host Nullable(String)',\
         'deliberations.input_tokens Nullable(UInt64)',\
         'deliberations.output_tokens Nullable(UInt64)',\
         'deliberations.reasoning_tokens Nullable(UInt64)',\
         'run_stops.exit_status Nullable(String)','run_stops.host Nullable(String)',\
         'steps.host Nullable(String)','steps.planned UInt8']"
    );

    // A migration file edited after it was applied is refused.
    clickhouse.query(
        "INSERT INTO benchstream.schema_migrations VALUES (2, 'events_raw', 'edited', now() + 60)",
    );
    let refused = event_sink::migrate(&config.clickhouse).await;
    assert!(
        matches!(
            &refused,
            Err(SinkError::Migration(
                MigrationError::ChecksumMismatch { .. }
            ))
        ),
        "got {refused:?}"
    );
    assert_eq!(MIGRATIONS.last().map(|m| m.version), Some(26));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_nats_credentials_fail_at_start_with_a_clear_error() {
    let (nats, clickhouse) = tokio::task::spawn_blocking(|| {
        let nats = NatsServer::start_with(NatsOptions {
            auth: NatsAuth::UserPassword {
                user: "sink".into(),
                password: "right".into(),
            },
            ..NatsOptions::default()
        });
        (nats, ClickHouseServer::start())
    })
    .await
    .expect("start");
    let mut args = sink_args(&nats.url(), &clickhouse.http_url());
    args.nats.user = Some("sink".into());
    args.nats.password = Some("wrong".into());
    let error = run_fails(args).await;
    let text = error.to_string();
    assert!(matches!(error, SinkError::Nats(_)), "{error:?}");
    assert!(text.contains(&nats.url()), "{text}");
    assert!(text.to_lowercase().contains("authorization"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_clickhouse_fails_at_start_with_a_clear_error() {
    let nats = tokio::task::spawn_blocking(NatsServer::start)
        .await
        .expect("start");
    let url = format!("http://127.0.0.1:{}", free_port());
    let error = run_fails(sink_args(&nats.url(), &url)).await;
    assert!(matches!(error, SinkError::ClickHouse { .. }), "{error:?}");
    assert!(error.to_string().contains(&url), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clickhouse_credentials_are_used_and_checked() {
    let world = World::start().await;
    let mut args = world.args();
    args.clickhouse.user = Some(ClickHouseServer::AUTH_USER.into());
    args.clickhouse.password = Some("wrong".into());
    let error = run_fails(args.clone()).await;
    assert!(
        matches!(error, SinkError::ClickHouseAuth { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("password"), "{error}");

    args.clickhouse.password = Some(ClickHouseServer::AUTH_PASSWORD.into());
    let config = args.resolve().expect("valid");
    let applied = event_sink::migrate(&config.clickhouse)
        .await
        .expect("password user migrates");
    assert_eq!(applied.len(), MIGRATIONS.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_create_only_verifies_stream_and_consumer() {
    let world = World::start().await;
    let mut args = world.args();
    args.stream = StreamArgs {
        name: Some("OTHER_EVENTS".into()),
        prefix: Some("team-a".into()),
        no_create: Some(true),
        ..StreamArgs::default()
    };
    let error = run_fails(args.clone()).await;
    assert!(error.to_string().contains("OTHER_EVENTS"), "{error}");

    // The stream exists (World created BENCH_EVENTS) but the consumer does not.
    args.stream = StreamArgs {
        no_create: Some(true),
        ..StreamArgs::default()
    };
    let error = run_fails(args).await;
    assert!(error.to_string().contains("event-sink"), "{error}");
}

/// A fresh server whose `benchstream` database has the schema of every migration before
/// `stem`, applied by hand (unrecorded: `migrate` runs these again, which changes
/// nothing); the server and the database's client.
async fn schema_before(stem: &str) -> (ClickHouseServer, clickhouse::Client) {
    let server = tokio::task::spawn_blocking(ClickHouseServer::start)
        .await
        .expect("server starts");
    let root = server.client();
    event_sink::migrations::ensure_database(&root, "benchstream", None)
        .await
        .expect("database");
    let db = root.clone().with_database("benchstream");
    let before = MIGRATIONS
        .iter()
        .position(|m| m.stem == stem)
        .unwrap_or_else(|| panic!("{stem} shipped"));
    for migration in &MIGRATIONS[..before] {
        for statement in migration.statements() {
            db.query(statement).execute().await.expect("old schema");
        }
    }
    (server, db)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_times_written_before_they_could_be_null_keep_their_values() {
    // The schema before 0018, with a measured call of each kind.
    let (server, db) = schema_before("0018_unmeasured_call_times").await;
    let envelope = "generateUUIDv4(), generateUUIDv4(), 't', now(), 0, 'p', now()";
    server.query(&format!(
        "INSERT INTO benchstream.tool_calls (event_id, run_id, task_id, ts, ts_ms, policy_id, \
         received_at, tool_name, latency_ms, retries) SELECT {envelope}, 'bash', 250, 2"
    ));
    server.query(&format!(
        "INSERT INTO benchstream.deliberations (event_id, run_id, task_id, ts, ts_ms, \
         policy_id, received_at, agent, latency_ms, retries) SELECT {envelope}, 'agent', \
         1800, 0"
    ));

    event_sink::migrations::migrate(&db, None)
        .await
        .expect("migrations apply");
    let answer = |sql: &str| server.query(sql).trim().to_owned();
    assert_eq!(
        answer(
            "SELECT toTypeName(latency_ms), toTypeName(retries), latency_ms, retries \
             FROM benchstream.tool_calls FORMAT TSV"
        ),
        "Nullable(UInt64)\tNullable(UInt32)\t250\t2"
    );
    assert_eq!(
        answer(
            "SELECT toTypeName(latency_ms), toTypeName(retries), latency_ms, retries \
             FROM benchstream.deliberations FORMAT TSV"
        ),
        "Nullable(UInt64)\tNullable(UInt32)\t1800\t0"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_written_before_experiments_keep_their_rows_with_no_experiment() {
    // The schema before 0020, with two runs of a sweep and one outside any.
    let (server, db) = schema_before("0020_run_start_experiment").await;
    server.query(
        "INSERT INTO benchstream.run_starts (event_id, run_id, task_id, ts, ts_ms, policy_id, \
         received_at, model, sweep_name) \
         SELECT generateUUIDv4(), generateUUIDv4(), concat('t', toString(number)), now(), 0, \
         'p', now(), 'm', if(number < 2, 'grid', NULL) FROM system.numbers LIMIT 3",
    );

    event_sink::migrations::migrate(&db, None)
        .await
        .expect("migrations apply");
    let answer = |sql: &str| server.query(sql).trim().to_owned();
    assert_eq!(
        answer(
            "SELECT task_id, model, ifNull(sweep_name, '-'), toTypeName(experiment), \
             isNull(experiment), isNull(repeat), isNull(planned_runs), length(tag_keys), \
             length(tag_values) FROM benchstream.run_starts ORDER BY task_id FORMAT TSV"
        ),
        "t0\tm\tgrid\tNullable(String)\t1\t1\t1\t0\t0\n\
         t1\tm\tgrid\tNullable(String)\t1\t1\t1\t0\t0\n\
         t2\tm\t-\tNullable(String)\t1\t1\t1\t0\t0"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proposals_written_before_trial_outcomes_keep_their_rows_with_no_result() {
    // The schema before 0023, with two proposals of a bayes sweep.
    let (server, db) = schema_before("0023_trial_outcomes").await;
    server.query(
        "INSERT INTO benchstream.optimizer_updates (event_id, run_id, task_id, ts, ts_ms, \
         policy_id, received_at, suggested_config, reasoning, trial) \
         SELECT generateUUIDv4(), generateUUIDv4(), 'sweep:s', now(), 0, 'optimizer:tpe', \
         now(), '{}', concat('trial ', toString(number)), number FROM system.numbers LIMIT 2",
    );

    event_sink::migrations::migrate(&db, None)
        .await
        .expect("migrations apply");
    assert_eq!(
        server
            .query(
                "SELECT reasoning, trial, length(trial_run_ids), isNull(trial_solved), \
                 isNull(trial_cost_usd), isNull(trial_total_tokens), isNull(trial_wall_time_ms), \
                 isNull(objective) FROM benchstream.optimizer_updates ORDER BY trial FORMAT TSV"
            )
            .trim(),
        "trial 0\t0\t0\t1\t1\t1\t1\t1\ntrial 1\t1\t0\t1\t1\t1\t1\t1"
    );
}
