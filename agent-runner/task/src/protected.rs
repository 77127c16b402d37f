//! The judge's own files of a task: its `[judge] protect` patterns (and those the runner
//! adds for its language and for SWE-bench-format tasks), compiled once when the task is
//! loaded. Putting them back before the verdict is the judge's (`bench-judge`).

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use bench_sandbox::Tree;

/// The compiled `[judge] protect` patterns of a task.
///
/// Patterns are globs over paths relative to the fixture root, `/`-separated: `*`, `?` and
/// `[...]` stay within one path component, `**` spans any number of them (`tests/**` is
/// everything under `tests/`), and a pattern without `/` matches at the root only.
#[derive(Debug, Clone)]
pub struct Protected {
    /// The patterns as written, for messages.
    patterns: Vec<String>,
    /// All of them, matched at once.
    set: GlobSet,
}

impl Protected {
    /// Compiles `patterns`; an invalid glob is an error naming it.
    pub fn new(patterns: &[String]) -> Result<Protected, globset::Error> {
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            builder.add(
                GlobBuilder::new(pattern)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()?,
            );
        }
        Ok(Protected {
            patterns: patterns.to_vec(),
            set: builder.build()?,
        })
    }

    /// No pattern: nothing is restored.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The patterns as written.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Whether the relative path `path` is protected.
    pub fn matches(&self, path: &str) -> bool {
        self.set.is_match(path)
    }

    /// Patterns that match none of the files of `fixture` (most likely typos: such a
    /// pattern protects nothing the fixture ships).
    pub fn unmatched(&self, fixture: &Tree) -> Vec<&str> {
        let mut hit = vec![false; self.patterns.len()];
        for entry in fixture.entries() {
            for i in self.set.matches(&entry.path) {
                hit[i] = true;
            }
        }
        self.patterns
            .iter()
            .zip(hit)
            .filter(|(_, hit)| !hit)
            .map(|(p, _)| p.as_str())
            .collect()
    }
}
