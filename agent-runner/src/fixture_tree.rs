//! A directory as a sorted list of files with their content hashes: what a fixture pin
//! covers, what the scratch copy is made from, and how the files a run modified are found;
//! and [`walk`], the one directory walk of the crate, which decides which entries count
//! (every [`IGNORED_DIRS`] skipped, sorted order, what a symlink is).
//!
//! Tree hash (documented in `scenarios/README.md`): every regular file under the root,
//! except those inside [`IGNORED_DIRS`], as one line `<sha256 of content> <x|-> <path>\n`
//! (`x` when any execute bit is set; path relative, `/`-separated), lines sorted by path
//! bytes, and the SHA-256 of their concatenation. Directories themselves, timestamps and
//! owners do not count. Symlinks are refused: a fixture must not point outside itself.
//!
//! This module depends on nothing else in the crate: scenarios, tools and the judge's
//! restore all build on it.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use schemas::{sha256_hex, Hash256};
use walkdir::{DirEntry, WalkDir};

/// Directory names skipped everywhere: caches and build output that tools create while
/// running (and that must not change a fixture's hash or count as a modified file).
pub const IGNORED_DIRS: [&str; 6] = [
    ".git",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    "target",
    "node_modules",
];

/// One file of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// Relative path, `/`-separated.
    pub path: String,
    /// Any execute bit set.
    pub executable: bool,
    /// SHA-256 of the content.
    pub sha256: Hash256,
}

/// The files of a directory, sorted by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    entries: Vec<TreeEntry>,
}

/// Reading a tree failed.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error(transparent)]
    Walk(#[from] WalkError),
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("{0} is not valid UTF-8; fixture paths must be")]
    NonUtf8(PathBuf),
}

/// Walking a directory failed.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{0} is a symlink; fixtures may hold only regular files and directories")]
    Symlink(PathBuf),
}

impl WalkError {
    /// The path that could not be read, or the refused symlink.
    pub fn path(&self) -> &Path {
        match self {
            WalkError::Io { path, .. } | WalkError::Symlink(path) => path,
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
            symlink @ WalkError::Symlink(_) => io::Error::other(symlink.to_string()),
        }
    }
}

/// What a walk does with a symbolic link below its root (a symlinked root is always
/// followed, as `read_dir` does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symlinks {
    /// Yielded as an entry of its own (`file_type().is_symlink()`), never followed.
    List,
    /// An error, [`WalkError::Symlink`]: fixtures hold only files and directories.
    Refuse,
    /// Followed: a linked directory is walked, a linked file yielded as that file.
    Follow,
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
    type Item = Result<DirEntry, WalkError>;
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
    type Item = Result<DirEntry, WalkError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let entry = match self.inner.next()? {
                Ok(entry) => entry,
                Err(err) => return Some(Err(err.into())),
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
            if file_type.is_symlink() && self.walk.symlinks == Symlinks::Refuse {
                return Some(Err(WalkError::Symlink(entry.into_path())));
            }
            return Some(Ok(entry));
        }
    }
}

impl Tree {
    /// Scans a fixture: `root` recursively, refusing symlinks.
    pub fn scan(root: &Path) -> Result<Tree, TreeError> {
        Self::scan_with(root, true)
    }

    /// Scans a run's scratch directory, where the agent may have made symlinks: they are
    /// skipped.
    pub fn scan_workspace(root: &Path) -> Result<Tree, TreeError> {
        Self::scan_with(root, false)
    }

    fn scan_with(root: &Path, refuse_symlinks: bool) -> Result<Tree, TreeError> {
        let symlinks = if refuse_symlinks {
            Symlinks::Refuse
        } else {
            Symlinks::List
        };
        let mut entries = Vec::new();
        for entry in walk(root).symlinks(symlinks) {
            let entry = entry?;
            if !entry.file_type().is_file() {
                continue;
            }
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap_or(path)
                .to_str()
                .ok_or_else(|| TreeError::NonUtf8(path.to_path_buf()))?
                .to_owned();
            let read_err = |source| TreeError::Read {
                path: path.to_path_buf(),
                source,
            };
            let meta = fs::symlink_metadata(path).map_err(read_err)?;
            let bytes = fs::read(path).map_err(read_err)?;
            entries.push(TreeEntry {
                path: rel,
                executable: meta.permissions().mode() & 0o111 != 0,
                sha256: sha256_hex(&bytes),
            });
        }
        // Component order is not byte order (`a/b` < `a.txt` here, not in bytes).
        entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        Ok(Tree { entries })
    }

