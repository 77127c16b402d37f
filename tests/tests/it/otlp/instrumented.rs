//! The real GenAI instrumentations of the `openai` client (the official
//! `opentelemetry-instrumentation-openai-v2`, OpenLLMetry's
//! `opentelemetry-instrumentation-openai`, OpenInference's
//! `openinference-instrumentation-openai`), calling the stand-in provider and exporting
//! traces, logs and metrics with the OpenTelemetry SDK's exporters over OTLP/HTTP
//! (protobuf, and JSON) and OTLP/gRPC (`tests/fixtures/otlp/instrumented_agent.py`): each
//! family, over each transport, lands the same calls, with
//! exact tokens, per-model costs and the run's totals, once although every batch is sent
//! twice. One pipeline, receiver and provider serve every family.

use benchstream_tests::free_port;
use benchstream_tests::harness::openai::{OpenAiServer, Reply};
use serde_json::{json, Value};

use super::{python, query, Receiver};
use crate::common::start_pipeline;

/// The stand-in provider: a `read_file` call to the first message, text once the tool
/// answered; the requested model answers, `model-a` with 100 prompt tokens (40 of them
/// cached) and 10 completion tokens (3 reasoning), `model-b` with 200 and 20.
fn provider() -> OpenAiServer {
    OpenAiServer::start(json!({"data": []}), |body: &Value| {
        let model = body["model"].as_str().unwrap_or_default().to_owned();
        let answered = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .is_some_and(|m| m["role"] == "tool");
        let reply = if answered {
            Reply::text("fixed")
        } else {
            Reply::call("read_file", &json!({"path": "a.py"}))
        };
        let (prompt, completion, cached, reasoning) = match model.as_str() {
            "model-a" => (100, 10, 40, 3),
            _ => (200, 20, 0, 0),
        };
        reply.model(&model).usage(json!({
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        }))
    })
}

/// Per million tokens: `model-a` $3 / $15, `model-b` $0.5 / $1.5 (no cache prices: a
/// cached token is billed as a prompt token, so every family's calls can be priced).
const PRICES: &str = "[models.\"model-a\"]\nprompt = 3\ncompletion = 15\n\n\
                      [models.\"model-b\"]\nprompt = 0.5\ncompletion = 1.5\n";

