//! Canonical JSON and the hashes built on it (`cfg_hash`, `env_hash`, `tool_args_hash`),
//! and [`Hash256`], the SHA-256 digest type of the wire format (also scenario and fixture
//! pins).
//!
//! Canonical form: object keys sorted by their UTF-8 bytes, no whitespace, strings escaped
//! as serde_json escapes them, numbers as serde_json prints them (shortest round-trip form
//! for floats). It is written out here rather than relying on `serde_json::Value`'s map
//! order, which flips to insertion order when any crate in the build enables
//! `preserve_order`. The golden vectors in the tests pin the bytes and the digests, so a
//! drift between machines or Rust versions fails the build.

use std::borrow::Cow;
use std::fmt;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

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

/// A SHA-256 digest as 64 lowercase hex chars (`cfg_hash`, `env_hash`, fixture pins).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Hash256(String);

/// Why a string is not a [`Hash256`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HashError {
    /// Not exactly 64 characters.
    #[error("hash must be 64 hex chars, got {0} chars")]
    Length(usize),
    /// A character outside `0-9a-f`.
    #[error("hash must be lowercase hex, found {0:?}")]
    NotHex(char),
}

impl Hash256 {
    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Wraps a raw 32-byte digest.
    pub fn from_digest(digest: [u8; 32]) -> Self {
        Hash256(hex::encode(digest))
    }
}

impl TryFrom<String> for Hash256 {
    type Error = HashError;

    fn try_from(s: String) -> Result<Self, HashError> {
        if s.len() != 64 {
            return Err(HashError::Length(s.chars().count()));
        }
        if let Some(c) = s.chars().find(|c| !matches!(c, '0'..='9' | 'a'..='f')) {
            return Err(HashError::NotHex(c));
        }
        Ok(Hash256(s))
    }
}

impl std::str::FromStr for Hash256 {
    type Err = HashError;

    fn from_str(s: &str) -> Result<Self, HashError> {
        Hash256::try_from(s.to_owned())
    }
}

impl From<Hash256> for String {
    fn from(h: Hash256) -> String {
        h.0
    }
}

impl fmt::Display for Hash256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl JsonSchema for Hash256 {
    fn schema_name() -> Cow<'static, str> {
        "Hash256".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "SHA-256 digest, 64 lowercase hex chars",
            "type": "string",
            "pattern": "^[0-9a-f]{64}$"
        })
    }
}

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
