//! The file tools: `view`, `str_replace` and `write_file`, inside the scratch copy.
//!
//! They run in the runner's process (on a blocking thread, under the call's timeout), so
//! they guard themselves: the path goes through no symlink ([`Scratch::resolve`]), the
//! file is opened with `O_NOFOLLOW | O_NONBLOCK` (a FIFO cannot block the open), and only a
//! regular file with a single hard link is read or written: a FIFO, socket or device is
//! refused, and so is a hard link to a file outside the workspace.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use nix::fcntl::OFlag;

use bench_sandbox::{walk, Scratch};
use bench_schemas::{EvidenceFootprint, ExitKind};

use super::footprint::edit_footprint;
use super::outcome::ToolOutcome;

/// Files larger than this are not loaded by `view`/`str_replace` (use `grep` or `bash`).
const MAX_FILE_BYTES: u64 = 8 << 20;

/// `view`: numbered lines of a file (1-based, optional inclusive range), or a directory
/// listing.
pub fn view(
    scratch: &Scratch,
    raw_path: &str,
    start: Option<u64>,
    end: Option<u64>,
) -> ToolOutcome {
    let path = match scratch.resolve(raw_path) {
        Ok(p) => p,
        Err(e) => return ToolOutcome::path_error(raw_path, &e),
    };
    let rel = scratch.relative(&path);
    if path.is_dir() {
        return list_dir(&path, &rel);
    }
    let text = match read_text(&path, raw_path) {
        Ok(t) => t,
        Err(outcome) => return *outcome,
    };
    let total = text.lines().count() as u64;
    let first = start.unwrap_or(1);
    let last = end.unwrap_or(total).min(total);
    if first == 0 || (end.is_some() && last < first) || (first > total && total > 0) {
        return ToolOutcome::failed(
            ExitKind::UserError,
            format!("invalid line range {first}..{last} for {rel} ({total} lines)"),
        );
    }
    let mut out = String::new();
    for (n, line) in text.lines().enumerate() {
        let n = n as u64 + 1;
        if n >= first && n <= last {
            out.push_str(&format!("{n:>6}\t{line}\n"));
        }
    }
    if total == 0 {
        out.push_str(&format!("({rel} is empty)\n"));
    }
    let footprint = EvidenceFootprint {
        files_read: vec![rel],
        bytes_read: text.len() as u64,
        ..EvidenceFootprint::default()
    };
    ToolOutcome::done(out, footprint)
}

/// `str_replace`: replaces the single occurrence of `old` with `new`.
pub fn str_replace(scratch: &Scratch, raw_path: &str, old: &str, new: &str) -> ToolOutcome {
    let path = match scratch.resolve(raw_path) {
        Ok(p) => p,
        Err(e) => return ToolOutcome::path_error(raw_path, &e),
    };
    let rel = scratch.relative(&path);
    if old.is_empty() {
        return ToolOutcome::failed(ExitKind::UserError, "old must not be empty".into());
    }
    let text = match read_text(&path, raw_path) {
        Ok(t) => t,
        Err(outcome) => return *outcome,
    };
    let count = text.matches(old).count();
    if count != 1 {
        let why = if count == 0 {
            "was not found".to_owned()
        } else {
            format!("occurs {count} times; include more context to make it unique")
        };
        return ToolOutcome::failed(ExitKind::UserError, format!("old text in {rel} {why}"));
    }
    let updated = text.replacen(old, new, 1);
    write(&path, &rel, Some(&text), &updated)
}

/// `write_file`: creates or overwrites a file (parent directories included).
pub fn write_file(scratch: &Scratch, raw_path: &str, content: &str) -> ToolOutcome {
    let path = match scratch.resolve(raw_path) {
        Ok(p) => p,
        Err(e) => return ToolOutcome::path_error(raw_path, &e),
    };
    let rel = scratch.relative(&path);
    if path.is_dir() {
        return ToolOutcome::failed(ExitKind::UserError, format!("{rel} is a directory"));
    }
    let old = if fs::symlink_metadata(&path).is_ok() {
        match read_text(&path, raw_path) {
            Ok(t) => Some(t),
            Err(outcome) => return *outcome,
        }
    } else {
        None
    };
    if let Some(parent) = path.parent() {
        if let Err(e) = fs::create_dir_all(parent) {
            return ToolOutcome::failed(ExitKind::SystemError, format!("create {rel}: {e}"));
        }
    }
    write(&path, &rel, old.as_deref(), content)
}

