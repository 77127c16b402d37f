//! The one directory walk of the crate ([`walk`]), on walkdir: depth first, each
//! directory's entries sorted by name, [`IGNORED_DIRS`] skipped, and one rule for what a
//! symlink is ([`Symlinks`]). Fixture trees, the tools (`grep`, listings, footprints), the
//! restoring of protected files, `pins.toml` and trajectory imports all walk with it,
//! each choosing only what it really needs differently (depth, symlinks, ignored dirs).

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use walkdir::WalkDir;

use super::IGNORED_DIRS;

/// Walking a directory failed.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    /// A directory or an entry could not be read (the root, when it is no directory).
    #[error("cannot read {path}: {source}")]
    Io {
        /// The directory or entry.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

impl WalkError {
    /// The path that could not be read.
    pub fn path(&self) -> &Path {
        match self {
            WalkError::Io { path, .. } => path,
        }
    }
}

impl From<walkdir::Error> for WalkError {
    fn from(err: walkdir::Error) -> WalkError {
        let path = err.path().unwrap_or(Path::new("")).to_path_buf();
        // Only a symlink loop (walks that follow links) carries no io::Error.
        let message = err.to_string();
        let source = err
            .into_io_error()
            .unwrap_or_else(|| io::Error::other(message));
        WalkError::Io { path, source }
    }
}

impl From<WalkError> for io::Error {
    fn from(err: WalkError) -> io::Error {
        match err {
            WalkError::Io { source, .. } => source,
        }
    }
}

/// What a walk does with a symbolic link below its root (a symlinked root is always
/// followed, as `read_dir` does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symlinks {
    /// Yielded as an entry of its own (`file_type().is_symlink()`), never followed.
    List,
    /// Followed: a linked directory is walked, a linked file yielded as that file, a link
    /// that points nowhere yielded as the link.
    Follow,
}

/// One entry a walk yields.
#[derive(Debug, Clone)]
pub struct FileEntry {
    /// The root joined with the entry's path below it.
    path: PathBuf,
    /// Its type; a followed link has its target's.
    file_type: fs::FileType,
    /// Whether the entry was reached by following links ([`Symlinks::Follow`]).
    followed: bool,
}

impl FileEntry {
    /// The root joined with the entry's path below it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// [`FileEntry::path`], owned.
    pub fn into_path(self) -> PathBuf {
        self.path
    }

    /// The last component of the path.
    pub fn file_name(&self) -> &OsStr {
        self.path.file_name().unwrap_or(self.path.as_os_str())
    }

    /// Its type: never a symlink when links are followed, unless the link points nowhere.
    pub fn file_type(&self) -> fs::FileType {
        self.file_type
    }

    /// Its metadata, of the link itself unless links are followed.
    pub fn metadata(&self) -> io::Result<fs::Metadata> {
        if self.followed {
            fs::metadata(&self.path)
        } else {
            fs::symlink_metadata(&self.path)
        }
    }
}

/// A walk of the entries below a directory (the root itself is not yielded and must be a
/// directory), depth first, each directory's entries sorted by name, so paths come out
/// sorted component by component. Built by [`walk`].
#[derive(Debug, Clone)]
pub struct Walk {
    /// The directory walked.
    root: PathBuf,
    /// Levels below the root at most (1 = the root's own entries); default unlimited.
    max_depth: usize,
    /// Default [`Symlinks::List`].
    symlinks: Symlinks,
    /// Whether [`IGNORED_DIRS`] are skipped (not yielded, not entered); default yes.
    skip_ignored: bool,
}

/// Walks `root`: every depth, [`IGNORED_DIRS`] skipped, symlinks listed, not followed.
pub fn walk(root: &Path) -> Walk {
    Walk {
        root: root.to_path_buf(),
        max_depth: usize::MAX,
        symlinks: Symlinks::List,
        skip_ignored: true,
    }
}

/// Whether `name` is one of the [`IGNORED_DIRS`].
pub fn is_ignored(name: &OsStr) -> bool {
    IGNORED_DIRS.iter().any(|ignored| name == *ignored)
}

impl Walk {
    /// Only entries at most `depth` levels below the root (1 = the root's own entries).
    pub fn max_depth(self, depth: usize) -> Walk {
        Walk {
            max_depth: depth,
            ..self
        }
    }

    /// What a symlink below the root is (default [`Symlinks::List`]).
    pub fn symlinks(self, symlinks: Symlinks) -> Walk {
        Walk { symlinks, ..self }
    }

    /// Enters [`IGNORED_DIRS`] too: for directories that are neither a fixture nor a run's
    /// scratch copy.
    pub fn include_ignored(self) -> Walk {
        Walk {
            skip_ignored: false,
            ..self
        }
    }
}

impl IntoIterator for Walk {
    type Item = Result<FileEntry, WalkError>;
    type IntoIter = WalkIter;

