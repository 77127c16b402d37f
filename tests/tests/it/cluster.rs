//! The sink on a ClickHouse cluster (2 shards × 2 replicas and ZooKeeper, the harness's
//! [`ClickHouseCluster`]) keeps the guarantees it has on one server: a replica killed, a
//! whole shard stopped or ZooKeeper restarted under load loses nothing, doubles nothing
//! in query results, dead-letters a malformed message and a forged copy of a stored event
//! (whose first version stays the one queries show) and no good event, and the replicas
//! of each shard end with the same rows. Migrations are idempotent and refuse an edited
//! file, as on one server, and a sink with nothing to migrate starts while a replica is
//! down. Written shard by shard (`replica_urls`), a replica killed loses nothing either,
//! and a shard that is down holds only its own runs' events while the other shard keeps
//! ingesting.
//!
//! Each test starts its own cluster (five processes); a lock runs them one at a time so
//! the suite's other tests keep some of the machine.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer};
use bench_schemas::{BenchmarkEvent, EventType, SubjectPrefix};
use benchstream_tests::free_port;
use benchstream_tests::harness::clickhouse_cluster::{
    ALTER_CLUSTER_NAME, CLUSTER_NAME, REPLICAS, SHARDS,
};
use benchstream_tests::{ClickHouseCluster, NatsServer};
use event_sink::cluster::Target;
use event_sink::config::MetricsArgs;
use event_sink::migrations::{self, Migration, MigrationError, MIGRATIONS};
use event_sink::SinkArgs;

use crate::common::{create_stream, jetstream, sink_args, wait_for};
use crate::sink::integrity::{flipped, past_the_dedup_window, stop_exit_status, stop_success};
use crate::sink::setup::{http_get, sample, sink_consumer, wait_ack_floor, RunningSink};
use benchstream_tests::events::{envelope, publish_all, publish_raw, Run};

/// Cluster tests run one at a time.
static ONE_CLUSTER_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How long rows may take to land once the disturbance is over.
const LANDING: Duration = Duration::from_secs(120);

/// How long the sink may take to migrate the cluster and start: above ClickHouse's
/// `distributed_ddl_task_timeout` (180 s) plus the sink's own wait for a slow server
/// (`event_sink::cluster::DDL_PATIENCE`, 300 s), so a statement stuck on a server ends as
/// the sink's own error, which the test then shows, rather than as a silent wait.
const STARTUP: Duration = Duration::from_secs(540);

/// The bad message published among the good ones (truncated JSON).
const MALFORMED: &str = "{\"schema_version\": 1, \"type\": ";

/// The events published after the warm-up go out `PACED_CHUNK` at a time, one chunk every
/// `PACED_EVERY`: 1,500 events over 3 s.
const PACED_CHUNK: usize = 100;
const PACED_EVERY: Duration = Duration::from_millis(200);

/// Runs in every test and events per run: 200 runs of 10 events.
const RUNS: usize = 200;
const EVENTS_PER_RUN: usize = 10;

/// The typed tables, one per event type; every event is in `events_raw` and in one of
/// these.
fn typed_tables() -> impl Iterator<Item = &'static str> {
    EventType::ALL
        .into_iter()
        .map(event_sink::rows::typed_table)
}

/// A query of the rows of every typed table a run's events go to, under FINAL (one per
/// event: a copy delivered twice counts once), in `benchstream.<table><suffix>` (`""` or
/// `"_local"`), matching `filter` (`""` or a `WHERE` clause), summed. The tests publish
/// runs ([`Run::events`]): no task validation, whose table keeps one row per task.
fn typed_count(suffix: &str, filter: &str) -> String {
    let sum = EventType::ALL
        .into_iter()
        .filter(|t| *t != EventType::TaskValidation)
        .map(|t| {
            let table = event_sink::rows::typed_table(t);
            format!("(SELECT count() FROM benchstream.{table}{suffix} FINAL {filter})")
        })
        .collect::<Vec<_>>()
        .join(" + ");
    format!("SELECT {sum}")
}

