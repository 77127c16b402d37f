//! [`ReceiverConfig`]: what a receiver runs with.

use std::net::SocketAddr;
use std::time::Duration;

use bench_cli::token::BearerToken;
use bench_pricing::PriceTable;
use bench_schemas::ExperimentRef;

/// What the receiver runs with.
#[derive(Debug, Clone)]
pub struct ReceiverConfig {
    /// Where to listen (OTLP/HTTP).
    pub listen: SocketAddr,
    /// Where to serve OTLP/gRPC; `None`: not served.
    pub grpc_listen: Option<SocketAddr>,
    /// The token requests must carry; `None`: no authentication.
    pub bearer_token: Option<BearerToken>,
    /// Largest body, bytes, compressed and inflated.
    pub max_body_bytes: usize,
    /// How long a run without any span stays open (and a closed one remembered).
    pub run_timeout: Duration,
    /// `host` on every event.
    pub host: String,
    /// Prices per model; `None`: costs are null.
    pub prices: Option<PriceTable>,
    /// The experiment and tags of every received run.
    pub experiment: ExperimentRef,
}
