//! Fleet features end to end against real servers: sweeps split between workers through
//! a JetStream KV bucket, the adaptive and bayes methods reading ClickHouse, external agents over
//! JSON lines, SWE-agent trajectory import, SWE-bench-format tasks imported and judged
//! into ClickHouse, and a run surviving the loss of one node of
//! a 3-node cluster (plus the script that starts that cluster).
//!
//! Runner-side helpers (publish setup, stream reading, an in-process sink) are the shared
//! ones of [`crate::common`].

mod bayes;
mod cluster;
mod documented_flow;
mod exec;
mod import;
mod swe_bench;
mod sweep;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use agent_runner::sweep::{SweepConfig, SweepReport};
use bench_clickhouse::{ClickHouseArgs, ClickHouseConfig};
use bench_schemas::SubjectPrefix;

use crate::common::{publish_setup, repo_path, SinkToClickHouse};

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

/// A sweep worker of `file` named `name`, publishing to `url`, spool and artifacts in
/// `dir`; scripted policies only and no ClickHouse (the tests that need a model or past
/// results set `llm` and `clickhouse`).
fn worker(file: &Path, url: &str, name: &str, dir: &Path) -> SweepConfig {
    SweepConfig {
        file: file.to_path_buf(),
        scenarios_dir: repo_path("scenarios"),
        allow_unpinned: false,
        count: usize::MAX,
        worker: name.to_owned(),
        out_dir: Some(dir.join("runs")),
        output_cap: agent_runner::DEFAULT_OUTPUT_CAP,
        sandbox: Default::default(),
        images: Default::default(),
        publish: publish_setup(url, &SubjectPrefix::default(), dir),
        llm: None,
        claims: Default::default(),
        clickhouse: None,
    }
}

/// Where a sweep reads past results: `sink`'s ClickHouse.
fn clickhouse_source(sink: &SinkToClickHouse) -> ClickHouseConfig {
    ClickHouseArgs {
        url: Some(sink.clickhouse.http_url()),
        user: Some("default".to_owned()),
        database: Some("benchstream".to_owned()),
        ..ClickHouseArgs::default()
    }
    .resolve()
    .expect("the sink's ClickHouse settings are valid")
}

/// Checks that two workers split the sweep keys `all` between them: no key ran on both,
/// both got work, and none was missed.
fn assert_split(a: &SweepReport, b: &SweepReport, all: &HashSet<String>) {
    let keys =
        |r: &SweepReport| -> HashSet<String> { r.runs.iter().map(|run| run.key.clone()).collect() };
    let (ka, kb) = (keys(a), keys(b));
    assert!(
        ka.is_disjoint(&kb),
        "a key ran on both workers: {:?}",
        ka.intersection(&kb)
    );
    assert!(
        !ka.is_empty() && !kb.is_empty(),
        "both workers got work: {} / {}",
        ka.len(),
        kb.len()
    );
    assert_eq!(
        &ka.union(&kb).cloned().collect::<HashSet<_>>(),
        all,
        "nothing missed"
    );
}
