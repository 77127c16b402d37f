//! [`DecodeError`]: why bytes are not a valid event, one variant per failure class. Its
//! own module because both readers return it: [`crate::decode`] (this crate's format) and
//! [`crate::smith`] (the Smith protocol, which `decode` calls).

use crate::envelope::SCHEMA_VERSION;
use crate::truncate::MAX_EVENT_BYTES;

/// Why bytes are not a valid event. Messages are lowercase and name the offending field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// Over [`MAX_EVENT_BYTES`].
    #[error("event is {size} bytes, over the {MAX_EVENT_BYTES} byte limit")]
    Oversize {
        /// Size of the message body, bytes.
        size: usize,
    },
    /// Not UTF-8.
    #[error("event is not valid UTF-8: {0}")]
    InvalidUtf8(String),
    /// Not JSON.
    #[error("malformed JSON: {0}")]
    MalformedJson(String),
    /// JSON, but not an object.
    #[error("event must be a JSON object, got {0}")]
    NotAnObject(&'static str),
    /// `schema_version` missing.
    #[error("missing field `schema_version`")]
    MissingVersion,
    /// A `schema_version` this build does not read; never guessed at.
    #[error("unknown schema_version {0} (this build reads {SCHEMA_VERSION})")]
    UnknownVersion(String),
    /// `type` missing or not a string.
    #[error("missing or non-string field `type`")]
    MissingType,
    /// A `type` outside the closed set.
    #[error("unknown event type {0:?}")]
    UnknownType(String),
    /// A field is missing or has the wrong type or value.
    #[error("invalid field `{path}`: {message}")]
    InvalidField {
        /// The field, as a dotted path from the event root (`data.retry_policy.max_retries`).
        path: String,
        /// What is wrong with it.
        message: String,
    },
}

impl DecodeError {
    /// A short stable class name, stored in `dead_letters.error_class`.
    pub const fn class(&self) -> &'static str {
        match self {
            DecodeError::Oversize { .. } => "oversize",
            DecodeError::InvalidUtf8(_) => "invalid_utf8",
            DecodeError::MalformedJson(_) => "malformed_json",
            DecodeError::NotAnObject(_) => "not_an_object",
            DecodeError::MissingVersion | DecodeError::UnknownVersion(_) => "unknown_version",
            DecodeError::MissingType | DecodeError::UnknownType(_) => "unknown_type",
            DecodeError::InvalidField { .. } => "invalid_field",
        }
    }
}