/// What one family states beyond what they all do.
struct Family {
    /// The fixture's name of the family.
    name: &'static str,
    /// How the fixture exports its traces (`http`, `json`, `grpc`).
    transport: &'static str,
    /// `cached_input_tokens` and `reasoning_tokens` of the `model-a` and `model-b` calls,
    /// as ClickHouse prints them (`\N`: the family does not report them).
    cache_and_reasoning: [&'static str; 2],
    /// GenAI log records it emits with content capture on.
    log_records: u64,
    /// Whether its tool spans state the tool call's id.
    call_id: bool,
    /// Whether it records metrics (OpenInference records none).
    metrics: bool,
}

const V2: Family = Family {
    name: "v2",
    transport: "http",
    cache_and_reasoning: ["\\N\t\\N", "\\N\t\\N"],
    log_records: 2,
    call_id: true,
    metrics: true,
};
const OPENLLMETRY: Family = Family {
    name: "openllmetry",
    transport: "http",
    cache_and_reasoning: ["40\t3", "0\t0"],
    log_records: 0,
    call_id: false,
    metrics: true,
};
const OPENINFERENCE: Family = Family {
    name: "openinference",
    transport: "json",
    cache_and_reasoning: ["40\t3", "0\t0"],
    log_records: 0,
    call_id: true,
    metrics: false,
};

/// Each family over OTLP/HTTP (OpenInference's traces as OTLP/JSON) and over OTLP/gRPC.
const FAMILIES: &[Family] = &[
    V2,
    OPENLLMETRY,
    OPENINFERENCE,
    Family {
        transport: "grpc",
        ..V2
    },
    Family {
        transport: "grpc",
        ..OPENLLMETRY
    },
    Family {
        transport: "grpc",
        ..OPENINFERENCE
    },
];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_instrumentation_family_lands_its_calls_totals_and_content_once() {
    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("dir");
    let prices = dir.path().join("prices.toml");
    std::fs::write(&prices, PRICES).expect("price table");
    let grpc = format!("127.0.0.1:{}", free_port());
    let receiver = Receiver::start(
        &nats.url(),
        dir.path(),
        &[
            "--prices",
            prices.to_str().expect("utf-8 path"),
            "--grpc-listen",
            &grpc,
        ],
    )
    .await;
    let grpc = format!("http://{grpc}");
    let provider = provider();
    let openai_base = provider.base_url();
    let mut expected_events = 0;
    for family in FAMILIES {
        let endpoint = if family.transport == "grpc" {
            &grpc
        } else {
            &receiver.base
        };
        let lines = python(
            "instrumented_agent.py",
            &[family.name, family.transport, endpoint, &openai_base],
            &[],
        )
        .await;
        let name = format!("{} over {}", family.name, family.transport);
        let [line] = &lines[..] else {
            panic!("{name}: one result line: {lines:?}");
        };
        assert_eq!(line["traces"], json!(["SUCCESS", "SUCCESS"]), "{name}");
        assert_eq!(line["records"], json!(family.log_records), "{name}");
        if family.transport != "json" {
            let metrics = if family.metrics {
                json!("SUCCESS")
            } else {
                Value::Null
            };
            assert_eq!(line["metrics"], metrics, "{name}: metrics answered");
            let logs = if family.log_records > 0 {
                json!(["SUCCESS", "SUCCESS"])
            } else {
                json!([])
            };
            assert_eq!(line["logs"], logs, "{name}: logs answered");
        }
        // Per family: 2 x (step, deliberation), a tool call, run_start, run_stop, and
        // one genai_event per log record.
        expected_events += 7 + family.log_records;
    }
    let report = receiver.stop().await;
    assert_eq!(report.counts.rejected_spans, 0, "{report}");
    assert_eq!(report.counts.rejected_log_records, 0, "{report}");
    assert!(report.counts.metric_points > 0, "metrics counted: {report}");
    assert_eq!(
        (report.delivery.published, report.delivery.duplicates),
        (2 * expected_events, expected_events),
        "every batch was sent twice, with the same event ids: {report}"
    );
    let ch = &sink.clickhouse;
    sink.wait_for(
        "SELECT count() FROM benchstream.events_raw FINAL",
        &expected_events.to_string(),
    )
    .await;
    for family in FAMILIES {
        check(ch, family);
    }
    sink.stop().await;
}

/// The rows of `family`'s run (its policy is `otel:<family>`).
fn check(ch: &benchstream_tests::ClickHouseServer, family: &Family) {
    let name = format!("{} over {}", family.name, family.transport);
    let of_run = format!("policy_id = 'otel:{}:{}'", family.name, family.transport);
    let [a, b] = family.cache_and_reasoning;
    assert_eq!(
        query(
            ch,
            &format!(
                "SELECT model, provider, status, input_tokens, output_tokens, \
                 cached_input_tokens, reasoning_tokens, cost_usd, pricing_source \
                 FROM benchstream.deliberations WHERE {of_run} ORDER BY model FORMAT TSV"
            )
        ),
        format!(
            "model-a\topenai\tok\t100\t10\t{a}\t0.00045\ttable\n\
             model-b\topenai\tok\t200\t20\t{b}\t0.00013\ttable"
        ),
        "{name}: exact tokens, each model at its own price"
    );
    assert_eq!(
        query(
            ch,
            &format!(
                "SELECT count(), any(model), any(provider), any(scoring_version) \
                 FROM benchstream.run_starts WHERE {of_run} FORMAT TSV"
            )
        ),
        "1\tmodel-a\topenai\totlp-stated",
        "{name}: of two models called once each, the first by name; a stated verdict"
    );
    assert_eq!(
        query(
            ch,
            &format!(
                "SELECT count(), any(success), any(exit_status), any(total_tokens), \
                 any(api_calls), any(cost_usd), isNull(any(turns)) \
                 FROM benchstream.run_stops WHERE {of_run} FORMAT TSV"
            )
        ),
        "1\t1\tsubmitted\t330\t2\t0.00058\t1",
        "{name}: the run's totals"
    );
    assert_eq!(
        query(
            ch,
            &format!(
                "SELECT count(), any(tool_name), any(exit_kind), any(call_id) LIKE 'call_%' \
                 FROM benchstream.tool_calls WHERE {of_run} FORMAT TSV"
            )
        ),
        format!(
            "1\tread_file\tok\t{}",
            if family.call_id { "1" } else { "\\N" }
        ),
        "{name}: the tool-call turn"
    );
    assert_eq!(
        query(
            ch,
            &format!(
                "SELECT count(), countIf(step_id IN (SELECT step_id FROM \
                 benchstream.deliberations)), countIf(attributes LIKE '%read_file%') \
                 FROM benchstream.genai_events WHERE {of_run} FORMAT TSV"
            )
        ),
        format!("{0}\t{0}\t{0}", family.log_records),
        "{name}: each GenAI log record beside its call, with the captured content"
    );
}
