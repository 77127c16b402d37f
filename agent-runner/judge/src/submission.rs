//! The submission: what a run hands in, taken from its workspace as one `git diff` against
//! the pristine fixture. The verdict is computed from this diff alone ([`crate::judge::judge_diff`]):
//! nothing else the agent leaves behind reaches it.
//!
//! Capture ([`capture`]) is bounded whatever the workspace holds:
//! - every path the agent added, changed or deleted counts, whatever `.gitignore`,
//!   `.git/info/exclude` or `core.excludesFile` say (the diff is made in a git directory of
//!   the runner's own, with `add --force`); only the caches and build output the fixture
//!   hash skips too ([`bench_sandbox::IGNORED_DIRS`]: `.git`, `__pycache__`,
//!   `target`, ...) are never part of a submission;
//! - a file over [`SubmissionLimits::file_bytes`], a file with more than one hard link (a
//!   sparse 1 GiB file linked a thousand times costs the workspace nothing), a special
//!   file (fifo, socket, device) and a path that is not UTF-8 are left out and named in
//!   [`Submission::excluded`], never read: a file is judged by `lstat` first and read only
//!   when it is a plain file of one link within the caps;
//! - once the files taken add up to [`SubmissionLimits::diff_bytes`], the rest are left out
//!   the same way;
//! - the files taken are copied, with reads bounded by their `lstat` size, into a fresh
//!   pristine copy of the fixture (a host directory the agent never saw), and git runs on
//!   that copy only, as a child process with a deadline ([`SubmissionLimits::timeout_ms`]),
//!   so neither git's time nor its memory depends on what the agent left beyond the caps.
//!   The file system work runs on tokio's blocking pool, never on an async worker.
//!
//! `run_stop.files_modified` of a judged run is the number of paths the diff holds, so
//! the two agree.

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bench_sandbox::{
    commit_tree, diff_against_commit, walk, BaseRepoError, Scratch, ScratchError, Symlinks, Tree,
};

use bench_task::{LoadedTask, SubmissionLimits};

/// Why a changed path was left out of the submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exclusion {
    /// A file larger than the per-file cap.
    TooLarge {
        /// Its size, bytes.
        size: u64,
        /// The cap, bytes.
        cap: u64,
    },
    /// A file with more than one hard link.
    HardLinks(u64),
    /// Not a file, directory or symlink.
    Special(&'static str),
    /// The files taken before it filled the submission's cap.
    SubmissionFull {
        /// The cap, bytes.
        cap: u64,
    },
    /// Its name is not UTF-8.
    NotUtf8,
    /// It could not be read (the reason).
    Unreadable(String),
}

impl std::fmt::Display for Exclusion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exclusion::TooLarge { size, cap } => {
                write!(f, "{size} bytes, over the {cap}-byte file cap")
            }
            Exclusion::HardLinks(n) => write!(f, "{n} hard links"),
            Exclusion::Special(kind) => write!(f, "a {kind}, not a file"),
            Exclusion::SubmissionFull { cap } => {
                write!(f, "the submission's {cap}-byte cap was reached")
            }
            Exclusion::NotUtf8 => f.write_str("its name is not UTF-8"),
            Exclusion::Unreadable(why) => write!(f, "unreadable: {why}"),
        }
    }
}

/// A path left out of the submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excluded {
    /// Relative to the workspace (lossy for a name that is not UTF-8).
    pub path: String,
    /// Why.
    pub why: Exclusion,
}

impl std::fmt::Display for Excluded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.path, self.why)
    }
}

/// What a run submitted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Submission {
    /// `git diff --binary` of the files taken against the fixture (empty: no change).
    pub diff: Vec<u8>,
    /// The paths the diff adds, changes or deletes, sorted.
    pub changed: Vec<String>,
    /// The paths that would have changed and were left out, sorted.
    pub excluded: Vec<Excluded>,
}

impl Submission {
    /// Paths in the diff that it adds (absent from the fixture).
    pub fn added<'a>(&'a self, task: &'a LoadedTask) -> impl Iterator<Item = &'a str> + 'a {
        self.changed
            .iter()
            .map(String::as_str)
            .filter(|path| !task.fixture.contains(path))
    }
}

