//! Smith protocol events: the 49 events its own code produced (`fixtures/smith/`, pinned
//! by sha256) and events built here in the same shapes, for every variant, decode into
//! this crate's types without a fact made up or lost.

use std::path::PathBuf;

use bench_schemas::smith::{derived_event_id, ExitOutcome, SmithEvent, SmithPayload};
use bench_schemas::{
    decode, decode_message, DecodeError, Decoded, EventType, ExitKind, FailureRoot, Protocol,
    SegmentType, StepType,
};
use serde_json::{json, Value};
use uuid::Uuid;

/// sha256 of `fixtures/smith/smith-events.jsonl`: the events exactly as Smith emitted them.
const FIXTURE_SHA256: &str = "2a7171ad3a40e3eb9f84bfca24eab95f4e107c303598fadb3c74db10a389417a";

fn fixture_lines() -> Vec<String> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smith/smith-events.jsonl");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        bench_schemas::sha256_hex(&bytes).as_str(),
        FIXTURE_SHA256,
        "the Smith fixture changed"
    );
    String::from_utf8(bytes)
        .expect("utf-8")
        .lines()
        .map(str::to_owned)
        .collect()
}

fn smith(bytes: &[u8], msg_id: Option<&str>) -> SmithEvent {
    match decode_message(bytes, msg_id) {
        Ok(Decoded::Smith(event)) => event,
        other => panic!("not a Smith event: {other:?}"),
    }
}

fn smith_err(value: &Value) -> DecodeError {
    match decode_message(value.to_string().as_bytes(), None) {
        Err(e) => e,
        Ok(event) => panic!("accepted: {event:?}"),
    }
}

/// Milliseconds of a Smith `Duration` value.
fn ms(duration: &Value) -> u64 {
    duration["secs"].as_u64().expect("secs") * 1000
        + duration["nanos"].as_u64().expect("nanos") / 1_000_000
}

/// The shortest decimal of a widened f32, computed independently of the crate.
fn f32_shortest(v: &Value) -> f64 {
    let f = v.as_f64().expect("number") as f32;
    format!("{f}").parse().expect("decimal")
}

#[test]
fn all_49_smith_events_decode_with_every_value_mapped() {
    let lines = fixture_lines();
    assert_eq!(lines.len(), 49);
    let mut ids = std::collections::HashSet::new();
    let mut per_type = std::collections::BTreeMap::<EventType, usize>::new();
    for line in &lines {
        let raw: Value = serde_json::from_str(line).expect("json");
        let event = smith(line.as_bytes(), None);
        assert_eq!(
            decode_message(line.as_bytes(), None).map(|d| d.protocol()),
            Ok(Protocol::Smith)
        );
        // Envelope: as sent, hashes verbatim, the id derived from the event's facts.
        assert_eq!(event.run_id.to_string(), raw["run_id"]);
        assert_eq!(event.step_id.to_string(), raw["step_id"]);
        assert_eq!(event.task_id, raw["task_id"]);
        assert_eq!(event.policy_id, raw["policy_id"]);
        assert_eq!(event.cfg_hash, raw["cfg_hash"]);
        assert_eq!(event.env_hash, raw["env_hash"]);
        assert_eq!(Some(event.seed), raw["seed"].as_u64());
        let ts = chrono::DateTime::parse_from_rfc3339(raw["ts"].as_str().expect("ts"))
            .expect("rfc 3339");
        assert_eq!(event.ts, ts);
        assert_eq!(
            event.event_id,
            derived_event_id(event.run_id, event.step_id, event.event_type(), &event.ts)
        );
        assert!(ids.insert(event.event_id), "derived ids are distinct");
        *per_type.entry(event.event_type()).or_default() += 1;

        let (tag, body) = raw["event_type"]
            .as_object()
            .and_then(|o| o.iter().next())
            .expect("externally tagged");
        assert_payload_maps(tag, body, &event.payload);
    }
    let expected = [
        (EventType::RunStart, 3),
        (EventType::RunStop, 3),
        (EventType::Step, 15),
        (EventType::ToolCall, 9),
        (EventType::ContextDecision, 8),
        (EventType::Failure, 8),
        (EventType::OptimizerUpdate, 3),
    ];
    assert_eq!(per_type, expected.into_iter().collect());
}

