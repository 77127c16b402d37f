//! The OTLP/HTTP body: `application/x-protobuf` or `application/json`, gzip-compressed or
//! not, → an export request (traces, logs or metrics); and the reply, encoded as the request was
//! (OTLP/HTTP specification, "Binary Protobuf Encoding" and "JSON Protobuf Encoding").
//! Decoding is `prost`'s and the OTLP/JSON mapping is `opentelemetry-proto`'s (trace and
//! span ids as hex); nothing here parses protobuf by hand. No I/O.

use std::io::Read;

use axum::http::header::{CONTENT_ENCODING, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use prost::Message;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// How a request (and so its reply) is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `application/x-protobuf`.
    Protobuf,
    /// `application/json`.
    Json,
}

impl Encoding {
    /// The `Content-Type` of this encoding.
    pub const fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }

    /// Encodes the reply.
    pub fn encode<M: Message + Serialize>(self, response: &M) -> Vec<u8> {
        match self {
            Encoding::Protobuf => response.encode_to_vec(),
            // A response holds strings and integers only: it always serializes.
            Encoding::Json => serde_json::to_vec(response)
                .unwrap_or_else(|e| unreachable!("OTLP response serialization: {e}")),
        }
    }
}

/// Why a body was refused, with the HTTP status the specification gives it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// Neither protobuf nor JSON: 415.
    #[error("unsupported content type {0:?}: send application/x-protobuf or application/json")]
    ContentType(String),
    /// A compression other than gzip: 415.
    #[error("unsupported content encoding {0:?}: send gzip or none")]
    ContentEncoding(String),
    /// Bigger than the limit, compressed or once decompressed: 413.
    #[error("body over {limit} bytes")]
    TooLarge {
        /// The limit, bytes.
        limit: usize,
    },
    /// Not gzip, not protobuf or not OTLP JSON: 400.
    #[error("malformed body: {0}")]
    Malformed(String),
}

impl BodyError {
    /// The HTTP status of the reply.
    pub fn status(&self) -> StatusCode {
        match self {
            BodyError::ContentType(_) | BodyError::ContentEncoding(_) => {
                StatusCode::UNSUPPORTED_MEDIA_TYPE
            }
            BodyError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            BodyError::Malformed(_) => StatusCode::BAD_REQUEST,
        }
    }
}

/// The encoding `headers` announce.
pub fn encoding(headers: &HeaderMap) -> Result<Encoding, BodyError> {
    let raw = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    // Parameters (`; charset=utf-8`) do not change the encoding.
    let media = raw.split(';').next().unwrap_or_default().trim();
    match media.to_ascii_lowercase().as_str() {
        "application/x-protobuf" | "application/protobuf" => Ok(Encoding::Protobuf),
        "application/json" => Ok(Encoding::Json),
        _ => Err(BodyError::ContentType(raw.to_owned())),
    }
}

/// Decompresses (when `headers` say gzip) and decodes `body`; nothing decompresses past
/// `limit` bytes.
pub fn decode<M: Message + Default + DeserializeOwned>(
    headers: &HeaderMap,
    encoding: Encoding,
    body: &[u8],
    limit: usize,
) -> Result<M, BodyError> {
    let compression = headers
        .get(CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity")
        .trim()
        .to_ascii_lowercase();
    let inflated;
    let bytes = match compression.as_str() {
        "identity" | "" => body,
        "gzip" => {
            inflated = gunzip(body, limit)?;
            &inflated[..]
        }
        other => return Err(BodyError::ContentEncoding(other.to_owned())),
    };
    match encoding {
        Encoding::Protobuf => {
            M::decode(bytes).map_err(|e| BodyError::Malformed(format!("protobuf: {e}")))
        }
        Encoding::Json => {
            serde_json::from_slice(bytes).map_err(|e| BodyError::Malformed(format!("json: {e}")))
        }
    }
}

/// Inflates a gzip body, refusing one that inflates past `limit` (a small body may
/// decompress to gigabytes).
fn gunzip(body: &[u8], limit: usize) -> Result<Vec<u8>, BodyError> {
    let mut out = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    flate2::read::GzDecoder::new(body)
        .take(cap)
        .read_to_end(&mut out)
        .map_err(|e| BodyError::Malformed(format!("gzip: {e}")))?;
    if out.len() > limit {
        return Err(BodyError::TooLarge { limit });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;

    use super::*;

    fn headers(content_type: &str, encoding: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            CONTENT_TYPE,
            HeaderValue::from_str(content_type).expect("ascii"),
        );
        if let Some(e) = encoding {
            h.insert(CONTENT_ENCODING, HeaderValue::from_str(e).expect("ascii"));
        }
        h
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).expect("in memory");
        encoder.finish().expect("in memory")
    }

    #[test]
    fn json_ids_are_hex_and_gzip_is_inflated() {
        let json = br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{
            "traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174",
            "name":"chat","startTimeUnixNano":"1700000000000000000",
            "endTimeUnixNano":"1700000001000000000"}]}]}]}"#;
        let h = headers("application/json; charset=utf-8", Some("gzip"));
        let request: ExportTraceServiceRequest =
            decode(&h, encoding(&h).expect("json"), &gzip(json), 1 << 20).expect("valid OTLP/JSON");
        let span = &request.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(span.trace_id[..2], [0x5b, 0x8e]);
        assert_eq!(span.span_id.len(), 8);
    }

    #[test]
    fn a_body_that_inflates_past_the_limit_is_too_large() {
        let h = headers("application/x-protobuf", Some("gzip"));
        let bomb = gzip(&vec![0u8; 10_000]);
        assert_eq!(
            decode::<ExportTraceServiceRequest>(&h, Encoding::Protobuf, &bomb, 1000).map(|_| ()),
            Err(BodyError::TooLarge { limit: 1000 })
        );
    }

    #[test]
    fn garbage_is_malformed_and_other_media_unsupported() {
        let h = headers("application/x-protobuf", None);
        let err =
            decode::<ExportTraceServiceRequest>(&h, Encoding::Protobuf, b"\xff\xff\xff", 1000)
                .map(|_| ());
        assert_eq!(err.map_err(|e| e.status()), Err(StatusCode::BAD_REQUEST));
        let err = encoding(&headers("text/plain", None)).map_err(|e| e.status());
        assert_eq!(err, Err(StatusCode::UNSUPPORTED_MEDIA_TYPE));
    }
}
