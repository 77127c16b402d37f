//! Real servers for tests: one `nats-server` or `clickhouse-server` child process per
//! value, on free loopback ports, with its data in its own [`tempfile::TempDir`].
//!
//! Modelled on the `nats-server` helper of async-nats: start a real server, hand out its
//! address, kill it on `Drop`. Tests run in parallel threads and processes, so nothing
//! here uses a fixed port or a shared directory.
//!
//! # Layout
//!
//! - [`port`]: [`free_port`], a loopback port nobody listens on.
//! - [`nats`]: [`NatsServer`] with JetStream, configured from `deploy/nats/nats-server.conf`
//!   plus per-test overrides ([`NatsOptions`]: auth, raw config).
//! - [`cluster`]: [`NatsCluster`], three nodes from `deploy/nats/cluster/` forming one
//!   JetStream cluster, for replicated (R3) streams and node failures.
//! - [`clickhouse`]: [`ClickHouseServer`] configured from `deploy/local/clickhouse/`, and a
//!   blocking SQL-over-HTTP helper ([`ClickHouseServer::query`]).
//! - [`clickhouse_cluster`]: [`ClickHouseCluster`], ZooKeeper and 2 shards × 2 replicas
//!   configured from `deploy/clickhouse/cluster/`, for Replicated and Distributed tables
//!   and server, shard and ZooKeeper failures.
//! - [`fault_proxy`]: [`FaultProxy`], an HTTP proxy in front of a real ClickHouse that
//!   answers chosen requests with the failures a dying replica, ZooKeeper or the network
//!   give (an error answer, a closed connection, a stall, an error after the rows
//!   landed), and forwards the rest.
//! - [`openai`]: [`OpenAiServer`], a scripted stand-in for an OpenAI-compatible model
//!   provider (chat completions with tool calls, usage blocks, delays, errors, a model
//!   listing), recording every request it receives.
//! - `process`: the child-process life cycle every server shares (spawn, readiness wait,
//!   retry on a port taken meanwhile, restart, SIGTERM/SIGKILL, log tail for panic
//!   messages), and the public methods over it that every server offers (`stop`, `kill`,
//!   `restart`, `is_running`, `log_path`).
//! - [`http`]: the few lines of blocking HTTP/1.0 the readiness probes and `query` need, so
//!   the harness needs no async runtime (also what the viewer's tests read status codes
//!   and headers with).
//!
//! # What it does not do
//!
//! It does not install anything: missing binaries make it panic with a pointer to
//! `deploy/local/install.sh`. It does not create streams, tables or migrations; that is
//! the product's job, and tests check the product does it.
//!
//! Servers are killed on `Drop`, which runs on test success and on panics. If the test
//! process itself is killed with SIGKILL, its servers outlive it (a Ctrl-C in a terminal
//! reaches them too, as they share the process group).

pub mod clickhouse;
pub mod clickhouse_cluster;
pub mod cluster;
pub mod fault_proxy;
pub mod http;
pub mod nats;
pub mod openai;
pub mod port;
mod process;

pub use clickhouse::{ClickHouseServer, QueryError};
pub use clickhouse_cluster::{ClickHouseCluster, ZooKeeper};
pub use cluster::NatsCluster;
pub use fault_proxy::{Fault, FaultProxy};
pub use nats::{NatsAuth, NatsOptions, NatsServer};
pub use openai::{OpenAiServer, Recorded, Reply};
pub use port::free_port;
pub use process::processes_with;
