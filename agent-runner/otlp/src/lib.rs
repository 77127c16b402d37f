//! bench-otlp: an OTLP/HTTP (and OTLP/gRPC) receiver that turns OpenTelemetry traces and
//! GenAI log events written under the GenAI semantic conventions (and OpenLLMetry's and
//! OpenInference's) into benchmark events, and publishes them through a `bench-delivery`
//! publisher (acknowledged JetStream publishes, the spool while the broker is away).
//!
//! The one entry point is [`serve`]: the [`Listeners`] bound from a [`ReceiverConfig`],
//! a publisher's handle and a shutdown token; it returns the receiver's [`Counts`].
//! `agent-runner otlp` is its command-line front-end. It imports nothing of the runner
//! (`tests/tests/module_graph.rs` checks).
//!
//! # Layout
//!
//! - `config`: [`ReceiverConfig`], what a receiver runs with.
//! - `body`: an HTTP request body → an export request of traces, logs or metrics
//!   (protobuf or JSON, gzip or not, size-capped), and the reply in the request's encoding.
//! - `logs`: GenAI log records → `genai_event` events; pure, no I/O.
//! - `span`: attribute lookup on a span and its resource, with the aliases
//!   instrumentation libraries use.
//! - `mapping`: spans → events (the table in `schemas/README.md`, "OpenTelemetry
//!   traces"); pure, no I/O.
//! - `runs`: the runs under way and the model calls seen of each, for the totals of
//!   the `run_stop` a root span brings.
//! - `intake`: the state both transports share, and the answer to a request that could
//!   not be taken whole.
//! - `grpc`: the OTLP/gRPC services (`--grpc-listen`), over the same state.
//! - `receiver`: the HTTP server: auth, decoding, mapping, publishing, and the reply
//!   once every event is acknowledged or spooled.
//! - `error`: [`OtlpError`].
//!
//! Delivery is at least once and each fact counts once: the receiver answers 200 only
//! after every event of the request is acknowledged by JetStream or fsync'd into the
//! spool, so an exporter that got no answer sends again; every event id derives from
//! (trace id, span id, event type), so the copy is dropped by JetStream's duplicate window
//! or merged by the sink.

#![warn(missing_docs)]
// The module docs link the crate's private modules too, for readers of
// `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

mod body;
mod config;
mod error;
mod grpc;
mod intake;
mod logs;
mod mapping;
mod receiver;
mod runs;
mod span;

pub use config::ReceiverConfig;
pub use error::OtlpError;
pub use receiver::{serve, Counts, Listeners};
pub use runs::DEFAULT_RUN_IDLE;
