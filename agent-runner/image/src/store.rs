//! The content-addressed image cache: one unpacked root file system per manifest digest,
//! shared read-only by every run, under a size bound.
//!
//! ```text
//! <dir>/.lock                   held while an image is fetched, unpacked or evicted
//! <dir>/images/<hex>/rootfs/    the image's root file system
//! <dir>/images/<hex>/image.json what was unpacked: digest, source, size, Env, WorkingDir
//! <dir>/images/<hex>/lease      shared-locked by every run using the image
//! <dir>/tmp/                    a copy and unpack under way, an image being removed
//! ```
//!
//! An image directory appears by `rename` once complete, so a crash leaves only `tmp/`
//! behind, which the next fetch clears. The least recently used image (the `lease`
//! file's mtime) goes first when the bound is passed; an image a run holds is never
//! removed.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::reference::{Digest, ImageRef};
use crate::tools;
use crate::ImageError;

/// Where the task's repository goes in an image that names no working directory.
pub const DEFAULT_WORKING_DIR: &str = "/testbed";

/// `PATH` in an image that sets none.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The tag images get in the store's temporary OCI layouts.
const TAG: &str = "image";

/// The cache of unpacked images in one directory, bounded in bytes.
#[derive(Debug, Clone)]
pub struct ImageStore {
    dir: PathBuf,
    bound_bytes: u64,
}

/// What the store keeps of an unpacked image (`image.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageInfo {
    /// The manifest digest the image was fetched at.
    pub digest: Digest,
    /// Where it was first fetched from.
    pub source: ImageRef,
    /// Bytes its root file system takes on disk.
    pub size_bytes: u64,
    /// `KEY=VALUE` pairs of the image config's `Env`, with `PATH` set when the image
    /// sets none.
    pub env: Vec<String>,
    /// The image config's `WorkingDir`, else [`DEFAULT_WORKING_DIR`].
    pub working_dir: String,
}

/// An image ready to be a sandbox's root, held from eviction while this value lives.
#[derive(Debug)]
pub struct PreparedImage {
    info: ImageInfo,
    root: PathBuf,
    /// The shared lock on the image's `lease` file.
    _lease: Flock<File>,
}

impl PreparedImage {
    /// The root file system, to be mounted read-only as `/`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Digest, source, size, environment and working directory.
    pub fn info(&self) -> &ImageInfo {
        &self.info
    }
}

