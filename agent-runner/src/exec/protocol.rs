//! The JSON-lines protocol of external agents (`agent-runner/docs/exec-protocol.md`): one
//! line → one validated payload with its step, or a [`LineError`] saying why not.
//!
//! A line is a JSON object `{"type": ..., "data": {...}}` with an optional `"step"` (any
//! string or integer naming the agent step; events with the same step share a `step_id`)
//! or `"step_id"` (a UUID). The payload is validated exactly as the sink validates wire
//! events ([`bench_schemas::decode`](fn@bench_schemas::decode)), on an envelope completed from the run's
//! [`RunSequencer`]; the envelope itself (ids, `seq`, `ts`, hashes) is the runner's.
//!
//! Pure: no I/O. The bridge ([`super::bridge`]) decides what to do with each result.

use bench_schemas::envelope::ts_format;
use bench_schemas::{derived_uuid, BenchmarkEvent, DecodeError, EventType, Payload, RunSequencer};
use serde_json::{Map, Value};
use uuid::Uuid;

/// Longest line read, bytes: an event is at most 1 MiB, plus room for the line's own
/// keys. Longer lines are skipped as oversize.
pub const MAX_LINE_BYTES: usize = bench_schemas::MAX_EVENT_BYTES + 64 * 1024;

/// The event types an agent reports: what it did. Its `run_stop` is kept as a claim
/// ([`super::bridge`]); every other type belongs to another producer (`run_start` and
/// `test_outcome` to the runner and its judge, `task_validation` to `tasks validate`,
/// `optimizer_update` to sweeps) and is refused ([`LineError::NotAnAgentEvent`]).
pub const AGENT_EVENT_TYPES: [EventType; 6] = [
    EventType::Step,
    EventType::ToolCall,
    EventType::Deliberation,
    EventType::ContextDecision,
    EventType::Failure,
    EventType::RunStop,
];

/// Top-level keys a line may carry besides `type` and `data`.
const STEP_KEYS: [&str; 2] = ["step", "step_id"];

/// Envelope fields: set by the runner, ignored when an agent sends them.
const ENVELOPE_KEYS: [&str; 11] = [
    "schema_version",
    "event_id",
    "run_id",
    "task_id",
    "seq",
    "ts",
    "policy_id",
    "cfg_hash",
    "env_hash",
    "seed",
    "host",
];

/// Why a line was skipped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LineError {
    #[error("line is over {MAX_LINE_BYTES} bytes")]
    Oversize,
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not a JSON object")]
    NotAnObject,
    #[error("`step` must be a string or an integer")]
    BadStep,
    #[error(
        "`{0}` is not an agent event: an agent reports step, tool_call, deliberation, \
         context_decision, failure and its run_stop; never published"
    )]
    NotAnAgentEvent(String),
    #[error("the agent already sent run_stop; nothing may follow it")]
    AfterRunStop,
    #[error(transparent)]
    Invalid(#[from] DecodeError),
}

/// A valid line.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentEvent {
    /// The step it belongs to; `None` for run-level events.
    pub step_id: Option<Uuid>,
    /// The validated payload.
    pub payload: Payload,
    /// Envelope keys the agent sent, which were ignored.
    pub ignored: Vec<String>,
}

/// Parses and validates one line for the run of `sequencer`.
pub fn parse_line(line: &[u8], sequencer: &RunSequencer) -> Result<AgentEvent, LineError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(LineError::Oversize);
    }
    let value: Value =
        serde_json::from_slice(line).map_err(|e| LineError::NotJson(e.to_string()))?;
    let Value::Object(mut object) = value else {
        return Err(LineError::NotAnObject);
    };
    if let Some(other) = object
        .get("type")
        .and_then(Value::as_str)
        .and_then(|t| EventType::ALL.into_iter().find(|e| e.as_str() == t))
        .filter(|t| !AGENT_EVENT_TYPES.contains(t))
    {
        return Err(LineError::NotAnAgentEvent(other.as_str().to_owned()));
    }
    let step_id = step_id(&object, sequencer.run_id)?;
    let mut ignored: Vec<String> = object
        .keys()
        .filter(|k| ENVELOPE_KEYS.contains(&k.as_str()))
        .cloned()
        .collect();
    ignored.sort();
    for key in ENVELOPE_KEYS.iter().chain(&STEP_KEYS) {
        object.remove(*key);
    }
    // The envelope the event will get, so that validation is the sink's own.
    let mut full = Map::new();
    for (key, value) in [
        ("schema_version", Value::from(bench_schemas::SCHEMA_VERSION)),
        ("event_id", Value::from(Uuid::nil().to_string())),
        ("run_id", Value::from(sequencer.run_id.to_string())),
        ("task_id", Value::from(sequencer.task_id.clone())),
        (
            "step_id",
            step_id.map_or(Value::Null, |id| Value::from(id.to_string())),
        ),
        ("seq", Value::from(sequencer.next_seq())),
        ("ts", Value::from(ts_format::format(&chrono::Utc::now()))),
        ("policy_id", Value::from(sequencer.policy_id.clone())),
        ("cfg_hash", Value::from(sequencer.cfg_hash.to_string())),
        ("env_hash", Value::from(sequencer.env_hash.to_string())),
        ("seed", Value::from(sequencer.seed)),
        ("host", Value::from(sequencer.host.clone())),
    ] {
        full.insert(key.to_owned(), value);
    }
    full.extend(object);
    let bytes = serde_json::to_vec(&Value::Object(full)).unwrap_or_default();
    let event: BenchmarkEvent = bench_schemas::decode(&bytes)?;
    Ok(AgentEvent {
        step_id,
        payload: event.payload,
        ignored,
    })
}