/// Checks a mapped payload against the Smith JSON it came from, field by field.
fn assert_payload_maps(tag: &str, body: &Value, payload: &SmithPayload) {
    match payload {
        SmithPayload::RunStart(c)
        | SmithPayload::OptimizerUpdate(bench_schemas::smith::SmithSuggestion {
            suggested_config: c,
            ..
        }) => {
            let body = if tag == "OptimizerUpdate" {
                &body["suggested_config"]
            } else {
                body
            };
            assert_eq!(c.temperature, f32_shortest(&body["temperature"]));
            assert_eq!(
                c.pruning_threshold,
                f32_shortest(&body["pruning_threshold"])
            );
            assert_eq!(
                c.sandbox_limits.cpu_cores,
                f32_shortest(&body["sandbox_limits"]["cpu_cores"])
            );
            assert_eq!(c.execution_timeout_ms, ms(&body["execution_timeout"]));
            assert_eq!(c.no_progress_timeout_ms, ms(&body["no_progress_timeout"]));
            assert_eq!(
                Some(u64::from(c.max_iterations)),
                body["max_iterations"].as_u64()
            );
            assert_eq!(
                Some(u64::from(c.context_window)),
                body["context_window"].as_u64()
            );
            assert_eq!(c.docker_image, body["docker_image"]);
            assert_eq!(c.tools_commit, body["tools_commit"]);
            assert_eq!(
                Some(u64::from(c.retry_policy.max_retries)),
                body["retry_policy"]["max_retries"].as_u64()
            );
            assert_eq!(
                Some(c.retry_policy.retry_on_timeout),
                body["retry_policy"]["retry_on_timeout"].as_bool()
            );
        }
        SmithPayload::RunStop(r) => {
            assert_eq!(Some(r.success), body["success"].as_bool());
            assert_eq!(Some(r.final_score), body["final_score"].as_f64());
            assert_eq!(Some(r.wall_time_ms), body["wall_time_ms"].as_u64());
            assert_eq!(Some(r.total_tokens), body["total_tokens"].as_u64());
            assert_eq!(
                r.early_stop_reason.as_deref(),
                body["early_stop_reason"].as_str()
            );
            assert_eq!(
                Some(r.stability_variance),
                body["stability_variance"].as_f64()
            );
        }
        SmithPayload::Step(s) => {
            assert_eq!(
                s.step_type.as_str(),
                snake(body["step_type"].as_str().expect("type"))
            );
            assert_eq!(Some(s.planned_step), body["planned_step"].as_bool());
            assert_eq!(Some(s.context_kb), body["context_kb"].as_u64());
            assert_eq!(s.content, body["content"]);
            assert_eq!(Some(s.tokens_in), body["tokens_in"].as_u64());
        }
        SmithPayload::ToolCall(t) => {
            let (kind, message) = match &body["exit_kind"] {
                Value::String(kind) => (kind.as_str(), None),
                Value::Object(o) => {
                    let (k, m) = o.iter().next().expect("tagged");
                    (k.as_str(), m.as_str())
                }
                other => panic!("exit_kind {other}"),
            };
            assert_eq!(t.exit_kind.kind.as_str(), snake(kind));
            assert_eq!(t.exit_kind.message.as_deref(), message);
            assert_eq!(t.tool_args_hash, body["tool_args_hash"]);
            let score = |v: &Value| (!v.is_null()).then(|| f32_shortest(v));
            assert_eq!(t.user_feedback_score, score(&body["user_feedback_score"]));
            assert_eq!(t.intent_accuracy, score(&body["intent_accuracy"]));
            assert_eq!(
                Some(t.evidence_footprint.bytes_read),
                body["evidence_footprint"]["bytes_read"].as_u64()
            );
        }
        SmithPayload::ContextDecision(c) => {
            assert_eq!(
                c.segment_type.as_str(),
                snake(body["segment_type"].as_str().expect("t"))
            );
            assert_eq!(Some(c.segment_kb), body["segment_kb"].as_f64());
            assert_eq!(c.impact_probe_ev, body["impact_probe_ev"].as_f64());
            assert_eq!(Some(c.confidence_score), body["confidence_score"].as_f64());
        }
        SmithPayload::Failure(f) => {
            let (root_tag, root) = body["first_failure_root"]
                .as_object()
                .and_then(|o| o.iter().next())
                .expect("tagged root");
            assert_eq!(f.first_failure_root.kind(), snake(root_tag));
            let mapped = serde_json::to_value(&f.first_failure_root).expect("json");
            for (field, value) in root.as_object().expect("fields") {
                let want = match value {
                    Value::Bool(b) => json!(b.to_string()),
                    other => other.clone(),
                };
                assert_eq!(mapped[field], want, "{root_tag}.{field}");
            }
            assert_eq!(
                Some(f.recovery_attempts.len()),
                body["recovery_attempts"].as_array().map(Vec::len)
            );
            assert_eq!(
                Some(f.final_error_state.confidence),
                body["final_error_state"]["confidence"].as_f64()
            );
        }
    }
    assert_eq!(payload.event_type().as_str(), snake(tag));
}