    /// The files, sorted by path.
    pub fn entries(&self) -> &[TreeEntry] {
        &self.entries
    }

    /// The tree hash (see the module docs).
    pub fn sha256(&self) -> Hash256 {
        let mut listing = String::new();
        for e in &self.entries {
            let x = if e.executable { 'x' } else { '-' };
            listing.push_str(&format!("{} {x} {}\n", e.sha256, e.path));
        }
        sha256_hex(listing.as_bytes())
    }

    /// Paths added, removed or changed (content or execute bit) in `other`, sorted.
    pub fn changed_paths(&self, other: &Tree) -> Vec<String> {
        let before: BTreeMap<&str, &TreeEntry> =
            self.entries.iter().map(|e| (e.path.as_str(), e)).collect();
        let after: BTreeMap<&str, &TreeEntry> =
            other.entries.iter().map(|e| (e.path.as_str(), e)).collect();
        let mut changed: Vec<String> = after
            .iter()
            .filter(|(path, e)| before.get(*path) != Some(*e))
            .map(|(path, _)| (*path).to_owned())
            .chain(
                before
                    .keys()
                    .filter(|path| !after.contains_key(*path))
                    .map(|path| (*path).to_owned()),
            )
            .collect();
        changed.sort();
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_the_documented_listing() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir(dir.path().join("b")).expect("mkdir");
        fs::write(dir.path().join("b/run.sh"), "echo hi\n").expect("write");
        fs::set_permissions(
            dir.path().join("b/run.sh"),
            fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
        fs::write(dir.path().join("a.txt"), "a\n").expect("write");
        fs::create_dir(dir.path().join("__pycache__")).expect("mkdir");
        fs::write(dir.path().join("__pycache__/x.pyc"), "junk").expect("write");

        let tree = Tree::scan(dir.path()).expect("scan");
        let listing = format!(
            "{} - a.txt\n{} x b/run.sh\n",
            sha256_hex(b"a\n"),
            sha256_hex(b"echo hi\n")
        );
        assert_eq!(tree.sha256(), sha256_hex(listing.as_bytes()));

        fs::set_permissions(
            dir.path().join("b/run.sh"),
            fs::Permissions::from_mode(0o644),
        )
        .expect("chmod");
        let after = Tree::scan(dir.path()).expect("scan");
        assert_ne!(after.sha256(), tree.sha256(), "exec bit counts");
        assert_eq!(tree.changed_paths(&after), vec!["b/run.sh".to_owned()]);
    }

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
    fn walk_lists_refuses_or_follows_symlinks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::create_dir(root.join("real")).expect("mkdir");
        fs::write(root.join("real/f"), "x").expect("write");
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).expect("symlink");

        let listed: Vec<DirEntry> = walk(root)
            .into_iter()
            .collect::<Result<_, _>>()
            .expect("walk");
        assert_eq!(listed.len(), 3, "link, real, real/f: {listed:?}");
        assert!(listed[0].file_type().is_symlink(), "listed, not entered");

        assert_eq!(
            walked(walk(root).symlinks(Symlinks::Follow), root),
            ["link", "link/f", "real", "real/f"]
        );

        let refused: Result<Vec<DirEntry>, WalkError> =
            walk(root).symlinks(Symlinks::Refuse).into_iter().collect();
        match refused {
            Err(WalkError::Symlink(path)) => assert_eq!(path, root.join("link")),
            other => panic!("symlink not refused: {other:?}"),
        }
        assert!(matches!(
            Tree::scan(root),
            Err(TreeError::Walk(WalkError::Symlink(_)))
        ));
        let workspace = Tree::scan_workspace(root).expect("symlinks skipped");
        let paths: Vec<&str> = workspace
            .entries()
            .iter()
            .map(|e| e.path.as_str())
            .collect();
        assert_eq!(paths, ["real/f"]);
    }
}
