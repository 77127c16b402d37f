//! What the receiver answers to bodies an exporter should not send, to OTLP/JSON, without
//! its bearer token, and while the broker is away; nothing refused is published, nothing
//! answered 200 is lost.

use std::io::{Read, Write};
use std::net::TcpStream;

use bench_nats::StreamSpec;
use bench_schemas::SubjectPrefix;
use benchstream_tests::NatsServer;

use super::{export, Receiver, FULL_SPOOL};
use crate::common::{create_stream, stream_messages};

/// POSTs `body` to `endpoint` over plain HTTP/1.1 (one request per connection, so the
/// answer ends when the connection closes); the status and the body.
pub(super) async fn post(
    endpoint: &str,
    content_type: &str,
    gzip: bool,
    body: Vec<u8>,
    token: Option<&str>,
) -> (u16, String) {
    let (status, _, body) = exchange(endpoint, content_type, gzip, body, token).await;
    (status, body)
}

/// As [`post`], with the reply's head (status line and headers) too.
async fn exchange(
    endpoint: &str,
    content_type: &str,
    gzip: bool,
    body: Vec<u8>,
    token: Option<&str>,
) -> (u16, String, String) {
    let rest = endpoint.strip_prefix("http://").expect("http endpoint");
    let (authority, path) = rest.split_at(rest.find('/').expect("a path"));
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\
         Content-Type: {content_type}\r\nContent-Length: {}\r\n",
        body.len()
    );
    if gzip {
        head.push_str("Content-Encoding: gzip\r\n");
    }
    if let Some(token) = token {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    head.push_str("\r\n");
    let authority = authority.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(&authority).expect("receiver listens");
        stream.write_all(head.as_bytes()).expect("send head");
        // A refused body may be answered before it is all sent: ignore a broken pipe.
        let _ = stream.write_all(&body);
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        let text = String::from_utf8_lossy(&raw).into_owned();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no HTTP status in {text:?}"));
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        (status, head.to_owned(), body.to_owned())
    })
    .await
    .expect("client thread")
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).expect("in memory");
    encoder.finish().expect("in memory")
}

