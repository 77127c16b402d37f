//! `otlp-bench`: spans per second through `agent-runner otlp` into the events stream, the
//! receiver's CPU time per span and its peak memory. The receiver is the release `agent-runner` binary run as a
//! process (as deployed), publishing to a nats-server the test harness starts.
//!
//! Each request is one OTLP/HTTP protobuf export of one trace: an `invoke_agent` root
//! (`run_start` + `run_stop`), then `chat` spans (`step` + `deliberation` each) and
//! `execute_tool` spans (`tool_call`) alternating. `--connections` clients share
//! `--requests` requests over keep-alive HTTP/1.1 connections, each waiting for its 200,
//! which the receiver sends only once every event of the request is acknowledged by
//! JetStream: the rate is spans acknowledged into the stream per second. At the end the
//! stream must hold every event once.
//!
//! `cargo build --release -p agent-runner && cargo run --release -p benchstream-bench --bin
//! otlp-bench -- [--requests N] [--spans S] [--connections C]`

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, ensure, Context as _};
use async_nats::jetstream;
use bench_nats::{NatsConfig, StreamSpec};
use benchstream_bench::{peak_rss, product_binary};
use benchstream_tests::{free_port, NatsServer};
use clap::Parser;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufStream};
use tokio::net::TcpStream;

#[derive(Debug, Parser)]
struct Args {
    /// Export requests (one trace each).
    #[arg(long, default_value_t = 1000)]
    requests: usize,
    /// Spans per trace (the root included), at least 1.
    #[arg(long, default_value_t = 50)]
    spans: usize,
    /// Concurrent client connections.
    #[arg(long, default_value_t = 8)]
    connections: usize,
    /// The agent-runner binary to measure. Default: the one beside this bench.
    #[arg(long)]
    runner: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(args.spans >= 1, "--spans must be at least 1");
    let runner = product_binary("agent-runner", "--runner", args.runner.as_deref())?;
    let nats = NatsServer::start();
    let client = bench_nats::connect(&NatsConfig::plain(nats.url()), false).await?;
    let js = jetstream::new(client);
    let spec = StreamSpec::default();
    // The deployed stream reserves 50 GiB, more than a bench host's store allows.
    js.create_stream(jetstream::stream::Config {
        max_bytes: 4 << 30,
        ..spec.config()
    })
    .await?;

    let dir = tempfile::tempdir()?;
    let port = free_port();
    let cpu_before = children_cpu();
    let mut receiver = spawn_receiver(&runner, port, &nats.url(), &dir.path().join("otlp.spool"))?;
    wait_listening(port).await?;

    let bodies: Vec<Vec<u8>> = (0..args.requests)
        .map(|i| trace(i, args.spans).encode_to_vec())
        .collect();
    let avg = bodies.iter().map(Vec::len).sum::<usize>() / bodies.len().max(1);
    println!(
        "otlp-bench: {} requests x {} spans (avg {avg} B protobuf), {} connections, release agent-runner otlp, nats-server on loopback",
        args.requests, args.spans, args.connections
    );
    let bodies = Arc::new(bodies);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let clients: Vec<_> = (0..args.connections.max(1))
        .map(|_| tokio::spawn(client_loop(port, bodies.clone(), next.clone())))
        .collect();
    for c in clients {
        c.await.context("client task")??;
    }
    let elapsed = started.elapsed();
    let rss = peak_rss(receiver.id());
    stop(&mut receiver)?;
    // The receiver was the only child reaped meanwhile: the children's CPU time grew by
    // its own, start-up and shutdown included.
    let cpu = children_cpu().saturating_sub(cpu_before);

    let chats = (args.spans - 1).div_ceil(2);
    let tools = (args.spans - 1) / 2;
    let expected = (args.requests * (2 + 2 * chats + tools)) as u64;
    let stored = js
        .get_stream(&spec.name)
        .await?
        .info()
        .await?
        .state
        .messages;
    ensure!(
        stored == expected,
        "the stream holds {stored} events, expected {expected}"
    );
    let spans = (args.requests * args.spans) as f64;
    let secs = elapsed.as_secs_f64();
    println!(
        "  {:.0} spans/s, {:.0} events/s acknowledged into the stream ({} events in {:.2} s)",
        spans / secs,
        expected as f64 / secs,
        expected,
        secs
    );
    println!(
        "  receiver CPU {:.2} s (user + system), {:.1} µs per span",
        cpu.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / spans
    );
    println!(
        "  receiver peak RSS {:.1} MiB",
        rss as f64 / (1024.0 * 1024.0)
    );
    Ok(())
}