/// Capturing a submission failed: the run cannot be judged (an infrastructure failure,
/// not the agent's).
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The pristine copy the diff is made on could not be set up.
    #[error("cannot copy the fixture to make the diff: {0}")]
    Stage(#[from] ScratchError),
    /// Writing to that copy failed.
    #[error("cannot stage {path}: {source}")]
    Write {
        /// What could not be written.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// git failed.
    #[error("cannot make the diff: {0}")]
    Git(#[from] BaseRepoError),
    /// The capture took longer than its limit.
    #[error("taking the submission took longer than {0:?}")]
    TimedOut(Duration),
    /// The blocking task died.
    #[error("the capture task failed: {0}")]
    Task(String),
}

/// The submission of the workspace at `work`, a scratch copy of `task`'s fixture, within
/// `limits`. An error is the runner's (its temp directory, git), except
/// [`CaptureError::TimedOut`]: what the workspace holds made the capture too slow.
pub async fn capture(
    task: &LoadedTask,
    work: &Path,
    limits: &SubmissionLimits,
) -> Result<Submission, CaptureError> {
    capture_tree(&task.fixture, &task.fixture_dir(), work, limits).await
}

/// [`capture`] of `work` against the fixture `tree` at `fixture_dir`.
async fn capture_tree(
    tree: &Tree,
    fixture_dir: &Path,
    work: &Path,
    limits: &SubmissionLimits,
) -> Result<Submission, CaptureError> {
    let limit = limits.timeout();
    let deadline = Instant::now() + limit;
    let (tree, fixture_dir, caps) = (tree.clone(), fixture_dir.to_path_buf(), *limits);
    let work: PathBuf = work.to_path_buf();
    let looked_at = work.clone();
    let (mut submission, stage): (Submission, Scratch) = blocking(move || {
        let submission = select(&tree, &looked_at, &caps, deadline)?;
        let stage = Scratch::create(&fixture_dir, &tree, None)?;
        Ok((submission, stage))
    })
    .await?;
    let git_dir = tempfile::Builder::new()
        .prefix("bench-submission-")
        .tempdir()
        .map_err(|source| CaptureError::Write {
            path: std::env::temp_dir(),
            source,
        })?;
    commit_tree(git_dir.path(), stage.root(), remaining(deadline, limit)?).await?;
    let (submission_taken, stage) = blocking(move || {
        copy_changes(&mut submission, &work, stage.root())?;
        Ok((submission, stage))
    })
    .await?;
    submission = submission_taken;
    submission.diff =
        diff_against_commit(git_dir.path(), stage.root(), remaining(deadline, limit)?).await?;
    Ok(submission)
}

/// `f` on tokio's blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, CaptureError> + Send + 'static,
) -> Result<T, CaptureError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| CaptureError::Task(e.to_string()))?
}

/// The time left before `deadline`, or the timeout error.
fn remaining(deadline: Instant, limit: Duration) -> Result<Duration, CaptureError> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|left| !left.is_zero())
        .ok_or(CaptureError::TimedOut(limit))
}

/// What the submission takes from `work` ([`Submission::changed`]) and what it leaves out
/// ([`Submission::excluded`]), decided by `lstat` (a file is hashed only when it has its
/// fixture file's size and mode, to see whether it changed at all).
fn select(
    tree: &Tree,
    work: &Path,
    limits: &SubmissionLimits,
    deadline: Instant,
) -> Result<Submission, CaptureError> {
    let mut submission = Submission::default();
    let mut seen = std::collections::BTreeSet::new();
    let mut taken: u64 = 0;
    let exclude = |path: &Path, why| {
        let path = path.strip_prefix(work).unwrap_or(path);
        submission_excluded(path, why)
    };
    let mut excluded = Vec::new();
    let mut changed = Vec::new();
    for entry in walk(work).symlinks(Symlinks::List) {
        remaining(deadline, limits.timeout())?;
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                let why = Exclusion::Unreadable(e.to_string());
                excluded.push(exclude(e.path(), why));
                continue;
            }
        };
        let path = entry.path();
        let relative = path.strip_prefix(work).unwrap_or(path);
        if relative.as_os_str().is_empty() {
            continue;
        }
        let Some(rel) = relative.to_str().map(str::to_owned) else {
            excluded.push(exclude(path, Exclusion::NotUtf8));
            continue;
        };
        let meta = match fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(e) => {
                excluded.push(exclude(path, Exclusion::Unreadable(e.to_string())));
                continue;
            }
        };
        let kind = meta.file_type();
        if kind.is_dir() {
            continue;
        }
        seen.insert(rel.clone());
        if kind.is_symlink() {
            match fs::read_link(path) {
                Ok(target) if tree.has_link(&rel, target.as_os_str()) => {}
                Ok(_) => changed.push(rel),
                Err(e) => excluded.push(exclude(path, Exclusion::Unreadable(e.to_string()))),
            }
            continue;
        }
        if !kind.is_file() {
            excluded.push(exclude(path, Exclusion::Special(special_kind(&kind))));
            continue;
        }
        match tree.has_file(&rel, path, &meta) {
            Ok(true) => continue,
            Ok(false) => {}
            Err(e) => {
                excluded.push(exclude(path, Exclusion::Unreadable(e.to_string())));
                continue;
            }
        }
        let why = if meta.nlink() > 1 {
            Some(Exclusion::HardLinks(meta.nlink()))
        } else if meta.len() > limits.file_bytes {
            Some(Exclusion::TooLarge {
                size: meta.len(),
                cap: limits.file_bytes,
            })
        } else if taken + meta.len() > limits.diff_bytes {
            Some(Exclusion::SubmissionFull {
                cap: limits.diff_bytes,
            })
        } else {
            None
        };
        match why {
            Some(why) => excluded.push(exclude(path, why)),
            None => {
                taken += meta.len();
                changed.push(rel);
            }
        }
    }
    // A fixture file or link that is gone (or whose place another kind of entry took).
    let gone = tree
        .entries()
        .iter()
        .map(|e| &e.path)
        .chain(tree.links().iter().map(|l| &l.path))
        .filter(|p| !seen.contains(*p))
        .cloned();
    changed.extend(gone);
    changed.sort();
    excluded.sort_by(|a, b| a.path.cmp(&b.path));
    submission.changed = changed;
    submission.excluded = excluded;
    Ok(submission)
}