fn write(path: &Path, rel: &str, old: Option<&str>, new: &str) -> ToolOutcome {
    let written = open_checked(path, rel, true).and_then(|mut file| {
        // Truncated only once the file is known to be the workspace's own regular file.
        file.set_len(0)
            .and_then(|()| file.write_all(new.as_bytes()))
            .map_err(|e| {
                Box::new(ToolOutcome::failed(
                    ExitKind::SystemError,
                    format!("write {rel}: {e}"),
                ))
            })
    });
    if let Err(outcome) = written {
        return *outcome;
    }
    let footprint = edit_footprint(rel, old, new);
    let verb = if old.is_some() { "edited" } else { "created" };
    ToolOutcome::done(
        format!("{verb} {rel} ({} lines changed)\n", footprint.lines_changed),
        footprint,
    )
}

/// Opens `path` without following a link (`O_NOFOLLOW`) or blocking (`O_NONBLOCK`), for
/// reading or for writing (created if missing), and checks it is a regular file with one
/// hard link.
fn open_checked(path: &Path, raw_path: &str, write: bool) -> Result<File, Box<ToolOutcome>> {
    let flags = OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK;
    let file = OpenOptions::new()
        .read(!write)
        .write(write)
        .create(write)
        .custom_flags(flags.bits())
        .open(path)
        .map_err(|e| Box::new(io_failure(raw_path, &e)))?;
    let meta = file
        .metadata()
        .map_err(|e| Box::new(io_failure(raw_path, &e)))?;
    let refuse = |why: &str| {
        Box::new(ToolOutcome {
            bad_path: Some(raw_path.to_owned()),
            ..ToolOutcome::failed(ExitKind::UserError, format!("{raw_path}: {why}"))
        })
    };
    if !meta.is_file() {
        return Err(refuse(
            "not a regular file (a FIFO, socket or device); use bash for it",
        ));
    }
    if meta.nlink() > 1 {
        return Err(refuse(
            "has more than one hard link; the file tools only touch files the workspace owns alone",
        ));
    }
    Ok(file)
}

fn read_text(path: &Path, raw_path: &str) -> Result<String, Box<ToolOutcome>> {
    let mut file = open_checked(path, raw_path, false)?;
    let len = file
        .metadata()
        .map_err(|e| Box::new(io_failure(raw_path, &e)))?
        .len();
    if len > MAX_FILE_BYTES {
        return Err(Box::new(ToolOutcome::failed(
            ExitKind::UserError,
            format!("{raw_path} is {len} bytes, over the {MAX_FILE_BYTES} byte limit of this tool"),
        )));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| Box::new(io_failure(raw_path, &e)))?;
    String::from_utf8(bytes).map_err(|_| {
        Box::new(ToolOutcome::failed(
            ExitKind::UserError,
            format!("{raw_path} is not UTF-8 text"),
        ))
    })
}

fn io_failure(raw_path: &str, e: &io::Error) -> ToolOutcome {
    if e.kind() == io::ErrorKind::NotFound {
        ToolOutcome::missing_path(raw_path)
    } else {
        ToolOutcome::failed(ExitKind::SystemError, format!("{raw_path}: {e}"))
    }
}

