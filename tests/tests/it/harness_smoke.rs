//! The harness itself works: both servers start, answer real clients, keep their state
//! across restarts and crashes, enforce the auth they are configured with, and run side
//! by side. Also checks that the deployed stream definition is one JetStream accepts.
//!
//! Harness calls block (they start processes and poll); the async tests use the
//! multi-thread runtime so a blocking restart never stalls the clients' I/O tasks.

use std::path::Path;
use std::thread;
use std::time::Duration;

use async_nats::jetstream::{self, stream};
use async_nats::ConnectOptions;
use benchstream_tests::{ClickHouseServer, NatsAuth, NatsOptions, NatsServer, QueryError};

/// The stream definition shipped for `nats stream add --config`.
const STREAM_DEFINITION: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../deploy/nats/stream-bench-events.json"
));

fn bench_events_config() -> stream::Config {
    serde_json::from_str(STREAM_DEFINITION).expect("deploy/nats/stream-bench-events.json parses")
}

async fn jetstream_of(server: &NatsServer) -> jetstream::Context {
    let client = async_nats::connect(server.url())
        .await
        .expect("connect to nats-server");
    jetstream::new(client)
}

#[test]
fn clickhouse_answers_select_version_over_http() {
    let clickhouse = ClickHouseServer::start();
    let version = clickhouse.query("SELECT version()");
    assert!(
        version
            .trim()
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit()),
        "unexpected version {version:?}"
    );
    assert!(clickhouse.http_url().starts_with("http://127.0.0.1:"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clickhouse_serves_the_rust_client() {
    let clickhouse = ClickHouseServer::start();
    // 18.16 has no RowBinaryWithNamesAndTypes, hence validation off (event-sink/README.md).
    let client = clickhouse.client();
    let version: String = client
        .query("SELECT version()")
        .fetch_one()
        .await
        .expect("SELECT version() through the clickhouse crate");
    assert_eq!(version, clickhouse.query("SELECT version()").trim());
}

#[test]
fn clickhouse_password_user_needs_its_password() {
    let clickhouse = ClickHouseServer::start();
    let answer = clickhouse
        .try_query_as(
            ClickHouseServer::AUTH_USER,
            ClickHouseServer::AUTH_PASSWORD,
            "SELECT 1",
        )
        .expect("right password is accepted");
    assert_eq!(answer.trim(), "1");

    let refused = clickhouse.try_query_as(ClickHouseServer::AUTH_USER, "wrong", "SELECT 1");
    match refused {
        Err(QueryError::Server { body, .. }) => {
            assert!(body.contains("password"), "unexpected error text {body:?}")
        }
        other => panic!("wrong password must be refused, got {other:?}"),
    }
}

#[test]
fn clickhouse_sql_errors_are_errors_not_data() {
    let clickhouse = ClickHouseServer::start();
    let missing = clickhouse.try_query("SELECT * FROM no_such_table");
    assert!(
        matches!(&missing, Err(QueryError::Server { body, .. }) if body.contains("no_such_table")),
        "got {missing:?}"
    );
    // An exception after rows were produced must still be an error.
    let late = clickhouse
        .try_query("SELECT number, throwIf(number = 500000) FROM system.numbers LIMIT 1000000");
    assert!(
        matches!(late, Err(QueryError::Server { .. })),
        "got {late:?}"
    );
}

#[test]
fn clickhouse_restart_and_crash_keep_tables() {
    let clickhouse = ClickHouseServer::start();
    clickhouse.query("CREATE TABLE kept (id UInt32, s String) ENGINE = MergeTree ORDER BY id");
    clickhouse.query("INSERT INTO kept VALUES (1, 'a'), (2, 'b')");

    clickhouse.restart();
    assert!(clickhouse.is_running());
    assert_eq!(clickhouse.query("SELECT count() FROM kept").trim(), "2");

    clickhouse.kill();
    assert!(!clickhouse.is_running());
    assert!(
        clickhouse.try_query("SELECT 1").is_err(),
        "killed server answered"
    );
    clickhouse.restart();
    assert_eq!(clickhouse.query("SELECT sum(id) FROM kept").trim(), "3");

    clickhouse.stop();
    assert!(!clickhouse.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_has_jetstream_enabled() {
    let nats = NatsServer::start();
    assert_eq!(nats.url(), format!("nats://127.0.0.1:{}", nats.port()));
    let account = jetstream_of(&nats)
        .await
        .query_account()
        .await
        .expect("JetStream account info");
    assert_eq!(account.streams, 0);
    assert!(nats.store_dir().join("jetstream").is_dir());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_uses_the_deployed_limits() {
    let nats = NatsServer::start();
    let client = async_nats::connect(nats.url()).await.expect("connect");
    // deploy/nats/nats-server.conf: max_payload 2MB, above the 1 MiB event limit.
    assert_eq!(client.server_info().max_payload, 2 * 1024 * 1024);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_restart_and_crash_keep_streams() {
    let nats = NatsServer::start();
    let js = jetstream_of(&nats).await;
    let config = bench_events_config();
    js.create_stream(config.clone())
        .await
        .expect("JetStream accepts deploy/nats/stream-bench-events.json");
    js.publish("bench.events.run-1.step", "{}".into())
        .await
        .expect("publish")
        .await
        .expect("ack");

    nats.restart();
    let mut stream = jetstream_of(&nats)
        .await
        .get_stream(&config.name)
        .await
        .expect("stream survives a restart");
    assert_eq!(stream.info().await.expect("info").state.messages, 1);

    nats.kill();
    assert!(!nats.is_running());
    nats.restart();
    let mut stream = jetstream_of(&nats)
        .await
        .get_stream(&config.name)
        .await
        .expect("stream survives a crash");
    let info = stream.info().await.expect("info");
    assert_eq!(info.state.messages, 1);
    assert_eq!(info.config.duplicate_window, Duration::from_secs(120));
}

#[test]
fn stream_definition_matches_the_contract() {
    let config = bench_events_config();
    assert_eq!(config.name, "BENCH_EVENTS");
    assert_eq!(config.subjects, vec!["bench.events.>".to_owned()]);
    assert_eq!(config.storage, stream::StorageType::File);
    assert_eq!(config.discard, stream::DiscardPolicy::Old);
    assert_eq!(config.num_replicas, 1);
    assert_eq!(config.max_age, Duration::from_secs(30 * 24 * 3600));
    assert_eq!(config.max_bytes, 50 * 1024 * 1024 * 1024);
    assert_eq!(config.duplicate_window, Duration::from_secs(120));
    assert!(
        config.max_message_size > 1024 * 1024,
        "room for a 1 MiB event + headers"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_user_password_auth_is_enforced() {
    let nats = NatsServer::start_with(NatsOptions {
        auth: NatsAuth::UserPassword {
            user: "runner".into(),
            password: "s3cret \"quoted\"".into(),
        },
        ..NatsOptions::default()
    });
    assert!(
        async_nats::connect(nats.url()).await.is_err(),
        "anonymous client got in"
    );
    let client =
        ConnectOptions::with_user_and_password("runner".into(), "s3cret \"quoted\"".into())
            .connect(nats.url())
            .await
            .expect("connect with user and password");
    jetstream::new(client)
        .query_account()
        .await
        .expect("JetStream with auth");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_token_auth_is_enforced() {
    let nats = NatsServer::start_with(NatsOptions {
        auth: NatsAuth::Token("t0ken".into()),
        ..NatsOptions::default()
    });
    assert!(
        async_nats::connect(nats.url()).await.is_err(),
        "anonymous client got in"
    );
    ConnectOptions::with_token("t0ken".into())
        .connect(nats.url())
        .await
        .expect("connect with token");
}

#[test]
fn nats_extra_config_is_applied() {
    let nats = NatsServer::start_with(NatsOptions {
        extra_config: "max_connections: 7".into(),
        ..NatsOptions::default()
    });
    let config = std::fs::read_to_string(nats.log_path().with_file_name("nats-server.conf"))
        .expect("rendered config");
    assert!(config.trim_end().ends_with("max_connections: 7"));
    assert!(nats.is_running());
}

#[test]
#[should_panic(expected = "nats-server exited during start-up")]
fn nats_bad_config_fails_with_the_server_log() {
    // The panic message carries the log tail, which names the bad line.
    NatsServer::start_with(NatsOptions {
        extra_config: "this is { not a config".into(),
        ..NatsOptions::default()
    });
}

#[test]
fn servers_run_side_by_side() {
    let handles: Vec<_> = (0..2)
        .map(|_| {
            thread::spawn(|| {
                let nats = NatsServer::start();
                let clickhouse = ClickHouseServer::start();
                assert_eq!(clickhouse.query("SELECT 1").trim(), "1");
                (
                    nats.port(),
                    clickhouse.http_port(),
                    data_dir_of(&clickhouse),
                )
            })
        })
        .collect();
    let results: Vec<_> = handles
        .into_iter()
        .map(|handle| handle.join().expect("server thread"))
        .collect();
    assert_ne!(results[0].0, results[1].0);
    assert_ne!(results[0].1, results[1].1);
    assert_ne!(results[0].2, results[1].2);
}

fn data_dir_of(clickhouse: &ClickHouseServer) -> String {
    let dir = clickhouse.data_dir();
    assert!(
        Path::new(&dir).join("metadata").is_dir(),
        "server wrote its data dir"
    );
    dir.display().to_string()
}

#[test]
fn dropping_a_server_stops_it() {
    let nats = NatsServer::start();
    let port = nats.port();
    drop(nats);
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "nats-server still listens after drop"
    );
}
