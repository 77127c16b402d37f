//! bench-image: task environments as OCI images, without a container daemon.
//!
//! The one entry point is the [`ImageStore`]: [`ImageStore::prepare`] takes an image
//! reference ([`ImageRef`]: `docker://REGISTRY/NAME:TAG`, `oci:DIR:TAG` or
//! `docker-archive:FILE`) and the digest it is pinned to, and returns a
//! [`PreparedImage`]: a root file system for the sandbox to mount read-only as `/`, with
//! the image config's `Env` and `WorkingDir`.
//!
//! What it guarantees:
//!
//! - **pinned by digest**: the image's manifest digest is read (`skopeo inspect`) before
//!   anything is fetched; a digest other than the pinned one is refused
//!   ([`ImageError::DigestMismatch`]). A registry image is then copied by that digest,
//!   not by its tag; a local one is inspected again after the copy. A pinned digest the
//!   store already holds is leased without asking the source again.
//! - **content-addressed, unpacked once**: each digest is fetched with `skopeo copy` and
//!   unpacked with `umoci unpack` (`--rootless` when the caller is not root) once, then
//!   shared by every run; an image directory appears only complete.
//! - **bounded**: after each new image, the least recently used images nobody holds are
//!   removed until the store is within its bound; an image a run holds
//!   ([`PreparedImage`] alive) is never removed, and an image larger than the bound alone
//!   is refused.
//!
//! It knows nothing of runs, tasks or sandboxes: it turns references into root file
//! systems.
//!
//! # Layout
//!
//! - `reference`: [`ImageRef`], its template form ([`ImageRef::from_template`],
//!   [`image_id`]) and the [`Digest`] that pins an image.
//! - `store`: the [`ImageStore`], [`PreparedImage`] and [`ImageInfo`].
//! - `tools`: skopeo and umoci as child processes.

mod reference;
mod store;
mod tools;

use std::path::PathBuf;

pub use reference::{image_id, Digest, ImageRef};
pub use store::{ImageInfo, ImageStore, PreparedImage, DEFAULT_PATH, DEFAULT_WORKING_DIR};
pub use tools::digest_now as inspect;

/// Why an image could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The reference is none of the accepted forms.
    #[error("image {reference:?}: {reason}")]
    Reference {
        /// As written.
        reference: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Not `sha256:` and 64 lower-case hex digits.
    #[error("{0:?} is not an image digest (sha256: and 64 lower-case hex digits)")]
    Digest(String),
    /// The image is not the one pinned.
    #[error("image {image} has digest {found}, but {pinned} is pinned: refusing it (if the image was meant to change, update its pin)")]
    DigestMismatch {
        /// The reference.
        image: ImageRef,
        /// The pinned digest.
        pinned: Digest,
        /// The digest it has.
        found: Digest,
    },
    /// A local image changed while it was copied.
    #[error("image {0} changed while it was copied; try again")]
    Changed(ImageRef),
    /// The image alone is larger than the store may hold.
    #[error("image {image} takes {size_bytes} bytes unpacked, more than the image cache's bound of {bound_bytes}")]
    TooLarge {
        /// The reference.
        image: ImageRef,
        /// Unpacked size.
        size_bytes: u64,
        /// The store's bound.
        bound_bytes: u64,
    },
    /// skopeo or umoci is not installed.
    #[error("{0} not found: image environments need skopeo and umoci (deploy/local/install.sh installs them)")]
    ToolMissing(String),
    /// skopeo or umoci failed.
    #[error("{command} failed: {reason}")]
    Tool {
        /// Which command.
        command: String,
        /// Its exit and the end of what it printed.
        reason: String,
    },
    /// The store's files.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
}
