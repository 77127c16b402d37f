//! A directory as a sorted list of files with their content hashes: what a fixture pin
//! covers, what the scratch copy is made from, and how the files a run modified are found;
//! and [`walk()`], the one directory walk of the crate, which decides which entries count
//! (every [`IGNORED_DIRS`] skipped, sorted order, what a symlink is).
//!
//! Tree hash (documented in `scenarios/README.md`): every regular file under the root,
//! except those inside [`IGNORED_DIRS`], as one line `<sha256 of content> <x|-> <path>\n`
//! (`x` when any execute bit is set; path relative, `/`-separated), lines sorted by path
//! bytes, and the SHA-256 of their concatenation. Directories themselves, timestamps and
//! owners do not count. A symlink ([`TreeLink`]: real repositories hold them) counts by
//! its target: one line `<sha256 of the target's bytes> l <path>`, sorted with the files'
//! (a tree without links hashes as before links were allowed). A fixture's symlinks must
//! stay inside it ([`TreeError::LinkOutside`]): a relative target whose `..` components
//! all lead and climb no higher than the root, then plain names. A link is never
//! followed here, and never a file of [`Tree::entries`].
//!
//! Files are hashed by streaming them through SHA-256 ([`hash_file`]), never read whole:
//! what an agent leaves in its workspace (a 1 GB sparse file) must not cost the runner its
//! size in memory. [`Tree::changed_paths_in`], which finds the files a run changed, judges
//! a file by its size first and hashes it only when the size is its fixture file's, so a
//! huge file costs neither memory nor the time to read it.
//!
//! This module depends on nothing else in the crate: scenarios, tools and the judge's
//! restore all build on it.

mod walk;

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use bench_schemas::{sha256_hex, Hash256};
use sha2::{Digest, Sha256};

pub use walk::{is_ignored, walk, FileEntry, Symlinks, WalkError};

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
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 of the content.
    pub sha256: Hash256,
}

/// One symbolic link of a fixture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeLink {
    /// Relative path of the link, `/`-separated.
    pub path: String,
    /// Its target as written (relative, inside the tree).
    pub target: String,
}

/// Bytes read at a time when hashing a file.
const HASH_CHUNK: usize = 64 * 1024;

/// SHA-256 of the file at `path`, read [`HASH_CHUNK`] bytes at a time: memory stays the
/// same whatever the file's size.
pub fn hash_file(path: &Path) -> io::Result<Hash256> {
    let mut file = fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; HASH_CHUNK];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Ok(Hash256::from_digest(hasher.finalize().into())),
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The files of a directory, sorted by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    entries: Vec<TreeEntry>,
    links: Vec<TreeLink>,
}

/// Reading a tree failed.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// A directory could not be read, or a fixture holds a symlink.
    #[error(transparent)]
    Walk(#[from] WalkError),
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A path that is no UTF-8, which the listing cannot hold.
    #[error("{0} is not valid UTF-8; fixture paths must be")]
    NonUtf8(PathBuf),
    /// A fixture's symlink whose target is absolute or climbs out of the fixture.
    #[error(
        "{path} is a symlink to {target}, outside the fixture; a fixture's symlinks must \
         point inside it (relative, never above its root)"
    )]
    LinkOutside {
        /// The symlink.
        path: PathBuf,
        /// Where it points.
        target: PathBuf,
    },
}

impl Tree {
    /// Scans a fixture: `root` recursively, its symlinks kept as [`TreeLink`]s and refused
    /// when they point outside it.
    pub fn scan(root: &Path) -> Result<Tree, TreeError> {
        Self::scan_with(root, true)
    }

    /// Scans a run's scratch directory, where the agent may have made symlinks: they are
    /// skipped.
    pub fn scan_workspace(root: &Path) -> Result<Tree, TreeError> {
        Self::scan_with(root, false)
    }

    fn scan_with(root: &Path, fixture: bool) -> Result<Tree, TreeError> {
        let mut entries = Vec::new();
        let mut links = Vec::new();
        for entry in walk(root).symlinks(Symlinks::List) {
            let entry = entry?;
            let is_link = entry.file_type().is_symlink();
            if !(entry.file_type().is_file() || (fixture && is_link)) {
                continue;
            }
            let path = entry.path();
            let rel = relative(root, path)?;
            let read_err = |source| TreeError::Read {
                path: path.to_path_buf(),
                source,
            };
            if is_link {
                links.push(link(path, rel).map_err(|e| match e {
                    LinkError::Read(source) => read_err(source),
                    LinkError::Tree(e) => e,
                })?);
                continue;
            }
            let meta = fs::symlink_metadata(path).map_err(read_err)?;
            entries.push(TreeEntry {
                path: rel,
                executable: meta.permissions().mode() & 0o111 != 0,
                size: meta.len(),
                sha256: hash_file(path).map_err(read_err)?,
            });
        }
        // Component order is not byte order (`a/b` < `a.txt` here, not in bytes).
        entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        links.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        Ok(Tree { entries, links })
    }

