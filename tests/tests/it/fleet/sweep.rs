//! Sweeps: workers split one sweep through NATS claims, no configuration twice and none
//! missed; a dead worker's claim is taken over; the adaptive method reads ClickHouse and
//! announces its picks as `optimizer_update` events.

use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

use agent_runner::sweep::claim::{ClaimBoard, ClaimConfig, ClaimRecord};
use agent_runner::sweep::{self, Plan};
use bench_nats::NatsConfig;
use bench_schemas::{Payload, SubjectPrefix};
use benchstream_tests::NatsServer;
use tokio_util::sync::CancellationToken;

use super::{assert_split, clickhouse_source, fixture, query, worker};
use crate::common::{create_stream, repo_path, start_pipeline, stream_messages};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workers_split_a_sweep_without_overlap_or_gaps() {
    let nats = NatsServer::start();
    let spec = create_stream(&nats.url(), &SubjectPrefix::default()).await;
    let file = fixture("split.toml");
    let plan = Plan::load(&file, &repo_path("scenarios"), false, None).expect("sweep plan");
    assert_eq!(plan.expansion.configurations.len(), 12, "{plan}");

    let (a_dir, b_dir) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let a = sweep::run(
        worker(&file, &nats.url(), "worker-a", a_dir.path()),
        CancellationToken::new(),
    );
    let b = sweep::run(
        worker(&file, &nats.url(), "worker-b", b_dir.path()),
        CancellationToken::new(),
    );
    let (a, b) = tokio::join!(a, b);
    let (a, b) = (a.expect("worker a"), b.expect("worker b"));

    let all: HashSet<String> = plan
        .expansion
        .configurations
        .iter()
        .map(|c| c.key.clone())
        .collect();
    assert_split(&a, &b, &all);
    assert_eq!(a.delivery.left_in_spool + b.delivery.left_in_spool, 0);

    // What reached JetStream: one run_start per configuration (cfg, task, seed).
    let expected: BTreeSet<(String, String, u64)> = plan
        .expansion
        .configurations
        .iter()
        .map(|c| {
            (
                plan.expansion.arms[c.arm].cfg_hash.to_string(),
                c.task_id.clone(),
                c.seed,
            )
        })
        .collect();
    let starts: Vec<_> = stream_messages(&nats.url(), &spec)
        .await
        .into_iter()
        .filter_map(|m| match &m.event.payload {
            Payload::RunStart(start) => Some((m.event.clone(), start.clone())),
            _ => None,
        })
        .collect();
    let started: Vec<(String, String, u64)> = starts
        .iter()
        .map(|(event, _)| {
            (
                event.cfg_hash.to_string(),
                event.task_id.clone(),
                event.seed.expect("a sweep run's seed"),
            )
        })
        .collect();
    assert_eq!(started.len(), expected.len(), "one run per configuration");
    assert_eq!(started.into_iter().collect::<BTreeSet<_>>(), expected);
    // Each run_start names its sweep and configuration; a grid sweep has no trials.
    let keys: HashSet<String> = starts
        .iter()
        .map(|(_, start)| {
            let sweep = start.sweep.as_ref().expect("a sweep's run says so");
            assert_eq!(
                (sweep.name.as_str(), sweep.trial),
                (plan.sweep.name.as_str(), None)
            );
            sweep.key.clone()
        })
        .collect();
    assert_eq!(keys, all);

    // A third worker arriving late finds nothing left.
    let c_dir = tempfile::tempdir().expect("dir");
    let late = sweep::run(
        worker(&file, &nats.url(), "worker-c", c_dir.path()),
        CancellationToken::new(),
    )
    .await
    .expect("worker c");
    assert!(late.runs.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_workers_claim_is_taken_over_after_its_lease() {
    let nats = NatsServer::start();
    let client = bench_nats::connect(&NatsConfig::plain(nats.url()), false)
        .await
        .expect("connect");
    let js = async_nats::jetstream::new(client);
    let config = |lease_ms| ClaimConfig {
        bucket: "BENCH_SWEEPS".to_owned(),
        replicas: 1,
        lease: Duration::from_millis(lease_ms),
    };
    let dead = ClaimBoard::open(&js, &config(60_000), "dead")
        .await
        .expect("bucket");
    let alive = ClaimBoard::open(&js, &config(300), "alive")
        .await
        .expect("bucket");
    let _abandoned = dead.claim("s.k1").await.expect("claim").expect("free key");
    assert!(
        alive.claim("s.k1").await.expect("claim").is_none(),
        "held within its lease"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let taken = alive
        .claim("s.k1")
        .await
        .expect("claim")
        .expect("taken over after the lease");
    let run_id = uuid::Uuid::now_v7();
    alive.complete(taken, run_id, None).await.expect("done");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        alive.claim("s.k1").await.expect("claim").is_none(),
        "done is never rerun"
    );
    assert!(matches!(
        alive.record("s.k1").await.expect("record"),
        Some(ClaimRecord::Done { run_id: id, .. }) if id == run_id
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn adaptive_sweep_reads_results_and_emits_optimizer_updates() {
    let (nats, sink) = start_pipeline().await;
    let file = fixture("adaptive.toml");
    let dir = tempfile::tempdir().expect("dir");
    let clickhouse = clickhouse_source(&sink);
    let mut first = worker(&file, &nats.url(), "worker-a", dir.path());
    first.count = 3;
    first.clickhouse = Some(clickhouse.clone());
    let report = sweep::run(first, CancellationToken::new())
        .await
        .expect("first pass");
    assert_eq!((report.runs.len(), report.optimizer_updates), (3, 3));
    let labels: HashSet<&str> = report.runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels.len(), 3, "untried configs come first: {labels:?}");

    // Once the three results are in ClickHouse, the next pick exploits them.
    sink.wait_for("SELECT count() FROM benchstream.run_stops FINAL", "3")
        .await;
    let dir2 = tempfile::tempdir().expect("dir");
    let mut second = worker(&file, &nats.url(), "worker-b", dir2.path());
    second.count = 1;
    second.clickhouse = Some(clickhouse);
    let report = sweep::run(second, CancellationToken::new())
        .await
        .expect("second pass");
    assert_eq!(report.runs.len(), 1);

    sink.wait_for(
        "SELECT count() FROM benchstream.optimizer_updates FINAL",
        "4",
    )
    .await;
    let reasons = query(
        &sink.clickhouse,
        "SELECT reasoning FROM benchstream.optimizer_updates FINAL ORDER BY ts_ms, seq FORMAT TSVRaw",
    );
    let reasons: Vec<&str> = reasons.lines().collect();
    assert!(
        reasons[..3]
            .iter()
            .all(|r| r.contains("no finished run yet")),
        "{reasons:#?}"
    );
    assert!(
        reasons[3].contains("highest bound") && reasons[3].contains("(3 finished or running runs)"),
        "{}",
        reasons[3]
    );
    assert_eq!(
        query(&sink.clickhouse, "SELECT uniqExact(policy_id), any(task_id) FROM benchstream.optimizer_updates FINAL FORMAT TSV"),
        "1\tsweep:fleet-adaptive"
    );
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_price_for_a_sweep_of_several_models_is_refused_before_any_run() {
    let dir = tempfile::tempdir().expect("dir");
    let prices = agent_runner::Prices::from_overrides(
        agent_runner::TokenPrice::per_mtok("1").ok(),
        agent_runner::TokenPrice::per_mtok("2").ok(),
        None,
    )
    .expect("prices");
    let mut config = worker(
        &repo_path("scenarios/sweeps/strategies.toml"),
        "nats://127.0.0.1:1",
        "worker-a",
        dir.path(),
    );
    config.llm = Some(agent_runner::LlmConfig {
        provider: agent_runner::ProviderConfig {
            base_url: "http://127.0.0.1:1/v1".to_owned(),
            api_key: None,
            timeout: Duration::from_secs(1),
            max_tokens: None,
        },
        price_overrides: prices,
        price_table: None,
        max_format_errors: 1,
        max_provider_failures: 1,
    });
    let error = sweep::run(config, CancellationToken::new())
        .await
        .expect_err("refused");
    assert_eq!(
        error.to_string(),
        "invalid configuration: sweep strategies runs 2 models: --prompt-price-per-mtok and \
         --completion-price-per-mtok price one; give each model's prices with --prices"
    );
    assert!(!dir.path().join("runs").exists(), "no run started");
}
