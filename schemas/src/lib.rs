//! The wire contract of benchstream: one JSON [`BenchmarkEvent`] per thing that happened
//! in an agent benchmark run (schema_version 1). `schemas/README.md` is the contract in
//! prose: every field with its meaning, unit and nullability, subjects, headers, identity
//! and dedup, limits and versioning rules.
//!
//! # Layout
//!
//! - [`envelope`]: the event envelope ([`BenchmarkEvent`]) and the timestamp format.
//! - [`payload`]: `type` ([`EventType`]) and the `data` object of every event type, with
//!   enums for every closed set.
//! - [`canonical`]: canonical JSON (sorted keys, no whitespace) and the SHA-256 digest
//!   ([`Hash256`]) used for `cfg_hash` / `env_hash`.
//! - [`decode`](mod@decode): bytes → validated event, with a typed [`DecodeError`] per failure class;
//!   [`decode_message`] also reads the Smith protocol and says which protocol it was.
//! - [`smith`]: the Smith protocol (the one this format grew from), mapped onto these
//!   types without inventing what it does not send.
//! - [`truncate`]: char-boundary truncation of long text fields and the 1 MiB limit.
//! - [`subject`]: NATS subject naming and header names (strings only; no NATS dependency).
//! - [`sequence`]: [`RunSequencer`], which stamps ids, `seq` and `ts` on a run's events.
//! - [`recorded`]: runs recorded elsewhere (imports, traces): their `run_start`, what
//!   their `env_hash` covers, and event ids derived from where they came from.
//! - [`json_schema`]: the JSON Schema document of the wire format, generated from the types.
//!
//! This crate must not depend on NATS or ClickHouse: it is shared by producers (runner,
//! external agents, importers) and the sink, and is what other languages validate against.

#![warn(missing_docs)]

pub mod canonical;
pub mod decode;
mod decode_error;
pub mod envelope;
pub mod json_schema;
pub mod payload;
pub mod recorded;
pub mod sequence;
pub mod smith;
pub mod subject;
pub mod truncate;

pub use canonical::{canonical_json, sha256_hex, Canonical, Hash256, HashError};
pub use decode::{decode, decode_message, DecodeError, Decoded, Protocol};
pub use envelope::{BenchmarkEvent, SCHEMA_VERSION};
pub use payload::*;
pub use recorded::{derived_uuid, recorded_run_start, Provenance};
pub use sequence::RunSequencer;
pub use subject::{SubjectPrefix, SubjectPrefixError};
pub use truncate::{FINAL_DIFF_MAX_CHARS, MAX_EVENT_BYTES};
