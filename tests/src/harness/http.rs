//! Minimal blocking HTTP/1.0 client over `std::net::TcpStream`, for readiness probes,
//! [`ClickHouseServer::query`](super::ClickHouseServer::query) and the tests of the
//! viewer's status codes and headers.
//!
//! HTTP/1.0 makes servers answer with a plain body and close the connection, so reading
//! to EOF is the whole protocol. Chunked bodies are still decoded in case a server
//! answers 1.0 requests with 1.1 framing. Only loopback, only what the harness needs:
//! not a general client.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// A response: status code, headers and raw body.
#[derive(Debug)]
pub struct Response {
    /// HTTP status code, e.g. 200.
    pub status: u16,
    /// The header lines, names lower-cased, values trimmed, in order.
    pub headers: Vec<(String, String)>,
    /// Body bytes, de-chunked if needed.
    pub body: Vec<u8>,
}

/// Sends one request to `127.0.0.1:port` and reads the whole response.
///
/// `target` is the path with query string (`/?query=SELECT%201`). `timeout` bounds the
/// connect and each read/write, not the whole exchange.
pub fn request(
    port: u16,
    method: &str,
    target: &str,
    body: &[u8],
    timeout: Duration,
) -> io::Result<Response> {
    request_with_headers(port, method, target, &[], body, timeout)
}

/// [`request`] with `headers` (name, value) added.
pub fn request_with_headers(
    port: u16,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> io::Result<Response> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;

    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let head = format!(
        "{method} {target} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n{extra}\
         Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;

    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse_response(&raw)
}

/// Splits a raw HTTP response into status and body.
fn parse_response(raw: &[u8]) -> io::Result<Response> {
    let head_end =
        find(raw, b"\r\n\r\n").ok_or_else(|| invalid("response has no end of headers"))?;
    let head = std::str::from_utf8(&raw[..head_end])
        .map_err(|_| invalid("response headers are not UTF-8"))?;
    let body = &raw[head_end + 4..];

    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| invalid(&format!("bad status line {status_line:?}")))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(name, value)| name == "transfer-encoding" && value.contains("chunked"));

    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    Ok(Response {
        status,
        headers,
        body,
    })
}

/// Decodes a `Transfer-Encoding: chunked` body.
fn dechunk(mut rest: &[u8]) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = find(rest, b"\r\n").ok_or_else(|| invalid("truncated chunk size"))?;
        let size_text = std::str::from_utf8(&rest[..line_end])
            .map_err(|_| invalid("chunk size is not UTF-8"))?;
        let size_hex = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|_| invalid(&format!("bad chunk size {size_text:?}")))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        if rest.len() < size + 2 {
            return Err(invalid("truncated chunk"));
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// Percent-encodes a query-string value (RFC 3986 unreserved characters stay as is).
pub(crate) fn encode_query_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_body_is_returned_as_is() {
        let response = parse_response(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n1\n")
            .expect("valid response");
        assert_eq!(response.status, 200);
        assert_eq!(response.body, b"1\n");
    }

    #[test]
    fn chunked_body_is_decoded() {
        let raw = b"HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n\
                    5\r\nCode:\r\n6;ext=1\r\n boom!\r\n0\r\n\r\n";
        let response = parse_response(raw).expect("valid response");
        assert_eq!(response.status, 500);
        assert_eq!(response.body, b"Code: boom!");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(parse_response(b"nonsense").is_err());
        assert!(parse_response(b"HTTP/1.0 abc\r\n\r\n").is_err());
        assert!(
            parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").is_err()
        );
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(encode_query_value("bench-secret"), "bench-secret");
        assert_eq!(encode_query_value("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
