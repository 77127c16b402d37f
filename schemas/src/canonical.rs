//! Canonical JSON and the hashes built on it (`cfg_hash`, `env_hash`, `tool_args_hash`).
//!
//! Canonical form: object keys sorted by their UTF-8 bytes, no whitespace, strings escaped
//! as serde_json escapes them, numbers as serde_json prints them (shortest round-trip form
//! for floats). It is written out here rather than relying on `serde_json::Value`'s map
//! order, which flips to insertion order when any crate in the build enables
//! `preserve_order`. The golden vectors in the tests pin the bytes and the digests, so a
//! drift between machines or Rust versions fails the build.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::envelope::Hash256;

/// Canonical JSON of a JSON value.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, val)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(val, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::String(s) => write_string(s, out),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Null => out.push_str("null"),
    }
}

fn write_string(s: &str, out: &mut String) {
    // serde_json's string escaping is the canonical one; it cannot fail for a &str.
    out.push_str(&Value::String(s.to_owned()).to_string());
}

/// SHA-256 of some bytes, as a [`Hash256`].
pub fn sha256_hex(bytes: &[u8]) -> Hash256 {
    Hash256::from_digest(Sha256::digest(bytes).into())
}

/// Anything serializable has a canonical form and a canonical hash.
pub trait Canonical: Serialize {
    /// The canonical JSON of `self`.
    fn canonical_json(&self) -> String {
        let value = serde_json::to_value(self)
            .unwrap_or_else(|e| unreachable!("wire types always serialize to JSON: {e}"));
        canonical_json(&value)
    }

    /// SHA-256 of [`Canonical::canonical_json`].
    fn canonical_hash(&self) -> Hash256 {
        sha256_hex(self.canonical_json().as_bytes())
    }
}

impl<T: Serialize + ?Sized> Canonical for T {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_and_whitespace_dropped() {
        let v = json!({"b": 1, "a": {"z": [1, 2.5, "x"], "y": null}, "A": true});
        assert_eq!(
            canonical_json(&v),
            r#"{"A":true,"a":{"y":null,"z":[1,2.5,"x"]},"b":1}"#
        );
    }

    #[test]
    fn strings_are_escaped_like_json() {
        let v = json!({"k": "quote\" back\\ nl\n nul\u{0} emoji😀"});
        assert_eq!(
            canonical_json(&v),
            "{\"k\":\"quote\\\" back\\\\ nl\\n nul\\u0000 emoji😀\"}"
        );
    }

    /// Golden vectors, cross-checked with Python's
    /// `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` + hashlib.
    /// If these change, every stored `cfg_hash` changes meaning.
    #[test]
    fn golden_hash_vectors() {
        let cases = [
            (
                json!({}),
                "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
            ),
            (
                json!({"temperature": 0.2, "max_iterations": 30, "model": "m"}),
                "e30228b7813f55e5a3aa96883fa129ad967c8536a1e1df153b2cecedcb85bce2",
            ),
            (
                json!({"b": [1, 2.5, {"z": null, "a": true}], "a": "é😀\n\u{0}\"", "c": 1.0,
                       "d": -0.001, "e": u64::MAX}),
                "13743d6bce7d2f284cb28aaefbfead8c9ca4bd617adc8d8dcb8cb8d38d462527",
            ),
        ];
        for (value, want) in cases {
            let text = canonical_json(&value);
            assert_eq!(sha256_hex(text.as_bytes()).as_str(), want, "{text}");
        }
    }
}
