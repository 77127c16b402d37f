//! OTLP/gRPC (`--grpc-listen`): the `TraceService`, `LogsService` and `MetricsService` of
//! the official protos (`opentelemetry-proto`'s tonic services), with the same mapping,
//! publishing and replies as OTLP/HTTP ([`crate::receiver`]): a request is answered OK
//! once every event is acknowledged or spooled, partial success for what was refused,
//! `UNAVAILABLE` (retryable) only when the publisher has stopped, `UNAUTHENTICATED`
//! without the bearer token. gzip-compressed requests are accepted.

use std::sync::Arc;

use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
    LogsService, LogsServiceServer,
};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::codec::CompressionEncoding;
use tonic::metadata::MetadataMap;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

use crate::error::OtlpError;
use crate::intake::{Shared, Unavailable, UNAVAILABLE_MESSAGE};
use bench_cli::token::BearerToken;

/// The three services over one shared state.
#[derive(Clone)]
struct Grpc(Arc<Shared>);

impl Grpc {
    /// `UNAUTHENTICATED` unless the request carries the bearer token (when one is set).
    fn authorize<T>(&self, request: &Request<T>) -> Result<(), Status> {
        authorize(self.0.token.as_ref(), request.metadata())
    }
}

/// `UNAUTHENTICATED` unless `metadata` carries `authorization: Bearer <token>` (when a
/// token is set).
fn authorize(token: Option<&BearerToken>, metadata: &MetadataMap) -> Result<(), Status> {
    match token {
        Some(token) => {
            let given = metadata.get("authorization");
            if given.is_some_and(|g| token.admits(g.as_bytes())) {
                Ok(())
            } else {
                Err(Status::unauthenticated("missing or wrong bearer token"))
            }
        }
        None => Ok(()),
    }
}

fn unavailable(Unavailable: Unavailable) -> Status {
    Status::unavailable(UNAVAILABLE_MESSAGE)
}

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        self.authorize(&request)?;
        let response = self.0.export_traces(request.get_ref()).await;
        response.map(Response::new).map_err(unavailable)
    }
}

#[tonic::async_trait]
impl LogsService for Grpc {
    async fn export(
        &self,
        request: Request<ExportLogsServiceRequest>,
    ) -> Result<Response<ExportLogsServiceResponse>, Status> {
        self.authorize(&request)?;
        let response = self.0.export_logs(request.get_ref()).await;
        response.map(Response::new).map_err(unavailable)
    }
}

#[tonic::async_trait]
impl MetricsService for Grpc {
    async fn export(
        &self,
        request: Request<ExportMetricsServiceRequest>,
    ) -> Result<Response<ExportMetricsServiceResponse>, Status> {
        self.authorize(&request)?;
        Ok(Response::new(self.0.export_metrics(request.get_ref())))
    }
}

/// Serves OTLP/gRPC on `listener` until `shutdown`.
pub(super) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
) -> Result<(), OtlpError> {
    let limit = shared.max_body_bytes;
    let grpc = Grpc(shared);
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "OTLP/gRPC receiver listening");
    }
    tonic::transport::Server::builder()
        .add_service(
            TraceServiceServer::new(grpc.clone())
                .accept_compressed(CompressionEncoding::Gzip)
                .max_decoding_message_size(limit),
        )
        .add_service(
            LogsServiceServer::new(grpc.clone())
                .accept_compressed(CompressionEncoding::Gzip)
                .max_decoding_message_size(limit),
        )
        .add_service(
            MetricsServiceServer::new(grpc)
                .accept_compressed(CompressionEncoding::Gzip)
                .max_decoding_message_size(limit),
        )
        .serve_with_incoming_shutdown(TcpIncoming::from(listener), shutdown.cancelled_owned())
        .await
        .map_err(|e| OtlpError::ServeGrpc(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_requests_with_the_bearer_token_in_their_metadata_are_authorized() {
        let token = BearerToken::new("s3cret".into()).expect("valid");
        let with = |value: &str| {
            let mut metadata = MetadataMap::new();
            metadata.insert("authorization", value.parse().expect("ascii"));
            metadata
        };
        assert!(authorize(Some(&token), &with("Bearer s3cret")).is_ok());
        let refused = authorize(Some(&token), &with("Bearer other")).expect_err("wrong token");
        assert_eq!(refused.code(), tonic::Code::Unauthenticated);
        let missing = authorize(Some(&token), &MetadataMap::new()).expect_err("no token");
        assert_eq!(missing.code(), tonic::Code::Unauthenticated);
        assert!(authorize(None, &MetadataMap::new()).is_ok(), "no token set");
    }
}
