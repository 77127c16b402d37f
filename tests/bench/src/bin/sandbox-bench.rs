//! `sandbox-bench`: what the agent sandbox adds to one tool call. Runs `bash -c true`
//! three ways, alternating in rounds: `bare` (a plain `bash` child in its own process
//! group, what a tool call was without a sandbox), `unsandboxed` (the runner's
//! `run_shell` with `--unsandboxed`: rlimits set by the launcher shell, `pids` and
//! `memory` cgroups where the host allows, allowlisted environment) and `sandboxed` (the
//! same inside bwrap); prints p50/p99/max per call of each and what the sandbox adds to
//! `bare`, and the CPU time per call of each (user + system of every process of the call,
//! from `getrusage(RUSAGE_CHILDREN)`), which unlike wall time does not grow with the
//! host's load. Target: p50 added <= 20 ms.
//!
//! `cargo run --release -p benchstream-bench --bin sandbox-bench -- [--calls N] [--rounds R]`
//!
//! It sits with the other bench binaries in the bench package; it needs `bwrap` on the
//! host.

use std::time::Duration;

use anyhow::Context as _;
use bench_sandbox::{host, Confinement};
use benchstream_bench::{ms, percentile, shell_calls, smoke_limits, CallRounds};
use clap::Parser;

#[derive(Debug, Parser)]
struct Args {
    /// Calls of bare, unsandboxed and sandboxed `bash -c true`, alternating.
    #[command(flatten)]
    timing: CallRounds,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let limits = smoke_limits();
    let sandboxed = Confinement::for_run(&limits, false).context("the sandbox")?;
    let plain = Confinement::unsandboxed(&limits);
    let info = sandboxed.info(Some(120_000), 600_000);
    let enforced: Vec<String> = info
        .enforced
        .iter()
        .map(|l| format!("{}={} by {}", l.limit, l.value, l.by))
        .collect();
    println!(
        "sandbox: {} {}; {}",
        info.kind,
        info.version.as_deref().unwrap_or("-"),
        enforced.join(", ")
    );
    if host().bwrap().is_err() {
        anyhow::bail!("bwrap is not usable on this host");
    }
    let workdir = tempfile::tempdir()?;
    let mut bare_all = Vec::new();
    let mut plain_all = Vec::new();
    let mut sandboxed_all = Vec::new();
    // CPU time of all calls of each kind: bare, unsandboxed, sandboxed.
    let mut cpu = [Duration::ZERO; 3];
    for round in 1..=args.timing.rounds {
        let before = children_cpu()?;
        let b = measure_bare(workdir.path(), args.timing.calls).await?;
        let after_bare = children_cpu()?;
        let p = shell_calls(&plain, workdir.path(), args.timing.calls).await?;
        let after_plain = children_cpu()?;
        let s = shell_calls(&sandboxed, workdir.path(), args.timing.calls).await?;
        let after_sandboxed = children_cpu()?;
        cpu[0] += after_bare.saturating_sub(before);
        cpu[1] += after_plain.saturating_sub(after_bare);
        cpu[2] += after_sandboxed.saturating_sub(after_plain);
        println!(
            "round {round}: p50 bare {:.2} ms, unsandboxed {:.2} ms, sandboxed {:.2} ms",
            ms(percentile(&b, 0.50)),
            ms(percentile(&p, 0.50)),
            ms(percentile(&s, 0.50))
        );
        bare_all.extend(b);
        plain_all.extend(p);
        sandboxed_all.extend(s);
    }
    for samples in [&mut bare_all, &mut plain_all, &mut sandboxed_all] {
        samples.sort();
    }
    for ((name, samples), cpu) in [
        ("bare", &bare_all),
        ("unsandboxed", &plain_all),
        ("sandboxed", &sandboxed_all),
    ]
    .into_iter()
    .zip(cpu)
    {
        println!(
            "{name:<12} {} calls: p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms  cpu {:.2} ms/call",
            samples.len(),
            ms(percentile(samples, 0.50)),
            ms(percentile(samples, 0.99)),
            ms(percentile(samples, 1.0)),
            ms(cpu) / samples.len().max(1) as f64
        );
    }
    let added = percentile(&sandboxed_all, 0.50).saturating_sub(percentile(&bare_all, 0.50));
    let added99 = percentile(&sandboxed_all, 0.99).saturating_sub(percentile(&bare_all, 0.99));
    println!(
        "sandbox adds per call (sandboxed - bare): p50 {:.2} ms (target <= 20 ms), p99 {:.2} ms",
        ms(added),
        ms(added99)
    );
    Ok(())
}

/// Wall time of `calls` runs of a plain `bash -c true` in its own process group, waited
/// for, sorted.
async fn measure_bare(workdir: &std::path::Path, calls: usize) -> anyhow::Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = std::time::Instant::now();
        let status = tokio::process::Command::new("bash")
            .args(["-c", "true"])
            .current_dir(workdir)
            .process_group(0)
            .status()
            .await?;
        anyhow::ensure!(status.success(), "bash -c true failed");
        samples.push(started.elapsed());
    }
    samples.sort();
    Ok(samples)
}

/// User + system time of the waited-for descendants of this process so far.
fn children_cpu() -> anyhow::Result<Duration> {
    use nix::sys::resource::{getrusage, UsageWho};
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN)?;
    let time = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(u64::try_from(t.tv_sec()).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec()).unwrap_or(0))
    };
    Ok(time(usage.user_time()) + time(usage.system_time()))
}
