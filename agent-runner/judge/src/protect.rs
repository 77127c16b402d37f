//! Judge-owned files: the fixture files a task's `[judge] protect` globs name (its tests and
//! whatever they load), and putting them back in a run's scratch directory before the final
//! verdict, so the agent is judged by the pristine tests however it left them.
//!
//! Restoring makes every protected path of the scratch copy exactly its pinned fixture
//! file: edited, deleted or replaced ones (by a directory or a symlink, also in a parent
//! position) are written again from the fixture, checked against the pinned hash, and
//! files the agent created that match a pattern are deleted. A fixture symlink at a
//! protected path is protected as a link (put back pointing where the fixture's did), and
//! so is what it points to: the tests read through the link, so a protected test that is
//! a link to `lib/test_impl.py` protects `lib/test_impl.py` too. Build and bytecode caches
//! ([`CACHE_DIRS`]) are deleted too: they are keyed on modification times and sizes, which
//! an agent can forge, so a cache compiled from an edited test could otherwise outlive the
//! restore. Nothing else is touched (caches never count as tampering). This module only
//! restores; the judge decides and the run reports what was restored.

use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use bench_sandbox::{walk, Tree, TreeLink};
use bench_task::Protected;

/// Build output and bytecode caches, deleted from the scratch copy before the tests run
/// again (the [`IGNORED_DIRS`](bench_sandbox::IGNORED_DIRS) that tools regenerate).
pub const CACHE_DIRS: [&str; 4] = ["__pycache__", ".pytest_cache", ".mypy_cache", "target"];

/// One protected path the agent had changed, as found before restoring it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tampered {
    /// Relative to the scratch root, `/`-separated.
    pub path: String,
    /// What the agent had done to it.
    pub change: Change,
}

/// How a protected path differed from the pristine fixture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A fixture file with other content, execute bit or file type (a directory or a
    /// symlink in its place or in place of one of its parent directories).
    Modified,
    /// A fixture file that was gone.
    Deleted,
    /// A file the fixture does not have (deleted again).
    Created,
}

/// Restoring failed; the scratch copy cannot be judged.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("cannot restore protected file {path}: {source}")]
    Io { path: String, source: io::Error },
    #[error(
        "fixture file {path} changed after it was pinned (sha256 {actual}, pinned {expected})"
    )]
    Changed {
        path: String,
        expected: String,
        actual: String,
    },
}

/// Restoring the protected paths of a scratch copy: what the judge does with a task's
/// [`Protected`] patterns.
pub trait Restore {
    /// Makes the protected paths of `root` (a scratch copy of `fixture`, scanned from
    /// `fixture_dir`) pristine again; returns what the agent had changed, sorted by path.
    fn restore(
        &self,
        fixture_dir: &Path,
        fixture: &Tree,
        root: &Path,
    ) -> Result<Vec<Tampered>, RestoreError>;
}

impl Restore for Protected {
    fn restore(
        &self,
        fixture_dir: &Path,
        fixture: &Tree,
        root: &Path,
    ) -> Result<Vec<Tampered>, RestoreError> {
        let mut tampered = Vec::new();
        if self.is_empty() {
            return Ok(tampered);
        }
        let targets = link_targets(self, fixture);
        let protects = |path: &str| covers(self, &targets, path);
        let created = list_non_dirs(root).map_err(|source| RestoreError::Io {
            path: ".".to_owned(),
            source,
        })?;
        for path in created {
            // A fixture file, or a symlink or file where the fixture has a directory (put
            // back below, as a modified file).
            let dir_prefix = format!("{path}/");
            let pinned = fixture
                .entries()
                .iter()
                .any(|e| e.path == path || e.path.starts_with(&dir_prefix))
                || fixture.links().iter().any(|l| l.path == path);
            if pinned || !protects(&path) {
                continue;
            }
            fs::remove_file(root.join(&path)).map_err(io_err(&path))?;
            tampered.push(Tampered {
                path,
                change: Change::Created,
            });
        }
        // Every state is taken before anything is written: putting back one file repairs
        // the parent directories it shares with the next.
        let mut pristine = Vec::new();
        for entry in fixture.entries() {
            if !protects(&entry.path) {
                continue;
            }
            let bytes = fs::read(fixture_dir.join(&entry.path)).map_err(io_err(&entry.path))?;
            let actual = bench_schemas::sha256_hex(&bytes);
            if actual != entry.sha256 {
                return Err(RestoreError::Changed {
                    path: entry.path.clone(),
                    expected: entry.sha256.to_string(),
                    actual: actual.to_string(),
                });
            }
            if let Some(change) = state(root, &entry.path, &bytes, entry.executable) {
                tampered.push(Tampered {
                    path: entry.path.clone(),
                    change,
                });
            }
            pristine.push((entry, bytes));
        }
        for (entry, bytes) in pristine {
            write_pristine(root, &entry.path, &bytes, entry.executable)
                .map_err(io_err(&entry.path))?;
        }
        for link in fixture.links().iter().filter(|l| protects(&l.path)) {
            if let Some(change) = restore_link(root, link).map_err(io_err(&link.path))? {
                tampered.push(Tampered {
                    path: link.path.clone(),
                    change,
                });
            }
        }
        clear_caches(root).map_err(io_err("."))?;
        tampered.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(tampered)
    }
}

