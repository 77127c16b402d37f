//! The JSON Schema document of the wire format, generated from the Rust types so it cannot
//! drift from them. The committed copy is `schemas/benchmark-event.schema.json`; a test
//! fails when it is out of date (`BLESS=1 cargo test -p bench-schemas` rewrites it).

use crate::envelope::BenchmarkEvent;

/// The JSON Schema of one event, pretty-printed with a trailing newline.
pub fn wire_schema_json() -> String {
    let schema = schemars::schema_for!(BenchmarkEvent);
    let mut text = serde_json::to_string_pretty(&schema)
        .unwrap_or_else(|e| unreachable!("a JSON Schema is JSON: {e}"));
    text.push('\n');
    text
}
