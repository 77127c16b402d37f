//! `agent-runner scenarios hash` ([`repin`]) and `scenarios check` ([`check_pins`]): a
//! scenarios directory's `pins.toml` rewritten or compared with its files, each returning a
//! [`PinReport`] (an [`Outcome`]: exit 3 when a check found a difference).

use std::fmt;
use std::path::Path;

use crate::error::{Error, Exit, Outcome};
use bench_task::Pins;

/// What `scenarios hash` or `scenarios check` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinReport {
    /// `scenarios hash`: `pins.toml` was rewritten.
    Repinned {
        /// What changed since the previous pins, one line each.
        changes: Vec<String>,
        /// Scenarios now pinned.
        scenarios: usize,
        /// Tasks now pinned.
        tasks: usize,
    },
    /// `scenarios check`: `pins.toml` was compared with the files, not changed.
    Checked {
        /// What differs from the pins, one line each; empty when everything matches.
        changes: Vec<String>,
    },
}

/// Re-pins `dir`: hashes every scenario file, task file and fixture into its
/// `pins.toml`.
pub fn repin(dir: &Path) -> Result<PinReport, Error> {
    let old = Pins::load(dir)?.unwrap_or_default();
    let new = Pins::compute(dir)?;
    new.write(dir)?;
    Ok(PinReport::Repinned {
        changes: new.changes_since(&old),
        scenarios: new.scenarios.len(),
        tasks: new.tasks.len(),
    })
}

/// Compares the `pins.toml` of `dir` with its files, changing nothing.
pub fn check_pins(dir: &Path) -> Result<PinReport, Error> {
    let pinned = Pins::load(dir)?.unwrap_or_default();
    Ok(PinReport::Checked {
        changes: Pins::compute(dir)?.changes_since(&pinned),
    })
}

impl fmt::Display for PinReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (PinReport::Repinned { changes, .. } | PinReport::Checked { changes }) = self;
        for change in changes {
            writeln!(f, "{change}")?;
        }
        if let PinReport::Repinned {
            scenarios, tasks, ..
        } = self
        {
            writeln!(f, "pinned {scenarios} scenarios and {tasks} tasks")?;
        }
        Ok(())
    }
}

/// [`Exit::Pins`] when a check found a difference.
impl Outcome for PinReport {
    fn exit(&self) -> Exit {
        match self {
            PinReport::Checked { changes } if !changes.is_empty() => Exit::Pins,
            _ => Exit::Ok,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A changed fixture is reported by a check (exit 3), re-pinned by a hash (exit 0),
    /// after which a check finds nothing.
    #[test]
    fn check_reports_a_change_until_it_is_repinned() {
        let dir = tempfile::tempdir().expect("tempdir");
        let scenarios = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios");
        copy_dir(Path::new(scenarios), dir.path());
        let clean = check_pins(dir.path()).expect("check");
        assert_eq!(clean.exit(), Exit::Ok, "{clean}");
        assert_eq!(clean.to_string(), "");

        let smoke = dir.path().join("smoke.toml");
        let text = std::fs::read_to_string(&smoke).expect("smoke");
        std::fs::write(&smoke, text + "\n# changed\n").expect("write");
        let changed = check_pins(dir.path()).expect("check");
        assert_eq!(changed.exit(), Exit::Pins, "{changed}");
        assert_eq!(changed.to_string(), "~ scenario smoke.toml\n");

        let repinned = repin(dir.path()).expect("hash");
        assert_eq!(repinned.exit(), Exit::Ok);
        let text = repinned.to_string();
        assert!(text.starts_with("~ scenario smoke.toml\npinned "), "{text}");
        assert_eq!(check_pins(dir.path()).expect("check").exit(), Exit::Ok);
    }

    fn copy_dir(from: &Path, to: &Path) {
        for entry in std::fs::read_dir(from).expect("read dir") {
            let entry = entry.expect("entry");
            let target = to.join(entry.file_name());
            if entry.file_type().expect("type").is_dir() {
                std::fs::create_dir_all(&target).expect("mkdir");
                copy_dir(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), &target).expect("copy");
            }
        }
    }
}
