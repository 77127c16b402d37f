//! event-sink: consumes benchmark events from NATS JetStream into typed ClickHouse
//! tables, at least once, with each event counted once by every shipped query.
//!
//! # Layout
//!
//! The public modules are what the binary, the end-to-end tests and the benches use; the
//! others are the pipeline's internals.
//!
//! - [`command`]: the `event-sink` command line and running each subcommand (`main.rs`
//!   only parses and hands off).
//! - [`config`]: settings layered file < env < flags ([`SinkArgs`]) → validated [`Config`].
//! - `service`: [`run`] (start-up checks, receiver and writer tasks, shutdown) and
//!   [`migrate`].
//! - [`consumer`]: the durable pull consumer, pulling messages, answering them.
//! - `batch`: messages decoded on arrival and grouped for one flush.
//! - `admission`: what a valid event must also satisfy (plausible `ts`, subject
//!   agreeing with the body) and first write wins per `event_id`.
//! - `writer`: flushing a batch: inserts, isolating rows ClickHouse refuses, retries,
//!   progress acks, then acks.
//! - `failure`: the one place deciding what a failure means (bad data, refused row,
//!   transient) and the retry backoff.
//! - [`rows`]: the ClickHouse row of each table, built from a decoded event.
//! - `rowbinary`: encoding rows in ClickHouse's RowBinary format, once, on arrival.
//! - [`migrations`]: the embedded DDL of `deploy/clickhouse/migrations/` and applying it.
//! - [`replay`]: `event-sink dead-letters replay`, dead letters published again once
//!   their cause is fixed, through the same path as every message.
//! - [`cluster`]: the same DDL rendered for a ClickHouse cluster (Replicated tables under
//!   Distributed ones).
//! - `shards`: on a cluster with `replica_urls`, each shard's rows written to its own
//!   replicas by a writer of its own, so a shard that is down holds only its rows.
//! - `metrics`: Prometheus metrics and the `/metrics` + `/healthz` endpoint.
//! - `alias`: `event-sink query` / `report`, handed over to the `bench-analysis` binary
//!   (crate `bench-analysis`, `event-sink/analysis/`), which holds the shipped
//!   queries and the HTML report.
//!
//! The ClickHouse connection settings and the SQL text reader are `bench_clickhouse`'s
//! (`schemas/clickhouse/`), the logging set-up `bench_cli`'s (`schemas/cli/`), shared with
//! `bench-analysis` and `agent-runner`.
//!
//! # Guarantees
//!
//! A message is acked only after every INSERT holding its rows succeeded; a message that
//! is not a valid event gets a `dead_letters` row and is then terminated; nothing from the
//! network can make the sink panic. Duplicates (redelivery, replays, several sinks) are
//! stored more than once until ClickHouse merges them, so readers use `FINAL` (see
//! `deploy/clickhouse/README.md`).

#![warn(missing_docs)]

// What the binary, the end-to-end tests and the benches use.
pub mod cluster;
pub mod command;
pub mod config;
pub mod consumer;
pub mod migrations;
pub mod replay;
pub mod rows;

// Internals of the pipeline.
mod admission;
mod alias;
mod batch;
mod failure;
mod metrics;
mod rowbinary;
mod service;
mod shards;
mod writer;

pub use config::{Config, ConfigError, SinkArgs};
pub use service::{migrate, run, SinkError};
