//! [`FaultProxy`]: an HTTP proxy in front of a real ClickHouse's HTTP port that answers
//! chosen requests with a failure instead of (or after) forwarding them: the error
//! answers a dying replica, ZooKeeper, an overloaded server or a broken network give,
//! which a healthy test server never does on cue.
//!
//! Every other request is forwarded unchanged, and ClickHouse's answer relayed, so the
//! client sees the real server except where a fault was asked for. Each client
//! connection is served by a thread of its own, one request after another (keep-alive,
//! as the `clickhouse` crate's pooled client uses); each forwarded request gets a fresh
//! upstream connection (`Connection: close`), so a fault never leaves an upstream
//! connection half used.
//!
//! Only what the sink's client sends is understood: bodies framed by `Content-Length` or
//! chunked, no `Expect: 100-continue`, no upgrades. Not a general proxy.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the proxy does with a request a fault applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Answers `status` with `body`, forwarding nothing: the server refused the request.
    Answer {
        /// HTTP status, e.g. 500.
        status: u16,
        /// The error text, e.g. `Code: 32, e.displayText() = ...`.
        body: String,
    },
    /// Forwards the request (the rows land), then answers `status` with `body` instead
    /// of ClickHouse's answer: the ambiguous failure, where the client cannot know.
    AnswerAfterForwarding {
        /// HTTP status.
        status: u16,
        /// The error text.
        body: String,
    },
    /// Closes the connection without answering.
    Close,
    /// Holds the request without answering for this long, then closes the connection.
    Stall(Duration),
}

impl Fault {
    /// A ClickHouse error answer (HTTP 500) with `body`, nothing forwarded.
    pub fn clickhouse_error(body: &str) -> Fault {
        Fault::Answer {
            status: 500,
            body: body.to_owned(),
        }
    }
}

/// Faults waiting for requests, and how many were dealt.
#[derive(Debug, Default)]
struct Plan {
    /// The next `times` requests whose text contains `matching` get `fault`.
    rules: Vec<(String, Fault, usize)>,
    /// Faults dealt so far.
    injected: usize,
}

impl Plan {
    /// The fault for a request whose text (decoded target and start of the body) is
    /// `text`, counted; `None` = forward it.
    fn take(&mut self, text: &str) -> Option<Fault> {
        let (_, fault, left) = self
            .rules
            .iter_mut()
            .find(|(matching, _, left)| *left > 0 && text.contains(matching.as_str()))?;
        *left -= 1;
        self.injected += 1;
        Some(fault.clone())
    }
}

/// The proxy: listens on a free loopback port, forwards to `127.0.0.1:<upstream>`.
/// Stops accepting on drop; connections being served end with their clients.
pub struct FaultProxy {
    port: u16,
    plan: Arc<Mutex<Plan>>,
    stopping: Arc<AtomicBool>,
    accepting: Option<JoinHandle<()>>,
}

/// How long a client connection may stay silent before the proxy closes it.
const IDLE: Duration = Duration::from_secs(120);

/// Bytes of a request body searched for the text a fault matches.
const MATCHED_BODY: usize = 4096;

impl FaultProxy {
    /// Starts a proxy in front of the HTTP port `upstream` on 127.0.0.1.
    pub fn start(upstream: u16) -> FaultProxy {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the fault proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let plan = Arc::new(Mutex::new(Plan::default()));
        let stopping = Arc::new(AtomicBool::new(false));
        let accepting = std::thread::spawn({
            let (plan, stopping) = (Arc::clone(&plan), Arc::clone(&stopping));
            move || {
                for client in listener.incoming() {
                    if stopping.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(client) = client else { continue };
                    let plan = Arc::clone(&plan);
                    std::thread::spawn(move || {
                        // A connection ends with an error as often as not (a client
                        // closing, a fault closing it): nothing to report.
                        let _ = serve(client, upstream, &plan);
                    });
                }
            }
        });
        FaultProxy {
            port,
            plan,
            stopping,
            accepting: Some(accepting),
        }
    }

    /// `http://127.0.0.1:<port>`: the URL to give the client instead of ClickHouse's.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Deals `fault` to the next `times` requests whose text (URL-decoded target, then
    /// the start of the body) contains `matching`, after the faults asked for before.
    pub fn inject(&self, matching: &str, fault: Fault, times: usize) {
        self.plan().rules.push((matching.to_owned(), fault, times));
    }

    /// Faults dealt so far.
    pub fn injected(&self) -> usize {
        self.plan().injected
    }

    /// Faults asked for and not dealt yet.
    pub fn pending(&self) -> usize {
        self.plan().rules.iter().map(|(_, _, left)| left).sum()
    }

    fn plan(&self) -> std::sync::MutexGuard<'_, Plan> {
        self.plan.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees `stopping`.
        let _ = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port));
        if let Some(accepting) = self.accepting.take() {
            let _ = accepting.join();
        }
    }
}

/// One request as read from the client.
struct Request {
    /// `POST /?query=... HTTP/1.1`.
    line: String,
    /// Header lines, framing and connection headers left out.
    headers: Vec<String>,
    body: Vec<u8>,
}

impl Request {
    /// What a fault's `matching` is looked for in.
    fn text(&self) -> String {
        let target = self.line.split(' ').nth(1).unwrap_or_default();
        let body = &self.body[..self.body.len().min(MATCHED_BODY)];
        format!(
            "{} {}",
            percent_decode(target),
            String::from_utf8_lossy(body)
        )
    }
}

