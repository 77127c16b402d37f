//! Importing runs recorded by other agent frameworks as benchstream events, so they sit
//! beside native runs in the same tables. `agent-runner import swe-agent <dir>`.
//!
//! - [`traj`]: the SWE-agent `.traj` file format (lenient serde types).
//! - [`swe_agent`]: one trajectory → the events of one run, deterministic ids and times.
//! - [`args`]: the command line → [`ImportConfig`], the import loop ([`run`],
//!   [`import_dir`]) and its [`ImportReport`].
//!
//! Importing is idempotent: the same file yields the same event ids, so importing it
//! again stores nothing new. A file that cannot be read or parsed is reported and
//! skipped; the others are still imported.

pub(crate) mod args;
mod error;
pub(crate) mod swe_agent;
pub(crate) mod traj;

pub use args::{
    import_dir, run, Destination, ImportArgs, ImportCommand, ImportConfig, ImportReport,
};
pub use error::ImportError;