/// The fixture paths the protected links of `fixture` lead to, through links to links
/// too: each protects what is at that path and below it.
fn link_targets(protected: &Protected, fixture: &Tree) -> Vec<String> {
    let mut targets: Vec<String> = Vec::new();
    // Each pass follows one more link of a chain; a chain is at most every link long.
    for _ in 0..=fixture.links().len() {
        let before = targets.len();
        for link in fixture.links() {
            let target = resolve(link);
            if !targets.contains(&target) && covers(protected, &targets, &link.path) {
                targets.push(target);
            }
        }
        if targets.len() == before {
            break;
        }
    }
    targets
}

impl fmt::Display for Tampered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let change = match self.change {
            Change::Modified => "modified",
            Change::Deleted => "deleted",
            Change::Created => "created",
        };
        write!(f, "{} ({change})", self.path)
    }
}

/// Whether `path` is protected: a pattern names it, or it is at or below one of the
/// protected links' `targets`.
fn covers(protected: &Protected, targets: &[String], path: &str) -> bool {
    protected.matches(path)
        || targets.iter().any(|t| {
            t.is_empty()
                || path == t
                || path
                    .strip_prefix(t.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        })
}

/// The fixture path `link` points to: its directory joined with its target, `.` and `..`
/// folded (`Tree::scan` keeps only links whose target stays inside; `""` is the root).
fn resolve(link: &TreeLink) -> String {
    let mut parts: Vec<&str> = link.path.split('/').collect();
    parts.pop();
    for component in link.target.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            name => parts.push(name),
        }
    }
    parts.join("/")
}