impl ImageStore {
    /// A store in `dir` (made if missing) that keeps at most `bound_bytes` of unpacked
    /// images, apart from images in use.
    ///
    /// # Errors
    ///
    /// If `dir` cannot be made.
    pub fn open(dir: &Path, bound_bytes: u64) -> Result<Self, ImageError> {
        for sub in ["images", "tmp"] {
            let path = dir.join(sub);
            fs::create_dir_all(&path).map_err(|e| io(&path, e))?;
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            bound_bytes,
        })
    }

    /// The image `image`, fetched and unpacked unless the store has it, checked against
    /// `pinned` when given, and leased to the caller. With `pinned` already in the store,
    /// that content is leased without asking the source (a registry may be unreachable). Blocks (skopeo and umoci are child
    /// processes): call it from a blocking thread in async code.
    ///
    /// # Errors
    ///
    /// If the image cannot be inspected or fetched, its digest is not `pinned`, it does not
    /// fit the bound alone, or the tools are missing.
    pub fn prepare(
        &self,
        image: &ImageRef,
        pinned: Option<&Digest>,
    ) -> Result<PreparedImage, ImageError> {
        let _store = self.lock()?;
        // The pinned content already here is what runs: it was checked by digest when it
        // was unpacked, so neither the source nor its registry is asked again.
        if let Some(pinned) = pinned {
            let dir = self.image_dir(pinned);
            if dir.join("image.json").is_file() {
                return lease(&dir);
            }
        }
        let digest = tools::inspect(image.as_str())?.digest;
        if let Some(pinned) = pinned.filter(|&p| *p != digest) {
            return Err(ImageError::DigestMismatch {
                image: image.clone(),
                pinned: pinned.clone(),
                found: digest,
            });
        }
        let dir = self.image_dir(&digest);
        if !dir.join("image.json").is_file() {
            self.unpack(image, &digest)?;
        }
        let prepared = lease(&dir)?;
        self.evict(&digest);
        Ok(prepared)
    }

    /// The images the store holds, least recently used first.
    ///
    /// # Errors
    ///
    /// If the store cannot be read.
    pub fn images(&self) -> Result<Vec<ImageInfo>, ImageError> {
        Ok(self.entries()?.into_iter().map(|e| e.info).collect())
    }

    fn image_dir(&self, digest: &Digest) -> PathBuf {
        self.dir.join("images").join(digest.hex())
    }

    fn lock(&self) -> Result<Flock<File>, ImageError> {
        let path = self.dir.join(".lock");
        let file = lock_file(&path)?;
        Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| io(&path, e.into()))
    }

    /// Copies `image` at `digest` into a temporary layout, unpacks it and moves the
    /// finished directory into place.
    fn unpack(&self, image: &ImageRef, digest: &Digest) -> Result<(), ImageError> {
        let tmp = self.dir.join("tmp").join("fetch");
        // What a crashed fetch left: nobody else fetches while the store lock is held.
        match fs::remove_dir_all(&tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&tmp, e)),
            _ => {}
        }
        fs::create_dir_all(&tmp).map_err(|e| io(&tmp, e))?;
        let layout = tmp.join("layout");
        tools::copy(&image.at_digest(digest), &layout, TAG)?;
        let copied = format!("oci:{}:{TAG}", layout.display());
        // A local source (an OCI directory, an archive) has no digest to copy by: it must
        // still be the image inspected, or the pin would vouch for something else.
        if image.transport() != "docker://" && tools::inspect(image.as_str())?.digest != *digest {
            return Err(ImageError::Changed(image.clone()));
        }
        let config = tools::config(&copied)?;
        let bundle = tmp.join("bundle");
        tools::unpack(&layout, TAG, &bundle)?;
        let rootfs = bundle.join("rootfs");
        let working_dir = config
            .working_dir
            .filter(|dir| dir.starts_with('/') && !dir.trim_matches('/').is_empty())
            .unwrap_or_else(|| DEFAULT_WORKING_DIR.to_owned());
        // The task's repository is mounted there; the root is read-only in the sandbox.
        let mount_point = rootfs.join(working_dir.trim_start_matches('/'));
        fs::create_dir_all(&mount_point).map_err(|e| io(&mount_point, e))?;
        let mut env = config.env.unwrap_or_default();
        if !env.iter().any(|pair| pair.starts_with("PATH=")) {
            env.push(format!("PATH={DEFAULT_PATH}"));
        }
        let info = ImageInfo {
            digest: digest.clone(),
            source: image.clone(),
            size_bytes: disk_usage(&rootfs)?,
            env,
            working_dir,
        };
        if info.size_bytes > self.bound_bytes {
            return Err(ImageError::TooLarge {
                image: image.clone(),
                size_bytes: info.size_bytes,
                bound_bytes: self.bound_bytes,
            });
        }
        let json = bundle.join("image.json");
        let text = serde_json::to_vec_pretty(&info).expect("image info serialises");
        fs::write(&json, text).map_err(|e| io(&json, e))?;
        // Readable by the sandbox's user whoever unpacked it; umoci makes bundles 0700.
        fs::set_permissions(&bundle, fs::Permissions::from_mode(0o755))
            .map_err(|e| io(&bundle, e))?;
        let target = self.image_dir(digest);
        fs::rename(&bundle, &target).map_err(|e| io(&target, e))?;
        fs::remove_dir_all(&tmp).map_err(|e| io(&tmp, e))?;
        tracing::info!(image = %image, %digest, size_bytes = info.size_bytes, "image unpacked");
        Ok(())
    }

    /// Removes least recently used images not in use, other than `keep`, until the store
    /// is within its bound. An image in use is skipped, so the store can stay above its
    /// bound while runs hold its images.
    fn evict(&self, keep: &Digest) {
        let Ok(entries) = self.entries() else {
            return;
        };
        let mut total: u64 = entries.iter().map(|e| e.info.size_bytes).sum();
        for entry in entries {
            if total <= self.bound_bytes {
                break;
            }
            if entry.info.digest == *keep {
                continue;
            }
            let dir = self.image_dir(&entry.info.digest);
            let Ok(lease) = File::open(dir.join("lease")) else {
                continue;
            };
            // Held shared by every run using it: an exclusive lock means nobody does.
            let Ok(_held) = Flock::lock(lease, FlockArg::LockExclusiveNonblock) else {
                continue;
            };
            let doomed = self
                .dir
                .join("tmp")
                .join(format!("evict-{}", entry.info.digest.hex()));
            if fs::rename(&dir, &doomed).is_ok() {
                total -= entry.info.size_bytes;
                let _ = fs::remove_dir_all(&doomed);
                tracing::info!(digest = %entry.info.digest, "image evicted");
            }
        }
    }

    /// Every complete image with its last use, least recent first.
    fn entries(&self) -> Result<Vec<Entry>, ImageError> {
        let images = self.dir.join("images");
        let mut entries = Vec::new();
        for dir in fs::read_dir(&images).map_err(|e| io(&images, e))? {
            let dir = dir.map_err(|e| io(&images, e))?.path();
            let Ok(text) = fs::read(dir.join("image.json")) else {
                continue;
            };
            let Ok(info) = serde_json::from_slice::<ImageInfo>(&text) else {
                continue;
            };
            let used = fs::metadata(dir.join("lease"))
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            entries.push(Entry { info, used });
        }
        entries.sort_by_key(|e| e.used);
        Ok(entries)
    }
}

