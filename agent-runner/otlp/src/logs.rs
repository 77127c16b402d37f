//! OTLP log records → `genai_event` events: the GenAI events an instrumentation emits
//! as logs (captured prompts and completions, inference details, evaluation results),
//! each kept as sent, in the run of its trace and beside the call of its span. Pure, no
//! I/O.
//!
//! A record is a GenAI event when its event name (`event_name`, or the older
//! `event.name` attribute) starts with `gen_ai.`; other records, and records that name
//! no trace or no time, are refused (counted in the reply's `partial_success`), never
//! silently dropped. The run and its envelope come from the record's and its resource's
//! attributes exactly as for spans, so a record lands in the run of its trace; its
//! `step_id` is that of its span's `step` and `deliberation`. The event id derives from
//! the trace, the span and the record's content, so a record sent twice is stored once.
//!
//! A `gen_ai.evaluation.result` record is also kept in the receiver's memory of its run
//! ([`Ledger::evaluate`]): its label and score judge the run when the run closes, unless
//! it names one of the run's model calls. One that comes after its run closed is only
//! its row: the `run_stop` is out, and an event already published is never rewritten.

use std::collections::HashMap;

use bench_schemas::{BenchmarkEvent, Canonical, GenAiEvent, Payload};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use serde_json::json;

use crate::mapping::{hex, run_id, span_event_id, time, ContextKey, Mapper};
use crate::runs::{Evaluation, Ledger, RunContext};
use crate::span::{attribute_str, attributes_json, to_json, Attributes};

/// Reasons for refused records kept in the reply, at most.
const MAX_REASONS: usize = 5;
/// The event-name prefix of the GenAI semantic conventions.
const GENAI_PREFIX: &str = "gen_ai.";
/// The GenAI event that states a verdict.
const EVALUATION: &str = "gen_ai.evaluation.result";

/// The events of one logs export request, and the records refused.
#[derive(Debug, Default)]
pub struct MappedLogs {
    /// The events, each with the index of its record in the request.
    pub events: Vec<(usize, BenchmarkEvent)>,
    /// Records in the request.
    pub records: u64,
    /// Records refused: the reply's `partial_success.rejected_log_records`.
    pub rejected: u64,
    /// Why, for the first few.
    pub reasons: Vec<String>,
}

impl Mapper {
    /// The `genai_event` events of `request`; its evaluation records are kept in
    /// `ledger` for the `run_stop` of their runs.
    pub fn map_logs(&self, request: &ExportLogsServiceRequest, ledger: &Ledger) -> MappedLogs {
        let mut mapped = MappedLogs::default();
        let mut contexts: HashMap<ContextKey<'_>, RunContext> = HashMap::new();
        for resource_logs in &request.resource_logs {
            let resource = resource_logs
                .resource
                .as_ref()
                .map_or(&[][..], |r| &r.attributes[..]);
            for record in resource_logs.scope_logs.iter().flat_map(|s| &s.log_records) {
                let index = mapped.records as usize;
                mapped.records += 1;
                let attributes = Attributes {
                    own: &record.attributes,
                    resource,
                };
                let context = contexts
                    .entry(ContextKey::of(&attributes))
                    .or_insert_with(|| RunContext::of(&attributes));
                match self.genai_event(record, &attributes, context) {
                    Ok(event) => {
                        evaluate(ledger, &event, &record.attributes);
                        mapped.events.push((index, event));
                    }
                    Err(reason) => {
                        mapped.rejected += 1;
                        if mapped.reasons.len() < MAX_REASONS && !mapped.reasons.contains(&reason) {
                            mapped.reasons.push(reason);
                        }
                    }
                }
            }
        }
        mapped
    }

