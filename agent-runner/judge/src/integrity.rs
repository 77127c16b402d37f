//! Integrity flags of a judged run (`run_stop.integrity`): facts about how the result came
//! about that a reader may want to leave out of a rate. Each is decided here from what the
//! runner already holds, with no I/O: the protected files the judge had to restore, what
//! the submission left out, whether the workspace's own verdict differs from the diff's,
//! modules the diff adds that are named like installed ones, the lines an `exec` agent
//! tried to pass off as other producers' events, the agent's `bash` commands (native runs
//! only: an `exec` agent's commands are its own), and the final diff beside the gold
//! patch (SWE-bench-format tasks). They are cheap and
//! honest rather than complete: a command that hides what it does (a script written to a
//! file, an encoded string) is not counted.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use bench_schemas::RunIntegrity;
use regex::Regex;

use crate::protect::Tampered;
use crate::submission::Excluded;

/// Commands that read history or git's internals.
static HISTORY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\bgit\b[^\n;&|]*?\b(log|show|reflog|fsck|rev-list|cat-file|ls-tree|for-each-ref|blame|describe|whatchanged)\b|\.git/(objects|refs|logs|packed-refs)",
    )
    .unwrap_or_else(|e| unreachable!("a valid pattern: {e}"))
});

/// Commands that reach for the network.
static NETWORK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(curl|wget|ssh)\b|\bpip3?\s+(install|download)\b|-m\s+pip\s+(install|download)\b|\bgit\b[^\n;&|]*?\b(clone|fetch|pull)\b|\bapt(-get)?\s+install\b|\bnpm\s+install\b",
    )
    .unwrap_or_else(|e| unreachable!("a valid pattern: {e}"))
});

/// What the runner saw of a run, for its flags.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    /// The protected files the judge restored.
    pub restored: &'a [Tampered],
    /// The agent's `bash` commands; `None` when the runner did not see them.
    pub commands: Option<&'a [String]>,
    /// Whether the run had network.
    pub network_enabled: bool,
    /// The final diff; `None` when it could not be taken.
    pub diff: Option<&'a [u8]>,
    /// The gold patch (empty: none).
    pub gold: &'a str,
    /// What the submission left out.
    pub excluded: &'a [Excluded],
    /// Whether the workspace's verdict differs from the diff's; `None`: not judged.
    pub workspace_differs: Option<bool>,
    /// Modules the diff adds named like installed ones; `None`: the judge cannot tell.
    pub shadows: Option<&'a [String]>,
    /// Lines of an `exec` agent refused as other producers' events; `None`: a native run.
    pub forged_events: Option<u32>,
}

/// The flags of what was seen.
pub fn flags(seen: Seen<'_>) -> RunIntegrity {
    let count = |re: &Regex| {
        seen.commands.map(|commands| {
            u32::try_from(commands.iter().filter(|c| re.is_match(c)).count()).unwrap_or(u32::MAX)
        })
    };
    RunIntegrity {
        test_files_edited: seen.restored.iter().map(ToString::to_string).collect(),
        history_commands: count(&HISTORY),
        network_commands: if seen.network_enabled {
            None
        } else {
            count(&NETWORK)
        },
        gold_similarity: match seen.diff {
            Some(diff) if !seen.gold.trim().is_empty() => {
                Some(similarity(&String::from_utf8_lossy(diff), seen.gold))
            }
            _ => None,
        },
        diff_excluded: seen.excluded.iter().map(ToString::to_string).collect(),
        workspace_verdict_differs: seen.workspace_differs,
        shadows_module: seen.shadows.map(<[String]>::to_vec),
        forged_events: seen.forged_events,
    }
}

/// The Dice coefficient of the changed lines of two diffs, as multisets.
pub fn similarity(a: &str, b: &str) -> f64 {
    let (a, b) = (changed_lines(a), changed_lines(b));
    let total: usize = a.values().chain(b.values()).sum();
    if total == 0 {
        return 1.0;
    }
    let common: usize = a
        .iter()
        .map(|(line, n)| (*n).min(b.get(line).copied().unwrap_or(0)))
        .sum();
    (2 * common) as f64 / total as f64
}

/// `+`/`-` lines of a unified diff (not the `+++`/`---` file names), trimmed, counted.
fn changed_lines(diff: &str) -> BTreeMap<String, usize> {
    let mut lines = BTreeMap::new();
    for line in diff.lines() {
        if line.starts_with("+++") || line.starts_with("---") {
            continue;
        }
        if let Some(sign) = line.chars().next().filter(|c| *c == '+' || *c == '-') {
            let text = format!("{sign}{}", line[1..].trim());
            *lines.entry(text).or_insert(0) += 1;
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_and_network_commands_are_counted_and_nothing_else() {
        let commands: Vec<String> = [
            "git log --all --oneline",
            "cat .git/packed-refs",
            "git -C repo show HEAD~1",
            "git diff; git status",
            "git apply fix.patch",
            "pip install requests",
            "python -m pip download six",
            "curl https://example.org",
            "git fetch origin",
            "python -m pytest -rA",
            "grep -r showcase .",
        ]
        .map(str::to_owned)
        .to_vec();
        let seen = Seen {
            restored: &[],
            commands: Some(&commands),
            network_enabled: false,
            diff: None,
            gold: "",
            excluded: &[],
            workspace_differs: None,
            shadows: None,
            forged_events: None,
        };
        let seen_flags = flags(seen);
        // log, packed-refs, show, fetch (reads no history here, but is git's network).
        assert_eq!(seen_flags.history_commands, Some(3));
        assert_eq!(seen_flags.network_commands, Some(4));
        assert_eq!(seen_flags.gold_similarity, None);
        let unseen = flags(Seen {
            commands: None,
            network_enabled: true,
            ..seen
        });
        assert_eq!(
            (unseen.history_commands, unseen.network_commands),
            (None, None)
        );
    }

    #[test]
    fn the_gold_patch_is_similar_to_itself_and_not_to_an_unrelated_change() {
        let gold = "--- a/c.py\n+++ b/c.py\n@@ -1 +1 @@\n-    return a - b\n+    return a + b\n";
        let same_change = "diff --git a/c.py b/c.py\n--- a/c.py\n+++ b/c.py\n@@ -1,2 +1,2 @@\n \n-  return a - b\n+  return a + b\n";
        let other = "--- a/t.py\n+++ b/t.py\n@@ -1 +1 @@\n-assert x\n+pass\n";
        assert_eq!(similarity(gold, same_change), 1.0);
        assert_eq!(similarity(gold, other), 0.0);
        assert_eq!(similarity(gold, ""), 0.0);
        let half = format!("{other}+    return a + b\n-    return a - b\n");
        assert!((similarity(gold, &half) - 2.0 * 2.0 / 6.0).abs() < 1e-9);
    }
}
