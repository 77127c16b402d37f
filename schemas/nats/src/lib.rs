//! What runner and sink share about NATS, so both connect and name things the same way.
//!
//! # Layout
//!
//! - [`connect`](mod@connect): [`NatsArgs`] (flags / env / config file, all optional) →
//!   validated [`NatsConfig`] → [`connect()`], covering user/password, token, nkey,
//!   `.creds` file and TLS; also `--subject-prefix` and `--stream`, declared here once
//!   for every binary (each words their `--help` for its use with clap's `mut_arg`).
//! - [`stream`]: [`StreamSpec`], the `BENCH_EVENTS` stream definition (the same JSON as
//!   `deploy/nats/stream-bench-events.json`, which the `nats` CLI can load), and creating or
//!   verifying it.
//!
//! It lives beside `bench_schemas` (which must stay free of NATS) rather than at the top level,
//! whose layout is fixed (README.md, "Where things live").

#![warn(missing_docs)]

pub mod connect;
pub mod stream;

pub use connect::{connect, ConnectError, NatsArgs, NatsAuth, NatsConfig, NatsConfigError};
pub use stream::{StreamError, StreamSpec};
