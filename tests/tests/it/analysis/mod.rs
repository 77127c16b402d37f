//! The shipped queries and the report, over the seeded dataset of
//! `deploy/clickhouse/fixtures/` loaded into a real ClickHouse 18.16 (migrated by the
//! sink's own migration code).
//!
//! - [`queries`]: every query returns the numbers worked out by hand in
//!   `deploy/clickhouse/fixtures/README.md` (duplicates counted once, the seq gap and the
//!   stale run found, unknown prices listed, timeouts counted), and exactly the answers
//!   in `fixtures/expected/`, which `deploy/clickhouse/chdb_check.py` holds current
//!   ClickHouse to. `BENCH_BLESS=1` rewrites those files from 18.16 instead.
//! - [`report`]: the HTML report renders in headless Chromium with its charts.

mod queries;
mod report;

use std::path::PathBuf;

use benchstream_tests::ClickHouseServer;
use event_sink::analysis::ParamValues;

use crate::common::repo_path;

/// The database the fixtures are loaded into (the sink's default).
const DATABASE: &str = "benchstream";

/// `deploy/clickhouse/fixtures/`.
fn fixtures_dir() -> PathBuf {
    repo_path("deploy/clickhouse/fixtures")
}

/// A fresh 18.16 server, migrated, holding the fixture rows, and a client of its
/// database.
async fn seeded_clickhouse() -> (ClickHouseServer, clickhouse::Client) {
    let server = ClickHouseServer::start();
    let root = clickhouse::Client::default()
        .with_url(server.http_url())
        .with_validation(false);
    event_sink::migrations::ensure_database(&root, DATABASE)
        .await
        .expect("create database");
    let client = root.with_database(DATABASE);
    event_sink::migrations::migrate(&client)
        .await
        .expect("migrations apply on 18.16");
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .expect("fixtures dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "fixture files missing: {files:?}");
    for file in files {
        let table = file
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("file name");
        let rows = std::fs::read_to_string(&file).expect("read fixture");
        server.query(&format!(
            "INSERT INTO {DATABASE}.{table} FORMAT JSONEachRow\n{rows}"
        ));
    }
    (server, client)
}

/// The parameters the fixture answers were computed with, per query
/// (`fixtures/params.json`; other queries use their defaults).
fn fixture_params(query: &str) -> ParamValues {
    let text = std::fs::read_to_string(fixtures_dir().join("params.json")).expect("params.json");
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
