//! The field reference of `schemas/README.md` (between its `field-reference` markers) is
//! rendered from the JSON Schema, so the prose contract and the generated one cannot
//! drift: this test fails when they differ, and `BLESS=1 cargo test -p
//! bench-schemas` rewrites the section.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{Map, Value};

const START: &str = "<!-- field-reference:start (generated from the JSON Schema: BLESS=1 cargo test -p bench-schemas) -->\n";
const END: &str = "<!-- field-reference:end -->\n";

/// One line of a description, safe inside a Markdown table cell.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

fn description(schema: &Value) -> String {
    cell(
        schema
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or(""),
    )
}

/// Whether `null` is an allowed value.
fn nullable(schema: &Value) -> bool {
    let in_types =
        matches!(schema.get("type"), Some(Value::Array(t)) if t.contains(&Value::from("null")));
    let in_alternatives = ["anyOf", "oneOf"].iter().any(|k| {
        matches!(schema.get(*k), Some(Value::Array(alts))
            if alts.iter().any(|a| a.get("type") == Some(&Value::from("null"))))
    });
    in_types || in_alternatives
}

/// The JSON type of a schema in words, `null` left out (see [`nullable`]).
fn type_of(schema: &Value) -> String {
    if let Some(Value::String(r)) = schema.get("$ref") {
        let name = r.rsplit('/').next().unwrap_or(r);
        return format!("[`{name}`](#{})", name.to_lowercase());
    }
    if let Some(c) = schema.get("const") {
        return format!("`{c}`");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = schema.get(key) {
            let words: Vec<String> = alts
                .iter()
                .filter(|a| a.get("type") != Some(&Value::from("null")))
                .map(type_of)
                .collect();
            return words.join(" or ");
        }
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let format = schema.get("format").and_then(Value::as_str);
    let words: Vec<String> = types
        .into_iter()
        .filter(|t| *t != "null")
        .map(|t| match (t, format) {
            ("integer", Some("uint32")) => "integer (u32)".to_owned(),
            ("integer", Some("uint64")) => "integer (u64)".to_owned(),
            ("number", _) => "number".to_owned(),
            ("string", Some("uuid")) => "UUID string".to_owned(),
            ("string", Some("date-time")) => "RFC 3339 string".to_owned(),
            ("array", _) => format!(
                "array of {}",
                schema.get("items").map(type_of).unwrap_or_default()
            ),
            (other, _) => other.to_owned(),
        })
        .collect();
    words.join(" or ")
}

/// A table of an object schema's properties.
fn fields(out: &mut String, object: &Map<String, Value>) {
    let required: Vec<&str> = match object.get("required") {
        Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let Some(Value::Object(properties)) = object.get("properties") else {
        return;
    };
    out.push_str("| field | type | presence | meaning |\n|---|---|---|---|\n");
    for (name, schema) in properties {
        let presence = match (required.contains(&name.as_str()), nullable(schema)) {
            (true, false) => "required",
            (true, true) => "required, may be null",
            (false, true) => "optional, may be null",
            (false, false) => "optional",
        };
        let _ = writeln!(
            out,
            "| `{name}` | {} | {presence} | {} |",
            type_of(schema),
            description(schema)
        );
    }
}

/// The reference section of one definition.
fn definition(out: &mut String, name: &str, schema: &Value) {
    let _ = writeln!(out, "### `{name}`\n\n{}\n", description(schema));
    let Value::Object(object) = schema else {
        return;
    };
    if object.contains_key("properties") {
        fields(out, object);
    } else if let Some(Value::Array(variants)) = object.get("oneOf") {
        if variants.iter().all(|v| v.get("const").is_some()) {
            out.push_str("| value | meaning |\n|---|---|\n");
            for v in variants {
                let _ = writeln!(out, "| {} | {} |", type_of(v), description(v));
            }
        } else {
            for v in variants.iter().filter_map(Value::as_object) {
                let tag = v
                    .get("properties")
                    .and_then(Value::as_object)
                    .and_then(|p| p.iter().find(|(_, s)| s.get("const").is_some()));
                if let Some((tag, tag_schema)) = tag {
                    let _ = writeln!(
                        out,
                        "`{tag}` = {}: {}\n",
                        type_of(tag_schema),
                        description(&Value::Object(v.clone()))
                    );
                }
                fields(out, v);
                out.push('\n');
            }
        }
    } else {
        let _ = writeln!(out, "Type: {}.", type_of(schema));
        if let Some(Value::String(pattern)) = object.get("pattern") {
            let _ = writeln!(out, "Pattern: `{pattern}`.");
        }
    }
    out.truncate(out.trim_end().len());
    out.push_str("\n\n");
}

/// The whole generated section: the envelope, the event types, every definition.
fn reference() -> String {
    let schema: Value = serde_json::from_str(&bench_schemas::json_schema::wire_schema_json())
        .expect("the generated schema is JSON");
    let mut out = String::from(START);
    out.push_str("\n### Envelope (`BenchmarkEvent`)\n\n");
    if let Value::Object(root) = &schema {
        fields(&mut out, root);
    }
    out.push_str("\n### Event types\n\n| `type` | `data` | what happened |\n|---|---|---|\n");
    for variant in schema["oneOf"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            type_of(&variant["properties"]["type"]),
            type_of(&variant["properties"]["data"]),
            description(variant)
        );
    }
    out.push('\n');
    let mut defs: Vec<(&String, &Value)> = schema["$defs"]
        .as_object()
        .map(|d| d.iter().collect())
        .unwrap_or_default();
    defs.sort_by(|a, b| a.0.cmp(b.0));
    for (name, def) in defs {
        definition(&mut out, name, def);
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out.push_str(END);
    out
}

#[test]
fn readme_field_reference_is_generated_from_the_json_schema() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).expect("schemas/README.md");
    let (Some(start), Some(end)) = (readme.find(START), readme.find(END)) else {
        panic!("{} has no field-reference markers", path.display());
    };
    let current = &readme[start..end + END.len()];
    let generated = reference();
    if std::env::var_os("BLESS").is_some() {
        let updated = readme.replacen(current, &generated, 1);
        std::fs::write(&path, updated).expect("write README");
        return;
    }
    assert!(
        current == generated,
        "the field reference of {} is out of date: run `BLESS=1 cargo test -p \
         bench-schemas`",
        path.display()
    );
}