struct Entry {
    info: ImageInfo,
    used: SystemTime,
}

/// Takes a shared lock on the image's lease file and marks it used now.
fn lease(dir: &Path) -> Result<PreparedImage, ImageError> {
    let json = dir.join("image.json");
    let text = fs::read(&json).map_err(|e| io(&json, e))?;
    let info: ImageInfo = serde_json::from_slice(&text).map_err(|e| io(&json, e.into()))?;
    let path = dir.join("lease");
    let file = lock_file(&path)?;
    file.set_modified(SystemTime::now())
        .map_err(|e| io(&path, e))?;
    let lease = Flock::lock(file, FlockArg::LockShared).map_err(|(_, e)| io(&path, e.into()))?;
    Ok(PreparedImage {
        info,
        root: dir.join("rootfs"),
        _lease: lease,
    })
}

/// `path` opened for writing, made if missing and never truncated: a file that is only
/// ever locked (`flock`), or whose mtime is all it says.
fn lock_file(path: &Path) -> Result<File, ImageError> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| io(path, e))
}

/// Bytes the tree at `root` takes on disk (allocated blocks, each inode once).
fn disk_usage(root: &Path) -> Result<u64, ImageError> {
    let mut seen = std::collections::HashSet::new();
    let mut total = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = fs::symlink_metadata(&path).map_err(|e| io(&path, e))?;
        if seen.insert((meta.dev(), meta.ino())) {
            total += meta.blocks() * 512;
        }
        if meta.is_dir() {
            for child in fs::read_dir(&path).map_err(|e| io(&path, e))? {
                stack.push(child.map_err(|e| io(&path, e))?.path());
            }
        }
    }
    Ok(total)
}

fn io(path: &Path, error: std::io::Error) -> ImageError {
    ImageError::Io {
        path: path.to_path_buf(),
        error,
    }
}
