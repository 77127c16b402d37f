//! The benchmarks of benchstream, on servers the test harness (`benchstream-tests`)
//! starts; each is a binary of this package (`src/bin/`):
//!
//! - `publish-bench`: the runner's publisher against raw async-nats publishes.
//! - `sandbox-bench`: what the agent sandbox adds to one tool call.
//! - `image-bench`: a task image's first preparation (fetch and unpack), a later one, and
//!   what its root adds to a sandboxed tool call over the host's.
//! - `sink-bench`: the `event-sink` binary's throughput against ClickHouse's own ingest.
//! - `sink-latency`: how soon a published event can be queried in ClickHouse.
//! - `otlp-bench`: spans per second through `agent-runner otlp` into the stream, and its
//!   memory.
//! - `compare-bench`: `bench-analysis compare` on 10 policies × 500 tasks × 5 seeds.
//! - `serve-bench`: the pages of `bench-analysis serve` and `bench-analysis report` at
//!   100,000 runs (4.1 million events).
//! - `sequential-sim`: the error rates and runs of `compare --sequential` against the
//!   fixed-sample design of `plan`, by simulation (no server).
//!
//! `cargo run --release -p benchstream-bench --bin <name> -- --help`; the sink benches
//! measure a release `event-sink` built first (`cargo build --release -p event-sink`),
//! `otlp-bench` a release `agent-runner`.
//!
//! This library holds what they share: finding the product binary they measure, its peak
//! memory, timing sandboxed tool calls, and reading percentiles off their samples.

#![warn(missing_docs)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{ensure, Context as _};

/// The `event-sink` binary to measure: `given` (a bench's `--sink`), or the one beside
/// the running executable (`target/release/` for a release bench).
///
/// # Errors
///
/// When there is no file there, with the command that builds it.
pub fn sink_binary(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    product_binary("event-sink", "--sink", given)
}

/// The product binary `name` to measure: `given` (passed with the bench's `flag`), or the
/// one beside the running executable (`target/release/` for a release bench).
///
/// # Errors
///
/// When there is no file there, with the command that builds it.
pub fn product_binary(name: &str, flag: &str, given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let path = match given {
        Some(path) => path.to_path_buf(),
        None => std::env::current_exe()
            .context("own path")?
            .with_file_name(name),
    };
    ensure!(
        path.is_file(),
        "no {name} at {}: build it first (`cargo build --release -p {name}`) or pass {flag}",
        path.display()
    );
    Ok(path)
}

/// Peak resident set of a live process, bytes (0 when it cannot be read).
pub fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Where the harness keeps the servers' data (the temporary directory), for the bench's
/// output: ClickHouse writes every insert there as a new part, so its disk is part of
/// what a bench measures. `TMPDIR` moves it, e.g. to `/dev/shm` (memory).
pub fn data_dir_line() -> String {
    let dir = std::env::temp_dir();
    let medium = match nix::sys::statfs::statfs(&dir) {
        Ok(fs) if fs.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC => "in memory (tmpfs)",
        Ok(_) => "on disk",
        Err(_) => "on an unknown file system",
    };
    format!(
        "servers' data under {} ({medium}; TMPDIR moves it)",
        dir.display()
    )
}

/// The nearest-rank `q`-quantile (0..=1) of `sorted` (ascending); zero when empty.
pub fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64) * q).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The sandbox limits of the shipped `smoke` scenario, what the sandbox benches confine
/// their calls with.
pub fn smoke_limits() -> bench_schemas::SandboxLimits {
    bench_schemas::SandboxLimits {
        memory_mb: Some(2048),
        cpu_cores: 1.0,
        disk_mb: 1024,
        network_enabled: false,
        execution_timeout_ms: 600_000,
    }
}

/// How many tool calls a bench times per measurement, and in how many rounds alternating
/// the kinds it compares.
#[derive(Debug, clap::Args)]
pub struct CallRounds {
    /// Calls per measurement of each kind.
    #[arg(long, default_value_t = 200)]
    pub calls: usize,
    /// Alternating rounds of the kinds measured.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
}

/// Wall time of `calls` runs of `bash -c true` in `workdir` through the runner's
/// [`bench_sandbox::run_shell`] confined by `confinement` (a tool call's path), sorted.
///
/// # Errors
///
/// When a call cannot start or does not succeed.
pub async fn shell_calls(
    confinement: &bench_sandbox::Confinement,
    workdir: &Path,
    calls: usize,
) -> anyhow::Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let out = bench_sandbox::run_shell(&bench_sandbox::ShellSpec {
            command: "true",
            cwd: workdir,
            confinement,
            timeout: Duration::from_secs(30),
            output_cap: 4096,
        })
        .await?;
        ensure!(out.success(), "bash -c true failed: {}", out.output);
        samples.push(out.elapsed);
    }
    samples.sort();
    Ok(samples)
}

/// `d` in milliseconds, for printing.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&samples, 0.5), Duration::from_millis(50));
        assert_eq!(percentile(&samples, 0.99), Duration::from_millis(99));
        assert_eq!(percentile(&samples, 1.0), Duration::from_millis(100));
        assert_eq!(percentile(&samples, 0.0), Duration::from_millis(1));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
    }
}