/// PascalCase → snake_case, independently of the crate.
fn snake(pascal: &str) -> String {
    let mut out = String::new();
    for (i, c) in pascal.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.extend(c.to_lowercase());
    }
    out
}

#[test]
fn fixture_values_read_as_the_producer_set_them() {
    let lines = fixture_lines();
    let first = smith(lines[0].as_bytes(), None);
    let SmithPayload::RunStart(config) = &first.payload else {
        panic!("{:?}", first.payload)
    };
    // 0.699999988079071 on the wire, 0.7 in the producer's code.
    assert_eq!(config.temperature, 0.7);
    assert_eq!(config.pruning_threshold, 0.8);
    assert_eq!(config.execution_timeout_ms, 300_000);
    assert_eq!(config.no_progress_timeout_ms, 60_000);
    assert_eq!(config.sandbox_limits.cpu_cores, 2.0);
    assert_eq!(first.cfg_hash, "bea1728aeeb092ec");
    assert_eq!(first.env_hash, "8ffca0e254da2c9");
}

#[test]
fn a_uuid_message_id_is_the_id_and_any_other_is_not() {
    let line = &fixture_lines()[1];
    let derived = smith(line.as_bytes(), None).event_id;
    let header = Uuid::now_v7();
    assert_eq!(
        smith(line.as_bytes(), Some(&header.to_string())).event_id,
        header
    );
    for fresh in ["smith-publish-1", "smith-publish-2", "42", ""] {
        assert_eq!(
            smith(line.as_bytes(), Some(fresh)).event_id,
            derived,
            "{fresh}"
        );
    }
}

#[test]
fn native_decoding_is_unchanged() {
    // The native-only entry point refuses Smith events exactly as before.
    let line = &fixture_lines()[0];
    assert_eq!(decode(line.as_bytes()), Err(DecodeError::MissingVersion));
    // Native events come out of decode_message as they come out of decode.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for event_type in EventType::ALL {
        let bytes =
            std::fs::read(dir.join(format!("{}.json", event_type.as_str()))).expect("fixture");
        let native = decode(&bytes).expect("native");
        let header = Uuid::now_v7().to_string();
        assert_eq!(
            decode_message(&bytes, Some(&header)),
            Ok(Decoded::Benchstream(native))
        );
    }
    // A native event with a bad field keeps its native error, even with an `event_type`.
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(dir.join("step.json")).expect("fixture"))
            .expect("json");
    v["event_type"] = json!({"Step": {}});
    v["seq"] = json!(-1);
    assert!(matches!(
        decode_message(v.to_string().as_bytes(), None),
        Err(DecodeError::InvalidField { path, .. }) if path == "seq"
    ));
}

