//! `deploy/local/services.sh`, the local servers of `demo.sh`, as a fresh machine meets
//! it: fresh state dir, non-default free ports, and a clickhouse-server that is slow to
//! get going.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use benchstream_tests::free_port;

const SERVICES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/local/services.sh");

/// A `clickhouse-server` that spends 3 s before it execs the real one, with a command line
/// that does not name it meanwhile: what `$!` looks like before the background shell has
/// exec'd the server.
/// `ch-real`, beside it, links to the real server binary under a name that hides it too.
const SLOW_CLICKHOUSE: &str = r#"#!/bin/bash
real=$(dirname "$0")/ch-real
exec -a slow-start bash -c 'sleep 3; n=clickhouse-serv; exec -a "${n}er" "$0" "$@"' "$real" "$@"
"#;

fn services(state: &Path, bin: &Path, ports: &[(&str, u16)], action: &str) -> Output {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("bash")
        .arg(SERVICES)
        .arg(action)
        .env("PATH", path)
        .env("BENCH_STATE_DIR", state)
        .env("BENCH_READY_TIMEOUT", "90")
        .env("BENCH_STOP_TIMEOUT", "30")
        .envs(ports.iter().map(|(k, v)| (*k, v.to_string())))
        .output()
        .expect("run services.sh")
}

#[test]
fn services_up_on_a_fresh_state_dir_survives_a_slow_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin dir");
    let wrapper = bin.join("clickhouse-server");
    std::fs::write(&wrapper, SLOW_CLICKHOUSE).expect("write wrapper");
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let real = Command::new("bash")
        .args(["-c", "command -v clickhouse-server"])
        .output()
        .expect("which clickhouse-server");
    let real = String::from_utf8_lossy(&real.stdout).trim().to_owned();
    std::os::unix::fs::symlink(&real, bin.join("ch-real")).expect("link the real server");
    let state = dir.path().join("state");
    let ports = [
        ("BENCH_NATS_PORT", free_port()),
        ("BENCH_NATS_MONITOR_PORT", free_port()),
        ("BENCH_CH_HTTP_PORT", free_port()),
        ("BENCH_CH_TCP_PORT", free_port()),
        ("BENCH_CH_INTERSERVER_PORT", free_port()),
    ];
    let run = |action: &str| {
        let out = services(&state, &bin, &ports, action);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    };

    let (up, text) = run("up");
    if up != Some(0) {
        run("down");
    }
    assert_eq!(up, Some(0), "{text}");
    assert!(text.contains("clickhouse-server ready"), "{text}");

    let (status, text) = run("status");
    assert_eq!(status, Some(0), "{text}");
    assert!(text.contains("clickhouse-server running"), "{text}");

    let (down, text) = run("down");
    assert_eq!(down, Some(0), "{text}");
    let (status, text) = run("status");
    assert_eq!(status, Some(3), "{text}");
    assert!(text.contains("clickhouse-server stopped"), "{text}");
}
