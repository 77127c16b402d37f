//! What reaches the operator's terminal from the agent: text the agent wrote (its stderr,
//! its malformed lines, the names of files it made) is shown with every control
//! character escaped ([`Escaped`], and [`EscapingFields`] for every field of every log
//! line), and warnings the agent can repeat at will are held to a bounded number
//! ([`WarnLimiter`]), with a count of what was not shown.
//!
//! An escape sequence from the agent could otherwise clear the screen, rewrite earlier
//! lines, set the clipboard (OSC 52) or forge a log line (a newline); a flood of bad lines
//! could fill the disk with log. This module does no I/O of its own besides formatting.

use std::fmt::{self, Write};

use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::{DefaultFields, Writer};
use tracing_subscriber::fmt::FormatFields;

/// Shows a string with every control character (C0, DEL, C1, and the Unicode
/// bidirectional controls that reorder what a terminal shows) written as a Rust escape
/// (`\u{1b}`, `\n`, `\t`); everything else as it is.
#[derive(Debug, Clone, Copy)]
pub struct Escaped<'a>(pub &'a str);

/// Whether `c` changes what a terminal shows instead of being shown.
fn is_control(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if is_control(c) {
                for e in c.escape_default() {
                    f.write_char(e)?;
                }
            } else {
                f.write_char(c)?;
            }
        }
        Ok(())
    }
}

/// Bytes of one log line's fields shown; the rest is cut (a list of every file an agent
/// made must not become megabytes of log).
pub const MAX_FIELDS_BYTES: usize = 16 * 1024;

/// The runner's log field formatter: tracing's default field formatting, with every
/// control character escaped, so no field of any log line (an agent's output in a judge
/// log, a file name, a skipped line's error) reaches the terminal raw, wherever it is
/// logged from; and at most [`MAX_FIELDS_BYTES`] of them. Field names lose their italics
/// on a colour terminal; levels and timestamps keep their colours (the event formatter
/// writes those).
#[derive(Debug, Clone, Copy, Default)]
pub struct EscapingFields;

impl<'writer> FormatFields<'writer> for EscapingFields {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        let mut plain = String::new();
        DefaultFields::new().format_fields(Writer::new(&mut plain), fields)?;
        writer.write_str(&bounded(&Escaped(&plain).to_string()))
    }
}

/// `text`, or its first [`MAX_FIELDS_BYTES`] (on a character boundary) and how many bytes
/// were cut.
fn bounded(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_FIELDS_BYTES {
        return text.into();
    }
    let mut end = MAX_FIELDS_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{} [... {} bytes of this log line cut]",
        &text[..end],
        text.len() - end
    )
    .into()
}

/// Warnings the agent can cause as often as it likes (a malformed line, a line of
/// stderr): the first `shown` are shown, the rest counted; [`WarnLimiter::admit`] says
/// which, and when the count of suppressed ones reaches a power of ten it is worth a line
/// of its own, so a flood of a million gives `shown` + 6 lines.
#[derive(Debug, Clone)]
pub struct WarnLimiter {
    /// How many are shown.
    shown: u64,
    /// How many were offered.
    offered: u64,
}

/// What to do with one warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Show it.
    Show,
    /// Do not; `suppressed` have not been shown so far (this one included), a power of
    /// ten worth saying.
    Count {
        /// Messages not shown so far.
        suppressed: u64,
    },
    /// Do not, and say nothing.
    Quiet,
}

impl WarnLimiter {
    /// Shows the first `shown` warnings.
    pub fn new(shown: u64) -> Self {
        WarnLimiter { shown, offered: 0 }
    }

    /// One more warning: show it, or count it.
    pub fn admit(&mut self) -> Admit {
        self.offered += 1;
        match self.suppressed() {
            0 => Admit::Show,
            n if is_power_of_ten(n) => Admit::Count { suppressed: n },
            _ => Admit::Quiet,
        }
    }

    /// Warnings not shown so far.
    pub fn suppressed(&self) -> u64 {
        self.offered.saturating_sub(self.shown)
    }
}

fn is_power_of_ten(mut n: u64) -> bool {
    while n >= 10 && n.is_multiple_of(10) {
        n /= 10;
    }
    n == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        let hostile = "name\u{1b}]52;c;aGk=\u{7}\u{1b}[2J\r\nfake INFO line\u{9b}\u{202e}txt.sh";
        let shown = Escaped(hostile).to_string();
        assert_eq!(
            shown,
            r"name\u{1b}]52;c;aGk=\u{7}\u{1b}[2J\r\nfake INFO line\u{9b}\u{202e}txt.sh"
        );
        assert!(!shown.chars().any(is_control), "{shown}");
        assert_eq!(Escaped("tests/tést ✓.py").to_string(), "tests/tést ✓.py");
    }

    #[test]
    fn a_huge_log_line_is_cut() {
        let huge = "é".repeat(MAX_FIELDS_BYTES);
        let shown = bounded(&huge);
        assert!(shown.len() < MAX_FIELDS_BYTES + 64, "{}", shown.len());
        assert!(shown.ends_with(&format!(
            " [... {} bytes of this log line cut]",
            huge.len() - MAX_FIELDS_BYTES
        )));
        assert_eq!(bounded("short"), "short");
    }

    #[test]
    fn a_flood_shows_its_first_warnings_and_powers_of_ten_of_the_rest() {
        let mut limiter = WarnLimiter::new(20);
        let admitted: Vec<Admit> = (0..1_000_000).map(|_| limiter.admit()).collect();
        assert!(admitted[..20].iter().all(|a| *a == Admit::Show));
        let counts: Vec<u64> = admitted
            .iter()
            .filter_map(|a| match a {
                Admit::Count { suppressed } => Some(*suppressed),
                _ => None,
            })
            .collect();
        assert_eq!(counts, [1, 10, 100, 1000, 10_000, 100_000]);
        assert_eq!(limiter.suppressed(), 1_000_000 - 20);
    }
}
