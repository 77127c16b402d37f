//! What every benchstream command that talks to ClickHouse shares, so the sink,
//! `bench-analysis` and `agent-runner sweep` connect and read SQL the same way.
//!
//! # Layout
//!
//! - [`connection`]: [`ClickHouseArgs`] (flags / env / the sink's `[clickhouse]`, all
//!   optional) → validated [`ClickHouseConfig`] → `clickhouse::Client`, with TLS for
//!   `https://` URLs and the ClickHouse 18.16 settings; [`ConnectionArgs`] adds the
//!   sink's `--config` file for commands that only read.
//! - [`sql`]: which bytes of SQL text are code, quoted text or comments (migrations split
//!   on it, query templates find their placeholders with it).
//!
//! Its password, like every password, token, nkey and API key of the workspace, is a
//! `secrecy::SecretString`: its `Debug` prints `[REDACTED]`, it is wiped on drop, and
//! reading it takes an explicit `expose_secret()`.
//!
//! It lives beside `bench_schemas` and `bench_nats` rather than at the top level, whose layout
//! is fixed (README.md, "Where things live"); like `bench_nats` it keeps `bench_schemas` free
//! of a database client.

#![warn(missing_docs)]

pub mod connection;
pub mod sql;

pub use connection::{ClickHouseArgs, ClickHouseConfig, ConfigError, ConnectionArgs};
