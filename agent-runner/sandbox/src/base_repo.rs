//! Git repositories that hold one commit and nothing else: what an agent working on a
//! SWE-bench-format task may see of the project's history. [`export`] writes the tree of
//! one commit of a clone into a directory (no `.git`, nothing else of the clone), and
//! [`init`] makes a directory a fresh repository whose only commit is its files: no
//! remote, no other ref, no reflog, no pack, no stash, no hooks, so `git log --all`,
//! `git fsck --lost-found` and `.git/packed-refs` show the base and nothing later.
//!
//! [`final_diff`] is what an agent changed: `git diff` of a work tree against a base
//! tree, through a git directory of the runner's own, whatever the work tree's `.git`
//! holds.
//!
//! Every git command runs with the host's system and global configuration ignored and a
//! fixed identity and date, so the same files always give the same commit id, and an
//! operator's settings (signing, hooks paths, filters) change nothing.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// Author, committer and date of every base commit made here.
const IDENTITY: [(&str, &str); 6] = [
    ("GIT_AUTHOR_NAME", "benchstream"),
    ("GIT_AUTHOR_EMAIL", "benchstream@localhost"),
    ("GIT_AUTHOR_DATE", "2000-01-01T00:00:00Z"),
    ("GIT_COMMITTER_NAME", "benchstream"),
    ("GIT_COMMITTER_EMAIL", "benchstream@localhost"),
    ("GIT_COMMITTER_DATE", "2000-01-01T00:00:00Z"),
];

/// A git command failed.
#[derive(Debug, thiserror::Error)]
pub enum BaseRepoError {
    /// `git` could not be started.
    #[error("cannot run git: {0}")]
    Spawn(io::Error),
    /// `git` failed.
    #[error("git {args}: {stderr}")]
    Git {
        /// Its arguments.
        args: String,
        /// What it wrote to stderr.
        stderr: String,
    },
    /// A file around the repository could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The directory given as a clone is none.
    #[error("{0} is not a git repository")]
    NotARepository(PathBuf),
    /// `git` did not end within its timeout (and was killed).
    #[error("git took longer than {0:?}")]
    TimedOut(Duration),
}

