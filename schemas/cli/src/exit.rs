//! How a benchstream binary ends: the exit statuses all three share ([`Status`]) and the
//! one way the error that ends a command is printed ([`report`]).
//!
//! A binary with more to say adds codes of its own between 3 and 125 (agent-runner's
//! `Exit`: pins differ, events left in the spool, ...), keeping these four as they are.

use std::error::Error;
use std::fmt;
use std::process::ExitCode;

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

/// Prints the error that ends a command: one `error` log line on stderr, in the
/// `--log-format` chosen, with the whole chain of causes (`what: why: why`).
pub fn report(error: &(dyn Error + 'static)) {
    tracing::error!("{}", Chain(error));
}

/// An error and its causes, outermost first, separated by `: `.
#[derive(Debug, Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
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
