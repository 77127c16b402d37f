//! The one way a benchstream binary builds its tokio runtime ([`runtime`]), and the one
//! way a command's result becomes the process's exit code ([`exit_code`]).
//!
//! Every binary has the same shape: `main.rs` parses its command line, sets up logging
//! and hands off to its library's `command::execute`, which builds the runtime when the
//! command needs one (after whatever must happen while the process has one thread: the
//! runner's own mount namespace) and dispatches the subcommand.

use std::error::Error;
use std::io;
use std::process::ExitCode;

use tokio::runtime::{Builder, Runtime};

use crate::exit::{report, Status};

/// A runtime of `worker_threads`: one is tokio's current-thread runtime (the whole
/// command on the calling thread), more the multi-thread runtime with that many workers,
/// `None` the multi-thread runtime with one worker per core. Timers and I/O are enabled.
///
/// # Errors
///
/// When the operating system refuses a thread or an event queue.
pub fn runtime(worker_threads: Option<usize>) -> io::Result<Runtime> {
    match worker_threads {
        Some(1) => Builder::new_current_thread().enable_all().build(),
        Some(threads) => Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build(),
        None => Builder::new_multi_thread().enable_all().build(),
    }
}

/// The exit code of a command that ended with `result`: [`Status::Ok`], or the error
/// printed ([`report`]) and the status `status` gives it.
pub fn exit_code<E: Error + 'static>(
    result: Result<(), E>,
    status: impl FnOnce(&E) -> Status,
) -> ExitCode {
    match result {
        Ok(()) => Status::Ok.into(),
        Err(e) => {
            report(&e);
            status(&e).into()
        }
    }
}
