//! The run's scratch directory: a private copy of the task fixture in a temp dir (on a
//! bounded file system of its own where the runner can mount one: [`super::workspace_fs`]),
//! and the one place that turns an agent-supplied path into a path inside it.
//!
//! Confinement is lexical first (`..` may not climb above the root, absolute paths must
//! point inside it) and then physical: every existing component below the root is looked
//! at without following it, and a symlink anywhere on the path is refused, dangling or
//! not, wherever it points. The file tools then open the last component with `O_NOFOLLOW`
//! ([`super::files`]). No agent process runs while an in-process tool does (each command's
//! process tree is killed when the command ends), so nothing can swap a checked directory
//! for a link in between.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use tempfile::TempDir;

use super::workspace_fs::{TmpfsMount, WorkspaceBound};
use crate::fixture_tree::Tree;

/// A private copy of a fixture; deleted on drop.
#[derive(Debug)]
pub struct Scratch {
    /// Canonical path of the root; every resolved path starts with it.
    root: PathBuf,
    /// The bounded file system mounted on the directory, when there is one; declared
    /// before `_dir` so that it is unmounted before the directory is removed.
    _mount: Option<TmpfsMount>,
    /// Owns the directory.
    _dir: TempDir,
}

/// Why an agent-supplied path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// It climbs out of the scratch copy, or is absolute elsewhere.
    #[error("path {0:?} leaves the task workspace")]
    Escapes(String),
    /// It goes through a symbolic link.
    #[error(
        "path {path:?} goes through the symbolic link {link:?}; the file tools do not follow links"
    )]
    Symlink {
        /// The path as given.
        path: String,
        /// The link on it.
        link: String,
    },
    /// No path at all.
    #[error("path is empty")]
    Empty,
}

/// Setting up the scratch copy failed.
#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    /// The temp directory could not be made.
    #[error("cannot create scratch directory: {0}")]
    Create(io::Error),
    /// The bounded file system could not be mounted on it.
    #[error("cannot mount the bounded workspace file system: {0}")]
    Mount(io::Error),
    /// A fixture file or link could not be copied.
    #[error("cannot copy fixture file {path}: {source}")]
    Copy {
        /// The file, relative to the fixture.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// A fixture file's content (a link's target) differs from the hash it was verified
    /// with.
    #[error(
        "fixture file {path} changed after it was verified (sha256 {actual}, pinned {expected})"
    )]
    Changed {
        /// The file, relative to the fixture.
        path: String,
        /// The pinned sha256.
        expected: String,
        /// The sha256 of what was copied.
        actual: String,
    },
    /// The one-commit git repository of a SWE-bench-format task could not be made.
    #[error("cannot make the base repository of the scratch copy: {0}")]
    BaseRepo(#[from] crate::base_repo::BaseRepoError),
}

impl Scratch {
    /// Copies the files of `tree` (scanned from `fixture_dir`) into a new temp dir, and
    /// its symlinks as symlinks, checking each file's content (each link's target)
    /// against the hash in `tree` as it goes, so the copy is
    /// exactly what was pinned even if the fixture changes meanwhile. The directory is
    /// `0700`: no other user of the host (another run's agent included) can look in.
    /// With `bound`, a tmpfs of that size and inode count is mounted on it first, so the
    /// fixture and everything written after it count against the bound.
    pub fn create(
        fixture_dir: &Path,
        tree: &Tree,
        bound: Option<WorkspaceBound>,
    ) -> Result<Scratch, ScratchError> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new()
            .prefix("bench-run-")
            .permissions(fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(ScratchError::Create)?;
        let root = dir.path().canonicalize().map_err(ScratchError::Create)?;
        let mount = bound
            .map(|bound| TmpfsMount::mount(&root, bound))
            .transpose()
            .map_err(ScratchError::Mount)?;
        for entry in tree.entries() {
            let copy_err = |source| ScratchError::Copy {
                path: entry.path.clone(),
                source,
            };
            let bytes = fs::read(fixture_dir.join(&entry.path)).map_err(copy_err)?;
            let actual = bench_schemas::sha256_hex(&bytes);
            if actual != entry.sha256 {
                return Err(ScratchError::Changed {
                    path: entry.path.clone(),
                    expected: entry.sha256.to_string(),
                    actual: actual.to_string(),
                });
            }
            let target = root.join(&entry.path);
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent).map_err(copy_err)?;
            }
            fs::write(&target, &bytes).map_err(copy_err)?;
            set_executable(&target, entry.executable).map_err(copy_err)?;
        }
        // The fixture's symlinks, as symlinks (their targets stay inside: `Tree::scan`).
        for link in tree.links() {
            let copy_err = |source| ScratchError::Copy {
                path: link.path.clone(),
                source,
            };
            let actual = fs::read_link(fixture_dir.join(&link.path)).map_err(copy_err)?;
            if actual.as_os_str() != link.target.as_str() {
                return Err(ScratchError::Changed {
                    path: link.path.clone(),
                    expected: bench_schemas::sha256_hex(link.target.as_bytes()).to_string(),
                    actual: bench_schemas::sha256_hex(actual.as_os_str().as_encoded_bytes())
                        .to_string(),
                });
            }
            let at = root.join(&link.path);
            if let Some(parent) = at.parent() {
                fs::create_dir_all(parent).map_err(copy_err)?;
            }
            std::os::unix::fs::symlink(&link.target, &at).map_err(copy_err)?;
        }
        Ok(Scratch {
            root,
            _mount: mount,
            _dir: dir,
        })
    }

    /// Makes the scratch copy, as created, a git repository whose one commit is the
    /// fixture (`message` its message), so that the agent can use git on it and sees no
    /// history ([`crate::base_repo`]).
    pub fn commit_base(self, message: &str) -> Result<Scratch, ScratchError> {
        crate::base_repo::init(&self.root, message)?;
        Ok(self)
    }

    /// The scratch root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves an agent-supplied path (relative to the root, or absolute inside it).
    pub fn resolve(&self, raw: &str) -> Result<PathBuf, PathError> {
        if raw.is_empty() {
            return Err(PathError::Empty);
        }
        let escapes = || PathError::Escapes(raw.to_owned());
        let given = Path::new(raw);
        let relative = if given.is_absolute() {
            given.strip_prefix(&self.root).map_err(|_| escapes())?
        } else {
            given
        };
        let mut normal = PathBuf::new();
        for component in relative.components() {
            match component {
                Component::Normal(part) => normal.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !normal.pop() {
                        return Err(escapes());
                    }
                }
                Component::RootDir | Component::Prefix(_) => return Err(escapes()),
            }
        }
        let mut full = self.root.clone();
        let mut exists = true;
        for part in normal.components() {
            full.push(part);
            if !exists {
                continue;
            }
            match fs::symlink_metadata(&full) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(PathError::Symlink {
                        path: raw.to_owned(),
                        link: self.relative(&full),
                    })
                }
                Ok(_) => {}
                // The rest does not exist yet (a file or directories to create).
                Err(_) => exists = false,
            }
        }
        Ok(full)
    }

    /// The path relative to the root, `/`-separated, for observations and footprints.
    pub fn relative(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        let text = rel.to_string_lossy().into_owned();
        if text.is_empty() {
            ".".to_owned()
        } else {
            text
        }
    }
}

