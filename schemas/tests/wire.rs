//! Wire-format tests: golden fixtures round-trip byte for byte, bad input gets the right
//! typed error, and the committed JSON Schema matches the types and describes every field.

use std::path::PathBuf;

use bench_schemas::{decode, BenchmarkEvent, DecodeError, EventType};

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixture_path(name)).unwrap_or_else(|e| panic!("read {name}: {e}"))
}

#[test]
fn every_event_type_round_trips_through_its_golden_fixture() {
    for event_type in EventType::ALL {
        let name = format!("{}.json", event_type.as_str());
        let text = fixture(&name);
        let event = decode(text.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(event.event_type(), event_type, "{name}");
        let again = serde_json::to_string_pretty(&event).expect("serialize") + "\n";
        assert_eq!(again, text, "{name} does not round-trip byte for byte");
        let compact = decode(&event.to_json()).expect("compact form decodes");
        assert_eq!(compact, event, "{name}: compact round trip");
    }
}

#[test]
fn unknown_token_counts_are_null_and_reported_ones_stay_exact() {
    const TOKENS: [&str; 5] = [
        "input_tokens",
        "cached_input_tokens",
        "cache_write_tokens",
        "output_tokens",
        "reasoning_tokens",
    ];
    let counts = |event: &BenchmarkEvent| match &event.payload {
        bench_schemas::Payload::Deliberation(d) => [
            d.input_tokens,
            d.cached_input_tokens,
            d.cache_write_tokens,
            d.output_tokens,
            d.reasoning_tokens,
        ],
        other => panic!("not a deliberation: {other:?}"),
    };
    let reported = decode(fixture("deliberation.json").as_bytes()).expect("fixture decodes");
    assert_eq!(
        counts(&reported),
        [Some(5200), Some(4096), Some(0), Some(420), Some(128)]
    );

    let mut unknown: serde_json::Value =
        serde_json::from_str(&fixture("deliberation.json")).expect("fixture json");
    for field in TOKENS {
        unknown["data"][field] = serde_json::Value::Null;
    }
    let event = decode(&serde_json::to_vec(&unknown).expect("json")).expect("null counts decode");
    assert_eq!(counts(&event), [None; 5]);
    let wire: serde_json::Value = serde_json::from_slice(&event.to_json()).expect("json");
    for field in TOKENS {
        assert_eq!(wire["data"][field], serde_json::Value::Null, "{field}");
    }
}

#[test]
fn turns_nobody_counted_decode_as_null_and_counted_ones_stay_exact() {
    let turns = |bytes: &[u8]| match decode(bytes).expect("run_stop decodes").payload {
        bench_schemas::Payload::RunStop(stop) => stop.turns,
        other => panic!("not a run_stop: {other:?}"),
    };
    assert_eq!(turns(fixture("run_stop.json").as_bytes()), Some(3));
    assert_eq!(
        turns(&with_field("run_stop.json", "/data/turns", 0.into())),
        Some(0)
    );
    assert_eq!(
        turns(&with_field(
            "run_stop.json",
            "/data/turns",
            serde_json::Value::Null
        )),
        None
    );
    let mut absent: serde_json::Value =
        serde_json::from_str(&fixture("run_stop.json")).expect("fixture json");
    absent["data"]
        .as_object_mut()
        .expect("data")
        .remove("turns");
    let event = decode(&serde_json::to_vec(&absent).expect("json")).expect("absent decodes");
    let wire: serde_json::Value = serde_json::from_slice(&event.to_json()).expect("json");
    assert_eq!(wire["data"]["turns"], serde_json::Value::Null);
    assert_eq!(turns(&serde_json::to_vec(&absent).expect("json")), None);
}

#[test]
fn call_times_nobody_measured_decode_as_null_and_measured_ones_stay_exact() {
    // (latency_ms, retries) of a tool_call or deliberation.
    let measured = |bytes: &[u8]| match decode(bytes).expect("decodes").payload {
        bench_schemas::Payload::ToolCall(c) => (c.latency_ms, c.retries),
        bench_schemas::Payload::Deliberation(d) => (d.latency_ms, d.retries),
        other => panic!("not a call: {other:?}"),
    };
    for name in ["tool_call.json", "deliberation.json"] {
        let golden = measured(fixture(name).as_bytes());
        assert!(
            golden.0.is_some() && golden.1.is_some(),
            "{name}: {golden:?}"
        );
        // An old producer's 0 is a 0.
        let zero = with_field(name, "/data/latency_ms", 0.into());
        assert_eq!(measured(&zero).0, Some(0), "{name}");
        let zero = with_field(name, "/data/retries", 0.into());
        assert_eq!(measured(&zero).1, Some(0), "{name}");
        // Null or absent: not measured.
        let null = with_field(name, "/data/latency_ms", serde_json::Value::Null);
        let null = serde_json::from_slice::<serde_json::Value>(&null).expect("json");
        let mut absent = null.clone();
        absent["data"]
            .as_object_mut()
            .expect("data")
            .remove("retries");
        assert_eq!(
            measured(&serde_json::to_vec(&absent).expect("json")),
            (None, None),
            "{name}"
        );
        let event = decode(&serde_json::to_vec(&absent).expect("json")).expect("decodes");
        let wire: serde_json::Value = serde_json::from_slice(&event.to_json()).expect("json");
        assert_eq!(
            (&wire["data"]["latency_ms"], &wire["data"]["retries"]),
            (&serde_json::Value::Null, &serde_json::Value::Null),
            "{name}: written back as null"
        );
    }
}

#[test]
fn a_null_seq_is_read_as_unknown_and_written_back_as_null() {
    let event = decode(&with_field("step.json", "/seq", serde_json::Value::Null))
        .expect("a null seq decodes");
    assert_eq!(event.seq, None);
    let wire: serde_json::Value = serde_json::from_slice(&event.to_json()).expect("json");
    assert_eq!(wire["seq"], serde_json::Value::Null, "present, null");
    let numbered = decode(fixture("step.json").as_bytes()).expect("golden");
    assert!(numbered.seq.is_some());
}

fn with_field(name: &str, pointer: &str, value: serde_json::Value) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_str(&fixture(name)).expect("fixture json");
    *v.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("{pointer} in {name}")) = value;
    serde_json::to_vec(&v).expect("json")
}