fn spawn_receiver(
    runner: &PathBuf,
    port: u16,
    url: &str,
    spool: &std::path::Path,
) -> anyhow::Result<Child> {
    Command::new(runner)
        .args(["otlp", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--nats-url", url, "--host", "otlp-bench"])
        .arg("--spool")
        .arg(spool)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .context("start agent-runner otlp")
}

async fn wait_listening(port: u16) -> anyhow::Result<()> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(addr).await.is_err() {
        ensure!(Instant::now() < deadline, "the receiver never listened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// User + system CPU time of this process's children that have been waited for.
fn children_cpu() -> Duration {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(Duration::ZERO, |usage| {
        let time = |t: nix::sys::time::TimeVal| {
            Duration::from_secs(u64::try_from(t.tv_sec()).unwrap_or(0))
                + Duration::from_micros(u64::try_from(t.tv_usec()).unwrap_or(0))
        };
        time(usage.user_time()) + time(usage.system_time())
    })
}

/// SIGTERM, and the receiver's clean exit.
fn stop(receiver: &mut Child) -> anyhow::Result<()> {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(receiver.id())?);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)?;
    let status = receiver.wait()?;
    ensure!(status.success(), "the receiver exited with {status}");
    Ok(())
}

/// Sends requests from `bodies` (the next unsent one each time) over one keep-alive
/// connection until none is left; every answer must be 200.
async fn client_loop(
    port: u16,
    bodies: Arc<Vec<Vec<u8>>>,
    next: Arc<AtomicUsize>,
) -> anyhow::Result<()> {
    let mut stream = BufStream::new(TcpStream::connect(("127.0.0.1", port)).await?);
    let head_start = format!(
        "POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/x-protobuf\r\n"
    );
    let mut line = String::new();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(body) = bodies.get(i) else {
            return Ok(());
        };
        let head = format!("{head_start}Content-Length: {}\r\n\r\n", body.len());
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body).await?;
        stream.flush().await?;
        line.clear();
        stream.read_line(&mut line).await?;
        let status = line.split(' ').nth(1).unwrap_or_default().to_owned();
        let mut length = 0usize;
        loop {
            line.clear();
            stream.read_line(&mut line).await?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse()?;
                }
            }
        }
        let mut reply = vec![0; length];
        stream.read_exact(&mut reply).await?;
        if status != "200" {
            bail!(
                "request {i} answered {status}: {}",
                String::from_utf8_lossy(&reply)
            );
        }
    }
}

fn text(key: &str, value: &str) -> KeyValue {
    attribute(key, any_value::Value::StringValue(value.to_owned()))
}

fn attribute(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

/// Trace `index`: a root and `spans - 1` children, chat and tool alternating, starting a
/// second from now: after the receiver started (its memory of runs starts once its
/// publisher is connected, just after it listens), so that it sums each run's totals as
/// in service.
fn trace(index: usize, spans: usize) -> ExportTraceServiceRequest {
    let trace_id = (index as u128 + 1).to_be_bytes().to_vec();
    let t0 = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        + 1_000_000_000;
    let ms = 1_000_000u64;
    let root_id = 1u64.to_be_bytes().to_vec();
    let mut out = vec![Span {
        trace_id: trace_id.clone(),
        span_id: root_id.clone(),
        name: "invoke_agent bench".to_owned(),
        start_time_unix_nano: t0,
        end_time_unix_nano: t0 + (spans as u64 + 1) * 100 * ms,
        attributes: vec![text("gen_ai.operation.name", "invoke_agent")],
        ..Span::default()
    }];
    for child in 1..spans {
        let start = t0 + child as u64 * 100 * ms;
        let attributes = if child % 2 == 1 {
            vec![
                text("gen_ai.operation.name", "chat"),
                text("gen_ai.provider.name", "openai"),
                text("gen_ai.request.model", "gpt-4o-mini"),
                attribute(
                    "gen_ai.usage.input_tokens",
                    any_value::Value::IntValue(1200),
                ),
                attribute(
                    "gen_ai.usage.output_tokens",
                    any_value::Value::IntValue(300),
                ),
            ]
        } else {
            vec![
                text("gen_ai.operation.name", "execute_tool"),
                text("gen_ai.tool.name", "bash"),
                text("gen_ai.tool.call.arguments", r#"{"command": "ls -la"}"#),
            ]
        };
        out.push(Span {
            trace_id: trace_id.clone(),
            span_id: (child as u64 + 1).to_be_bytes().to_vec(),
            parent_span_id: root_id.clone(),
            name: format!("span {child}"),
            start_time_unix_nano: start,
            end_time_unix_nano: start + 80 * ms,
            attributes,
            ..Span::default()
        });
    }
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![text("service.name", "otlp-bench")],
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans: out,
                ..ScopeSpans::default()
            }],
            ..ResourceSpans::default()
        }],
    }
}