/// `step` → a `step_id` derived from the run and the agent's step name (the same name
/// gives the same id within a run); `step_id` → that UUID.
fn step_id(object: &Map<String, Value>, run_id: Uuid) -> Result<Option<Uuid>, LineError> {
    if let Some(raw) = object.get("step_id").filter(|v| !v.is_null()) {
        let text = raw.as_str().ok_or(LineError::BadStep)?;
        return Uuid::parse_str(text).map(Some).map_err(|e| {
            LineError::Invalid(DecodeError::InvalidField {
                path: "step_id".into(),
                message: e.to_string(),
            })
        });
    }
    let name = match object.get("step") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
        Some(_) => return Err(LineError::BadStep),
    };
    Ok(Some(derived_uuid(&format!("{run_id}/step/{name}"))))
}

#[cfg(test)]
mod tests {
    use bench_schemas::{sha256_hex, StepType};

    use super::*;

    fn sequencer() -> RunSequencer {
        RunSequencer::new(
            Uuid::now_v7(),
            "task",
            "exec:test",
            sha256_hex(b"cfg"),
            sha256_hex(b"env"),
            Some(1),
            "host",
        )
    }

    #[test]
    fn a_step_line_becomes_a_payload_with_a_stable_step_id() {
        let seq = sequencer();
        let line = br#"{"type":"step","step":3,"data":{"step_type":"act","content":"ls","tokens_in":1,"tokens_out":2,"wall_time_ms":3,"planned_step":null,"context_kb":0.5}}"#;
        let a = parse_line(line, &seq).expect("valid");
        let b = parse_line(line, &seq).expect("valid");
        assert_eq!(a.step_id, b.step_id);
        assert!(a.step_id.is_some());
        let Payload::Step(step) = a.payload else {
            panic!("not a step")
        };
        assert_eq!(step.step_type, StepType::Act);
    }

    #[test]
    fn bad_lines_say_why() {
        let seq = sequencer();
        assert!(matches!(
            parse_line(b"hello", &seq),
            Err(LineError::NotJson(_))
        ));
        assert_eq!(parse_line(b"[1]", &seq), Err(LineError::NotAnObject));
        let missing = parse_line(br#"{"type":"step","data":{"step_type":"act"}}"#, &seq);
        assert!(
            matches!(&missing, Err(LineError::Invalid(DecodeError::InvalidField { message, .. })) if message.contains("`content`")),
            "{missing:?}"
        );
        assert!(matches!(
            parse_line(br#"{"type":"nope","data":{}}"#, &seq),
            Err(LineError::Invalid(DecodeError::UnknownType(_)))
        ));
        assert_eq!(
            parse_line(br#"{"type":"run_start","data":{}}"#, &seq),
            Err(LineError::NotAnAgentEvent("run_start".to_owned()))
        );
    }

    #[test]
    fn envelope_fields_from_the_agent_are_ignored() {
        let seq = sequencer();
        let line = br#"{"type":"step","seq":99,"run_id":"x","data":{"step_type":"reason","content":"hm","tokens_in":0,"tokens_out":0,"wall_time_ms":0,"planned_step":null,"context_kb":0}}"#;
        let event = parse_line(line, &seq).expect("valid");
        assert_eq!(event.ignored, vec!["run_id".to_owned(), "seq".to_owned()]);
        assert_eq!(event.step_id, None);
    }
}