    /// The regular files, sorted by path.
    pub fn entries(&self) -> &[TreeEntry] {
        &self.entries
    }

    /// The symlinks (of a fixture; none in a workspace scan), sorted by path.
    pub fn links(&self) -> &[TreeLink] {
        &self.links
    }

    /// The tree hash (see the module docs).
    pub fn sha256(&self) -> Hash256 {
        let files = self.entries.iter().map(|e| {
            let x = if e.executable { 'x' } else { '-' };
            (e.path.as_str(), format!("{} {x} {}\n", e.sha256, e.path))
        });
        let links = self.links.iter().map(|l| {
            let target = sha256_hex(l.target.as_bytes());
            (l.path.as_str(), format!("{target} l {}\n", l.path))
        });
        let mut lines: Vec<(&str, String)> = files.chain(links).collect();
        lines.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let listing: String = lines.into_iter().map(|(_, line)| line).collect();
        sha256_hex(listing.as_bytes())
    }

    /// Paths added, removed or changed (content or execute bit) in the directory `root`
    /// (a run's scratch copy of this tree, where the agent may have made symlinks: they
    /// are skipped), sorted. A file whose size or execute bit differs is changed without
    /// being read; only a file of its fixture file's size is hashed, streaming.
    pub fn changed_paths_in(&self, root: &Path) -> Result<Vec<String>, TreeError> {
        let mut seen = std::collections::BTreeSet::new();
        let mut changed = Vec::new();
        for entry in walk(root).symlinks(Symlinks::List) {
            let entry = entry?;
            if !entry.file_type().is_file() {
                continue;
            }
            let path = entry.path();
            let read_err = |source| TreeError::Read {
                path: path.to_path_buf(),
                source,
            };
            let rel = relative(root, path)?;
            let meta = fs::symlink_metadata(path).map_err(read_err)?;
            let same = self.has_file(&rel, path, &meta).map_err(read_err)?;
            if !same {
                changed.push(rel.clone());
            }
            seen.insert(rel);
        }
        changed.extend(
            self.entries
                .iter()
                .filter(|e| !seen.contains(&e.path))
                .map(|e| e.path.clone()),
        );
        changed.sort();
        Ok(changed)
    }

    /// Whether the file at `path`, whose `lstat` is `meta`, is this tree's file `rel`:
    /// same size and execute bit, then the same content (hashed, streaming, only then).
    pub fn has_file(&self, rel: &str, path: &Path, meta: &fs::Metadata) -> io::Result<bool> {
        let executable = meta.permissions().mode() & 0o111 != 0;
        match self.entry(rel) {
            Some(was) if was.size == meta.len() && was.executable == executable => {
                Ok(hash_file(path)? == was.sha256)
            }
            _ => Ok(false),
        }
    }

    /// Whether this tree has the symlink `rel` pointing at `target`.
    pub fn has_link(&self, rel: &str, target: &std::ffi::OsStr) -> bool {
        self.links
            .binary_search_by(|l| l.path.as_bytes().cmp(rel.as_bytes()))
            .is_ok_and(|i| self.links[i].target.as_bytes() == target.as_encoded_bytes())
    }

    /// Whether this tree has a file or a symlink at `rel`.
    pub fn contains(&self, rel: &str) -> bool {
        self.entry(rel).is_some() || self.links.iter().any(|l| l.path == rel)
    }