/// NATS with the stream, the cluster, and a JetStream client.
struct ClusterWorld {
    nats: NatsServer,
    cluster: Arc<ClickHouseCluster>,
    js: jetstream::Context,
}

impl ClusterWorld {
    async fn start() -> ClusterWorld {
        let (nats, cluster) = tokio::task::spawn_blocking(|| {
            let cluster = std::thread::spawn(ClickHouseCluster::start);
            let nats = NatsServer::start();
            (nats, cluster.join().expect("cluster start"))
        })
        .await
        .expect("servers start");
        create_stream(&nats.url(), &SubjectPrefix::default()).await;
        let js = jetstream(&nats.url()).await;
        ClusterWorld {
            nats,
            cluster: Arc::new(cluster),
            js,
        }
    }

    /// A sink with `args`, once it has migrated the cluster and created its consumer.
    async fn start_sink(&self, args: SinkArgs) -> RunningSink {
        let mut sink = RunningSink::start(args.resolve().expect("valid settings"));
        sink.started(&self.js, STARTUP).await;
        sink
    }

    /// Sink settings: the cluster through its first server, short retry delays.
    fn args(&self) -> SinkArgs {
        let mut args = sink_args(&self.nats.url(), &self.cluster.http_url());
        args.clickhouse.cluster = Some(CLUSTER_NAME.into());
        args.clickhouse.alter_cluster = Some(ALTER_CLUSTER_NAME.into());
        args.batch.retry_max_ms = Some(1000);
        args
    }

    /// [`Self::args`] writing shard by shard: every server's HTTP URL in `replica_urls`.
    fn args_by_shard(&self) -> SinkArgs {
        let mut args = self.args();
        let urls: Vec<String> = self
            .cluster
            .servers()
            .iter()
            .map(|s| s.http_url())
            .collect();
        args.clickhouse.replica_urls = Some(urls.join(","));
        args
    }

    /// Runs `disturb` (blocking) while the events of [`RUNS`] runs are published to a
    /// sink with `args`, then checks every guarantee.
    async fn publish_while(
        &self,
        args: SinkArgs,
        disturb: impl FnOnce(&ClickHouseCluster) + Send + 'static,
    ) {
        let sink = self.start_sink(args).await;
        let events: Vec<BenchmarkEvent> = (0..RUNS)
            .flat_map(|_| Run::default().events(EVENTS_PER_RUN))
            .collect();
        let total = events.len();
        let (first, rest) = events.split_at(total / 4);
        publish_all(&self.js, first.to_vec(), 256).await;
        // One undecodable message among the good ones: a dead letter on the cluster too.
        let subject = SubjectPrefix::default().event_subject(first[0].run_id, EventType::Step);
        let malformed = publish_raw(&self.js, subject, None, MALFORMED.as_bytes().to_vec()).await;
        // The sink has migrated the cluster (the disturbance is for the sink, not for the
        // migrations, which need every server) and inserted the first events.
        self.wait_acked(malformed).await;
        // A run_stop stored above, sent again with a flipped result past the dedup
        // window: a conflict, and the stored version stays the one queries show.
        let stop = first
            .iter()
            .find(|e| e.event_type() == EventType::RunStop)
            .expect("a run_stop");
        let (subject, headers) = past_the_dedup_window(stop);
        publish_raw(&self.js, subject, Some(headers), flipped(stop)).await;
        let cluster = Arc::clone(&self.cluster);
        let disturbance = tokio::task::spawn_blocking(move || disturb(&cluster));
        // Spread over a few seconds, so the disturbance meets events in flight however
        // fast the sink drains them.
        for chunk in rest.chunks(PACED_CHUNK) {
            publish_all(&self.js, chunk.to_vec(), 64).await;
            tokio::time::sleep(PACED_EVERY).await;
        }
        disturbance.await.expect("disturbance");
        self.assert_each_event_once(total).await;
        tokio::task::block_in_place(|| {
            wait_for(
                &self.cluster.servers()[0],
                &format!(
                    "SELECT count(), any(success), any(exit_status) \
                     FROM benchstream.run_stops FINAL WHERE event_id = '{}'",
                    stop.event_id
                ),
                &format!(
                    "1\t{}\t{}",
                    u8::from(stop_success(stop)),
                    stop_exit_status(stop)
                ),
                LANDING,
            );
        });
        sink.stop().await.expect("sink stops cleanly");
        let info = self.consumer_info().await.expect("consumer");
        assert_eq!(info.num_pending, 0, "messages never delivered");
        assert_eq!(
            info.ack_floor.stream_sequence,
            total as u64 + 2,
            "not all acked"
        );
    }

