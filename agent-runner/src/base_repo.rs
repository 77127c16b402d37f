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
    #[error("cannot run git: {0}")]
    Spawn(io::Error),
    #[error("git {args}: {stderr}")]
    Git { args: String, stderr: String },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{0} is not a git repository")]
    NotARepository(PathBuf),
}

/// `git <args>` with the host's configuration ignored; its output when it succeeds.
fn git<I, S>(args: I, envs: &[(&str, &OsStr)]) -> Result<Output, BaseRepoError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<S> = args.into_iter().collect();
    let out = Command::new("git")
        .args(["-c", "safe.directory=*"])
        .args(&args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .envs(IDENTITY)
        .envs(envs.iter().copied())
        .output()
        .map_err(BaseRepoError::Spawn)?;
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

/// Applies `patch` (a `git diff`) to the work tree `work` with `git apply`.
pub fn apply(work: &Path, patch: impl AsRef<[u8]>) -> Result<(), BaseRepoError> {
    let file = tempfile::NamedTempFile::new().map_err(|source| BaseRepoError::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    fs::write(file.path(), patch.as_ref()).map_err(|source| BaseRepoError::Io {
        path: file.path().to_path_buf(),
        source,
    })?;
    git(
        [
            OsStr::new("-C"),
            work.as_os_str(),
            OsStr::new("apply"),
            OsStr::new("--whitespace=nowarn"),
            file.path().as_os_str(),
        ],
        &[],
    )
    .map(|_| ())
}

/// `git diff --binary` of `work` against `base` (two directories; their `.git`s are not
/// read): what was added, changed and deleted, files the work tree's `.gitignore` ignores
/// left out unless the base has them, as `git diff` shows a change to a repository whose
/// one commit is `base`. Made in a git directory of its own, so nothing under `work` (an
/// agent's, its `.git` included) decides what the diff holds, and no configuration of it
/// runs anything.
pub fn final_diff(base: &Path, work: &Path) -> Result<Vec<u8>, BaseRepoError> {
    let scratch = tempfile::tempdir().map_err(|source| BaseRepoError::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    let git_dir = scratch.path().join("git");
    let on = |tree: &Path, args: &[&str]| {
        let mut all = vec![
            OsStr::new("--git-dir"),
            git_dir.as_os_str(),
            OsStr::new("--work-tree"),
            tree.as_os_str(),
        ];
        all.extend(args.iter().map(OsStr::new));
        git(all, &[])
    };
    on(base, &["init", "--quiet", "--initial-branch=main"])?;
    on(base, &["add", "--all", "--force"])?;
    on(
        base,
        &[
            "-c",
            "core.logAllRefUpdates=false",
            "commit",
            "--quiet",
            "--no-verify",
            "--allow-empty",
            "-m",
            "base",
        ],
    )?;
    on(work, &["add", "--all"])?;
    let diff = on(
        work,
        &[
            "diff",
            "--cached",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            "HEAD",
        ],
    )?;
    Ok(diff.stdout)
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

    #[test]
    fn the_final_diff_is_against_the_base_whatever_the_work_trees_git_says() {
        let base = tempfile::tempdir().expect("tempdir");
        let work = tempfile::tempdir().expect("tempdir");
        for dir in [base.path(), work.path()] {
            fs::write(dir.join("a.py"), "x = 1\n").expect("write");
            fs::write(dir.join("gone.py"), "y = 2\n").expect("write");
        }
        init(work.path(), "base").expect("init");
        fs::write(work.path().join("a.py"), "x = 2\n").expect("write");
        fs::remove_file(work.path().join("gone.py")).expect("rm");
        fs::write(work.path().join("new.py"), "z = 3\n").expect("write");
        // Committing the change in the work tree's own repository hides nothing.
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
        let diff =
            String::from_utf8(final_diff(base.path(), work.path()).expect("diff")).expect("utf-8");
        assert!(diff.contains("diff --git a/a.py b/a.py"), "{diff}");
        assert!(diff.contains("+x = 2"), "{diff}");
        assert!(diff.contains("deleted file mode"), "{diff}");
        assert!(diff.contains("+z = 3"), "{diff}");
        assert!(final_diff(base.path(), base.path())
            .expect("diff")
            .is_empty());
    }
}