/// Serves one client connection until it closes or a fault closes it.
fn serve(client: TcpStream, upstream: u16, plan: &Mutex<Plan>) -> io::Result<()> {
    client.set_read_timeout(Some(IDLE))?;
    let mut reader = BufReader::new(client.try_clone()?);
    let mut writer = client;
    while let Some(request) = read_request(&mut reader)? {
        let fault = plan
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(&request.text());
        match fault {
            None => {
                let (status, headers, body) = forward(&request, upstream)?;
                respond(&mut writer, status, &headers, &body)?;
            }
            Some(Fault::Answer { status, body }) => {
                respond(&mut writer, status, &[], body.as_bytes())?;
            }
            Some(Fault::AnswerAfterForwarding { status, body }) => {
                forward(&request, upstream)?;
                respond(&mut writer, status, &[], body.as_bytes())?;
            }
            Some(Fault::Close) => {
                return writer.shutdown(Shutdown::Both);
            }
            Some(Fault::Stall(hold)) => {
                std::thread::sleep(hold);
                return writer.shutdown(Shutdown::Both);
            }
        }
    }
    Ok(())
}

/// Headers the proxy sets itself on each hop.
fn is_hop_header(line: &str) -> bool {
    let name = line.split(':').next().unwrap_or_default().trim();
    [
        "connection",
        "keep-alive",
        "content-length",
        "transfer-encoding",
    ]
    .iter()
    .any(|hop| name.eq_ignore_ascii_case(hop))
}

/// Reads the head lines up to the empty line; `None` at a clean end of the connection.
fn read_head(reader: &mut impl BufRead) -> io::Result<Option<Vec<String>>> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return if lines.is_empty() {
                Ok(None)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
        let line = line.trim_end_matches(['\r', '\n']).to_owned();
        if line.is_empty() {
            return Ok(Some(lines));
        }
        lines.push(line);
    }
}

/// The value of header `name` among `lines`, if present.
fn header<'a>(lines: &'a [String], name: &str) -> Option<&'a str> {
    lines.iter().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then_some(value.trim())
    })
}

/// Reads a body framed by `Content-Length` or chunked (none: empty).
fn read_body(reader: &mut impl BufRead, head: &[String]) -> io::Result<Vec<u8>> {
    let chunked = header(head, "transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        let mut body = Vec::new();
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let hex = size.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(hex, 16)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
            if size == 0 {
                // Trailers, up to the empty line.
                read_head(reader)?;
                return Ok(body);
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..])?;
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf)?;
        }
    }
    let length = header(head, "content-length")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(body)
}

fn read_request(reader: &mut impl BufRead) -> io::Result<Option<Request>> {
    let Some(mut head) = read_head(reader)? else {
        return Ok(None);
    };
    let body = read_body(reader, &head)?;
    let line = head.remove(0);
    head.retain(|line| !is_hop_header(line));
    Ok(Some(Request {
        line,
        headers: head,
        body,
    }))
}

/// Sends `request` to ClickHouse on a fresh connection and returns its answer: status,
/// end-to-end headers and the whole body.
fn forward(request: &Request, upstream: u16) -> io::Result<(u16, Vec<String>, Vec<u8>)> {
    let mut server = TcpStream::connect((Ipv4Addr::LOCALHOST, upstream))?;
    let mut head = format!("{}\r\n", request.line);
    for line in &request.headers {
        head.push_str(line);
        head.push_str("\r\n");
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        request.body.len()
    ));
    server.write_all(head.as_bytes())?;
    server.write_all(&request.body)?;
    server.flush()?;
    let mut reader = BufReader::new(server);
    let mut lines =
        read_head(&mut reader)?.ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
    let status_line = lines.remove(0);
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad status line"))?;
    let body = if header(&lines, "transfer-encoding").is_some()
        || header(&lines, "content-length").is_some()
    {
        read_body(&mut reader, &lines)?
    } else {
        let mut body = Vec::new();
        reader.read_to_end(&mut body)?;
        body
    };
    lines.retain(|line| !is_hop_header(line));
    Ok((status, lines, body))
}

/// Writes one response, framed by `Content-Length`, keeping the connection open.
fn respond(client: &mut TcpStream, status: u16, headers: &[String], body: &[u8]) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} Proxied\r\n");
    for line in headers {
        head.push_str(line);
        head.push_str("\r\n");
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: keep-alive\r\n\r\n",
        body.len()
    ));
    client.write_all(head.as_bytes())?;
    client.write_all(body)?;
    client.flush()
}

/// `%XX` and `+` of a URL decoded (invalid escapes kept as they are).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                {
                    Some(byte) => {
                        out.push(byte);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_decoded_for_matching() {
        assert_eq!(
            percent_decode("/?query=INSERT%20INTO%20%60steps%60+FORMAT"),
            "/?query=INSERT INTO `steps` FORMAT"
        );
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }

    #[test]
    fn faults_are_dealt_in_order_and_counted() {
        let mut plan = Plan::default();
        plan.rules.push(("INSERT".into(), Fault::Close, 1));
        plan.rules
            .push(("INSERT".into(), Fault::Stall(Duration::ZERO), 1));
        assert_eq!(plan.take("SELECT 1"), None);
        assert_eq!(plan.take("INSERT INTO a"), Some(Fault::Close));
        assert_eq!(
            plan.take("INSERT INTO a"),
            Some(Fault::Stall(Duration::ZERO))
        );
        assert_eq!(plan.take("INSERT INTO a"), None);
        assert_eq!(plan.injected, 2);
    }

    #[test]
    fn a_forwarded_answer_keeps_its_body() {
        let raw =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: b\r\n\r\n2\r\nok\r\n0\r\n\r\n";
        let mut reader = BufReader::new(&raw[..]);
        let mut lines = read_head(&mut reader).expect("head").expect("some");
        lines.remove(0);
        assert_eq!(read_body(&mut reader, &lines).expect("body"), b"ok");
    }
}