/// A Smith event around `event_type`, as Smith serialises it (with `data` repeating it).
fn event(event_type: Value, ts: &str) -> Value {
    json!({
        "cfg_hash": "1f2e3d4c5b6a7988",
        "data": event_type,
        "env_hash": "abc",
        "event_type": event_type,
        "policy_id": "policy_v2",
        "run_id": "0b0c3a5e-36a1-4c48-9c55-8b1f5f1c7b10",
        "seed": 7,
        "step_id": "3f0c3a5e-36a1-4c48-9c55-8b1f5f1c7b11",
        "task_id": "swe_bench_hand_built",
        "ts": ts
    })
}

fn decode_hand_built(event_type: Value) -> SmithEvent {
    smith(
        event(event_type, "2026-11-23T08:00:00.123Z")
            .to_string()
            .as_bytes(),
        None,
    )
}

fn run_config(temperature: f64, nanos: u32) -> Value {
    json!({
        "available_tools": ["bash"], "context_window": 4096, "debate_rounds": 0,
        "docker_image": "img", "execution_timeout": {"nanos": nanos, "secs": 12},
        "failing_tests_patience": 2, "max_iterations": 5,
        "no_progress_timeout": {"nanos": 0, "secs": 0}, "planner_depth": 1,
        "pruning_threshold": 0.30000001192092896,
        "retry_policy": {"backoff_ms": 10, "exponential_backoff": false, "max_retries": 0,
                         "retry_on_flake": false, "retry_on_timeout": true},
        "sandbox_limits": {"cpu_cores": 1.5, "disk_mb": 1, "execution_timeout_ms": 2,
                           "memory_mb": 3, "network_enabled": true},
        "temperature": temperature, "tool_timeout_ms": 100, "tools_commit": "c"
    })
}

#[test]
fn hand_built_run_events_map_every_field() {
    let start = decode_hand_built(json!({"RunStart": run_config(0.10000000149011612, 7_999_999)}));
    let SmithPayload::RunStart(c) = start.payload else {
        panic!()
    };
    assert_eq!(
        (
            c.temperature,
            c.pruning_threshold,
            c.sandbox_limits.cpu_cores
        ),
        (0.1, 0.3, 1.5)
    );
    // 12 s 7.999999 ms: the sub-millisecond rest is dropped.
    assert_eq!(
        (c.execution_timeout_ms, c.no_progress_timeout_ms),
        (12_007, 0)
    );
    assert!(c.retry_policy.retry_on_timeout && c.sandbox_limits.network_enabled);

    let stop = decode_hand_built(json!({"RunStop": {
        "early_stop_reason": "no progress", "early_stopped": true, "failing_tests": ["t1"],
        "files_modified": 2, "final_score": 0.5, "stability_variance": 0.0, "success": false,
        "tests_failed": 1, "tests_passed": 3, "tool_errors": 4, "total_tokens": 99,
        "wall_time_ms": 1234}}));
    let SmithPayload::RunStop(r) = stop.payload else {
        panic!()
    };
    assert_eq!(r.early_stop_reason.as_deref(), Some("no progress"));
    assert_eq!(
        (r.success, r.tool_errors, r.failing_tests.len()),
        (false, 4, 1)
    );

    let update = decode_hand_built(json!({"OptimizerUpdate": {
        "confidence": 0.25, "expected_improvement": 0.5, "exploration_vs_exploitation": 1.0,
        "reasoning": "why", "suggested_config": run_config(1.2000000476837158, 0)}}));
    assert_eq!(update.event_type(), EventType::OptimizerUpdate);
    let SmithPayload::OptimizerUpdate(u) = update.payload else {
        panic!()
    };
    assert_eq!((u.suggested_config.temperature, u.confidence), (1.2, 0.25));
}

#[test]
fn hand_built_steps_of_every_type() {
    let types = [
        ("Reason", StepType::Reason),
        ("Act", StepType::Act),
        ("Observe", StepType::Observe),
        ("Conclude", StepType::Conclude),
        ("Plan", StepType::Plan),
        ("Debate", StepType::Debate),
    ];
    for (i, (wire, step_type)) in types.into_iter().enumerate() {
        let planned = i % 2 == 0;
        let e = decode_hand_built(json!({"Step": {
            "content": wire, "context_kb": i, "planned_step": planned, "step_type": wire,
            "tokens_in": 10, "tokens_out": 20, "wall_time_ms": 30}}));
        let SmithPayload::Step(s) = e.payload else {
            panic!()
        };
        assert_eq!(
            (s.step_type, s.planned_step, s.context_kb),
            (step_type, planned, i as u64)
        );
    }
}