fn set_executable(path: &Path, executable: bool) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = if executable { 0o755 } else { 0o644 };
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox() -> (TempDir, Scratch) {
        let fixture = tempfile::tempdir().expect("tempdir");
        fs::create_dir(fixture.path().join("src")).expect("mkdir");
        fs::write(fixture.path().join("src/a.py"), "x = 1\n").expect("write");
        let tree = Tree::scan(fixture.path()).expect("scan");
        let sandbox = Scratch::create(fixture.path(), &tree, None).expect("sandbox");
        (fixture, sandbox)
    }

    #[test]
    fn the_scratch_directory_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let (_f, sb) = sandbox();
        let mode = fs::metadata(sb.root()).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    }

    #[test]
    fn a_bounded_workspace_holds_neither_more_bytes_nor_more_files_than_its_bound() {
        if crate::workspace_fs::probe().is_err() {
            // Only a root runner mounts one; CI runs as root.
            assert!(!nix::unistd::geteuid().is_root(), "root could not mount it");
            return;
        }
        let fixture = tempfile::tempdir().expect("tempdir");
        fs::write(fixture.path().join("a.py"), "x = 1\n").expect("write");
        let tree = Tree::scan(fixture.path()).expect("scan");
        let bound = WorkspaceBound {
            bytes: 1 << 20,
            inodes: 100,
        };
        let sb = Scratch::create(fixture.path(), &tree, Some(bound)).expect("sandbox");
        let root = sb.root().to_path_buf();
        let full = fs::write(root.join("big"), vec![0u8; 2 << 20]).expect_err("2 MiB in 1");
        assert_eq!(full.raw_os_error(), Some(libc::ENOSPC), "{full}");
        fs::remove_file(root.join("big")).expect("rm");
        let made = (0..1000)
            .take_while(|n| fs::write(root.join(format!("f{n}")), "").is_ok())
            .count();
        assert!(made < 100, "{made} files under a cap of 100 inodes");
        assert_eq!(
            fs::read_to_string(root.join("a.py")).expect("fixture"),
            "x = 1\n"
        );
        drop(sb);
        assert!(!root.exists());
        let mounts = fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
        assert!(
            !mounts.contains(root.to_str().expect("utf-8")),
            "the workspace file system outlived its run"
        );
    }

    #[test]
    fn copies_the_fixture() {
        let (_f, sb) = sandbox();
        assert_eq!(
            fs::read_to_string(sb.root().join("src/a.py")).expect("read"),
            "x = 1\n"
        );
    }

    #[test]
    fn paths_inside_resolve() {
        let (_f, sb) = sandbox();
        for ok in ["src/a.py", "./src/../src/a.py", "new/file.txt", "."] {
            let p = sb.resolve(ok).expect(ok);
            assert!(p.starts_with(sb.root()), "{ok}");
        }
        let abs = sb.root().join("src/a.py");
        assert!(sb.resolve(abs.to_str().expect("utf-8")).is_ok());
    }

    #[test]
    fn escapes_are_refused() {
        let (_f, sb) = sandbox();
        for bad in ["../x", "src/../../x", "/etc/passwd", "a/../../../etc"] {
            assert!(
                matches!(sb.resolve(bad), Err(PathError::Escapes(_))),
                "{bad}"
            );
        }
        std::os::unix::fs::symlink("/etc", sb.root().join("link")).expect("symlink");
        assert!(sb.resolve("link/passwd").is_err());
        std::os::unix::fs::symlink("/nonexistent/x", sb.root().join("dangling")).expect("symlink");
        assert!(matches!(
            sb.resolve("dangling"),
            Err(PathError::Symlink { .. })
        ));
        std::os::unix::fs::symlink("a.py", sb.root().join("src/inside")).expect("symlink");
        assert!(sb.resolve("src/inside").is_err());
    }
}
