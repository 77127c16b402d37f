//! The edge every benchstream binary (`agent-runner`, `event-sink`, `bench-analysis`)
//! shares, so all three behave the same there.
//!
//! # Layout
//!
//! - [`logging`]: `--log-format` and the tracing subscriber on stderr, filtered by
//!   `RUST_LOG`.

#![warn(missing_docs)]

pub mod logging;

pub use logging::{init_tracing, LogFormat};