/// `git <args>` with the host's configuration ignored, not yet started.
fn command<I, S>(args: I, envs: &[(&str, &OsStr)]) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = Command::new("git");
    command
        .args(["-c", "safe.directory=*"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .envs(IDENTITY)
        .envs(envs.iter().copied());
    command
}

/// `out` of `git <args>` when it succeeded, else the error with its stderr.
fn succeeded<S: AsRef<OsStr>>(args: &[S], out: Output) -> Result<Output, BaseRepoError> {
    if out.status.success() {
        Ok(out)
    } else {
        Err(BaseRepoError::Git {
            args: args
                .iter()
                .map(|a| a.as_ref().to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

/// `git <args>` with the host's configuration ignored; its output when it succeeds.
fn git<I, S>(args: I, envs: &[(&str, &OsStr)]) -> Result<Output, BaseRepoError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<S> = args.into_iter().collect();
    let out = command(&args, envs)
        .output()
        .map_err(BaseRepoError::Spawn)?;
    succeeded(&args, out)
}

/// [`git`] as a child the async runtime waits for, killed when it takes longer than
/// `timeout`.
async fn git_within(
    args: &[&OsStr],
    envs: &[(&str, &OsStr)],
    timeout: Duration,
) -> Result<Output, BaseRepoError> {
    let mut child = tokio::process::Command::from(command(args, envs));
    child.kill_on_drop(true).stdin(std::process::Stdio::null());
    let out = tokio::time::timeout(timeout, child.output())
        .await
        .map_err(|_| BaseRepoError::TimedOut(timeout))?
        .map_err(BaseRepoError::Spawn)?;
    succeeded(args, out)
}

/// The git directory of the clone at `clone` (a work tree or a bare repository).
pub fn git_dir(clone: &Path) -> Result<PathBuf, BaseRepoError> {
    let out = git(
        [
            OsStr::new("-C"),
            clone.as_os_str(),
            OsStr::new("rev-parse"),
            OsStr::new("--absolute-git-dir"),
        ],
        &[],
    )
    .map_err(|_| BaseRepoError::NotARepository(clone.to_path_buf()))?;
    Ok(PathBuf::from(
        String::from_utf8_lossy(&out.stdout).trim().to_owned(),
    ))
}

/// Writes the files of `commit` of the repository `git_dir` into `dest` (which must be
/// empty or absent): the commit's tree exactly, whatever the clone's work tree holds.
pub fn export(git_dir: &Path, commit: &str, dest: &Path) -> Result<(), BaseRepoError> {
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BaseRepoError::Io { path, source }
    };
    fs::create_dir_all(dest).map_err(io_err(dest))?;
    let index_dir = tempfile::tempdir().map_err(io_err(dest))?;
    let index = index_dir.path().join("index");
    let envs = [("GIT_INDEX_FILE", index.as_os_str())];
    let dir = git_dir.as_os_str();
    let commit_ref = format!("{commit}^{{commit}}");
    git(
        [
            OsStr::new("--git-dir"),
            dir,
            OsStr::new("cat-file"),
            OsStr::new("-e"),
            OsStr::new(&commit_ref),
        ],
        &[],
    )?;
    git(
        [
            OsStr::new("--git-dir"),
            dir,
            OsStr::new("read-tree"),
            OsStr::new(&commit_ref),
        ],
        &envs,
    )?;
    git(
        [
            OsStr::new("--git-dir"),
            dir,
            OsStr::new("--work-tree"),
            dest.as_os_str(),
            OsStr::new("checkout-index"),
            OsStr::new("--all"),
            OsStr::new("--force"),
        ],
        &envs,
    )?;
    Ok(())
}

/// Makes `dir` a fresh repository whose one commit (on `main`, message `message`) holds
/// every file in it, ignored ones included; returns the commit id. A `.git` already in
/// `dir` is replaced.
pub fn init(dir: &Path, message: &str) -> Result<String, BaseRepoError> {
    let dot_git = dir.join(".git");
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BaseRepoError::Io { path, source }
    };
    match fs::symlink_metadata(&dot_git) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(&dot_git).map_err(io_err(&dot_git))?,
        Ok(_) => fs::remove_file(&dot_git).map_err(io_err(&dot_git))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(&dot_git)(e)),
    }
    let c = |args: &[&str]| {
        let mut all = vec![OsStr::new("-C"), dir.as_os_str()];
        all.extend(args.iter().map(OsStr::new));
        git(all, &[])
    };
    c(&["init", "--quiet", "--initial-branch=main"])?;
    c(&["add", "--all", "--force"])?;
    c(&[
        "-c",
        "core.logAllRefUpdates=false",
        "-c",
        "commit.gpgSign=false",
        "commit",
        "--quiet",
        "--no-verify",
        "--allow-empty",
        "-m",
        message,
    ])?;
    // Nothing but the commit: the sample hooks, the description, the last message and any
    // log are not history, but an agent need not wonder about them.
    for extra in ["hooks", "logs", "description", "COMMIT_EDITMSG"] {
        let path = dot_git.join(extra);
        let removed = if path.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        match removed {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&path)(e)),
        }
    }
    let head = c(&["rev-parse", "HEAD"])?;
    Ok(String::from_utf8_lossy(&head.stdout).trim().to_owned())
}

