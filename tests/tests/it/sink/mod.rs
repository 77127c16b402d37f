//! The event-sink end to end: a real nats-server and ClickHouse 18.16 per test, the
//! sink running in-process (`event_sink::run` with a `CancellationToken`), assertions on
//! the rows in ClickHouse and the consumer state in JetStream.
//!
//! Tests that need the sink as a separate process (kill -9, signals, exit codes) are in
//! `event-sink/tests/process.rs`, where Cargo provides the binary's path.

mod dead_letters;
mod dedup;
pub(crate) mod integrity;
mod landing;
mod outage;
mod replay;
pub(crate) mod setup;
mod shutdown;
pub(crate) mod smith;
mod startup;
mod transient;
