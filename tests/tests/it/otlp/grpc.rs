//! OTLP/gRPC (`--grpc-listen`) with tonic's client generated from the official protos: a
//! gzip-compressed export lands its rows once, and a request the spool has no room for is
//! answered `UNAVAILABLE` (retryable), as OTLP/HTTP answers 503.

use bench_nats::StreamSpec;
use benchstream_tests::free_port;
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_client::LogsServiceClient;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use tonic::codec::CompressionEncoding;

use super::http::nats_with_stream;
use super::otel::{chat, text, Trace};
use super::{query, Receiver, FULL_SPOOL};
use crate::common::{start_pipeline, stream_messages};

/// A receiver serving OTLP/gRPC too: it and the gRPC endpoint (`http://addr`).
async fn start_grpc(nats_url: &str, dir: &std::path::Path, extra: &[&str]) -> (Receiver, String) {
    let grpc = format!("127.0.0.1:{}", free_port());
    let mut flags = vec!["--grpc-listen", grpc.as_str()];
    flags.extend_from_slice(extra);
    let receiver = Receiver::start(nats_url, dir, &flags).await;
    (receiver, format!("http://{grpc}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_gzip_compressed_grpc_export_lands_its_rows_once() {
    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("dir");
    let (receiver, endpoint) = start_grpc(&nats.url(), dir.path(), &[]).await;
    let trace = Trace::new("grpc-gzip", 5);
    let spans = trace.spans(vec![
        trace.span(2, Some(1), (100, 1300), chat("model-a", 120, 30)),
        trace.span(1, None, (0, 2000), Vec::new()),
    ]);
    let choice = trace.record(
        "gen_ai.choice",
        2,
        1300,
        vec![text("gen_ai.response.finish_reasons", "stop")],
    );
    let logs = trace.logs(vec![choice]);
    let mut traces = TraceServiceClient::connect(endpoint.clone())
        .await
        .expect("gRPC connects")
        .send_compressed(CompressionEncoding::Gzip);
    let mut log_client = LogsServiceClient::connect(endpoint)
        .await
        .expect("gRPC connects")
        .send_compressed(CompressionEncoding::Gzip);
    for _ in 0..2 {
        let reply = traces.export(spans.clone()).await.expect("OK").into_inner();
        assert_eq!(reply.partial_success, None, "nothing refused");
        let reply = log_client
            .export(logs.clone())
            .await
            .expect("OK")
            .into_inner();
        assert_eq!(reply.partial_success, None, "nothing refused");
    }
    let report = receiver.stop().await;
    assert_eq!(
        (
            report.counts.requests,
            report.counts.spans,
            report.counts.log_records
        ),
        (4, 4, 2),
        "{report}"
    );
    // step, deliberation, run_start, run_stop, the log record's genai_event.
    assert_eq!(
        (report.delivery.published, report.delivery.duplicates),
        (10, 5),
        "the second export carries the same event ids: {report}"
    );
    sink.wait_for("SELECT count() FROM benchstream.events_raw FINAL", "5")
        .await;
    let ch = &sink.clickhouse;
    assert_eq!(
        query(
            ch,
            "SELECT model, provider, input_tokens, output_tokens, latency_ms \
             FROM benchstream.deliberations FORMAT TSV"
        ),
        "model-a\topenai\t120\t30\t1200"
    );
    assert_eq!(
        query(
            ch,
            "SELECT count(), any(total_tokens), any(api_calls), any(wall_time_ms), \
             any(policy_id) FROM benchstream.run_stops FORMAT TSV"
        ),
        "1\t150\t1\t2000\totlp:grpc-gzip"
    );
    assert_eq!(
        query(
            ch,
            "SELECT count(), any(name), countIf(step_id IN (SELECT step_id FROM \
             benchstream.deliberations)) FROM benchstream.genai_events FORMAT TSV"
        ),
        "1\tgen_ai.choice\t1",
        "the log record beside its call"
    );
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_spool_is_answered_unavailable_over_grpc_and_nothing_is_half_kept() {
    let nats = nats_with_stream().await;
    tokio::task::block_in_place(|| nats.stop());
    let dir = tempfile::tempdir().expect("dir");
    let (receiver, endpoint) = start_grpc(&nats.url(), dir.path(), FULL_SPOOL).await;
    let trace = Trace::new("grpc-full", 6);
    let spans = trace.spans(vec![trace.span(1, None, (0, 1000), Vec::new())]);
    let mut client = TraceServiceClient::connect(endpoint)
        .await
        .expect("gRPC connects")
        .send_compressed(CompressionEncoding::Gzip);
    let status = client.export(spans).await.expect_err("not kept");
    assert_eq!(
        status.code(),
        tonic::Code::Unavailable,
        "retryable: {status:?}"
    );
    assert!(
        status.message().contains("spool full or broken"),
        "{status:?}"
    );
    receiver.stop_failed().await;
    tokio::task::block_in_place(|| nats.restart());
    assert!(
        stream_messages(&nats.url(), &StreamSpec::default())
            .await
            .is_empty(),
        "nothing of the refused request reached the stream"
    );
}
