//! The image store against real skopeo and umoci, on small images built here with umoci.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use bench_image::{Digest, ImageError, ImageRef, ImageStore};
use tempfile::TempDir;

/// Runs a command, panicking with its output if it fails.
fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program).args(args).output().expect(program);
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// An OCI layout `dir` holding the image `dir:tag` whose root holds `files`, with the
/// given config settings (`umoci config` flags).
fn build_image(dir: &Path, tag: &str, files: &[(&str, Vec<u8>)], config: &[&str]) -> ImageRef {
    let layout = dir.to_str().expect("as set up");
    if !dir.join("index.json").exists() {
        run("umoci", &["init", "--layout", layout]);
    }
    let image = format!("{layout}:{tag}");
    run("umoci", &["new", "--image", &image]);
    let bundle = TempDir::new().expect("as set up");
    let bundle_dir = bundle.path().join("b");
    run(
        "umoci",
        &[
            "unpack",
            "--image",
            &image,
            bundle_dir.to_str().expect("as set up"),
        ],
    );
    for (name, bytes) in files {
        let path = bundle_dir.join("rootfs").join(name);
        fs::create_dir_all(path.parent().expect("as set up")).expect("as set up");
        fs::write(path, bytes).expect("as set up");
    }
    run(
        "umoci",
        &[
            "repack",
            "--image",
            &image,
            bundle_dir.to_str().expect("as set up"),
        ],
    );
    if !config.is_empty() {
        let mut args = vec!["config", "--image", &image];
        args.extend_from_slice(config);
        run("umoci", &args);
    }
    format!("oci:{image}").parse().expect("as set up")
}

fn digest_of(image: &ImageRef) -> Digest {
    let out = run("skopeo", &["inspect", "--no-tags", image.as_str()]);
    let value: serde_json::Value = serde_json::from_str(&out).expect("as set up");
    value["Digest"]
        .as_str()
        .expect("as set up")
        .parse()
        .expect("as set up")
}

struct World {
    _tmp: TempDir,
    layout: PathBuf,
    cache: PathBuf,
}

impl World {
    fn new() -> Self {
        let tmp = TempDir::new().expect("as set up");
        Self {
            layout: tmp.path().join("layout"),
            cache: tmp.path().join("cache"),
            _tmp: tmp,
        }
    }

    /// An image of one file of `kib` KiB of `byte`s.
    fn image(&self, tag: &str, byte: u8, kib: usize) -> ImageRef {
        build_image(
            &self.layout,
            tag,
            &[("data/blob", vec![byte; kib * 1024])],
            &[],
        )
    }
}

#[test]
fn an_image_is_unpacked_once_with_its_config_and_shared_by_later_runs() {
    let world = World::new();
    let image = build_image(
        &world.layout,
        "py",
        &[("usr/bin/hello", b"#!/bin/sh\necho hi\n".to_vec())],
        &[
            "--config.workingdir",
            "/work/repo",
            "--config.env",
            "LANG=C.UTF-8",
        ],
    );
    let store = ImageStore::open(&world.cache, 1 << 30).expect("as set up");
    let first = store
        .prepare(&image, Some(&digest_of(&image)))
        .expect("as set up");
    assert_eq!(
        fs::read_to_string(first.root().join("usr/bin/hello")).expect("as set up"),
        "#!/bin/sh\necho hi\n"
    );
    let info = first.info().clone();
    assert_eq!(info.digest, digest_of(&image));
    assert_eq!(info.working_dir, "/work/repo");
    assert!(
        first.root().join("work/repo").is_dir(),
        "the mount point is made"
    );
    assert!(
        info.env.contains(&"LANG=C.UTF-8".to_owned()),
        "{:?}",
        info.env
    );
    assert!(
        info.env.iter().any(|e| e.starts_with("PATH=")),
        "{:?}",
        info.env
    );
    // Marked here, the file is still there next time: the root was not unpacked again.
    fs::write(first.root().join("marker"), "kept").expect("as set up");
    drop(first);
    let second = store.prepare(&image, None).expect("as set up");
    assert_eq!(
        fs::read_to_string(second.root().join("marker")).expect("as set up"),
        "kept"
    );
    assert_eq!(store.images().expect("as set up"), vec![info]);
}

#[test]
fn an_image_without_config_gets_testbed_and_a_standard_path() {
    let world = World::new();
    let image = world.image("bare", b'x', 1);
    let store = ImageStore::open(&world.cache, 1 << 30).expect("as set up");
    let prepared = store.prepare(&image, None).expect("as set up");
    assert_eq!(prepared.info().working_dir, "/testbed");
    assert!(prepared.root().join("testbed").is_dir());
    assert!(prepared
        .info()
        .env
        .contains(&format!("PATH={}", bench_image::DEFAULT_PATH)));
}

