//! How a benchstream binary ends: the exit statuses all three share ([`Status`]) and the
//! one way the error that ends a command is printed ([`report`]).
//!
//! A binary with more to say adds codes of its own between 3 and 125 (agent-runner's
//! `Exit`: pins differ, events left in the spool, ...), keeping these four as they are.

use std::error::Error;
use std::fmt;
use std::process::ExitCode;

use crate::logging::LogFormat;

/// The exit statuses every benchstream binary uses the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    /// The command did what it was asked.
    Ok = 0,
    /// Anything else went wrong: a server unreachable or refusing, I/O, a drain that
    /// timed out.
    Failure = 1,
    /// The command line, the environment or a settings file is unusable; nothing was
    /// started.
    Usage = 2,
    /// Stopped by SIGINT or SIGTERM, after draining (128 + SIGINT, as shells report it).
    Interrupted = 130,
}

impl Status {
    /// The process exit code.
    pub const fn code(self) -> u8 {
        self as u8
    }
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> ExitCode {
        ExitCode::from(status.code())
    }
}

/// Prints the error that ends a command on stderr, with the whole chain of causes (`what:
/// why: why`, each said once). With `--log-format text` it is `error: ` and the message,
/// over several lines when it has them (a config file's excerpt); with `json`, one
/// `error` log line.
pub fn report(error: &(dyn Error + 'static)) {
    let chain = Chain(error).to_string();
    match crate::logging::format() {
        LogFormat::Json => tracing::error!("{chain}"),
        LogFormat::Text => eprintln!("error: {}", Printable(&chain)),
    }
}

/// An error and its causes, outermost first, separated by `: `. A cause whose text the
/// message already holds (an error that shows its source in its own text) is not
/// repeated.
#[derive(Debug, Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = self.0.to_string();
        let mut source = self.0.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            if !shown.contains(&text) {
                shown.push_str(": ");
                shown.push_str(&text);
            }
            source = cause.source();
        }
        f.write_str(&shown)
    }
}

/// Text for a terminal: line breaks kept, every other control character written as an
/// escape (`\u{1b}`), so an error quoting what a program wrote cannot rewrite the screen.
struct Printable<'a>(&'a str);

impl fmt::Display for Printable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write as _;
        for c in self.0.chars() {
            if c.is_control() && c != '\n' {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn a_chain_names_every_cause_outermost_first() {
        let error = Outer(std::io::Error::other("inner"));
        assert_eq!(Chain(&error).to_string(), "outer: inner");
    }

    #[derive(Debug, thiserror::Error)]
    #[error("query failed: {0}")]
    struct Shows(#[source] Outer);

    #[test]
    fn a_cause_the_message_already_shows_is_not_repeated() {
        let error = Shows(Outer(std::io::Error::other("refused")));
        assert_eq!(
            Chain(&error).to_string(),
            "query failed: outer: refused",
            "each cause once"
        );
    }

    #[test]
    fn printed_errors_keep_their_lines_and_escape_other_controls() {
        assert_eq!(Printable("a\n  b\u{1b}[2J").to_string(), "a\n  b\\u{1b}[2J");
    }

    #[test]
    fn the_shared_codes_are_the_documented_ones() {
        let codes = [
            Status::Ok,
            Status::Failure,
            Status::Usage,
            Status::Interrupted,
        ]
        .map(Status::code);
        assert_eq!(codes, [0, 1, 2, 130]);
    }
}
