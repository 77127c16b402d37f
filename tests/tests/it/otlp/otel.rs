//! OTLP export requests built with the protocol's own types (`opentelemetry-proto`), for
//! the cases no instrumentation library sends on demand (a run closed by an attribute,
//! an evaluation before or after its run closed): traces that start when they are built
//! (after the receiver started, so that it sees their runs from their start), with spans
//! and log records at fixed offsets from the trace's start, so that times are exact.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;

use super::http::post;

const MS: u64 = 1_000_000;

/// One trace of the service `service` (its runs' policy is `otlp:<service>`).
pub(super) struct Trace {
    service: &'static str,
    id: Vec<u8>,
    /// Its start, nanoseconds since the epoch.
    t0: u64,
}

impl Trace {
    /// Trace number `n` of `service`, starting now.
    pub(super) fn new(service: &'static str, n: u8) -> Trace {
        let now = chrono::Utc::now().timestamp_nanos_opt().expect("in range");
        Trace {
            service,
            id: vec![n; 16],
            t0: u64::try_from(now).expect("after 1970"),
        }
    }

    /// Its start, milliseconds since the epoch, plus `offset_ms`.
    pub(super) fn ms(&self, offset_ms: u64) -> u64 {
        self.t0 / MS + offset_ms
    }

    /// Span `id` (child of `parent`, or a root), from `start_ms` to `end_ms` after the
    /// trace's start.
    pub(super) fn span(
        &self,
        id: u8,
        parent: Option<u8>,
        (start_ms, end_ms): (u64, u64),
        attributes: Vec<KeyValue>,
    ) -> Span {
        Span {
            trace_id: self.id.clone(),
            span_id: vec![id; 8],
            parent_span_id: parent.map(|p| vec![p; 8]).unwrap_or_default(),
            name: format!("span {id}"),
            start_time_unix_nano: self.t0 + start_ms * MS,
            end_time_unix_nano: self.t0 + end_ms * MS,
            attributes,
            ..Span::default()
        }
    }

    /// A log record of the GenAI event `name`, of span `span`, `at_ms` after the start.
    pub(super) fn record(
        &self,
        name: &str,
        span: u8,
        at_ms: u64,
        attributes: Vec<KeyValue>,
    ) -> LogRecord {
        LogRecord {
            time_unix_nano: self.t0 + at_ms * MS,
            event_name: name.to_owned(),
            trace_id: self.id.clone(),
            span_id: vec![span; 8],
            attributes,
            ..LogRecord::default()
        }
    }

    /// A `gen_ai.evaluation.result` log record of span `span`, `at_ms` after the start.
    pub(super) fn evaluation(&self, span: u8, at_ms: u64, label: &str, score: f64) -> LogRecord {
        let attributes = vec![
            text("gen_ai.evaluation.name", "tests"),
            text("gen_ai.evaluation.score.label", label),
            value(
                "gen_ai.evaluation.score.value",
                any_value::Value::DoubleValue(score),
            ),
        ];
        self.record("gen_ai.evaluation.result", span, at_ms, attributes)
    }

    fn resource(&self) -> Option<Resource> {
        Some(Resource {
            attributes: vec![text("service.name", self.service)],
            ..Resource::default()
        })
    }

    /// A traces export of `spans`.
    pub(super) fn spans(&self, spans: Vec<Span>) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: self.resource(),
                scope_spans: vec![ScopeSpans {
                    spans,
                    ..ScopeSpans::default()
                }],
                ..ResourceSpans::default()
            }],
        }
    }

    /// A logs export of `records`.
    pub(super) fn logs(&self, records: Vec<LogRecord>) -> ExportLogsServiceRequest {
        ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                resource: self.resource(),
                scope_logs: vec![ScopeLogs {
                    log_records: records,
                    ..ScopeLogs::default()
                }],
                ..ResourceLogs::default()
            }],
        }
    }
}

fn value(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

pub(super) fn text(key: &str, v: &str) -> KeyValue {
    value(key, any_value::Value::StringValue(v.to_owned()))
}

pub(super) fn flag(key: &str, v: bool) -> KeyValue {
    value(key, any_value::Value::BoolValue(v))
}

/// The attributes of a `chat` call of `model` with `input` and `output` tokens.
pub(super) fn chat(model: &str, input: i64, output: i64) -> Vec<KeyValue> {
    vec![
        text("gen_ai.operation.name", "chat"),
        text("gen_ai.provider.name", "openai"),
        text("gen_ai.request.model", model),
        value(
            "gen_ai.usage.input_tokens",
            any_value::Value::IntValue(input),
        ),
        value(
            "gen_ai.usage.output_tokens",
            any_value::Value::IntValue(output),
        ),
    ]
}

/// POSTs `request` as protobuf to `<base><path>`; panics unless it is answered 200.
pub(super) async fn export<M: Message>(base: &str, path: &str, request: &M) {
    let (status, reply) = post(
        &format!("{base}{path}"),
        "application/x-protobuf",
        false,
        request.encode_to_vec(),
        None,
    )
    .await;
    assert_eq!(status, 200, "{path}: {reply}");
}