fn without_field(name: &str, field: &str) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_str(&fixture(name)).expect("fixture json");
    v.as_object_mut().expect("object").remove(field);
    serde_json::to_vec(&v).expect("json")
}

#[test]
fn bad_input_gets_a_typed_error() {
    use serde_json::json;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "malformed",
            b"{\"schema_version\": 1,".to_vec(),
            "malformed_json",
        ),
        (
            "invalid utf-8",
            b"{\"a\": \"\xff\xfe\"}".to_vec(),
            "invalid_utf8",
        ),
        ("array", b"[1,2]".to_vec(), "not_an_object"),
        (
            "version 2",
            with_field("step.json", "/schema_version", json!(2)),
            "unknown_version",
        ),
        (
            "version as string",
            with_field("step.json", "/schema_version", json!("1")),
            "unknown_version",
        ),
        (
            "no version",
            without_field("step.json", "schema_version"),
            "unknown_version",
        ),
        (
            "unknown type",
            with_field("step.json", "/type", json!("telepathy")),
            "unknown_type",
        ),
        (
            "missing seq",
            without_field("step.json", "seq"),
            "invalid_field",
        ),
        (
            "negative seq",
            with_field("step.json", "/seq", json!(-1)),
            "invalid_field",
        ),
        (
            "short hash",
            with_field("step.json", "/cfg_hash", json!("abc")),
            "invalid_field",
        ),
        (
            "upper hex hash",
            with_field("step.json", "/env_hash", json!("A".repeat(64))),
            "invalid_field",
        ),
        (
            "bad uuid",
            with_field("step.json", "/run_id", json!("not-a-uuid")),
            "invalid_field",
        ),
        (
            "bad ts",
            with_field("step.json", "/ts", json!("yesterday")),
            "invalid_field",
        ),
        (
            "ill-typed payload",
            with_field("step.json", "/data/tokens_in", json!("many")),
            "invalid_field",
        ),
        (
            "unknown enum",
            with_field("step.json", "/data/step_type", json!("dream")),
            "invalid_field",
        ),
        (
            "timeout without message",
            {
                let mut v: serde_json::Value =
                    serde_json::from_str(&fixture("tool_call.json")).expect("json");
                v["data"]
                    .as_object_mut()
                    .expect("data")
                    .remove("exit_message");
                serde_json::to_vec(&v).expect("json")
            },
            "invalid_field",
        ),
        (
            "oversize",
            vec![b' '; bench_schemas::MAX_EVENT_BYTES + 1],
            "oversize",
        ),
    ];
    for (what, bytes, class) in cases {
        match decode(&bytes) {
            Ok(_) => panic!("{what}: accepted"),
            Err(e) => assert_eq!(e.class(), class, "{what}: {e}"),
        }
    }
}