#[test]
fn hand_built_tool_calls_of_every_exit_kind() {
    let kinds = [
        (json!("Ok"), ExitKind::Ok, None),
        (
            json!({"Deterministic": "exit 1"}),
            ExitKind::Deterministic,
            Some("exit 1"),
        ),
        (json!({"Flake": "reset"}), ExitKind::Flake, Some("reset")),
        (json!("Oom"), ExitKind::Oom, None),
        (json!("Timeout"), ExitKind::Timeout, None),
        (
            json!({"UserError": "bad regex"}),
            ExitKind::UserError,
            Some("bad regex"),
        ),
        (
            json!({"SystemError": "sandbox died"}),
            ExitKind::SystemError,
            Some("sandbox died"),
        ),
    ];
    for (wire, kind, message) in kinds {
        let e = decode_hand_built(json!({"ToolCall": {
            "evidence_footprint": {"bytes_read": 1, "bytes_written": 2, "files_modified": ["m"],
                                   "files_read": ["r"], "lines_changed": 3, "tests_added": 4,
                                   "tests_modified": 5},
            "exit_kind": wire, "intent_accuracy": null, "latency_ms": 6, "retries": 1,
            "tool_args_hash": "deadbeef", "tool_name": "grep",
            "user_feedback_score": 0.699999988079071}}));
        let SmithPayload::ToolCall(t) = e.payload else {
            panic!()
        };
        let expected = ExitOutcome {
            kind,
            message: message.map(str::to_owned),
        };
        assert_eq!(t.exit_kind, expected);
        assert_eq!(
            (t.user_feedback_score, t.intent_accuracy),
            (Some(0.7), None)
        );
        assert_eq!(t.tool_args_hash, "deadbeef");
        assert_eq!(t.evidence_footprint.tests_modified, 5);
    }
}

#[test]
fn hand_built_context_decisions_of_every_segment_type() {
    let types = [
        ("FileContent", SegmentType::FileContent),
        ("SearchResults", SegmentType::SearchResults),
        ("ConversationHistory", SegmentType::ConversationHistory),
        ("ToolOutput", SegmentType::ToolOutput),
        ("ReasoningContext", SegmentType::ReasoningContext),
        ("Documentation", SegmentType::Documentation),
        ("ErrorLogs", SegmentType::ErrorLogs),
    ];
    for (wire, segment_type) in types {
        let e = decode_hand_built(json!({"ContextDecision": {
            "confidence_score": 0.5, "impact_probe_ev": null, "kept": false,
            "pruning_algorithm": "lru", "segment_id": wire, "segment_kb": 9,
            "segment_type": wire}}));
        let SmithPayload::ContextDecision(c) = e.payload else {
            panic!()
        };
        assert_eq!(
            (c.segment_type, c.segment_kb, c.impact_probe_ev),
            (segment_type, 9.0, None)
        );
    }
}

