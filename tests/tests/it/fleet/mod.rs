//! Fleet features end to end against real servers: sweeps split between workers through
//! a JetStream KV bucket, the adaptive and bayes methods reading ClickHouse, external agents over
//! JSON lines, SWE-agent trajectory import, and a run surviving the loss of one node of
//! a 3-node cluster (plus the script that starts that cluster).
//!
//! Runner-side helpers (publish setup, stream reading, an in-process sink) are the shared
//! ones of [`crate::common`].

mod bayes;
mod cluster;
mod exec;
mod import;
mod sweep;

use std::path::PathBuf;

use crate::common::repo_path;

/// A fleet fixture (`tests/fixtures/fleet/<name>`).
fn fixture(name: &str) -> PathBuf {
    repo_path(&format!("tests/fixtures/fleet/{name}"))
}

/// `SELECT` one line from ClickHouse, blocking in place (multi-thread runtime only).
fn query(clickhouse: &benchstream_tests::ClickHouseServer, sql: &str) -> String {
    tokio::task::block_in_place(|| clickhouse.query(sql))
        .trim()
        .to_owned()
}
