//! `agent-runner otlp`: an OTLP/HTTP (and, with `--grpc-listen`, OTLP/gRPC) receiver that
//! turns OpenTelemetry traces and GenAI log events written under the GenAI semantic
//! conventions (and OpenLLMetry's and OpenInference's) into benchmark events, and
//! publishes them through the runner's own publisher (acknowledged JetStream publishes, the spool while the broker is
//! away).
//!
//! # Layout
//!
//! - [`args`]: the command's flags → a validated [`OtlpConfig`].
//! - [`body`]: an HTTP request body → an export request of traces, logs or metrics
//!   (protobuf or JSON, gzip or not, size-capped), and the reply in the request's encoding.
//! - [`logs`]: GenAI log records → `genai_event` events; pure, no I/O.
//! - [`span`]: attribute lookup on a span and its resource, with the aliases
//!   instrumentation libraries use.
//! - [`mapping`]: spans → events (the table in `schemas/README.md`, "OpenTelemetry
//!   traces"); pure, no I/O.
//! - [`runs`]: the runs under way and the model calls seen of each, for the totals of
//!   the `run_stop` a root span brings.
//! - [`intake`]: the state both transports share, and the answer to a request that could
//!   not be taken whole.
//! - [`grpc`]: the OTLP/gRPC services (`--grpc-listen`), over the same state.
//! - [`receiver`]: the HTTP server: auth, decoding, mapping, publishing, and the reply
//!   once every event is acknowledged or spooled.
//!
//! Delivery is at least once and each fact counts once: the receiver answers 200 only
//! after every event of the request is acknowledged by JetStream or fsync'd into the
//! spool, so an exporter that got no answer sends again; every event id derives from
//! (trace id, span id, event type), so the copy is dropped by JetStream's duplicate window
//! or merged by the sink.

pub(crate) mod args;
pub(crate) mod body;
pub(crate) mod grpc;
pub(crate) mod intake;
pub(crate) mod logs;
pub(crate) mod mapping;
pub(crate) mod receiver;
pub(crate) mod runs;
pub(crate) mod span;

pub use args::{OtlpArgs, OtlpConfig};
pub use receiver::{run, serve, OtlpReport};
