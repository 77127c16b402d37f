//! `image-bench`: what a task image costs. Builds (once, under `--cache`) the test suite's
//! Debian bullseye image with Python 3.9 as a local OCI layout, then measures
//!
//! - the **first** preparation of the image in a fresh image cache (`skopeo inspect`,
//!   `skopeo copy` from the `oci:` layout, `umoci unpack`), `--firsts` times;
//! - a **later** preparation, the image already unpacked (`skopeo inspect` and the
//!   lease), `--laters` times;
//! - a **tool call** (`bash -c true` through the runner's sandboxed shell) on the image's
//!   root against the host's, `--calls` each, alternating in `--rounds`, and what the
//!   image root adds per call. Target: p50 added <= 50 ms.
//!
//! `cargo run --release -p benchstream-bench --bin image-bench -- [--cache DIR]`
//!
//! It needs bwrap, skopeo, umoci, mmdebstrap and Debian's mirror for the first build.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bench_image::{ImageRef, ImageStore};
use bench_sandbox::{Confinement, ImageRoot};
use benchstream_bench::{ms, percentile, shell_calls, smoke_limits, CallRounds};
use benchstream_tests::images;
use clap::Parser;

#[derive(Debug, Parser)]
struct Args {
    /// Where the built image is kept between runs of the bench.
    #[arg(long, default_value = "target/bench-images")]
    cache: PathBuf,
    /// First preparations measured, each in a fresh image cache.
    #[arg(long, default_value_t = 3)]
    firsts: usize,
    /// Later preparations measured.
    #[arg(long, default_value_t = 20)]
    laters: usize,
    /// Tool calls on the host's root and the image's, alternating.
    #[command(flatten)]
    timing: CallRounds,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    std::fs::create_dir_all(&args.cache)?;
    let cache = args.cache.canonicalize()?;
    let image: ImageRef = images::built(&cache, images::BULLSEYE_PYTHON)
        .parse()
        .context("the built image")?;
    println!("image {image}");

    let mut firsts = Vec::new();
    for _ in 0..args.firsts {
        let dir = tempfile::tempdir()?;
        let store = ImageStore::open(dir.path(), u64::MAX)?;
        let started = Instant::now();
        let prepared = store.prepare(&image, None)?;
        firsts.push(started.elapsed());
        println!(
            "first preparation: {:.0} ms, {} MiB unpacked",
            ms(started.elapsed()),
            prepared.info().size_bytes >> 20
        );
    }
    firsts.sort();

    let dir = tempfile::tempdir()?;
    let store = ImageStore::open(dir.path(), u64::MAX)?;
    let prepared = store.prepare(&image, None)?;
    let mut laters = Vec::new();
    for _ in 0..args.laters {
        let started = Instant::now();
        drop(store.prepare(&image, None)?);
        laters.push(started.elapsed());
    }
    laters.sort();

    let limits = smoke_limits();
    let host_root = Confinement::for_run(&limits, false).context("the sandbox")?;
    let info = prepared.info();
    let image_root = host_root.clone().with_image(Some(ImageRoot {
        root: prepared.root().to_path_buf(),
        workdir: info.working_dir.clone().into(),
        env: info
            .env
            .iter()
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    }));
    let workdir = tempfile::tempdir()?;
    let (mut on_host, mut on_image) = (Vec::new(), Vec::new());
    for round in 1..=args.timing.rounds {
        let h = shell_calls(&host_root, workdir.path(), args.timing.calls).await?;
        let i = shell_calls(&image_root, workdir.path(), args.timing.calls).await?;
        println!(
            "round {round}: p50 host root {:.2} ms, image root {:.2} ms",
            ms(percentile(&h, 0.5)),
            ms(percentile(&i, 0.5))
        );
        on_host.extend(h);
        on_image.extend(i);
    }
    on_host.sort();
    on_image.sort();

    let line = |name: &str, samples: &[Duration]| {
        println!(
            "{name:<20} {:>4}: p50 {:8.2} ms  p99 {:8.2} ms  max {:8.2} ms",
            samples.len(),
            ms(percentile(samples, 0.5)),
            ms(percentile(samples, 0.99)),
            ms(percentile(samples, 1.0))
        );
    };
    line("first preparation", &firsts);
    line("later preparation", &laters);
    line("tool call, host", &on_host);
    line("tool call, image", &on_image);
    let added = percentile(&on_image, 0.5).saturating_sub(percentile(&on_host, 0.5));
    println!(
        "image root adds per tool call: p50 {:.2} ms (target <= 50 ms); image/host p50 ratio {:.2}",
        ms(added),
        ms(percentile(&on_image, 0.5)) / ms(percentile(&on_host, 0.5)).max(f64::MIN_POSITIVE)
    );
    Ok(())
}
