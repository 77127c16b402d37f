//! Workspace-level tests of benchstream and the harness they run on.
//!
//! The library half of this crate is [`harness`]: it starts real `nats-server` and
//! `clickhouse-server` processes on free loopback ports with their own temporary
//! directories, and stops them when dropped. The tests themselves live in one
//! integration-test binary, `tests/it/main.rs`, with one module per area.
//!
//! Beside it, what the end-to-end tests, the tests of the product binaries
//! (`agent-runner/tests/`, `event-sink/tests/`) and the benchmarks share:
//!
//! - [`stream`]: creating the events stream and reading it back.
//! - [`events`]: golden events re-stamped as fresh runs, published the way a runner does.
//! - [`query`]: waiting for ClickHouse to give an answer.
//! - [`runs`]: a run's `events.jsonl` and `summary.json`.
//! - [`spool`]: spools written with the runner's own code, to damage or flush.
//! - [`cli`]: the product binaries run to their exit, and what their `--help` shows.
//! - [`swe_bench`]: a SWE-bench-format project made on the spot (a git repository whose
//!   history goes past its base, and its instance record).
//! - [`images`]: OCI images built from Debian's mirror (mmdebstrap, umoci), as task
//!   environments.
//!
//! The benchmarks that run on these servers are a package of their own, `bench/`
//! (`benchstream-bench`), so that neither the product crates nor this one carry them.
//!
//! The servers must be installed first: `deploy/local/install.sh`.

#![warn(missing_docs)]

pub mod cli;
pub mod events;
pub mod harness;
pub mod images;
pub mod query;
pub mod runs;
pub mod spool;
pub mod stream;
pub mod swe_bench;

pub use harness::{
    free_port, processes_with, ClickHouseCluster, ClickHouseServer, Fault, FaultProxy, NatsAuth,
    NatsOptions, NatsServer, OpenAiServer, QueryError, Reply,
};