/// The entries of the directory `path`, all of them (caches too), linked directories
/// marked as directories.
fn list_dir(path: &Path, rel: &str) -> ToolOutcome {
    let mut names = Vec::new();
    for entry in walk(path).max_depth(1).include_ignored() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) if e.path() == path => return io_failure(rel, &e.into()),
            Err(_) => continue, // one unreadable entry
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        names.push(if entry.path().is_dir() {
            format!("{name}/")
        } else {
            name
        });
    }
    // By the shown name: `a.txt` before `a/`.
    names.sort();
    let mut out = format!("{rel}/:\n");
    for name in names {
        out.push_str(&format!("  {name}\n"));
    }
    ToolOutcome::done(out, EvidenceFootprint::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_sandbox::Tree;

    fn scratch_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Scratch) {
        let fixture = tempfile::tempdir().expect("tempdir");
        for (name, text) in files {
            fs::write(fixture.path().join(name), text).expect("write");
        }
        let tree = Tree::scan(fixture.path()).expect("scan");
        let scratch = Scratch::create(fixture.path(), &tree, None).expect("sandbox");
        (fixture, scratch)
    }

    #[test]
    fn view_numbers_lines_in_range() {
        let (_f, sb) = scratch_with(&[("a.py", "one\ntwo\nthree\n")]);
        let out = view(&sb, "a.py", Some(2), Some(3));
        assert_eq!(out.exit_kind, ExitKind::Ok);
        assert_eq!(out.observation, "     2\ttwo\n     3\tthree\n");
        assert_eq!(out.footprint.files_read, vec!["a.py"]);
        assert_eq!(
            view(&sb, "a.py", Some(0), None).exit_kind,
            ExitKind::UserError
        );
        assert_eq!(
            view(&sb, "nope.py", None, None).exit_kind,
            ExitKind::UserError
        );
    }

    #[test]
    fn str_replace_needs_a_unique_match() {
        let (_f, sb) = scratch_with(&[("a.py", "x = 1\nx = 1\ny = 2\n")]);
        assert_eq!(
            str_replace(&sb, "a.py", "x = 1", "x = 3").exit_kind,
            ExitKind::UserError
        );
        let ok = str_replace(&sb, "a.py", "y = 2", "y = 3");
        assert_eq!(ok.exit_kind, ExitKind::Ok);
        assert_eq!(ok.footprint.files_modified, vec!["a.py"]);
        assert_eq!(ok.footprint.lines_changed, 2);
        assert_eq!(
            fs::read_to_string(sb.root().join("a.py")).expect("read"),
            "x = 1\nx = 1\ny = 3\n"
        );
    }

    #[test]
    fn write_file_refuses_escapes_and_counts_tests() {
        let (_f, sb) = scratch_with(&[("a.py", "")]);
        let escape = write_file(&sb, "../evil.py", "x");
        assert_eq!(escape.exit_kind, ExitKind::UserError);
        assert_eq!(escape.bad_path.as_deref(), Some("../evil.py"));
        let created = write_file(&sb, "tests/test_new.py", "assert True\n");
        assert_eq!(created.exit_kind, ExitKind::Ok);
        assert_eq!(created.footprint.tests_added, 1);
    }

    #[test]
    fn links_and_special_files_are_refused() {
        let (_f, sb) = scratch_with(&[("a.py", "x\n")]);
        let outside = tempfile::tempdir().expect("tempdir");
        let canary = outside.path().join("canary");
        fs::write(&canary, "secret\n").expect("write");
        fs::hard_link(&canary, sb.root().join("hard")).expect("hard link");
        std::os::unix::fs::symlink(outside.path().join("new"), sb.root().join("dangling"))
            .expect("symlink");
        nix::unistd::mkfifo(&sb.root().join("fifo"), nix::sys::stat::Mode::S_IRWXU)
            .expect("mkfifo");
        assert_eq!(view(&sb, "hard", None, None).exit_kind, ExitKind::UserError);
        assert_eq!(
            str_replace(&sb, "hard", "secret", "owned").exit_kind,
            ExitKind::UserError
        );
        assert_eq!(
            write_file(&sb, "hard", "owned").exit_kind,
            ExitKind::UserError
        );
        assert_eq!(
            write_file(&sb, "dangling", "owned").exit_kind,
            ExitKind::UserError
        );
        assert_eq!(view(&sb, "fifo", None, None).exit_kind, ExitKind::UserError);
        assert_eq!(fs::read_to_string(&canary).expect("read"), "secret\n");
        assert!(!outside.path().join("new").exists());
    }
}
