//! Only what ClickHouse refuses deterministically is dead-lettered. Every failure that
//! can come from the transport, a peer replica, ZooKeeper or the server's state (code 32
//! naming a peer, network codes and timeouts, a read-only replica, ZooKeeper errors, too
//! many parts, HTTP-level failures, an answer lost after the rows landed) is retried
//! without acking, on single-row and multi-row inserts alike: no dead letter, every event
//! stored once. The failures come from a [`FaultProxy`] in front of the real ClickHouse;
//! a row the real server refuses every time is dead-lettered and the rest lands.

use std::time::Duration;

use bench_schemas::EventType;
use benchstream_tests::{free_port, Fault, FaultProxy};
use event_sink::config::MetricsArgs;
use event_sink::rows::typed_table;

use super::setup::{http_get, sample, RunningSink, World, LANDING};
use crate::common::wait_for;
use benchstream_tests::events::{publish, publish_all, Run};

/// What the sink's row inserts, and only they, contain (its queries end with `FORMAT
/// RowBinary` too, and migrations name their tables without quotes).
const ROW_INSERT: &str = "INSERT INTO `";

/// What the stored-id lookup of first write wins contains.
const LOOKUP: &str = "FROM event_ids";

/// The client gives up on an insert after this long (a stall is a timeout).
const INSERT_TIMEOUT_MS: u64 = 1500;

/// Each transient class: a name for messages, what it hits, and the fault.
fn transient_faults() -> Vec<(&'static str, &'static str, Fault)> {
    let error = |body: &str| Fault::clickhouse_error(body);
    vec![
        (
            "code 32 from a replica that died",
            ROW_INSERT,
            error(
                "Code: 32, e.displayText() = DB::Exception: Attempt to read after eof: while \
                 receiving packet from 127.0.0.1:9000, e.what() = DB::Exception",
            ),
        ),
        (
            "code 32 after the rows landed",
            ROW_INSERT,
            Fault::AnswerAfterForwarding {
                status: 500,
                body: "Code: 32, e.displayText() = DB::Exception: Attempt to read after eof: \
                       while receiving packet from 127.0.0.1:9000, e.what() = DB::Exception"
                    .into(),
            },
        ),
        (
            "209 socket timeout",
            ROW_INSERT,
            error(
                "Code: 209, e.displayText() = DB::NetException: Timeout exceeded while reading \
                 from socket (127.0.0.1:9000), e.what() = DB::NetException",
            ),
        ),
        (
            "210 network error",
            ROW_INSERT,
            error(
                "Code: 210, e.displayText() = DB::NetException: Connection refused \
                 (127.0.0.1:9000), e.what() = DB::NetException",
            ),
        ),
        (
            "279 all connection tries failed",
            ROW_INSERT,
            error(
                "Code: 279, e.displayText() = DB::NetException: All connection tries failed. \
                 Log: \n\nTimeout: connect timed out: 127.0.0.1:9000\n, e.what() = \
                 DB::NetException",
            ),
        ),
        (
            "242 read-only replica",
            ROW_INSERT,
            error(
                "Code: 242, e.displayText() = DB::Exception: Table is in readonly mode, \
                 e.what() = DB::Exception",
            ),
        ),
        (
            "999 ZooKeeper",
            ROW_INSERT,
            error(
                "Code: 999, e.displayText() = Coordination::Exception: Connection loss, \
                 e.what() = Coordination::Exception",
            ),
        ),
        (
            "252 too many parts",
            ROW_INSERT,
            error(
                "Code: 252, e.displayText() = DB::Exception: Too many parts (300). Merges are \
                 processing significantly slower than inserts., e.what() = DB::Exception",
            ),
        ),
        (
            "159 timeout exceeded",
            ROW_INSERT,
            error(
                "Code: 159, e.displayText() = DB::Exception: Timeout exceeded: elapsed \
                 30.001 seconds, maximum: 30, e.what() = DB::Exception",
            ),
        ),
        (
            "HTTP 502 without a ClickHouse code",
            ROW_INSERT,
            Fault::Answer {
                status: 502,
                body: "<html><body>502 Bad Gateway</body></html>".into(),
            },
        ),
        (
            "HTTP 503 with an empty body",
            ROW_INSERT,
            Fault::Answer {
                status: 503,
                body: String::new(),
            },
        ),
        ("connection closed unanswered", ROW_INSERT, Fault::Close),
        (
            "no answer within the insert timeout",
            ROW_INSERT,
            Fault::Stall(Duration::from_millis(2 * INSERT_TIMEOUT_MS)),
        ),
        (
            "279 on the stored-id lookup",
            LOOKUP,
            error(
                "Code: 279, e.displayText() = DB::NetException: All connection tries failed, \
                 e.what() = DB::NetException",
            ),
        ),
    ]
}

/// Faults dealt to each class: the first attempt and its first retry fail.
const TIMES: usize = 2;

/// A world whose sink talks to ClickHouse through a fault proxy, with a metrics endpoint.
struct Faulty {
    world: World,
    proxy: FaultProxy,
    sink: RunningSink,
    metrics_port: u16,
}