/// Applies `patch` (a `git diff`) to the work tree `work` with `git apply`, within
/// `timeout`. git looks for no repository above `work`: in a repository of its own
/// (a SWE-bench-format task's copy) or none, the paths are `work`'s.
pub async fn apply(work: &Path, patch: &[u8], timeout: Duration) -> Result<(), BaseRepoError> {
    let file = tempfile::NamedTempFile::new().map_err(|source| BaseRepoError::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    fs::write(file.path(), patch).map_err(|source| BaseRepoError::Io {
        path: file.path().to_path_buf(),
        source,
    })?;
    let ceiling = work.parent().unwrap_or(work).as_os_str();
    git_within(
        &[
            OsStr::new("-C"),
            work.as_os_str(),
            OsStr::new("apply"),
            OsStr::new("--whitespace=nowarn"),
            file.path().as_os_str(),
        ],
        &[("GIT_CEILING_DIRECTORIES", ceiling)],
        timeout,
    )
    .await
    .map(|_| ())
}

/// Commits every file of `work_tree` (ignored ones too) as the one commit of a new git
/// directory `git_dir`, within `timeout`: the base a submission is diffed against
/// ([`diff_against_commit`]). Nothing under the work tree decides what the commit holds:
/// the git directory is the runner's own, and `--force` adds what any `.gitignore` names.
pub async fn commit_tree(
    git_dir: &Path,
    work_tree: &Path,
    timeout: Duration,
) -> Result<(), BaseRepoError> {
    let on = |args: &[&'static str]| on_tree(git_dir, work_tree, args);
    git_within(
        &on(&["init", "--quiet", "--initial-branch=main"]),
        &[],
        timeout,
    )
    .await?;
    git_within(&on(&["add", "--all", "--force"]), &[], timeout).await?;
    git_within(
        &on(&[
            "-c",
            "core.logAllRefUpdates=false",
            "-c",
            "commit.gpgSign=false",
            "commit",
            "--quiet",
            "--no-verify",
            "--allow-empty",
            "-m",
            "base",
        ]),
        &[],
        timeout,
    )
    .await
    .map(|_| ())
}

/// `git diff --binary` of everything in `work_tree` (ignored files too) against the commit
/// [`commit_tree`] made in `git_dir`, within `timeout`.
pub async fn diff_against_commit(
    git_dir: &Path,
    work_tree: &Path,
    timeout: Duration,
) -> Result<Vec<u8>, BaseRepoError> {
    let on = |args: &[&'static str]| on_tree(git_dir, work_tree, args);
    git_within(&on(&["add", "--all", "--force"]), &[], timeout).await?;
    let diff = git_within(
        &on(&[
            "diff",
            "--cached",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            "--no-renames",
            "HEAD",
        ]),
        &[],
        timeout,
    )
    .await?;
    Ok(diff.stdout)
}

/// `--git-dir G --work-tree W <args>`.
fn on_tree<'a>(git_dir: &'a Path, work_tree: &'a Path, args: &[&'static str]) -> Vec<&'a OsStr> {
    let mut all = vec![
        OsStr::new("--git-dir"),
        git_dir.as_os_str(),
        OsStr::new("--work-tree"),
        work_tree.as_os_str(),
        // The runner's own settings, whatever the work tree's attributes ask.
        OsStr::new("-c"),
        OsStr::new("core.autocrlf=false"),
        OsStr::new("-c"),
        OsStr::new("core.excludesFile=/dev/null"),
    ];
    all.extend(args.iter().map(|a| OsStr::new(*a)));
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_files_give_the_same_single_commit() {
        let a = tempfile::tempdir().expect("tempdir");
        let b = tempfile::tempdir().expect("tempdir");
        for dir in [a.path(), b.path()] {
            fs::create_dir(dir.join("pkg")).expect("mkdir");
            fs::write(dir.join("pkg/mod.py"), "x = 1\n").expect("write");
            fs::write(dir.join(".gitignore"), "pkg/\n").expect("write");
        }
        let first = init(a.path(), "base").expect("init");
        assert_eq!(init(b.path(), "base").expect("init"), first);
        let out = git(
            [
                OsStr::new("-C"),
                a.path().as_os_str(),
                OsStr::new("log"),
                OsStr::new("--all"),
                OsStr::new("--format=%H"),
            ],
            &[],
        )
        .expect("log");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), first);
        // Ignored files are part of the base too.
        let files = git(
            [
                OsStr::new("-C"),
                a.path().as_os_str(),
                OsStr::new("ls-files"),
            ],
            &[],
        )
        .expect("ls-files");
        assert_eq!(
            String::from_utf8_lossy(&files.stdout),
            ".gitignore\npkg/mod.py\n"
        );
        assert!(!a.path().join(".git/logs").exists());
    }

    #[tokio::test]
    async fn the_diff_is_against_the_base_commit_whatever_the_work_trees_git_says() {
        let work = tempfile::tempdir().expect("tempdir");
        let git_dir = tempfile::tempdir().expect("tempdir");
        let limit = Duration::from_secs(30);
        fs::write(work.path().join("a.py"), "x = 1\n").expect("write");
        fs::write(work.path().join("gone.py"), "y = 2\n").expect("write");
        commit_tree(git_dir.path(), work.path(), limit)
            .await
            .expect("base");
        assert!(diff_against_commit(git_dir.path(), work.path(), limit)
            .await
            .expect("diff")
            .is_empty());
        init(work.path(), "base").expect("init");
        fs::write(work.path().join("a.py"), "x = 2\n").expect("write");
        fs::remove_file(work.path().join("gone.py")).expect("rm");
        fs::write(work.path().join("new.py"), "z = 3\n").expect("write");
        // Ignoring everything and committing in the work tree's own repository hide nothing.
        fs::write(work.path().join(".gitignore"), "*\n").expect("write");
        git(
            [
                OsStr::new("-C"),
                work.path().as_os_str(),
                OsStr::new("commit"),
                OsStr::new("-qam"),
                OsStr::new("hide"),
            ],
            &[],
        )
        .expect("commit");
        let diff = diff_against_commit(git_dir.path(), work.path(), limit)
            .await
            .expect("diff");
        let diff = String::from_utf8(diff).expect("utf-8");
        assert!(diff.contains("diff --git a/a.py b/a.py"), "{diff}");
        assert!(diff.contains("+x = 2"), "{diff}");
        assert!(diff.contains("deleted file mode"), "{diff}");
        assert!(diff.contains("+z = 3"), "{diff}");
        assert!(diff.contains("b/.gitignore"), "{diff}");
        assert!(!diff.contains(".git/"), "{diff}");
    }
}
