//! Workspace-level tests of benchstream and the harness they run on.
//!
//! The library half of this crate is [`harness`]: it starts real `nats-server` and
//! `clickhouse-server` processes on free loopback ports with their own temporary
//! directories, and stops them when dropped. The tests themselves live in one
//! integration-test binary, `tests/it/main.rs`, with one module per area.
//!
//! Benchmarks that need the harness are binaries of this crate, so that the product
//! crates do not depend on it: `src/bin/publish-bench.rs` measures the runner's publisher
//! (`cargo run --release -p benchstream-tests --bin publish-bench`), `src/bin/sink-bench.rs`
//! the event-sink against ClickHouse alone (`cargo build --release -p event-sink`, then
//! `cargo run --release -p benchstream-tests --bin sink-bench`), `src/bin/sink-latency.rs`
//! its publish-to-queryable time, and `src/bin/sandbox-bench.rs` the agent sandbox's cost
//! per tool call; [`bench`] holds what they share.
//!
//! The servers must be installed first: `deploy/local/install.sh`.

pub mod bench;
pub mod harness;

pub use harness::{
    free_port, processes_with, ClickHouseCluster, ClickHouseServer, NatsAuth, NatsOptions,
    NatsServer, OpenAiServer, QueryError, Reply,
};
