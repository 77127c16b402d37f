//! The shipped queries and the report, over the datasets of `deploy/clickhouse/fixtures/`
//! loaded into a real ClickHouse 18.16 (migrated by the sink's own migration code): the
//! hand-made one (`fixtures/`) and the one exported from a real pipeline run
//! (`fixtures/pipeline/`).
//!
//! - [`queries`]: every query returns the numbers worked out by hand in
//!   `deploy/clickhouse/fixtures/README.md` (duplicates counted once, the seq gap and the
//!   stale run found, unknown prices listed, timeouts counted), and, over each dataset,
//!   exactly the answers in `<dataset>/expected/`, which
//!   `deploy/clickhouse/chdb_check.py` holds current ClickHouse to. `BENCH_BLESS=1`
//!   rewrites those files from 18.16 instead.
//!   The pipeline dataset gives the same answers on a 2 × 2 cluster, read through the
//!   Distributed tables.
//! - [`report`]: the HTML report renders in headless Chromium with its charts, over the
//!   hand-made dataset and over the 17-policy sweep (`fixtures/sweep/`, used only here).
//! - [`provenance`]: `deploy/clickhouse/PROVENANCE.md`, where every column's value comes
//!   from and what it holds when nobody measured it, generated from the migrations and
//!   the JSON Schema.
//! - [`cli`]: the `bench-analysis` binary, and `event-sink query` / `report` giving the
//!   same answers through it.
//! - [`compare`]: `bench-analysis compare` over runs published to NATS and stored by the
//!   sink: only finished, judged runs count, the others are counted by reason.
//! - [`serve`]: `bench-analysis serve`, the web viewer, in headless Chromium over a live
//!   pipeline: pages, escaping, the side-by-side view, live updates, errors, the token.
//! - [`sequential`]: `compare --sequential` over runs published in rounds: rounds by
//!   start time, infrastructure failures no outcome, the right decision.

mod cli;
mod compare;
mod experiments;
mod provenance;
mod queries;
mod report;
mod sequential;
mod serve;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bench_analysis::ParamValues;
use benchstream_tests::harness::clickhouse_cluster::{ALTER_CLUSTER_NAME, CLUSTER_NAME};
use benchstream_tests::{ClickHouseCluster, ClickHouseServer};
use event_sink::cluster::Target;

use crate::common::{repo_path, wait_for};

/// The database the fixtures are loaded into (the sink's default).
const DATABASE: &str = "benchstream";

/// `deploy/clickhouse/fixtures/`: the hand-made dataset (see its README.md).
fn fixtures_dir() -> PathBuf {
    repo_path("deploy/clickhouse/fixtures")
}

/// `deploy/clickhouse/fixtures/pipeline/`: rows exported from a real pipeline run (see
/// its README.md).
fn pipeline_dir() -> PathBuf {
    fixtures_dir().join("pipeline")
}

/// `deploy/clickhouse/fixtures/sweep/`: 17 policies with long ids over 6 tasks (see its
/// generate.py).
fn sweep_dir() -> PathBuf {
    fixtures_dir().join("sweep")
}

/// A fresh 18.16 server, migrated, holding the hand-made fixture rows, and a client of
/// its database.
async fn seeded_clickhouse() -> (ClickHouseServer, clickhouse::Client) {
    seeded_clickhouse_from(&fixtures_dir()).await
}

/// A fresh 18.16 server, migrated, holding the rows of the dataset in `dir` (one
/// JSONEachRow file `<table>.jsonl` per table), and a client of its database.
async fn seeded_clickhouse_from(dir: &Path) -> (ClickHouseServer, clickhouse::Client) {
    let server = ClickHouseServer::start();
    let client = seed(&server, dir, None).await;
    (server, client)
}

/// Migrates the database on `server` (for `cluster`, the cluster layout) and loads the
/// rows of the dataset in `dir`; returns a client of the database. On a cluster the rows
/// go through the Distributed tables, and this returns once every replica has them.
async fn seed(
    server: &ClickHouseServer,
    dir: &Path,
    cluster: Option<&ClickHouseCluster>,
) -> clickhouse::Client {
    let root = server.client();
    let cluster_name = cluster.map(|_| CLUSTER_NAME);
    event_sink::migrations::ensure_database(&root, DATABASE, cluster_name)
        .await
        .expect("create database");
    let client = root.with_database(DATABASE);
    let target = cluster_name.map(|cluster| Target {
        cluster,
        alter_cluster: ALTER_CLUSTER_NAME,
        database: DATABASE,
    });
    event_sink::migrations::migrate(&client, target.as_ref())
        .await
        .expect("migrations apply on 18.16");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixture files in {}", dir.display());
    for file in files {
        let table = file
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("file name");
        let rows = std::fs::read_to_string(&file).expect("read fixture");
        server.query(&format!(
            "INSERT INTO {DATABASE}.{table} FORMAT JSONEachRow\n{rows}"
        ));
        if let Some(cluster) = cluster {
            // The Distributed table forwards the rows in the background; then each
            // shard's other replica fetches them.
            let sql = format!("SELECT count() FROM {DATABASE}.{table}");
            let lines = rows.lines().filter(|l| !l.trim().is_empty()).count();
            wait_for(server, &sql, &lines.to_string(), Duration::from_secs(60));
            for replica in cluster.servers() {
                replica.query(&format!("SYSTEM SYNC REPLICA {DATABASE}.{table}_local"));
            }
        }
    }
    client
}

/// The parameters the answers of the dataset in `dir` were computed with, per query
/// (`<dir>/params.json`; other queries use their defaults).
fn fixture_params(dir: &Path, query: &str) -> ParamValues {
    let path = dir.join("params.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let all: serde_json::Value = serde_json::from_str(&text).expect("params.json is JSON");
    all.get(query)
        .and_then(|params| params.as_object())
        .map(|params| {
            params
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}