#[test]
fn hand_built_failures_of_every_root() {
    let roots = [
        (
            json!({"Build": {"command": "make", "error_type": "link"}}),
            FailureRoot::Build {
                error_type: "link".into(),
                command: "make".into(),
            },
        ),
        (
            json!({"Import": {"missing_module": "np", "suggested_fix": "pip"}}),
            FailureRoot::Import {
                missing_module: "np".into(),
                suggested_fix: "pip".into(),
            },
        ),
        (
            json!({"Path": {"expected_location": "/b", "invalid_path": "/a"}}),
            FailureRoot::Path {
                invalid_path: "/a".into(),
                expected_location: "/b".into(),
            },
        ),
        (
            json!({"Flake": {"failure_rate": 0.25, "flaky_test": "t"}}),
            FailureRoot::Flake {
                flaky_test: "t".into(),
                failure_rate: 0.25,
            },
        ),
        (
            json!({"Semantic": {"context": "loop", "logic_error": "off by one"}}),
            FailureRoot::Semantic {
                logic_error: "off by one".into(),
                context: "loop".into(),
            },
        ),
        (
            json!({"Planning": {"reasoning_error": "assumed", "step_number": 3}}),
            FailureRoot::Planning {
                reasoning_error: "assumed".into(),
                step_number: 3,
            },
        ),
        (
            json!({"Context": {"missing_info": "docs", "pruning_error": true}}),
            FailureRoot::Context {
                missing_info: "docs".into(),
                pruning_error: "true".into(),
            },
        ),
        (
            json!({"Tool": {"tool_name": "grep", "usage_error": "regex"}}),
            FailureRoot::Tool {
                tool_name: "grep".into(),
                usage_error: "regex".into(),
            },
        ),
    ];
    for (wire, root) in roots {
        let e = decode_hand_built(json!({"Failure": {
            "contributing_factors": ["f"],
            "final_error_state": {"confidence": 0.5, "error_category": "c", "recoverable": false,
                                  "similar_failures": 2},
            "first_failure_root": wire,
            "recovery_attempts": [{"side_effects": [], "strategy": "s", "success": true,
                                   "time_spent_ms": 5}],
            "remediation_suggestions": []}}));
        let SmithPayload::Failure(f) = e.payload else {
            panic!()
        };
        assert_eq!(f.first_failure_root, root);
        assert_eq!(f.final_error_state.similar_failures, 2);
        assert!(f.recovery_attempts[0].success);
    }
}

#[test]
fn timestamps_with_0_to_9_fraction_digits_are_read() {
    let step = json!({"Step": {"content": "", "context_kb": 0, "planned_step": false,
        "step_type": "Act", "tokens_in": 0, "tokens_out": 0, "wall_time_ms": 0}});
    let mut fraction = String::new();
    for digits in 0..=9 {
        let ts = if digits == 0 {
            "2026-11-23T08:00:00Z".to_owned()
        } else {
            fraction.push(char::from(b'0' + digits));
            format!("2026-11-23T08:00:00.{fraction}Z")
        };
        let e = smith(event(step.clone(), &ts).to_string().as_bytes(), None);
        let expected_nanos: u32 = format!("{fraction:0<9}").parse().expect("nanos");
        assert_eq!(e.ts.timestamp_subsec_nanos(), expected_nanos, "{ts}");
        assert_eq!(e.ts.timestamp(), 1_795_420_800, "{ts}");
    }
}

#[test]
fn contradictory_or_malformed_smith_events_are_refused_with_the_field() {
    let step = json!({"Step": {"content": "", "context_kb": 0, "planned_step": false,
        "step_type": "Act", "tokens_in": 0, "tokens_out": 0, "wall_time_ms": 0}});
    let good = event(step.clone(), "2026-11-23T08:00:00Z");

    let mut differs = good.clone();
    differs["data"]["Step"]["tokens_in"] = json!(5);
    assert!(
        matches!(smith_err(&differs), DecodeError::InvalidField { path, .. } if path == "data")
    );

    let unknown = event(json!({"Deliberation": {}}), "2026-11-23T08:00:00Z");
    assert_eq!(
        smith_err(&unknown),
        DecodeError::UnknownType("Deliberation".into())
    );

    let mut snake_case = good.clone();
    snake_case["event_type"]["Step"]["step_type"] = json!("act");
    snake_case["data"] = snake_case["event_type"].clone();
    let e = smith_err(&snake_case);
    assert!(
        matches!(&e, DecodeError::InvalidField { path, .. } if path == "event_type.Step.step_type"),
        "{e}"
    );

    let mut no_run = good.clone();
    no_run.as_object_mut().expect("object").remove("run_id");
    assert_eq!(smith_err(&no_run).class(), "invalid_field");

    // Without `data` the event says one thing, and is read.
    let mut no_data = good;
    no_data.as_object_mut().expect("object").remove("data");
    assert_eq!(
        smith(no_data.to_string().as_bytes(), None).event_type(),
        EventType::Step
    );
}
