//! OCI images for tests, built here from Debian's mirror: `mmdebstrap` makes a root file
//! system, `umoci` turns it into an image in an OCI layout. Nothing comes from an image
//! registry. An image is built once per recipe into a directory the caller names (kept
//! across test runs of one checkout: `CARGO_TARGET_TMPDIR`), under a lock, so parallel
//! tests share one build.

use std::fs::{self, OpenOptions};
use std::path::Path;
use std::process::Command;

use nix::fcntl::{Flock, FlockArg};

/// A Debian release's root file system with Python (`python` too) and what the judge and
/// a SWE-bench reference solution run: pytest, `git apply`, `patch`.
#[derive(Debug, Clone, Copy)]
pub struct Recipe {
    /// The image's name in its layout (`oci:<layout>:<name>`).
    pub name: &'static str,
    /// The Debian suite (`bullseye`: Python 3.9).
    pub suite: &'static str,
    /// Packages installed on top of the `apt` variant.
    pub packages: &'static str,
}

/// Debian 11 with its Python 3.9 and pytest 6.0: an interpreter other than the host's.
pub const BULLSEYE_PYTHON: Recipe = Recipe {
    name: "bullseye-python",
    suite: "bullseye",
    packages: "python3-minimal,python-is-python3,python3-pytest,git,patch",
};

/// The reference `oci:<layout>:<name>` of `recipe`, building it under `cache` unless an
/// earlier build is there.
///
/// # Panics
///
/// If mmdebstrap or umoci fail (no network to Debian's mirror, tools missing: run
/// `deploy/local/install.sh`).
pub fn built(cache: &Path, recipe: Recipe) -> String {
    let key = format!(
        "{}-{}-{}",
        recipe.name,
        recipe.suite,
        recipe.packages.replace(',', "+")
    );
    let dir = cache.join("images").join(key);
    fs::create_dir_all(&dir).expect("image cache dir");
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(".lock"))
        .expect("image lock file");
    let _held = Flock::lock(lock, FlockArg::LockExclusive).expect("lock the image build");
    let layout = dir.join("layout");
    let done = dir.join("built");
    if !done.is_file() {
        build(&dir, &layout, recipe);
        fs::write(&done, "").expect("mark the image built");
    }
    format!("oci:{}:{}", layout.display(), recipe.name)
}

fn build(dir: &Path, layout: &Path, recipe: Recipe) {
    let rootfs_tar = dir.join("rootfs.tar");
    let bundle = dir.join("bundle");
    for stale in [layout, &bundle] {
        let _ = fs::remove_dir_all(stale);
    }
    run(Command::new("mmdebstrap")
        .args(["--variant=apt", "--quiet"])
        .arg(format!("--include={}", recipe.packages))
        .arg(recipe.suite)
        .arg(&rootfs_tar));
    let image = format!("{}:{}", layout.display(), recipe.name);
    run(Command::new("umoci").args(["init", "--layout"]).arg(layout));
    run(Command::new("umoci").args(["new", "--image", &image]));
    run(Command::new("umoci")
        .args(["unpack", "--image", &image])
        .arg(&bundle));
    run(Command::new("tar")
        .arg("-xf")
        .arg(&rootfs_tar)
        .arg("-C")
        .arg(bundle.join("rootfs")));
    run(Command::new("umoci")
        .args(["repack", "--image", &image])
        .arg(&bundle));
    run(Command::new("umoci").args([
        "config",
        "--image",
        &image,
        "--config.workingdir",
        "/testbed",
    ]));
    // umoci writes its layout for its owner only; runners of any user read the image.
    run(Command::new("chmod").args(["-R", "a+rX"]).arg(layout));
    let _ = fs::remove_dir_all(&bundle);
    let _ = fs::remove_file(&rootfs_tar);
}

fn run(command: &mut Command) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?}: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