    fn into_iter(self) -> WalkIter {
        let inner = WalkDir::new(&self.root)
            .max_depth(self.max_depth)
            .follow_links(self.symlinks == Symlinks::Follow)
            .sort_by_file_name()
            .into_iter();
        WalkIter { walk: self, inner }
    }
}

/// The iterator of a [`Walk`].
#[derive(Debug)]
pub struct WalkIter {
    /// The options.
    walk: Walk,
    /// walkdir's walk, filtered here.
    inner: walkdir::IntoIter,
}

impl Iterator for WalkIter {
    type Item = Result<FileEntry, WalkError>;

    fn next(&mut self) -> Option<Self::Item> {
        let follow = self.walk.symlinks == Symlinks::Follow;
        loop {
            let entry = match self.inner.next()? {
                Ok(entry) => entry,
                Err(err) => match dangling_link(&err).filter(|_| follow) {
                    Some(link) => return Some(Ok(link)),
                    None => return Some(Err(err.into())),
                },
            };
            let file_type = entry.file_type();
            if entry.depth() == 0 {
                if file_type.is_dir() {
                    continue;
                }
                // What `read_dir` says of a file.
                return Some(Err(WalkError::Io {
                    path: entry.into_path(),
                    source: io::Error::from_raw_os_error(nix::libc::ENOTDIR),
                }));
            }
            if file_type.is_dir() && self.walk.skip_ignored && is_ignored(entry.file_name()) {
                self.inner.skip_current_dir();
                continue;
            }
            return Some(Ok(FileEntry {
                path: entry.into_path(),
                file_type,
                followed: follow,
            }));
        }
    }
}

/// The link below the root that `err` (of a walk following links) failed to follow
/// because it points nowhere.
fn dangling_link(err: &walkdir::Error) -> Option<FileEntry> {
    if err.depth() == 0 || err.io_error()?.kind() != io::ErrorKind::NotFound {
        return None;
    }
    let path = err.path()?;
    let meta = fs::symlink_metadata(path).ok()?;
    meta.file_type().is_symlink().then(|| FileEntry {
        path: path.to_path_buf(),
        file_type: meta.file_type(),
        followed: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture_tree::{Tree, TreeError};

    /// The paths a walk yields, relative to `root`.
    fn walked(walk: Walk, root: &Path) -> Vec<String> {
        walk.into_iter()
            .map(|entry| {
                let entry = entry.expect("walk");
                let rel = entry.path().strip_prefix(root).expect("under root");
                rel.to_str().expect("utf-8").to_owned()
            })
            .collect()
    }

    #[test]
    fn walk_is_sorted_and_skips_ignored_dirs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for d in ["b", "a", "a/node_modules", ".git"] {
            fs::create_dir(root.join(d)).expect("mkdir");
        }
        for f in [
            "b/y",
            "a.txt",
            "a/z",
            "a/node_modules/m.js",
            ".git/HEAD",
            "target",
        ] {
            fs::write(root.join(f), "x").expect("write");
        }

        assert_eq!(
            walked(walk(root), root),
            ["a", "a/z", "a.txt", "b", "b/y", "target"],
            "component order; ignored directories (not files) skipped"
        );
        assert_eq!(
            walked(walk(root).max_depth(1), root),
            ["a", "a.txt", "b", "target"]
        );
        assert_eq!(
            walked(walk(root).max_depth(1).include_ignored(), root),
            [".git", "a", "a.txt", "b", "target"]
        );
        let file = walk(&root.join("a.txt")).into_iter().next();
        assert!(
            matches!(file, Some(Err(WalkError::Io { .. }))),
            "a file is no directory to walk: {file:?}"
        );
    }

    #[test]
    fn walk_lists_or_follows_symlinks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::create_dir(root.join("real")).expect("mkdir");
        fs::write(root.join("real/f"), "x").expect("write");
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).expect("symlink");
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("zz")).expect("symlink");

        let listed: Vec<FileEntry> = walk(root)
            .into_iter()
            .collect::<Result<_, _>>()
            .expect("walk");
        assert_eq!(listed.len(), 4, "link, real, real/f, zz: {listed:?}");
        assert!(listed[0].file_type().is_symlink(), "listed, not entered");

        assert_eq!(
            walked(walk(root).symlinks(Symlinks::Follow), root),
            ["link", "link/f", "real", "real/f", "zz"],
            "a link that points nowhere is yielded as the link"
        );

        assert!(
            matches!(Tree::scan(root), Err(TreeError::LinkOutside { .. })),
            "absolute targets are outside the fixture"
        );
        let workspace = Tree::scan_workspace(root).expect("symlinks skipped");
        let paths: Vec<&str> = workspace
            .entries()
            .iter()
            .map(|e| e.path.as_str())
            .collect();
        assert_eq!(paths, ["real/f"]);
    }
}