    fn genai_event(
        &self,
        record: &LogRecord,
        attributes: &Attributes<'_>,
        context: &RunContext,
    ) -> Result<BenchmarkEvent, String> {
        let name = Some(record.event_name.as_str())
            .filter(|n| !n.is_empty())
            .or_else(|| attribute_str(&record.attributes, "event.name"))
            .unwrap_or_default();
        if !name.starts_with(GENAI_PREFIX) {
            return Err(format!(
                "log record {name:?} is not a GenAI event (no gen_ai.* event name): not stored"
            ));
        }
        if record.trace_id.len() != 16 || record.trace_id.iter().all(|&b| b == 0) {
            return Err(format!("{name} record: names no trace"));
        }
        let trace = hex(&record.trace_id);
        let span = (record.span_id.len() == 8 && record.span_id.iter().any(|&b| b != 0))
            .then(|| hex(&record.span_id));
        let ts = time(record.time_unix_nano)
            .or_else(|| time(record.observed_time_unix_nano))
            .ok_or_else(|| format!("{name} record: no time"))?;
        let body = to_json(record.body.as_ref());
        let fields = attributes_json(&record.attributes);
        let content = json!({
            "name": name,
            "time": record.time_unix_nano,
            "observed": record.observed_time_unix_nano,
            "body": &body,
            "attributes": &fields,
        })
        .canonical_hash();
        let span_key = span.as_deref().unwrap_or("-");
        let event_id = span_event_id(&trace, span_key, &format!("log/{content}"));
        let step_id = span.as_deref().map(|s| span_event_id(&trace, s, "step"));
        let run = run_id(attributes, &context.service, &trace);
        let payload = Payload::GenaiEvent(GenAiEvent {
            name: name.to_owned(),
            trace_id: trace,
            span_id: span,
            body: body.to_string(),
            attributes: fields.to_string(),
            content_truncated: false,
        });
        Ok(context.event((event_id, run, step_id), ts, &self.host, payload))
    }
}

/// Keeps what `event`, when it is an evaluation record (of `attributes`) stating a
/// verdict or a score, states of its run.
fn evaluate(ledger: &Ledger, event: &BenchmarkEvent, attributes: &[KeyValue]) {
    let Payload::GenaiEvent(e) = &event.payload else {
        return;
    };
    let evaluation = Evaluation::of(attributes);
    if e.name == EVALUATION && evaluation.states() {
        ledger.evaluate(event.run_id, e.span_id.as_deref(), evaluation);
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue, KeyValueList};
    use opentelemetry_proto::tonic::logs::v1::{ResourceLogs, ScopeLogs};

    use super::*;

    fn record(name: &str, span: Option<u8>) -> LogRecord {
        let message = AnyValue {
            value: Some(any_value::Value::KvlistValue(KeyValueList {
                values: vec![KeyValue {
                    key: "content".to_owned(),
                    value: Some(AnyValue {
                        value: Some(any_value::Value::StringValue("hi".to_owned())),
                    }),
                    ..KeyValue::default()
                }],
            })),
        };
        LogRecord {
            time_unix_nano: 1_760_000_000_000_000_000,
            event_name: name.to_owned(),
            trace_id: vec![7; 16],
            span_id: span.map(|s| vec![s; 8]).unwrap_or_default(),
            body: Some(message),
            ..LogRecord::default()
        }
    }

    fn request(records: Vec<LogRecord>) -> ExportLogsServiceRequest {
        ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                scope_logs: vec![ScopeLogs {
                    log_records: records,
                    ..ScopeLogs::default()
                }],
                ..ResourceLogs::default()
            }],
        }
    }

    fn mapper() -> Mapper {
        Mapper {
            host: "h".to_owned(),
            prices: None,
            experiment: bench_schemas::ExperimentRef::default(),
        }
    }

    #[test]
    fn a_genai_record_lands_beside_its_call_and_another_record_is_refused_with_a_reason() {
        let ledger = Ledger::new(
            chrono::DateTime::from_timestamp_nanos(0),
            crate::runs::DEFAULT_RUN_IDLE,
        );
        let mapped = mapper().map_logs(
            &request(vec![
                record("gen_ai.choice", Some(2)),
                record("app.started", None),
                record("gen_ai.choice", Some(2)),
            ]),
            &ledger,
        );
        assert_eq!((mapped.records, mapped.rejected), (3, 1));
        assert!(
            mapped.reasons[0].contains("not a GenAI event"),
            "{:?}",
            mapped.reasons
        );
        let [(0, first), (2, again)] = &mapped.events[..] else {
            panic!("records 0 and 2: {:?}", mapped.events);
        };
        assert_eq!(
            first.event_id, again.event_id,
            "the same record is one event"
        );
        let trace = "07".repeat(16);
        let span = "02".repeat(8);
        assert_eq!(first.step_id, Some(span_event_id(&trace, &span, "step")));
        let Payload::GenaiEvent(e) = &first.payload else {
            panic!("not a genai_event");
        };
        assert_eq!(
            (e.name.as_str(), e.span_id.as_deref(), e.body.as_str()),
            ("gen_ai.choice", Some(span.as_str()), r#"{"content":"hi"}"#)
        );
    }
}