    /// The sink's consumer; an error until the sink has created it.
    async fn consumer_info(&self) -> Result<consumer::Info, async_nats::Error> {
        sink_consumer(&self.js).await
    }

    /// Waits until the consumer's ack floor reaches stream sequence `seq`.
    async fn wait_acked(&self, seq: u64) {
        wait_ack_floor(&self.js, seq, LANDING).await;
    }

    /// Every event counted once through the Distributed tables, only the malformed message
    /// and the forged run_stop dead-lettered, and both replicas of each shard holding the
    /// same rows.
    async fn assert_each_event_once(&self, total: usize) {
        // Only the malformed message (once, with its bytes) and the forged run_stop are
        // dead letters: no good event was dead-lettered.
        let dead_letters = format!(
            "SELECT count(), countIf(error_class = 'malformed_json' \
             AND raw = '{MALFORMED}'), countIf(error_class = 'conflict') \
             FROM benchstream.dead_letters FINAL"
        );
        self.assert_landed(total, dead_letters, "2\t1\t1").await;
    }

    /// Once all `total` events are acked: each counted once through the Distributed
    /// tables, no dead letter (no good event was dead-lettered), and both replicas of each
    /// shard holding the same rows.
    async fn assert_acked_each_once_and_no_dead_letter(&self, total: usize) {
        self.wait_acked(total as u64).await;
        let dead_letters = "SELECT count() FROM benchstream.dead_letters".to_owned();
        self.assert_landed(total, dead_letters, "0").await;
    }

    /// Each of the `total` events counted once through `events_raw` and the typed
    /// tables, `dead_letters` (a query) answering `expected`, and the replicas converged.
    async fn assert_landed(&self, total: usize, dead_letters: String, expected: &'static str) {
        let typed = typed_count("", "");
        let cluster = Arc::clone(&self.cluster);
        tokio::task::spawn_blocking(move || {
            let first = &cluster.servers()[0];
            wait_for(
                first,
                "SELECT count(), uniqExact(event_id) FROM benchstream.events_raw FINAL",
                &format!("{total}\t{total}"),
                LANDING,
            );
            wait_for(first, &typed, &total.to_string(), LANDING);
            wait_for(first, &dead_letters, expected, LANDING);
            assert_replicas_converge(&cluster, total);
        })
        .await
        .expect("checks");
    }
}