/// An [`Excluded`] of the relative `path`.
fn submission_excluded(path: &Path, why: Exclusion) -> Excluded {
    Excluded {
        path: path.to_string_lossy().into_owned(),
        why,
    }
}

/// What a special file is, for its exclusion.
fn special_kind(kind: &fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "fifo"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_block_device() {
        "block device"
    } else if kind.is_char_device() {
        "character device"
    } else {
        "special file"
    }
}

/// Makes `stage` (a pristine copy of the fixture) hold the submission's changes taken from
/// `work`: every changed path removed from the stage first (a file may have become a
/// directory, or the reverse), then each file copied with its execute bit, reading no
/// more than the size `select` saw, and each link made anew. A path gone from `work`
/// stays removed; one that cannot be read now is left out, with why.
fn copy_changes(
    submission: &mut Submission,
    work: &Path,
    stage: &Path,
) -> Result<(), CaptureError> {
    for rel in &submission.changed {
        remove(&stage.join(rel))?;
    }
    let mut unreadable = Vec::new();
    for rel in &submission.changed {
        let (from, to) = (work.join(rel), stage.join(rel));
        match copy_one(&from, &to) {
            Ok(()) => {}
            Err(Copy::Gone) => {}
            Err(Copy::Read(e)) => unreadable.push((rel.clone(), e.to_string())),
            Err(Copy::Write(source)) => return Err(CaptureError::Write { path: to, source }),
        }
    }
    for (rel, why) in unreadable {
        remove(&stage.join(&rel))?;
        submission.changed.retain(|c| *c != rel);
        submission.excluded.push(Excluded {
            path: rel,
            why: Exclusion::Unreadable(why),
        });
    }
    submission.excluded.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(())
}

/// Why one path could not be copied.
enum Copy {
    /// It is not in the workspace (a deletion).
    Gone,
    /// Reading it failed.
    Read(io::Error),
    /// Writing the copy failed.
    Write(io::Error),
}

/// Copies the workspace's `from` (a file or a symlink) to the stage's `to`.
fn copy_one(from: &Path, to: &Path) -> Result<(), Copy> {
    let meta = match fs::symlink_metadata(from) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Copy::Gone),
        Err(e) => return Err(Copy::Read(e)),
    };
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent).map_err(Copy::Write)?;
    }
    if meta.file_type().is_symlink() {
        let target = fs::read_link(from).map_err(Copy::Read)?;
        return std::os::unix::fs::symlink(target, to).map_err(Copy::Write);
    }
    if !meta.file_type().is_file() {
        // A directory where a fixture file was: that file's deletion.
        return Err(Copy::Gone);
    }
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(from)
        .map_err(Copy::Read)?;
    let mut out = fs::File::create(to).map_err(Copy::Write)?;
    io::copy(&mut file.take(meta.len()), &mut out).map_err(|e| match e.kind() {
        io::ErrorKind::WriteZero | io::ErrorKind::StorageFull => Copy::Write(e),
        _ => Copy::Read(e),
    })?;
    let mode = if meta.permissions().mode() & 0o111 != 0 {
        0o755
    } else {
        0o644
    };
    fs::set_permissions(to, fs::Permissions::from_mode(mode)).map_err(Copy::Write)
}

