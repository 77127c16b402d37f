//! bench-analysis: answers from the events the sink stored, the shipped SQL queries
//! and the HTML report, run by the `bench-analysis` binary (and by `event-sink query` /
//! `event-sink report`, which hand over to it). It reads the database with the sink's
//! connection settings ([`bench_clickhouse::ConnectionArgs`]) and reads SQL text with
//! [`bench_clickhouse::sql`], as the sink does; it links nothing of the sink, and the
//! sink nothing of it.
//!
//! # Layout
//!
//! - [`queries`]: the catalog of `deploy/clickhouse/queries/*.sql` (embedded), typed
//!   parameters substituted safely (ClickHouse 18.16 has no server-side parameters),
//!   running a query ([`Query::run`]).
//! - [`table`]: a query answer ([`Table`]) and its output formats ([`Format`]: aligned
//!   table, JSON, CSV) for `bench-analysis query`.
//! - [`report`]: `bench-analysis report`, one self-contained offline HTML page of tables
//!   and charts with a time-range and a policy filter.
//! - [`charts`]: the report's charts, built from query answers.
//! - [`svg`]: the few SVG primitives the charts use, written by hand.
//! - [`compare`]: `bench-analysis compare`, paired statistics between policies on the
//!   same tasks (intervals, exact tests, sample sizes) over the `paired_outcomes` query.
//! - [`plan`]: `bench-analysis plan`, the tasks and repeats a paired comparison needs.
//! - [`serve`]: `bench-analysis serve`, the web viewer: pages and a JSON API over the
//!   stored runs, live updates from the events stream.
//! - [`command`]: the `query`, `compare`, `report`, `plan` and `serve` subcommands.
//!
//! Every query reads the ReplacingMergeTree tables with `FINAL`, so each event counts
//! once however often it was delivered. The SQL runs unchanged on ClickHouse 18.16 and
//! on current ClickHouse (checked by `deploy/clickhouse/chdb_check.py` over the fixture
//! dataset in `deploy/clickhouse/fixtures/`).
//!
//! This crate only reads; it never writes to ClickHouse.

#![warn(missing_docs)]
// The module docs link the crate's private modules too, for readers of
// `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

pub(crate) mod charts;
pub mod command;
pub mod compare;
pub mod plan;
pub mod queries;
pub mod report;
pub mod serve;
pub(crate) mod svg;
pub mod table;

pub use queries::{ParamValues, Query, QueryError, QUERIES};
pub use report::{generate_report, ReportOptions};
pub use table::{Format, Table};