/// The two replicas of each shard answer alike for every local table: the same rows under
/// `FINAL` and the same distinct events (a restarted replica fetches what it missed in
/// the background, so each table gets up to a minute of `SYSTEM SYNC REPLICA` rounds; a
/// round a replica fails, e.g. with its ZooKeeper session expired by a ZooKeeper restart,
/// counts as not converged yet), and the shards together hold each event once. Raw row
/// counts are not compared: after a ZooKeeper restart one replica was seen to keep the
/// unmerged duplicate parts of retried inserts for over three minutes (113 rows, 107
/// events, against 107 and 107), which no query shows.
fn assert_replicas_converge(cluster: &ClickHouseCluster, total: usize) {
    let mut distinct = 0;
    for shard in 1..=SHARDS {
        for table in std::iter::once("events_raw").chain(typed_tables()) {
            let counts = || -> Result<Vec<String>, String> {
                (1..=REPLICAS)
                    .map(|replica| {
                        let server = cluster.server(shard, replica);
                        server
                            .try_query(&format!("SYSTEM SYNC REPLICA benchstream.{table}_local"))
                            .and_then(|_| {
                                // What queries see on the replica (FINAL: one row per
                                // event) and its distinct events. Physical row counts may
                                // differ while a replica still holds unmerged duplicate
                                // parts of retried inserts.
                                server.try_query(&format!(
                                    "SELECT (SELECT count() FROM benchstream.{table}_local FINAL), \
                                     uniqExact(event_id) FROM benchstream.{table}_local"
                                ))
                            })
                            .map(|answer| answer.trim().to_owned())
                            .map_err(|e| format!("replica {replica}: {e}"))
                    })
                    .collect()
            };
            let converged = |seen: &Result<Vec<String>, String>| {
                seen.as_ref()
                    .is_ok_and(|c| c.windows(2).all(|w| w[0] == w[1]))
            };
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut seen = counts();
            while !converged(&seen) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(500));
                seen = counts();
            }
            assert!(
                converged(&seen),
                "shard {shard} replicas still differ in {table}_local after a minute: {seen:?}"
            );
            if table == "events_raw" {
                let seen = seen.expect("converged");
                let (_, unique) = seen[0].split_once('\t').expect("two columns");
                distinct += unique.parse::<usize>().expect("count");
            }
        }
    }
    assert_eq!(
        distinct, total,
        "events stored on more than one shard or lost"
    );
}

/// Taken for the whole of a test that starts a cluster.
pub(crate) async fn serially() -> tokio::sync::MutexGuard<'static, ()> {
    ONE_CLUSTER_AT_A_TIME.lock().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_killed_and_restarted_loses_and_doubles_nothing() {
    let _serial = serially().await;
    let world = ClusterWorld::start().await;
    publish_while_a_replica_restarts(&world, world.args(), 2).await;
}