#[test]
fn a_digest_other_than_the_pinned_one_is_refused_and_nothing_is_fetched() {
    let world = World::new();
    let old = world.image("v1", b'a', 4);
    let pinned = digest_of(&old);
    // The tag moves to other content: the pin must catch it.
    let moved = world.image("v1", b'b', 4);
    let store = ImageStore::open(&world.cache, 1 << 30).expect("as set up");
    let error = store.prepare(&moved, Some(&pinned)).expect_err("an error");
    match &error {
        ImageError::DigestMismatch {
            pinned: p, found, ..
        } => {
            assert_eq!(p, &pinned);
            assert_eq!(found, &digest_of(&moved));
        }
        other => panic!("expected a digest mismatch, got {other}"),
    }
    assert!(error.to_string().contains("update its pin"), "{error}");
    assert!(store.images().expect("as set up").is_empty());
}

#[test]
fn the_cache_stays_under_its_bound_evicting_the_least_recently_used_image_nobody_holds() {
    let world = World::new();
    let images: Vec<ImageRef> = (0..4u8)
        .map(|i| world.image(&format!("t{i}"), b'a' + i, 512))
        .collect();
    let size = {
        let probe = ImageStore::open(&world.cache.join("probe"), 1 << 30).expect("as set up");
        probe
            .prepare(&images[0], None)
            .expect("as set up")
            .info()
            .size_bytes
    };
    // Room for two images, not three.
    let bound = size * 5 / 2;
    let store = ImageStore::open(&world.cache.join("store"), bound).expect("as set up");
    let held = store.prepare(&images[0], None).expect("as set up");
    drop(store.prepare(&images[1], None).expect("as set up"));
    drop(store.prepare(&images[2], None).expect("as set up"));
    let kept = |store: &ImageStore| -> Vec<String> {
        let mut digests: Vec<String> = store
            .images()
            .expect("as set up")
            .iter()
            .map(|i| i.source.to_string())
            .collect();
        digests.sort();
        digests
    };
    // t0 is the least recently used but held by a run: t1 goes instead.
    assert_eq!(
        kept(&store),
        vec![images[0].to_string(), images[2].to_string()]
    );
    let total: u64 = store
        .images()
        .expect("as set up")
        .iter()
        .map(|i| i.size_bytes)
        .sum();
    assert!(total <= bound, "{total} > {bound}");
    assert!(
        held.root().join("data/blob").is_file(),
        "a held image stays whole"
    );
    drop(held);
    drop(store.prepare(&images[3], None).expect("as set up"));
    assert_eq!(
        kept(&store),
        vec![images[2].to_string(), images[3].to_string()]
    );
}

#[test]
fn an_image_larger_than_the_bound_alone_is_refused() {
    let world = World::new();
    let image = world.image("big", b'z', 256);
    let store = ImageStore::open(&world.cache, 64 * 1024).expect("as set up");
    let error = store.prepare(&image, None).expect_err("an error");
    assert!(matches!(error, ImageError::TooLarge { .. }), "{error}");
    assert!(store.images().expect("as set up").is_empty());
}

#[test]
fn an_image_from_a_docker_archive_is_taken_too() {
    let world = World::new();
    let image = world.image("arch", b'q', 1);
    let archive = world.layout.parent().expect("as set up").join("image.tar");
    let target = format!("docker-archive:{}", archive.display());
    run(
        "skopeo",
        &[
            "--insecure-policy",
            "copy",
            "--quiet",
            image.as_str(),
            &target,
        ],
    );
    let store = ImageStore::open(&world.cache, 1 << 30).expect("as set up");
    let from_archive: ImageRef = target.parse().expect("as set up");
    let prepared = store.prepare(&from_archive, None).expect("as set up");
    assert_eq!(
        fs::read(prepared.root().join("data/blob")).expect("as set up"),
        vec![b'q'; 1024]
    );
}

#[test]
fn a_missing_image_is_an_error_naming_the_command() {
    let world = World::new();
    let store = ImageStore::open(&world.cache, 1 << 30).expect("as set up");
    let missing: ImageRef = format!("oci:{}:nope", world.layout.display())
        .parse()
        .expect("as set up");
    let error = store
        .prepare(&missing, None)
        .expect_err("an error")
        .to_string();
    assert!(error.starts_with("skopeo inspect failed"), "{error}");
}

#[test]
fn a_pinned_image_in_the_cache_runs_without_asking_its_source_again() {
    let world = World::new();
    let image = world.image("v1", b'p', 4);
    let pinned = digest_of(&image);
    let store = ImageStore::open(&world.cache, 1 << 30).expect("as set up");
    drop(store.prepare(&image, Some(&pinned)).expect("as set up"));
    // The source is gone (a registry out of reach): the pinned content still serves.
    fs::remove_dir_all(&world.layout).expect("as set up");
    let again = store
        .prepare(&image, Some(&pinned))
        .expect("served from the cache");
    assert_eq!(again.info().digest, pinned);
    assert_eq!(
        fs::read(again.root().join("data/blob")).expect("as set up"),
        vec![b'p'; 4 * 1024]
    );
    // Unpinned, the source must answer.
    drop(again);
    let error = store.prepare(&image, None).expect_err("no source");
    assert!(
        error.to_string().starts_with("skopeo inspect failed"),
        "{error}"
    );
}
