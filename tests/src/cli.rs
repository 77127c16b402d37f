//! The product binaries run as processes, for the tests of their command lines: where the
//! build put them, a run to its exit with its output captured, and the flags each
//! subcommand's `--help` shows.
//!
//! `event-sink run` alone talks to NATS; its other subcommands (`migrate`, and `query` /
//! `report`, the aliases of `bench-analysis`) only to ClickHouse, and their help must say
//! so by showing none of the sink's own flags.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The flags of `event-sink run` alone: its stream, consumer, batching and metrics.
pub const SINK_ONLY_FLAGS: [&str; 6] = [
    "--nats-url",
    "--stream",
    "--consumer",
    "--batch-max-rows",
    "--metrics-listen",
    "--insert-timeout-ms",
];

/// The flags every subcommand that connects to ClickHouse takes.
const CLICKHOUSE_FLAGS: [&str; 3] = ["--clickhouse-url", "--clickhouse-database", "--config"];

/// `target/<profile>/<name>`, a binary of the workspace, for a test binary in
/// `target/<profile>/deps/`: the binaries come from the `cargo build` before the tests.
///
/// # Panics
///
/// If it is not there, saying how to build it.
pub fn workspace_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("own path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/");
    let path = dir.join(name);
    assert!(
        path.is_file(),
        "no {name} in {}: build the binaries first (`cargo build --workspace --bins`)",
        dir.display()
    );
    path
}

/// Runs `command` to its exit (it must stop by itself), with no stdin and its stdout and
/// stderr captured.
///
/// # Panics
///
/// If the program cannot be started.
pub fn run_to_exit(command: &mut Command) -> Output {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("start {}: {e}", command.get_program().to_string_lossy()))
}

/// What `command args --help` prints.
///
/// # Panics
///
/// If it does not exit successfully.
pub fn help(mut command: Command, args: &[&str]) -> String {
    let out = run_to_exit(command.args(args).arg("--help"));
    assert!(out.status.success(), "{args:?} --help");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Checks `text`, the `--help` of `subcommand`, one that only talks to ClickHouse: it
/// shows the ClickHouse connection flags and none of [`SINK_ONLY_FLAGS`].
///
/// # Panics
///
/// Naming the first flag that is missing or should not be there.
pub fn assert_clickhouse_only_help(subcommand: &str, text: &str) {
    for flag in CLICKHOUSE_FLAGS {
        assert!(
            text.contains(flag),
            "{subcommand} --help lacks {flag}:\n{text}"
        );
    }
    for flag in SINK_ONLY_FLAGS {
        assert!(
            !text.contains(flag),
            "{subcommand} --help shows {flag}:\n{text}"
        );
    }
}

/// Checks `stderr`, a binary's last words on a TOML file it refused: one message naming
/// the file, the line and column and the key on its first line, with the offending line
/// of the file quoted on a line of its own (over several lines, not escaped into one).
///
/// # Panics
///
/// Saying which part is missing.
pub fn assert_config_error(stderr: &str, file: &Path, position: &str, key: &str, quoted: &str) {
    let first = stderr
        .lines()
        .find(|l| l.contains(&*file.to_string_lossy()))
        .unwrap_or_else(|| panic!("no line names {}: {stderr}", file.display()));
    assert!(first.contains(position), "line and column: {stderr}");
    assert!(first.contains(&format!("key {key}")), "the key: {stderr}");
    assert!(
        stderr.lines().any(|l| l.trim() == quoted),
        "the offending line on a line of its own: {stderr}"
    );
    assert!(!stderr.contains("\\n"), "no escaped line breaks: {stderr}");
}

/// Checks `stderr`, a binary's last words on a server it could not reach at `url`: the
/// URL said once, with `cause`, and no part of the chain of causes said twice.
///
/// # Panics
///
/// Saying what is missing or repeated.
pub fn assert_unreachable_error(stderr: &str, url: &str, cause: &str) {
    assert_eq!(stderr.matches(url).count(), 1, "the URL once: {stderr}");
    assert!(stderr.contains(cause), "the cause: {stderr}");
    let parts: Vec<&str> = stderr.trim().split(": ").collect();
    for (i, part) in parts.iter().enumerate() {
        assert!(
            !parts[i + 1..].contains(part),
            "{part:?} said twice: {stderr}"
        );
    }
}
