//! The `grep` tool: a regular-expression search over the text files under a path in the
//! scratch copy, in-process (no shell quoting, an exact footprint of what was read). It walks
//! without following links and reads only regular files with one hard link.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use bench_sandbox::{is_ignored, walk, FileEntry, Scratch};
use bench_schemas::{EvidenceFootprint, ExitKind};
use regex::Regex;

use super::outcome::ToolOutcome;

/// Matching lines reported; the count of the rest is given.
const MAX_MATCHES: usize = 200;
/// A matching line is cut to this many chars.
const MAX_LINE_CHARS: usize = 300;
/// Bigger files are skipped.
const MAX_FILE_BYTES: u64 = 4 << 20;

/// Searches `pattern` under `raw_path` (default: the root).
pub fn grep(scratch: &Scratch, pattern: &str, raw_path: Option<&str>) -> ToolOutcome {
    let regex = match Regex::new(pattern) {
        Ok(r) => r,
        Err(e) => return ToolOutcome::failed(ExitKind::UserError, format!("invalid pattern: {e}")),
    };
    let raw_path = raw_path.unwrap_or(".");
    let base = match scratch.resolve(raw_path) {
        Ok(p) => p,
        Err(e) => return ToolOutcome::path_error(raw_path, &e),
    };
    if !base.exists() {
        return ToolOutcome::missing_path(raw_path);
    }
    let files = collect_files(&base);

    let mut out = String::new();
    let mut footprint = EvidenceFootprint::default();
    let mut matches = 0usize;
    for file in files {
        let Ok(bytes) = fs::read(&file) else { continue };
        if bytes.contains(&0) {
            continue; // binary
        }
        footprint.bytes_read += bytes.len() as u64;
        let text = String::from_utf8_lossy(&bytes);
        let rel = scratch.relative(&file);
        let mut file_matched = false;
        for (n, line) in text.lines().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            file_matched = true;
            matches += 1;
            if matches <= MAX_MATCHES {
                let shown: String = line.chars().take(MAX_LINE_CHARS).collect();
                out.push_str(&format!("{rel}:{}:{shown}\n", n + 1));
            }
        }
        if file_matched {
            footprint.files_read.push(rel);
        }
    }
    if matches == 0 {
        out.push_str("no matches\n");
    } else if matches > MAX_MATCHES {
        out.push_str(&format!(
            "[{} more matches not shown]\n",
            matches - MAX_MATCHES
        ));
    }
    ToolOutcome::done(out, footprint)
}

/// The files under `path` (or `path` itself) that grep reads, sorted. Unreadable
/// entries are passed over; so are files named like one of the
/// [`IGNORED_DIRS`](bench_sandbox::IGNORED_DIRS) (a submodule's `.git` file).
fn collect_files(path: &Path) -> Vec<PathBuf> {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Vec::new();
    };
    if !meta.is_dir() {
        return if searchable(&meta) {
            vec![path.to_path_buf()]
        } else {
            Vec::new()
        };
    }
    walk(path)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| !is_ignored(entry.file_name()))
        .filter(|entry| entry.metadata().is_ok_and(|meta| searchable(&meta)))
        .map(FileEntry::into_path)
        .collect()
}

/// A regular file of at most [`MAX_FILE_BYTES`] with one hard link: a hard link may be a
/// file outside the workspace, not read, as by the file tools.
fn searchable(meta: &fs::Metadata) -> bool {
    meta.is_file() && meta.len() <= MAX_FILE_BYTES && meta.nlink() == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_sandbox::Tree;

    #[test]
    fn finds_lines_and_records_files() {
        let fixture = tempfile::tempdir().expect("tempdir");
        fs::create_dir(fixture.path().join("pkg")).expect("mkdir");
        fs::write(fixture.path().join("pkg/a.py"), "def f():\n    return 1\n").expect("write");
        fs::write(fixture.path().join("b.py"), "x = 1\n").expect("write");
        let tree = Tree::scan(fixture.path()).expect("scan");
        let sb = Scratch::create(fixture.path(), &tree, None).expect("sandbox");

        let out = grep(&sb, r"def \w+", None);
        assert_eq!(out.exit_kind, ExitKind::Ok);
        assert_eq!(out.observation, "pkg/a.py:1:def f():\n");
        assert_eq!(out.footprint.files_read, vec!["pkg/a.py"]);
        assert_eq!(grep(&sb, "zzz", Some("pkg")).observation, "no matches\n");
        assert_eq!(grep(&sb, "(", None).exit_kind, ExitKind::UserError);
    }
}
