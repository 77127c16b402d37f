//! [`OtlpError`]: what stops a receiver.

/// What only the OTLP receiver can meet; a bad request is not an error (it gets its HTTP
/// status), and a publisher that stops is its owner's to report.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// The listen address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The HTTP server failed.
    #[error("serving OTLP/HTTP: {0}")]
    Serve(std::io::Error),
    /// The gRPC server failed.
    #[error("serving OTLP/gRPC: {0}")]
    ServeGrpc(String),
}
