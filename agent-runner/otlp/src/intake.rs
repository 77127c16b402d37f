//! What the receiver's two transports share: the state every request handler uses (the
//! HTTP handlers and methods of `receiver`, the gRPC services of `grpc`), and how a
//! request that could not be taken whole is answered.

use std::sync::atomic::AtomicU64;

use bench_cli::token::BearerToken;
use bench_delivery::PublisherHandle;

use crate::mapping::Mapper;
use crate::runs::Ledger;

/// Why a request was answered 503 / `UNAVAILABLE`.
pub(super) const UNAVAILABLE_MESSAGE: &str =
    "the publisher has stopped (spool full or broken); send again later";

/// Why a request could not be taken whole: the exporter must send it again later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Unavailable;

/// What every request handler shares.
pub(super) struct Shared {
    pub(super) mapper: Mapper,
    pub(super) ledger: Ledger,
    pub(super) token: Option<BearerToken>,
    pub(super) max_body_bytes: usize,
    pub(super) publisher: PublisherHandle,
    pub(super) counters: Counters,
}

/// What the receiver counts, for its report.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) requests: AtomicU64,
    pub(super) spans: AtomicU64,
    pub(super) rejected_spans: AtomicU64,
    pub(super) log_records: AtomicU64,
    pub(super) rejected_log_records: AtomicU64,
    pub(super) metric_points: AtomicU64,
    pub(super) events: AtomicU64,
    pub(super) timed_out_runs: AtomicU64,
}