impl Faulty {
    async fn start() -> Faulty {
        let world = World::start().await;
        let proxy = FaultProxy::start(world.clickhouse.http_port());
        let metrics_port = free_port();
        let mut args = world.args();
        args.clickhouse.url = Some(proxy.url());
        args.clickhouse.insert_timeout_ms = Some(INSERT_TIMEOUT_MS);
        args.metrics = MetricsArgs {
            listen: Some(format!("127.0.0.1:{metrics_port}")),
            ..MetricsArgs::default()
        };
        let sink = RunningSink::start(args.resolve().expect("valid settings"));
        // Past start-up (migrations, which fail fast), before any fault is dealt.
        let mut warm_up = Run::default();
        publish(&world.js, &warm_up.events(1).remove(0)).await;
        tokio::task::block_in_place(|| world.wait_landed(&warm_up, 1));
        Faulty {
            world,
            proxy,
            sink,
            metrics_port,
        }
    }

    /// No dead letter; every event of `runs` stored once (also when the faulty answer
    /// came after the rows landed), in `events_raw` and its typed table; everything acked.
    async fn assert_each_stored_once(&self, runs: &[Run], per_run: usize, last_seq: u64) {
        let ids = runs
            .iter()
            .map(|r| format!("'{}'", r.run_id))
            .collect::<Vec<_>>()
            .join(", ");
        let total = runs.len() * per_run;
        let typed = EventType::ALL
            .map(typed_table)
            .iter()
            .map(|t| format!("(SELECT count() FROM benchstream.{t} FINAL WHERE run_id IN ({ids}))"))
            .collect::<Vec<_>>()
            .join(" + ");
        tokio::task::block_in_place(|| {
            wait_for(
                &self.world.clickhouse,
                &format!(
                    "SELECT count(), uniqExact(event_id), {typed} FROM benchstream.events_raw \
                     FINAL WHERE run_id IN ({ids})"
                ),
                &format!("{total}\t{total}\t{total}"),
                LANDING,
            );
        });
        self.world.wait_acked(last_seq).await;
        assert_eq!(
            self.world
                .query("SELECT count() FROM benchstream.dead_letters"),
            "0",
            "a good event was dead-lettered"
        );
        assert_eq!(self.samples("bench_sink_dead_letters_total{").await, 0);
    }

    /// How many samples of the sink's metrics start with `prefix`.
    async fn samples(&self, prefix: &str) -> usize {
        http_get(self.metrics_port, "/metrics")
            .await
            .lines()
            .filter(|line| line.starts_with(prefix))
            .count()
    }

    /// A sample of the sink's metrics.
    async fn metric(&self, name: &str) -> f64 {
        sample(&http_get(self.metrics_port, "/metrics").await, name)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_transient_class_on_single_row_inserts_is_retried_and_nothing_dead_lettered() {
    let faulty = Faulty::start().await;
    let mut runs = Vec::new();
    let mut last_seq = 0;
    for (class, matching, fault) in transient_faults() {
        // One event alone: its batch has one row per table, the insert the sink used to
        // dead-letter after one refusal.
        let mut run = Run::default();
        let event = run.events(1).remove(0);
        faulty.proxy.inject(matching, fault, TIMES);
        last_seq = publish(&faulty.world.js, &event).await;
        tokio::task::block_in_place(|| faulty.world.wait_landed(&run, 1));
        assert_eq!(
            faulty.proxy.pending(),
            0,
            "{class}: the faults did not all hit"
        );
        runs.push(run);
    }
    assert_eq!(faulty.proxy.injected(), transient_faults().len() * TIMES);
    faulty.assert_each_stored_once(&runs, 1, last_seq).await;
    let retried = faulty
        .metric("bench_sink_retries_total{cause=\"clickhouse\"}")
        .await;
    assert!(retried >= (transient_faults().len() * TIMES) as f64 / 2.0);
    let recovered = faulty.metric("bench_sink_flush_recoveries_total").await;
    assert!(recovered >= transient_faults().len() as f64, "{recovered}");
    faulty.sink.stop().await.expect("clean stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_transient_class_on_multi_row_inserts_is_retried_and_nothing_dead_lettered() {
    const EVENTS: usize = 40;
    let faulty = Faulty::start().await;
    let mut runs = Vec::new();
    // The warm-up event is the first message.
    let mut last_seq = 1;
    for (class, matching, fault) in transient_faults() {
        let mut run = Run::default();
        let events = run.events(EVENTS);
        let before = faulty.proxy.injected();
        faulty.proxy.inject(matching, fault, TIMES);
        // Published before the sink can flush them one by one: inserts of many rows.
        publish_all(&faulty.world.js, events, EVENTS).await;
        last_seq += EVENTS as u64;
        tokio::task::block_in_place(|| faulty.world.wait_landed(&run, EVENTS));
        assert_eq!(
            faulty.proxy.injected() - before,
            TIMES,
            "{class}: the faults did not all hit"
        );
        runs.push(run);
    }
    faulty
        .assert_each_stored_once(&runs, EVENTS, last_seq)
        .await;
    assert_eq!(
        faulty.samples("bench_sink_insert_splits_total{").await,
        0,
        "a transient failure split an insert"
    );
    faulty.sink.stop().await.expect("clean stop");
}