/// Removes what is at `path` in the stage, if anything.
fn remove(path: &Path) -> Result<(), CaptureError> {
    let removed = match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    };
    removed.map_err(|source| CaptureError::Write {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_sandbox::apply_patch;

    /// A fixture (`a.py`, `gone.py`, `tests/test_a.py`) and a scratch copy of it.
    fn fixture() -> (tempfile::TempDir, Tree, Scratch) {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir(dir.path().join("tests")).expect("mkdir");
        fs::write(dir.path().join("a.py"), "x = 1\n").expect("write");
        fs::write(dir.path().join("gone.py"), "y = 2\n").expect("write");
        fs::write(dir.path().join("tests/test_a.py"), "assert True\n").expect("write");
        let tree = Tree::scan(dir.path()).expect("scan");
        let work = Scratch::create(dir.path(), &tree, None).expect("copy");
        (dir, tree, work)
    }

    #[tokio::test]
    async fn every_change_is_taken_whatever_git_ignores_and_what_costs_the_host_is_named() {
        let (dir, tree, work) = fixture();
        let w = work.root();
        fs::write(w.join("a.py"), "x = 2\n").expect("write");
        fs::remove_file(w.join("gone.py")).expect("rm");
        fs::write(w.join("shadow.py"), "import os\n").expect("write");
        fs::write(w.join(".gitignore"), "*\n").expect("write");
        fs::create_dir_all(w.join(".git/info")).expect("mkdir");
        fs::write(w.join(".git/info/exclude"), "*\n").expect("write");
        fs::create_dir(w.join("__pycache__")).expect("mkdir");
        fs::write(w.join("__pycache__/a.cpython-311.pyc"), "bytecode").expect("write");
        fs::write(w.join("big.bin"), vec![0u8; 2048]).expect("write");
        fs::write(w.join("linked.txt"), "one\n").expect("write");
        fs::hard_link(w.join("linked.txt"), w.join("again.txt")).expect("link");
        std::os::unix::fs::symlink("a.py", w.join("alias.py")).expect("symlink");
        nix::unistd::mkfifo(&w.join("pipe"), nix::sys::stat::Mode::S_IRWXU).expect("fifo");
        let limits = SubmissionLimits {
            file_bytes: 1024,
            ..SubmissionLimits::default()
        };
        let submission = capture_tree(&tree, dir.path(), w, &limits)
            .await
            .expect("capture");
        assert_eq!(
            submission.changed,
            [".gitignore", "a.py", "alias.py", "gone.py", "shadow.py"]
        );
        let excluded: Vec<String> = submission
            .excluded
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            excluded,
            [
                "again.txt (2 hard links)",
                "big.bin (2048 bytes, over the 1024-byte file cap)",
                "linked.txt (2 hard links)",
                "pipe (a fifo, not a file)",
            ]
        );
        let diff = String::from_utf8(submission.diff.clone()).expect("utf-8");
        for part in [
            "+x = 2",
            "deleted file mode",
            "b/shadow.py",
            "b/.gitignore",
            "new file mode 120000",
        ] {
            assert!(diff.contains(part), "{part}: {diff}");
        }
        assert!(!diff.contains("pyc") && !diff.contains("big.bin"), "{diff}");

        // The diff applied to a fresh copy gives the workspace back, bar what was left out.
        let copy = Scratch::create(dir.path(), &tree, None).expect("copy");
        apply_patch(copy.root(), &submission.diff, Duration::from_secs(30))
            .await
            .expect("apply");
        assert_eq!(
            fs::read_to_string(copy.root().join("a.py")).expect("read"),
            "x = 2\n"
        );
        assert!(!copy.root().join("gone.py").exists());
        assert_eq!(
            fs::read_link(copy.root().join("alias.py")).expect("link"),
            Path::new("a.py")
        );
        assert!(!copy.root().join("big.bin").exists());
    }

    #[tokio::test]
    async fn the_submission_cap_leaves_out_the_files_past_it_and_nothing_changed_is_an_empty_diff()
    {
        let (dir, tree, work) = fixture();
        let limits = SubmissionLimits {
            diff_bytes: 10,
            ..SubmissionLimits::default()
        };
        let unchanged = capture_tree(&tree, dir.path(), work.root(), &limits)
            .await
            .expect("capture");
        assert_eq!(unchanged, Submission::default());
        fs::write(work.root().join("one.txt"), "123456\n").expect("write");
        fs::write(work.root().join("two.txt"), "123456\n").expect("write");
        let capped = capture_tree(&tree, dir.path(), work.root(), &limits)
            .await
            .expect("capture");
        assert_eq!(capped.changed, ["one.txt"]);
        assert_eq!(
            capped
                .excluded
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["two.txt (the submission's 10-byte cap was reached)"]
        );
    }
}