pub(super) async fn nats_with_stream() -> NatsServer {
    let nats = tokio::task::spawn_blocking(NatsServer::start)
        .await
        .expect("nats starts");
    create_stream(&nats.url(), &SubjectPrefix::default()).await;
    nats
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversize_bodies_are_refused_and_nothing_is_published() {
    let nats = nats_with_stream().await;
    let dir = tempfile::tempdir().expect("dir");
    let receiver = Receiver::start(&nats.url(), dir.path(), &["--max-body-bytes", "4096"]).await;
    let url = receiver.endpoint.clone();
    let protobuf = "application/x-protobuf";
    assert_eq!(
        post(&url, protobuf, false, b"\xff\xff\xff\xff".to_vec(), None)
            .await
            .0,
        400
    );
    assert_eq!(
        post(
            &url,
            "application/json",
            false,
            b"{\"resourceSpans\": 7}".to_vec(),
            None
        )
        .await
        .0,
        400
    );
    assert_eq!(
        post(&url, protobuf, true, b"not gzip".to_vec(), None)
            .await
            .0,
        400
    );
    assert_eq!(
        post(&url, protobuf, false, vec![0; 5000], None).await.0,
        413
    );
    // 10 kB of zeros gzip to a few dozen bytes: the limit holds for the inflated body too.
    assert_eq!(
        post(&url, protobuf, true, gzip(&[0; 10_000]), None).await.0,
        413
    );
    assert_eq!(
        post(&url, "text/plain", false, b"hello".to_vec(), None)
            .await
            .0,
        415
    );
    let report = receiver.stop().await;
    assert_eq!(report.counts.requests, 0);
    assert!(stream_messages(&nats.url(), &StreamSpec::default())
        .await
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_with_hex_ids_is_read_and_a_bad_span_is_counted_in_partial_success() {
    let nats = nats_with_stream().await;
    let dir = tempfile::tempdir().expect("dir");
    let receiver = Receiver::start(&nats.url(), dir.path(), &[]).await;
    let now = chrono::Utc::now().timestamp_nanos_opt().expect("in range");
    let body = serde_json::json!({"resourceSpans": [{
    "resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "json-agent"}}]},
    "scopeSpans": [{"spans": [
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
         "name": "agent", "startTimeUnixNano": (now - 2_000_000_000).to_string(),
         "endTimeUnixNano": now.to_string(), "status": {"code": 1}},
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee1",
         "parentSpanId": "eee19b7ec3c1b174", "name": "chat",
         "startTimeUnixNano": now.to_string(), "endTimeUnixNano": now.to_string()}
    ]}]}]});
    let (status, reply) = post(
        &receiver.endpoint,
        "application/json",
        false,
        serde_json::to_vec(&body).expect("json"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    let reply: serde_json::Value = serde_json::from_str(&reply).expect("JSON reply");
    let partial = &reply["partialSuccess"];
    assert_eq!(
        partial["rejectedSpans"].to_string().trim_matches('"'),
        "1",
        "{reply}"
    );
    assert!(
        partial["errorMessage"]
            .as_str()
            .unwrap_or_default()
            .contains("span id"),
        "{reply}"
    );
    receiver.stop().await;
    let stored = stream_messages(&nats.url(), &StreamSpec::default()).await;
    let mut types: Vec<&str> = stored
        .iter()
        .map(|m| m.event.event_type().as_str())
        .collect();
    types.sort_unstable();
    assert_eq!(types, ["run_start", "run_stop"], "the root span is a run");
    let run_stop = stored
        .iter()
        .find(|m| m.event.event_type().as_str() == "run_stop");
    let run_stop = serde_json::to_value(&run_stop.expect("run_stop").event).expect("json");
    assert_eq!(run_stop["data"]["wall_time_ms"], 2000);
    assert_eq!(
        run_stop["data"]["success"],
        serde_json::Value::Null,
        "nobody judged it"
    );
    assert_eq!(run_stop["seq"], serde_json::Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_bearer_token_only_requests_carrying_it_are_taken() {
    let nats = nats_with_stream().await;
    let dir = tempfile::tempdir().expect("dir");
    let receiver = Receiver::start(&nats.url(), dir.path(), &["--bearer-token", "s3cret"]).await;
    let url = receiver.endpoint.clone();
    let empty = b"{}".to_vec();
    assert_eq!(
        post(&url, "application/json", false, empty.clone(), None)
            .await
            .0,
        401
    );
    assert_eq!(
        post(
            &url,
            "application/json",
            false,
            empty.clone(),
            Some("wrong")
        )
        .await
        .0,
        401
    );
    assert_eq!(
        post(&url, "application/json", false, empty, Some("s3cret"))
            .await
            .0,
        200
    );
    // The SDK's exporter with the token: accepted; without: refused (401 is not retried).
    let with = export(&url, &["twice"], &[("OTLP_TOKEN", "s3cret")]).await;
    assert!(with.iter().all(|l| l["result"] == "SUCCESS"), "{with:?}");
    let without = export(&url, &["twice"], &[]).await;
    assert!(
        without.iter().all(|l| l["result"] == "FAILURE"),
        "{without:?}"
    );
    let report = receiver.stop().await;
    assert_eq!(
        report.counts.requests, 3,
        "the empty export and the two with the token"
    );
    assert_eq!(
        stream_messages(&nats.url(), &StreamSpec::default())
            .await
            .len(),
        9
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_the_broker_is_away_exports_are_spooled_answered_and_delivered_later() {
    let nats = nats_with_stream().await;
    tokio::task::block_in_place(|| nats.stop());
    let dir = tempfile::tempdir().expect("dir");
    let receiver = Receiver::start(&nats.url(), dir.path(), &["--ack-timeout-ms", "500"]).await;
    let now = chrono::Utc::now().timestamp_nanos_opt().expect("in range");
    let body = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
         "name": "agent", "startTimeUnixNano": (now - 1_000_000_000).to_string(),
         "endTimeUnixNano": now.to_string()}]}]}]});
    let body = serde_json::to_vec(&body).expect("json");
    let (status, reply) = post(&receiver.endpoint, "application/json", false, body, None).await;
    assert_eq!(status, 200, "answered once spooled: {reply}");
    tokio::task::block_in_place(|| nats.restart());
    let report = receiver.stop().await;
    assert_eq!(
        report.delivery.spooled, 2,
        "run_start and run_stop waited in the spool"
    );
    assert_eq!(report.delivery.left_in_spool, 0);
    let stored = stream_messages(&nats.url(), &StreamSpec::default()).await;
    assert_eq!(stored.len(), 2, "delivered once the broker came back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_spool_is_answered_503_with_retry_after_and_stops_the_receiver() {
    let nats = nats_with_stream().await;
    tokio::task::block_in_place(|| nats.stop());
    let dir = tempfile::tempdir().expect("dir");
    let receiver = Receiver::start(&nats.url(), dir.path(), FULL_SPOOL).await;
    let now = chrono::Utc::now().timestamp_nanos_opt().expect("in range");
    let body = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
         "name": "agent", "startTimeUnixNano": (now - 1_000_000_000).to_string(),
         "endTimeUnixNano": now.to_string()}]}]}]});
    let body = serde_json::to_vec(&body).expect("json");
    let (status, head, reply) =
        exchange(&receiver.endpoint, "application/json", false, body, None).await;
    assert_eq!(status, 503, "retryable: {head}\n{reply}");
    assert!(
        head.to_ascii_lowercase().contains("retry-after: 5"),
        "{head}"
    );
    assert!(reply.contains("spool full or broken"), "{reply}");
    receiver.stop_failed().await;
}