    /// The entry at `path`, if the tree has one.
    fn entry(&self, path: &str) -> Option<&TreeEntry> {
        self.entries
            .binary_search_by(|e| e.path.as_bytes().cmp(path.as_bytes()))
            .ok()
            .map(|i| &self.entries[i])
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

/// Why a fixture's symlink could not be listed.
enum LinkError {
    /// Its target could not be read.
    Read(io::Error),
    /// Its target is no UTF-8 or leads outside the fixture.
    Tree(TreeError),
}

/// The link at `path` (`rel` below the root), if its target stays inside the root.
fn link(path: &Path, rel: String) -> Result<TreeLink, LinkError> {
    let target = fs::read_link(path).map_err(LinkError::Read)?;
    let depth = rel.split('/').count() - 1;
    if !stays_inside(depth, &target) {
        return Err(LinkError::Tree(TreeError::LinkOutside {
            path: path.to_path_buf(),
            target,
        }));
    }
    let target = target
        .to_str()
        .ok_or_else(|| LinkError::Tree(TreeError::NonUtf8(path.to_path_buf())))?
        .to_owned();
    Ok(TreeLink { path: rel, target })
}

/// Whether a link target, read from a directory `depth` levels below the root, stays
/// inside the root whatever the links it passes through: relative, every `..` before the
/// first name and no more of them than `depth`. A `..` after a name is refused even when
/// it would cancel out on paper: after a name that is itself a link, the kernel climbs
/// from the link's target, not from where the name stands.
fn stays_inside(depth: usize, target: &Path) -> bool {
    let mut ups = 0;
    let mut named = false;
    for component in target.components() {
        match component {
            Component::ParentDir if !named => ups += 1,
            Component::Normal(_) => named = true,
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    ups <= depth
}

/// `path` under `root`, as the listing writes it (UTF-8, `/`-separated).
fn relative(root: &Path, path: &Path) -> Result<String, TreeError> {
    let rel = path.strip_prefix(root).unwrap_or(path).to_str();
    rel.map(str::to_owned)
        .ok_or_else(|| TreeError::NonUtf8(path.to_path_buf()))
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
        assert_eq!(
            tree.changed_paths_in(dir.path()).expect("compare"),
            vec!["b/run.sh".to_owned()]
        );
    }

    #[test]
    fn links_inside_the_fixture_are_pinned_by_target_and_links_out_refused() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::create_dir_all(root.join("pkg/data")).expect("mkdir");
        fs::write(root.join("pkg/data/v1.txt"), "one\n").expect("write");
        fs::write(root.join("README"), "r\n").expect("write");
        symlink("data/v1.txt", root.join("pkg/current")).expect("symlink");
        symlink("../README", root.join("pkg/README")).expect("symlink");
        symlink("pkg", root.join("lib")).expect("symlink");

        let tree = Tree::scan(root).expect("links inside are kept");
        let links: Vec<(&str, &str)> = tree
            .links()
            .iter()
            .map(|l| (l.path.as_str(), l.target.as_str()))
            .collect();
        assert_eq!(
            links,
            [
                ("lib", "pkg"),
                ("pkg/README", "../README"),
                ("pkg/current", "data/v1.txt")
            ]
        );
        assert!(
            tree.entries()
                .iter()
                .all(|e| e.path != "lib" && e.path != "pkg/current"),
            "a link is never a file of the tree"
        );
        let listing = format!(
            "{} - README\n{} l lib\n{} l pkg/README\n{} l pkg/current\n{} - pkg/data/v1.txt\n",
            sha256_hex(b"r\n"),
            sha256_hex(b"pkg"),
            sha256_hex(b"../README"),
            sha256_hex(b"data/v1.txt"),
            sha256_hex(b"one\n"),
        );
        assert_eq!(tree.sha256(), sha256_hex(listing.as_bytes()));
        // Retargeting a link changes the pin.
        fs::remove_file(root.join("pkg/current")).expect("rm");
        symlink("data", root.join("pkg/current")).expect("symlink");
        assert_ne!(Tree::scan(root).expect("scan").sha256(), tree.sha256());

        for (name, target) in [
            ("up", "../outside"),
            ("abs", "/etc/passwd"),
            ("cancels", "pkg/../../outside"),
        ] {
            let link = root.join(name);
            symlink(target, &link).expect("symlink");
            match Tree::scan(root) {
                Err(e @ TreeError::LinkOutside { .. }) => {
                    assert!(e.to_string().contains(&link.display().to_string()), "{e}")
                }
                other => panic!("{target} not refused: {other:?}"),
            }
            fs::remove_file(&link).expect("rm");
        }
        assert!(stays_inside(1, Path::new("../README")));
        assert!(!stays_inside(1, Path::new("../../README")));
        assert!(
            !stays_inside(2, Path::new("a/../../b")),
            "`..` after a name"
        );
    }

    #[test]
    fn changed_paths_in_judges_by_size_then_content() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("same.txt"), "abc\n").expect("write");
        fs::write(dir.path().join("edited.txt"), "abc\n").expect("write");
        fs::write(dir.path().join("gone.txt"), "x").expect("write");
        let tree = Tree::scan(dir.path()).expect("scan");
        fs::write(dir.path().join("edited.txt"), "abd\n").expect("same size, new content");
        fs::remove_file(dir.path().join("gone.txt")).expect("rm");
        // A sparse file far larger than anything read whole: judged by its size.
        let huge = fs::File::create(dir.path().join("huge.bin")).expect("create");
        huge.set_len(1 << 40).expect("sparse 1 TiB");
        assert_eq!(
            tree.changed_paths_in(dir.path()).expect("compare"),
            ["edited.txt", "gone.txt", "huge.bin"]
        );
    }
}
