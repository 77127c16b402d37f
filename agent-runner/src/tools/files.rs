//! The file tools: `view`, `str_replace` and `write_file`, inside the sandbox.

use std::fs;
use std::io;
use std::path::Path;

use schemas::{EvidenceFootprint, ExitKind};

use super::footprint::edit_footprint;
use super::{Sandbox, ToolOutcome};

/// Files larger than this are not loaded by `view`/`str_replace` (use `grep` or `bash`).
const MAX_FILE_BYTES: u64 = 8 << 20;

/// `view`: numbered lines of a file (1-based, optional inclusive range), or a directory
/// listing.
pub fn view(
    sandbox: &Sandbox,
    raw_path: &str,
    start: Option<u64>,
    end: Option<u64>,
) -> ToolOutcome {
    let path = match sandbox.resolve(raw_path) {
        Ok(p) => p,
        Err(e) => return ToolOutcome::path_error(raw_path, &e),
    };
    let rel = sandbox.relative(&path);
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
pub fn str_replace(sandbox: &Sandbox, raw_path: &str, old: &str, new: &str) -> ToolOutcome {
    let path = match sandbox.resolve(raw_path) {
        Ok(p) => p,
        Err(e) => return ToolOutcome::path_error(raw_path, &e),
    };
    let rel = sandbox.relative(&path);
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
pub fn write_file(sandbox: &Sandbox, raw_path: &str, content: &str) -> ToolOutcome {
    let path = match sandbox.resolve(raw_path) {
        Ok(p) => p,
        Err(e) => return ToolOutcome::path_error(raw_path, &e),
    };
    let rel = sandbox.relative(&path);
    if path.is_dir() {
        return ToolOutcome::failed(ExitKind::UserError, format!("{rel} is a directory"));
    }
    let old = if path.exists() {
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
    if let Err(e) = fs::write(path, new) {
        return ToolOutcome::failed(ExitKind::SystemError, format!("write {rel}: {e}"));
    }
    let footprint = edit_footprint(rel, old, new);
    let verb = if old.is_some() { "edited" } else { "created" };
    ToolOutcome::done(
        format!("{verb} {rel} ({} lines changed)\n", footprint.lines_changed),
        footprint,
    )
}

fn read_text(path: &Path, raw_path: &str) -> Result<String, Box<ToolOutcome>> {
    let failure = |e: io::Error| Box::new(io_failure(raw_path, &e));
    let meta = fs::metadata(path).map_err(failure)?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(Box::new(ToolOutcome::failed(
            ExitKind::UserError,
            format!(
                "{raw_path} is {} bytes, over the {MAX_FILE_BYTES} byte limit of this tool",
                meta.len()
            ),
        )));
    }
    let bytes = fs::read(path).map_err(failure)?;
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

fn list_dir(path: &Path, rel: &str) -> ToolOutcome {
    let entries = match fs::read_dir(path) {
        Ok(entries) => entries,
        Err(e) => return io_failure(rel, &e),
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() {
                format!("{name}/")
            } else {
                name
            }
        })
        .collect();
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
    use crate::scenario::Tree;

    fn sandbox_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Sandbox) {
        let fixture = tempfile::tempdir().expect("tempdir");
        for (name, text) in files {
            fs::write(fixture.path().join(name), text).expect("write");
        }
        let tree = Tree::scan(fixture.path()).expect("scan");
        let sandbox = Sandbox::create(fixture.path(), &tree).expect("sandbox");
        (fixture, sandbox)
    }

    #[test]
    fn view_numbers_lines_in_range() {
        let (_f, sb) = sandbox_with(&[("a.py", "one\ntwo\nthree\n")]);
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
        let (_f, sb) = sandbox_with(&[("a.py", "x = 1\nx = 1\ny = 2\n")]);
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
        let (_f, sb) = sandbox_with(&[("a.py", "")]);
        let escape = write_file(&sb, "../evil.py", "x");
        assert_eq!(escape.exit_kind, ExitKind::UserError);
        assert_eq!(escape.bad_path.as_deref(), Some("../evil.py"));
        let created = write_file(&sb, "tests/test_new.py", "assert True\n");
        assert_eq!(created.exit_kind, ExitKind::Ok);
        assert_eq!(created.footprint.tests_added, 1);
    }
}
