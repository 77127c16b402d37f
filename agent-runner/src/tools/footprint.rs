//! Measuring what a tool call touched (`tool_call.evidence_footprint`): lines changed by
//! an edit, whether a path is a test file, and which files a shell command changed.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::SystemTime;

use bench_schemas::EvidenceFootprint;

use bench_sandbox::walk;

/// Lines removed plus lines added between two texts, after dropping the lines they share
/// at the start and at the end (a one-hunk diff, enough for an edit's size).
pub fn lines_changed(old: &str, new: &str) -> u64 {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    (old.len() - prefix - suffix + new.len() - prefix - suffix) as u64
}

/// Whether a relative path names a test file (`test_x.py`, `x_test.go`, `tests/...`).
pub fn is_test_path(path: &str) -> bool {
    let mut parts = path.split('/');
    let file = parts.next_back().unwrap_or_default();
    let stem = file.split('.').next().unwrap_or_default();
    parts.any(|dir| dir == "tests" || dir == "test")
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
}

/// Footprint of writing `new` over `old` (`None` when the file is new) at `path`.
pub fn edit_footprint(path: &str, old: Option<&str>, new: &str) -> EvidenceFootprint {
    let is_test = is_test_path(path);
    EvidenceFootprint {
        files_read: if old.is_some() {
            vec![path.to_owned()]
        } else {
            Vec::new()
        },
        files_modified: vec![path.to_owned()],
        lines_changed: lines_changed(old.unwrap_or_default(), new),
        tests_added: u32::from(is_test && old.is_none()),
        tests_modified: u32::from(is_test && old.is_some()),
        bytes_read: old.map_or(0, |o| o.len() as u64),
        bytes_written: new.len() as u64,
    }
}

/// File metadata of a directory tree, to see what a shell command changed without
/// reading contents.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    files: BTreeMap<String, (u64, Option<SystemTime>, u32)>,
}

impl Snapshot {
    /// Walks `root` (skipping [`IGNORED_DIRS`](bench_sandbox::IGNORED_DIRS) and
    /// symlinks). Unreadable entries are skipped: a footprint is evidence, not a reason to
    /// fail the call.
    pub fn take(root: &Path) -> Snapshot {
        let files = walk(root)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_file())
            .filter_map(|entry| {
                let meta = entry.metadata().ok()?;
                let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
                Some((
                    rel.to_string_lossy().into_owned(),
                    (meta.len(), meta.modified().ok(), meta.permissions().mode()),
                ))
            })
            .collect();
        Snapshot { files }
    }

    /// Files added or changed in `after`, and files removed, with their footprint:
    /// `files_modified` lists all of them, `bytes_written` sums the sizes of the added or
    /// changed ones.
    pub fn footprint_since(&self, after: &Snapshot) -> EvidenceFootprint {
        let mut footprint = EvidenceFootprint::default();
        for (path, meta) in &after.files {
            if self.files.get(path) != Some(meta) {
                footprint.files_modified.push(path.clone());
                footprint.bytes_written += meta.0;
                let is_test = is_test_path(path);
                if self.files.contains_key(path) {
                    footprint.tests_modified += u32::from(is_test);
                } else {
                    footprint.tests_added += u32::from(is_test);
                }
            }
        }
        for path in self.files.keys() {
            if !after.files.contains_key(path) {
                footprint.files_modified.push(path.clone());
            }
        }
        footprint.files_modified.sort();
        footprint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn counts_one_hunk() {
        assert_eq!(lines_changed("a\nb\nc\n", "a\nB\nc\n"), 2);
        assert_eq!(lines_changed("a\nb\n", "a\nb\nc\nd\n"), 2);
        assert_eq!(lines_changed("", "x\ny\n"), 2);
        assert_eq!(lines_changed("same\n", "same\n"), 0);
    }

    #[test]
    fn recognises_tests() {
        for t in [
            "test_slugify.py",
            "pkg/foo_test.go",
            "tests/cli.rs",
            "a/test/x.sh",
        ] {
            assert!(is_test_path(t), "{t}");
        }
        for n in ["slugify.py", "contest.py", "src/lib.rs"] {
            assert!(!is_test_path(n), "{n}");
        }
    }

    #[test]
    fn snapshot_sees_shell_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("keep.txt"), "k").expect("write");
        fs::write(dir.path().join("gone.txt"), "g").expect("write");
        let before = Snapshot::take(dir.path());
        fs::write(dir.path().join("test_new.py"), "pass\n").expect("write");
        fs::remove_file(dir.path().join("gone.txt")).expect("rm");
        let fp = before.footprint_since(&Snapshot::take(dir.path()));
        assert_eq!(fp.files_modified, vec!["gone.txt", "test_new.py"]);
        assert_eq!(fp.tests_added, 1);
        assert_eq!(fp.bytes_written, 5);
    }
}
