//! bench-delivery: gets benchmark events from a process to NATS JetStream without losing
//! one, whether the broker is up, away, or refuses a message for good.
//!
//! The one entry point is the [`Publisher`]: [`Publisher::connect`] (or
//! [`Publisher::start`] on a client of your own) replays what an earlier process left in
//! the spool and starts a worker task; producers send events through cheap
//! [`PublisherHandle`]s without ever waiting for the broker; [`Publisher::finish`] drains
//! and reports what happened ([`DeliveryReport`]).
//!
//! What it guarantees:
//!
//! - **acknowledged publishing with an in-flight window**: every event is published with
//!   its `Nats-Msg-Id` and counts as delivered only once JetStream acknowledged it, with at
//!   most [`PublishConfig::window`] acks outstanding;
//! - **the crash-safe spool**: while the broker is away, events are appended to a local
//!   file, fsync'd, checksummed, in order, and replayed by this or the next process
//!   ([`Spool`]);
//! - **quarantine**: what can never be delivered (refused by the server, no stream for its
//!   subject, damaged spool bytes) is kept verbatim with the reason beside the spool
//!   ([`QuarantineEntry`]) and never blocks the events behind it.
//!
//! It knows nothing of agents, runs or scenarios: it takes events and bytes.
//!
//! # Layout
//!
//! - `setup`: [`PublishSetup`], the broker side of a command, and [`Publisher::connect`].
//! - `publish`: the [`Publisher`], its worker and [`PublisherHandle`]: acknowledged
//!   JetStream publishing with an in-flight window, spooling and replay.
//! - `outgoing`: an event as a message ready to publish or to spool ([`Outgoing`]).
//! - `publish_failure`: whether a failed publish may succeed later (spool) or never
//!   (quarantine).
//! - `spool`: the crash-safe local spool for events the broker could not take, in
//!   [`SPOOL_SLOTS`] slots, and [`spool_status`], a snapshot of one.
//! - `quarantine`: where what can never be delivered is kept, verbatim, with the reason.
//!
//! Publishing from code:
//!
//! ```no_run
//! # async fn demo(setup: bench_delivery::PublishSetup, event: bench_schemas::BenchmarkEvent) -> Result<(), Box<dyn std::error::Error>> {
//! use bench_delivery::Publisher;
//! let publisher = Publisher::connect(&setup).await?;
//! let payload = serde_json::to_vec(&event)?;
//! publisher.handle().send(&event, payload.into());
//! let report = publisher.finish().await?;
//! println!("{report}");
//! # Ok(()) }
//! ```

#![warn(missing_docs)]
// The module docs link the crate's private modules too, for readers of
// `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

mod outgoing;
mod publish;
mod publish_failure;
mod quarantine;
mod setup;
mod spool;

pub use outgoing::Outgoing;
pub use publish::{
    DeliveryReport, PublishConfig, PublishFailure, Publisher, PublisherHandle, Receipt, Settled,
    DEFAULT_ACK_TIMEOUT, DEFAULT_DRAIN_TIMEOUT, DEFAULT_WINDOW,
};
pub use quarantine::{QuarantineEntry, QuarantineKind, QuarantineListing};
pub use setup::{PublishSetup, StartError};
pub use spool::{
    record_line, slot_files, status as spool_status, Entry, PendingEntry, Spool, SpoolConfig,
    SpoolError, SpoolStatus, Spooled, DEFAULT_MAX_BYTES as DEFAULT_SPOOL_MAX_BYTES,
    SLOTS as SPOOL_SLOTS,
};