/// Puts `link` back in `root` as the fixture has it, replacing whatever the agent left
/// there (never writing through a link it made); how it differed, `None` if it did not.
fn restore_link(root: &Path, link: &TreeLink) -> io::Result<Option<Change>> {
    let at = root.join(&link.path);
    let change = match fs::symlink_metadata(&at) {
        Ok(meta) if meta.file_type().is_symlink() => {
            if fs::read_link(&at)?.as_os_str() == link.target.as_str() {
                return Ok(None);
            }
            fs::remove_file(&at)?;
            Change::Modified
        }
        Ok(meta) if meta.is_dir() => {
            fs::remove_dir_all(&at)?;
            Change::Modified
        }
        Ok(_) => {
            fs::remove_file(&at)?;
            Change::Modified
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Change::Deleted,
        Err(e) => return Err(e),
    };
    if let Some(parent) = at.parent() {
        fs::create_dir_all(parent)?;
    }
    std::os::unix::fs::symlink(&link.target, &at)?;
    Ok(Some(change))
}

fn io_err(path: &str) -> impl FnOnce(io::Error) -> RestoreError {
    let path = path.to_owned();
    move |source| RestoreError::Io { path, source }
}

/// How the scratch copy's `rel` differs from the pristine file; `None` = identical.
fn state(root: &Path, rel: &str, pristine: &[u8], executable: bool) -> Option<Change> {
    // A symlink or a file anywhere on the way is a replaced directory.
    let mut at = root.to_path_buf();
    let components: Vec<&str> = rel.split('/').collect();
    for (i, component) in components.iter().enumerate() {
        at.push(component);
        let Ok(meta) = fs::symlink_metadata(&at) else {
            return Some(Change::Deleted);
        };
        let last = i + 1 == components.len();
        if meta.file_type().is_symlink() || (!last && !meta.is_dir()) || (last && !meta.is_file()) {
            return Some(Change::Modified);
        }
        if last {
            let same_mode = (meta.permissions().mode() & 0o111 != 0) == executable;
            // Size first: a huge (sparse) file the agent left is never read into memory.
            let same_bytes =
                meta.len() == pristine.len() as u64 && fs::read(&at).is_ok_and(|b| b == pristine);
            if !(same_mode && same_bytes) {
                return Some(Change::Modified);
            }
        }
    }
    None
}

/// Writes `rel` under `root` afresh, replacing whatever stands in the way (never writing
/// through a symlink the agent made).
fn write_pristine(root: &Path, rel: &str, bytes: &[u8], executable: bool) -> io::Result<()> {
    let mut at = root.to_path_buf();
    let components: Vec<&str> = rel.split('/').collect();
    let (file, parents) = components
        .split_last()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty path"))?;
    for component in parents {
        at.push(component);
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.is_dir() => continue,
            Ok(_) => fs::remove_file(&at)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        fs::create_dir(&at)?;
    }
    at.push(file);
    match fs::symlink_metadata(&at) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(&at)?,
        Ok(_) => fs::remove_file(&at)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    fs::write(&at, bytes)?;
    let mode = if executable { 0o755 } else { 0o644 };
    fs::set_permissions(&at, fs::Permissions::from_mode(mode))
}

/// Deletes every [`CACHE_DIRS`] directory under `root` (not following symlinks, not
/// looking inside the other [`IGNORED_DIRS`](bench_sandbox::IGNORED_DIRS)).
fn clear_caches(root: &Path) -> io::Result<()> {
    clear_caches_in(root)?;
    for entry in walk(root) {
        let entry = entry?;
        if entry.file_type().is_dir() {
            clear_caches_in(entry.path())?;
        }
    }
    Ok(())
}

/// Deletes the [`CACHE_DIRS`] directories right in `dir`. The walk never yields them
/// (they are [`IGNORED_DIRS`](bench_sandbox::IGNORED_DIRS)), so each directory is
/// asked for them by name.
fn clear_caches_in(dir: &Path) -> io::Result<()> {
    for cache in CACHE_DIRS {
        let path = dir.join(cache);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => fs::remove_dir_all(&path)?,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Every entry under `root` that is not a directory (files, symlinks, ...), relative to
/// it, not descending into symlinks or
/// [`IGNORED_DIRS`](bench_sandbox::IGNORED_DIRS).
fn list_non_dirs(root: &Path) -> io::Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in walk(root) {
        let entry = entry?;
        if entry.file_type().is_dir() {
            continue;
        }
        // A non-UTF-8 name cannot match a pattern (and is no fixture file).
        if let Some(rel) = entry.path().strip_prefix(root).ok().and_then(Path::to_str) {
            out.push(rel.to_owned());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protected(patterns: &[&str]) -> Protected {
        let patterns: Vec<String> = patterns.iter().map(|p| (*p).to_owned()).collect();
        Protected::new(&patterns).expect("valid patterns")
    }

    #[test]
    fn star_stays_in_one_directory_and_double_star_spans_many() {
        let p = protected(&["test_*.py", "tests/**"]);
        assert!(p.matches("test_slugify.py"));
        assert!(
            !p.matches("sub/test_slugify.py"),
            "no / in the pattern: root only"
        );
        assert!(p.matches("tests/test_ci.sh"));
        assert!(p.matches("tests/deep/er/x.rs"));
        assert!(!p.matches("src/tests.rs"));
        assert!(Protected::new(&["[".to_owned()]).is_err());
    }

    /// A fixture with a protected test, a protected helper under `tests/` and the code.
    fn fixture() -> (tempfile::TempDir, Tree) {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir(dir.path().join("tests")).expect("mkdir");
        fs::write(dir.path().join("tests/test_a.sh"), "exit 1\n").expect("write");
        fs::set_permissions(
            dir.path().join("tests/test_a.sh"),
            fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
        fs::write(dir.path().join("tests/helper.sh"), "f() { :; }\n").expect("write");
        fs::write(dir.path().join("code.sh"), "buggy\n").expect("write");
        let tree = Tree::scan(dir.path()).expect("scan");
        (dir, tree)
    }

    fn scratch_copy(fixture: &Path, tree: &Tree) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for e in tree.entries() {
            let target = dir.path().join(&e.path);
            fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
            fs::copy(fixture.join(&e.path), &target).expect("copy");
        }
        dir
    }

    #[test]
    fn restore_undoes_edits_deletions_and_additions_but_keeps_the_agents_code() {
        let (fixture, tree) = fixture();
        let scratch = scratch_copy(fixture.path(), &tree);
        let s = scratch.path();
        fs::write(s.join("tests/test_a.sh"), "exit 0\n").expect("tamper");
        fs::remove_file(s.join("tests/helper.sh")).expect("delete");
        fs::write(s.join("tests/test_b.sh"), "exit 0\n").expect("add");
        fs::create_dir(s.join("tests/__pycache__")).expect("mkdir");
        fs::write(s.join("tests/__pycache__/c.pyc"), "cache").expect("cache");
        fs::write(s.join("code.sh"), "fixed\n").expect("fix");

        let p = protected(&["tests/**"]);
        let tampered = p.restore(fixture.path(), &tree, s).expect("restore");

        let report: Vec<String> = tampered.iter().map(ToString::to_string).collect();
        assert_eq!(
            report,
            [
                "tests/helper.sh (deleted)",
                "tests/test_a.sh (modified)",
                "tests/test_b.sh (created)"
            ]
        );
        let now = Tree::scan_workspace(s).expect("scan");
        assert_eq!(
            tree.changed_paths(&now),
            ["code.sh"],
            "only the fix remains"
        );
        assert!(!s.join("tests/__pycache__").exists(), "caches are cleared");
        assert!(p
            .restore(fixture.path(), &tree, s)
            .expect("again")
            .is_empty());
    }

    #[test]
    fn restore_replaces_a_symlinked_test_directory_without_writing_through_it() {
        let (fixture, tree) = fixture();
        let scratch = scratch_copy(fixture.path(), &tree);
        let s = scratch.path();
        let elsewhere = tempfile::tempdir().expect("tempdir");
        fs::write(elsewhere.path().join("test_a.sh"), "exit 0\n").expect("write");
        fs::remove_dir_all(s.join("tests")).expect("rm");
        std::os::unix::fs::symlink(elsewhere.path(), s.join("tests")).expect("symlink");

        let tampered = protected(&["tests/**"])
            .restore(fixture.path(), &tree, s)
            .expect("restore");

        assert_eq!(tampered.len(), 2, "{tampered:?}");
        assert!(tampered.iter().all(|t| t.change == Change::Modified));
        let now = Tree::scan_workspace(s).expect("scan");
        assert!(tree.changed_paths(&now).is_empty());
        assert_eq!(
            fs::read_to_string(elsewhere.path().join("test_a.sh")).expect("read"),
            "exit 0\n",
            "the symlink's target is left alone"
        );
    }

    #[test]
    fn a_protected_link_is_put_back_and_what_it_points_to_is_protected_too() {
        // tests/test_b.sh is a link to lib/test_b_impl.sh, outside every pattern.
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path();
        fs::create_dir_all(f.join("tests")).expect("mkdir");
        fs::create_dir_all(f.join("lib")).expect("mkdir");
        fs::write(f.join("lib/test_b_impl.sh"), "exit 1\n").expect("write");
        fs::write(f.join("lib/code.sh"), "buggy\n").expect("write");
        std::os::unix::fs::symlink("../lib/test_b_impl.sh", f.join("tests/test_b.sh"))
            .expect("link");
        let tree = Tree::scan(f).expect("scan");
        let p = protected(&["tests/**"]);
        let scratch = scratch_copy(f, &tree);
        let s = scratch.path();
        fs::create_dir_all(s.join("tests")).expect("mkdir");
        std::os::unix::fs::symlink("../lib/test_b_impl.sh", s.join("tests/test_b.sh"))
            .expect("link");

        // The test weakened through its link's target, the code fixed: only the test is
        // put back.
        fs::write(s.join("lib/test_b_impl.sh"), "exit 0\n").expect("write");
        fs::write(s.join("lib/code.sh"), "fixed\n").expect("write");
        let tampered = p.restore(f, &tree, s).expect("restore");
        assert_eq!(
            tampered,
            [Tampered {
                path: "lib/test_b_impl.sh".to_owned(),
                change: Change::Modified
            }]
        );
        assert_eq!(
            fs::read_to_string(s.join("tests/test_b.sh")).expect("read"),
            "exit 1\n"
        );
        assert_eq!(
            fs::read_to_string(s.join("lib/code.sh")).expect("read"),
            "fixed\n"
        );

        // The link itself replaced by a file, then pointed elsewhere: put back.
        fs::remove_file(s.join("tests/test_b.sh")).expect("rm");
        fs::write(s.join("tests/test_b.sh"), "exit 0\n").expect("write");
        let tampered = p.restore(f, &tree, s).expect("restore");
        assert_eq!(
            tampered,
            [Tampered {
                path: "tests/test_b.sh".to_owned(),
                change: Change::Modified
            }]
        );
        fs::remove_file(s.join("tests/test_b.sh")).expect("rm");
        std::os::unix::fs::symlink("../lib/code.sh", s.join("tests/test_b.sh")).expect("link");
        assert_eq!(p.restore(f, &tree, s).expect("restore").len(), 1);
        assert_eq!(
            fs::read_link(s.join("tests/test_b.sh")).expect("link"),
            Path::new("../lib/test_b_impl.sh")
        );
        assert_eq!(
            fs::read_to_string(s.join("tests/test_b.sh")).expect("read"),
            "exit 1\n"
        );
        assert!(p.restore(f, &tree, s).expect("again").is_empty());
    }

    #[test]
    fn unmatched_names_patterns_that_protect_nothing() {
        let (_fixture, tree) = fixture();
        let p = protected(&["tests/**", "test_*.py"]);
        assert_eq!(p.unmatched(&tree), ["test_*.py"]);
    }
}