/// [`ClusterWorld::publish_while`] a sink with `args` writes, replica 1 of `shard` is
/// killed for 3 s and restarted.
async fn publish_while_a_replica_restarts(world: &ClusterWorld, args: SinkArgs, shard: usize) {
    world
        .publish_while(args, move |cluster| {
            let replica = cluster.server(shard, 1);
            std::thread::sleep(Duration::from_millis(500));
            replica.kill();
            std::thread::sleep(Duration::from_secs(3));
            replica.restart();
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn written_shard_by_shard_a_replica_killed_and_restarted_loses_and_doubles_nothing() {
    let _serial = serially().await;
    let world = ClusterWorld::start().await;
    // The replica shard 1's writer starts on: the writer moves to the other one.
    publish_while_a_replica_restarts(&world, world.args_by_shard(), 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_stopped_for_ten_seconds_loses_and_doubles_nothing() {
    let _serial = serially().await;
    let world = ClusterWorld::start().await;
    let js = world.js.clone();
    world
        .publish_while(world.args(), move |cluster| {
            std::thread::sleep(Duration::from_millis(500));
            for replica in 1..=REPLICAS {
                cluster.server(2, replica).kill();
            }
            std::thread::sleep(Duration::from_secs(10));
            // Whatever was acked meanwhile was acked with its rows stored: the sink held
            // the messages whose rows belong to the stopped shard.
            let pending = tokio::runtime::Handle::current().block_on(async {
                js.get_stream("BENCH_EVENTS")
                    .await
                    .expect("stream")
                    .consumer_info("event-sink")
                    .await
                    .expect("consumer")
                    .num_ack_pending
            });
            assert!(pending > 0, "nothing held while a shard was down");
            for replica in 1..=REPLICAS {
                cluster.server(2, replica).restart();
            }
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_restarted_under_load_loses_and_doubles_nothing() {
    let _serial = serially().await;
    let world = ClusterWorld::start().await;
    world
        .publish_while(world.args(), |cluster| {
            std::thread::sleep(Duration::from_millis(500));
            cluster.zookeeper().kill();
            std::thread::sleep(Duration::from_secs(5));
            cluster.zookeeper().restart();
            cluster.wait_for_zookeeper_sessions();
        })
        .await;
}

/// Sends `signal` (`STOP`, `CONT`) to process `pid` with the shell's `kill`.
fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("sh")
        .args([
            "-c",
            "kill -s \"$1\" \"$2\"",
            "sh",
            signal,
            &pid.to_string(),
        ])
        .status()
        .expect("sh runs");
    assert!(status.success(), "kill -s {signal} {pid}");
}

/// How long the slow server of the next test is stopped: past the 2 s DDL timeout it
/// runs the migration with, and short of ZooKeeper's 10 s session timeout, so it comes
/// back as the same replica.
const SLOW_SERVER_PAUSE: Duration = Duration::from_secs(8);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_slower_than_the_ddl_timeout_is_waited_for_and_the_migration_completes() {
    let _serial = serially().await;
    let cluster = Arc::new(
        tokio::task::spawn_blocking(ClickHouseCluster::start)
            .await
            .expect("cluster starts"),
    );
    let mut args = sink_args("nats://127.0.0.1:1", &cluster.http_url());
    args.clickhouse.cluster = Some(CLUSTER_NAME.into());
    args.clickhouse.alter_cluster = Some(ALTER_CLUSTER_NAME.into());
    let config = args.resolve().expect("valid settings").clickhouse;
    // Every ON CLUSTER statement gives up waiting after 2 s, and one server executes
    // none for 8 s: ClickHouse answers TIMEOUT_EXCEEDED while that server is stopped.
    let impatient =
        |client: clickhouse::Client| client.with_setting("distributed_ddl_task_timeout", "2");
    let slow = cluster.server(2, 2).pid().expect("server 2/2 runs");
    signal(slow, "STOP");
    let resumed = tokio::task::spawn_blocking(move || {
        std::thread::sleep(SLOW_SERVER_PAUSE);
        signal(slow, "CONT");
    });
    migrations::ensure_database(
        &impatient(config.server_client()),
        &config.database,
        Some(CLUSTER_NAME),
    )
    .await
    .expect("the database, on every server");
    let applied = migrations::migrate(
        &impatient(config.client()),
        event_sink::cluster::Target::of(&config).as_ref(),
    )
    .await
    .expect("migrated, the slow server waited for");
    resumed.await.expect("server 2/2 resumed");
    let all: Vec<u32> = MIGRATIONS.iter().map(|m| m.version).collect();
    assert_eq!(applied, all);
    // The slow server has every table the others have.
    let tables = "SELECT name, engine FROM system.tables WHERE database = 'benchstream' \
                  ORDER BY name";
    let expected = cluster.servers()[0].query(tables);
    assert!(expected.contains("run_stops_local\tReplicatedReplacingMergeTree"));
    for server in cluster.servers() {
        assert_eq!(
            server.query(tables),
            expected,
            "server {}",
            server.http_url()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_migrations_are_idempotent_and_refuse_an_edited_file() {
    let _serial = serially().await;
    let cluster = tokio::task::spawn_blocking(ClickHouseCluster::start)
        .await
        .expect("cluster starts");
    let mut args = sink_args("nats://127.0.0.1:1", &cluster.http_url());
    args.clickhouse.cluster = Some(CLUSTER_NAME.into());
    args.clickhouse.alter_cluster = Some(ALTER_CLUSTER_NAME.into());
    let config = args.resolve().expect("valid settings").clickhouse;
    let all: Vec<u32> = MIGRATIONS.iter().map(|m| m.version).collect();
    assert_eq!(event_sink::migrate(&config).await.expect("first"), all);
    assert_eq!(
        event_sink::migrate(&config).await.expect("second"),
        Vec::<u32>::new()
    );

    // Every server has each table as Replicated `_local` plus the Distributed name.
    for server in cluster.servers() {
        let engines = server.query(
            "SELECT name, engine FROM system.tables WHERE database = 'benchstream' \
             AND name IN ('events_raw', 'events_raw_local', 'run_stops', 'run_stops_local') \
             ORDER BY name",
        );
        assert_eq!(
            engines,
            "events_raw\tDistributed\nevents_raw_local\tReplicatedReplacingMergeTree\n\
             run_stops\tDistributed\nrun_stops_local\tReplicatedReplacingMergeTree\n"
        );
    }

    // A later migration changing column types (ALTER ... MODIFY COLUMN) reaches the local
    // tables of every server and the Distributed table, and is applied once.
    let alter = Migration {
        version: MIGRATIONS.last().map_or(1, |m| m.version + 1),
        stem: "9999_nullable_score",
        sql: "ALTER TABLE run_stops MODIFY COLUMN final_score Nullable(Float64);",
    };
    let with_alter: &'static [Migration] =
        Box::leak([MIGRATIONS, &[alter]].concat().into_boxed_slice());
    let client = config.client();
    let target = Target {
        cluster: CLUSTER_NAME,
        alter_cluster: ALTER_CLUSTER_NAME,
        database: "benchstream",
    };
    for expected in [vec![alter.version], vec![]] {
        let applied = migrations::apply(&client, with_alter, Some(&target))
            .await
            .expect("alter migration");
        assert_eq!(applied, expected);
    }
    for server in cluster.servers() {
        assert_eq!(
            server.query(
                "SELECT groupArray(type) FROM (SELECT type FROM system.columns \
                 WHERE database = 'benchstream' AND name = 'final_score' \
                 AND table IN ('run_stops', 'run_stops_local') ORDER BY table)"
            ),
            "['Nullable(Float64)','Nullable(Float64)']\n"
        );
    }

    // The recorded checksum no longer matches the file: refused, nothing applied.
    cluster.servers()[0].query(&format!(
        "INSERT INTO benchstream.schema_migrations VALUES \
         ({}, 'nullable_score', 'edited', now() + 1)",
        alter.version
    ));
    // That insert is forwarded to its shard in the background, then replicated: wait
    // until every replica of that shard holds it, so whichever one the migration's read
    // picks sees it.
    let edited = format!(
        "SELECT count() FROM benchstream.schema_migrations_local FINAL \
         WHERE version = {} AND checksum = 'edited'",
        alter.version
    );
    tokio::task::block_in_place(|| {
        let deadline = Instant::now() + LANDING;
        loop {
            let holding: usize = cluster
                .servers()
                .iter()
                .map(|server| server.query(&edited).trim().parse::<usize>().unwrap_or(0))
                .sum();
            if holding == REPLICAS {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{holding} replicas hold the edited row"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let refused = migrations::apply(&client, with_alter, Some(&target)).await;
    assert!(
        matches!(refused, Err(MigrationError::ChecksumMismatch { stem, .. }) if stem == alter.stem),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_starts_and_ingests_while_a_replica_is_down() {
    let _serial = serially().await;
    let world = ClusterWorld::start().await;
    let mut run = Run::default();
    let run_id = run.run_id;
    let stored = |count: usize| {
        let entry = &world.cluster.servers()[0];
        let sql = format!(
            "SELECT uniqExact(event_id) FROM benchstream.events_raw WHERE run_id = '{run_id}'"
        );
        // Well under ClickHouse's `distributed_ddl_task_timeout` (180 s), which is how long
        // an `ON CLUSTER` statement waits for a server that is down.
        tokio::task::block_in_place(|| {
            wait_for(entry, &sql, &count.to_string(), Duration::from_secs(60));
        });
    };
    // The first start migrates the cluster, every server up.
    let sink = world.start_sink(world.args()).await;
    publish_all(&world.js, run.events(EVENTS_PER_RUN), 64).await;
    stored(EVENTS_PER_RUN);
    sink.stop().await.expect("sink stops cleanly");

    // A replica other than the one the sink talks to goes away; the sink restarts (a
    // deploy, a crash) and has nothing to migrate: it must not wait for that replica.
    let replica = world.cluster.server(2, 1);
    tokio::task::block_in_place(|| replica.stop());
    let sink = world.start_sink(world.args()).await;
    publish_all(&world.js, run.events(EVENTS_PER_RUN), 64).await;
    stored(2 * EVENTS_PER_RUN);
    sink.stop().await.expect("sink stops cleanly");
}

/// Kill cycles of [`both_replicas_of_one_shard_killed_again_and_again_at_a_slow_rate_lose_and_reject_nothing`].
const KILL_CYCLES: usize = 8;

/// Time between two events of the slow publisher: 75 events/s, where inserts hold one or
/// a few rows and every refusal meets a single row.
const SLOW_PUBLISH_EVERY: Duration = Duration::from_micros(13_333);

/// JetStream acks the slow publisher leaves outstanding: the pace is kept by the clock,
/// not by the round trip of each publish.
const SLOW_PUBLISH_WINDOW: usize = 64;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_replicas_of_one_shard_killed_again_and_again_at_a_slow_rate_lose_and_reject_nothing()
{
    let _serial = serially().await;
    let world = ClusterWorld::start().await;
    let sink = world.start_sink(world.args()).await;
    // Migrated and ingesting before the first kill.
    let mut warm_up = Run::default();
    publish_all(&world.js, warm_up.events(EVENTS_PER_RUN), 64).await;
    world.wait_acked(EVENTS_PER_RUN as u64).await;

    let stop = tokio_util::sync::CancellationToken::new();
    let publisher = tokio::spawn({
        let (js, stop) = (world.js.clone(), stop.clone());
        async move {
            let started = Instant::now();
            let mut published = 0usize;
            let mut pace = tokio::time::interval(SLOW_PUBLISH_EVERY);
            let mut acks = std::collections::VecDeque::with_capacity(SLOW_PUBLISH_WINDOW);
            while !stop.is_cancelled() {
                let mut run = Run::default();
                for event in run.events(EVENTS_PER_RUN) {
                    pace.tick().await;
                    if acks.len() >= SLOW_PUBLISH_WINDOW {
                        if let Some(ack) = acks.pop_front() {
                            let ack: jetstream::context::PublishAckFuture = ack;
                            ack.await.expect("JetStream ack");
                        }
                    }
                    let (subject, headers) = envelope(&event);
                    let ack = js
                        .publish_with_headers(subject, headers, event.to_json().into())
                        .await
                        .expect("publish");
                    acks.push_back(ack);
                    published += 1;
                }
            }
            for ack in acks {
                ack.await.expect("JetStream ack");
            }
            (published, started.elapsed())
        }
    });
    let cluster = Arc::clone(&world.cluster);
    tokio::task::spawn_blocking(move || {
        for _ in 0..KILL_CYCLES {
            std::thread::sleep(Duration::from_secs(2));
            for replica in 1..=REPLICAS {
                cluster.server(2, replica).kill();
            }
            std::thread::sleep(Duration::from_secs(2));
            for replica in 1..=REPLICAS {
                cluster.server(2, replica).restart();
            }
        }
        std::thread::sleep(Duration::from_secs(2));
    })
    .await
    .expect("kill cycles");
    stop.cancel();
    let (published, took) = publisher.await.expect("publisher");
    eprintln!(
        "{published} events at {:.0} events/s through {KILL_CYCLES} kills of both replicas of \
         shard 2",
        published as f64 / took.as_secs_f64()
    );
    let total = published + EVENTS_PER_RUN;
    world.assert_acked_each_once_and_no_dead_letter(total).await;
    sink.stop().await.expect("sink stops cleanly");
}

/// Runs published while shard 2 is down, in
/// [`a_healthy_shard_keeps_ingesting_while_the_other_is_down`].
const RUNS_WHILE_DOWN: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_shard_keeps_ingesting_while_the_other_is_down() {
    let _serial = serially().await;
    let world = ClusterWorld::start().await;
    let mut args = world.args_by_shard();
    let metrics_port = free_port();
    args.metrics = MetricsArgs {
        listen: Some(format!("127.0.0.1:{metrics_port}")),
        ..MetricsArgs::default()
    };
    let sink = world.start_sink(args).await;
    // Migrated and ingesting, every server up.
    let mut warm_up = Run::default();
    publish_all(&world.js, warm_up.events(EVENTS_PER_RUN), 64).await;
    world.wait_acked(EVENTS_PER_RUN as u64).await;

    tokio::task::block_in_place(|| {
        for replica in 1..=REPLICAS {
            world.cluster.server(2, replica).kill();
        }
    });
    let runs: Vec<Run> = (0..RUNS_WHILE_DOWN).map(|_| Run::default()).collect();
    let run_ids: Vec<String> = runs.iter().map(|r| format!("'{}'", r.run_id)).collect();
    let run_ids = run_ids.join(",");
    let events: Vec<BenchmarkEvent> = runs
        .into_iter()
        .flat_map(|mut run| run.events(EVENTS_PER_RUN))
        .collect();
    let total = events.len() + EVENTS_PER_RUN;
    publish_all(&world.js, events, 64).await;

    // Which runs shard 1 holds, as ClickHouse's own sharding key places them.
    let healthy = &world.cluster.servers()[0];
    let on_shard_1: usize = tokio::task::block_in_place(|| {
        healthy.query(&format!(
            "SELECT countIf(sipHash64(toString(toUUID(r))) % {SHARDS} = 0) \
             FROM system.one ARRAY JOIN [{run_ids}] AS r"
        ))
    })
    .trim()
    .parse()
    .expect("a count");
    assert!(
        on_shard_1 > 0 && on_shard_1 < RUNS_WHILE_DOWN,
        "both shards must hold some of the runs: {on_shard_1} of {RUNS_WHILE_DOWN} on shard 1"
    );
    // Shard 1 takes its runs' events, in events_raw and in the typed tables, while
    // shard 2 is still down.
    let on_shard_1 = on_shard_1 * EVENTS_PER_RUN;
    let typed = typed_count("_local", &format!("WHERE run_id IN ({run_ids})"));
    tokio::task::block_in_place(|| {
        wait_for(
            healthy,
            &format!(
                "SELECT uniqExact(event_id) FROM benchstream.events_raw_local \
                 WHERE run_id IN ({run_ids})"
            ),
            &on_shard_1.to_string(),
            LANDING,
        );
        wait_for(healthy, &typed, &on_shard_1.to_string(), LANDING);
    });
    // Shard 2's events wait, unacked, and the gauge shows them.
    // (Polled: the last runs published may be shard 2's and not pulled yet.)
    let shard_2_waiting = "bench_sink_rows_waiting{shard=\"2\"}";
    let deadline = Instant::now() + LANDING;
    while sample(&http_get(metrics_port, "/metrics").await, shard_2_waiting) < 1.0 {
        assert!(Instant::now() < deadline, "{shard_2_waiting} stayed 0");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let info = world.consumer_info().await.expect("consumer");
    assert!(
        info.num_ack_pending > 0,
        "nothing held for the shard that is down"
    );
    assert!(
        info.ack_floor.stream_sequence < total as u64,
        "acked while shard 2 is down"
    );

    tokio::task::block_in_place(|| {
        for replica in 1..=REPLICAS {
            world.cluster.server(2, replica).restart();
        }
    });
    world.assert_acked_each_once_and_no_dead_letter(total).await;
    let done = http_get(metrics_port, "/metrics").await;
    for shard in 1..=SHARDS {
        let gauge = format!("bench_sink_rows_waiting{{shard=\"{shard}\"}}");
        assert_eq!(
            sample(&done, &gauge),
            0.0,
            "{gauge} once everything is acked"
        );
    }
    sink.stop().await.expect("sink stops cleanly");
}