#[test]
fn invalid_field_errors_name_the_field() {
    let bytes = with_field("step.json", "/data/tokens_in", serde_json::json!("many"));
    match decode(&bytes) {
        Err(DecodeError::InvalidField { path, .. }) => {
            assert!(path.contains("tokens_in"), "{path}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_extra_fields_are_kept_not_rejected() {
    let mut v: serde_json::Value = serde_json::from_str(&fixture("run_stop.json")).expect("json");
    v["future_field"] = serde_json::json!({"nested": [1, 2]});
    v["data"]["future_metric"] = serde_json::json!(7);
    let event: BenchmarkEvent = decode(&serde_json::to_vec(&v).expect("json")).expect("accepted");
    assert_eq!(
        event.extra["future_field"],
        serde_json::json!({"nested": [1, 2]})
    );
}

#[test]
fn hostile_strings_survive_byte_for_byte() {
    let hostile = "q\"uote \\back\nline\u{0}nul 😀 '); DROP TABLE events_raw; -- \t\r";
    let bytes = with_field("step.json", "/data/content", serde_json::json!(hostile));
    let event = decode(&bytes).expect("hostile strings are data");
    match &event.payload {
        bench_schemas::Payload::Step(step) => assert_eq!(step.content, hostile),
        other => panic!("{other:?}"),
    }
    let back = decode(&event.to_json()).expect("re-decode");
    assert_eq!(back, event);
}

#[test]
fn committed_json_schema_is_up_to_date() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benchmark-event.schema.json");
    let generated = bench_schemas::json_schema::wire_schema_json();
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write schema");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is out of date: run `BLESS=1 cargo test -p bench-schemas`",
        path.display()
    );
}

/// Collects, as JSON pointers, every place of a JSON Schema that should carry a
/// `description` and does not: each definition, each property of an object schema, and
/// each `oneOf` alternative (an enum value or a tagged variant).
fn undescribed(schema: &serde_json::Value, pointer: &str, missing: &mut Vec<String>) {
    use serde_json::Value;
    let Value::Object(object) = schema else {
        if let Value::Array(items) = schema {
            for (i, item) in items.iter().enumerate() {
                undescribed(item, &format!("{pointer}/{i}"), missing);
            }
        }
        return;
    };
    let mut require = |group: &str, items: Vec<(String, &Value)>| {
        for (key, item) in items {
            if item.get("description").is_none() {
                missing.push(format!("{pointer}/{group}/{key}"));
            }
        }
    };
    for group in ["properties", "$defs"] {
        if let Some(Value::Object(entries)) = object.get(group) {
            require(group, entries.iter().map(|(k, v)| (k.clone(), v)).collect());
        }
    }
    if let Some(Value::Array(variants)) = object.get("oneOf") {
        require(
            "oneOf",
            variants
                .iter()
                .enumerate()
                .map(|(i, v)| (i.to_string(), v))
                .collect(),
        );
    }
    for (key, child) in object {
        undescribed(child, &format!("{pointer}/{key}"), missing);
    }
}

#[test]
fn every_json_schema_field_has_a_description() {
    let schema: serde_json::Value =
        serde_json::from_str(&bench_schemas::json_schema::wire_schema_json()).expect("schema json");
    let mut missing = Vec::new();
    undescribed(&schema, "#", &mut missing);
    assert!(
        missing.is_empty(),
        "{} schema entries have no description (add a `///` doc comment to the field or \
         variant):\n{}",
        missing.len(),
        missing.join("\n")
    );
}
