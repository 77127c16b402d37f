//! Shutdown as a value: SIGINT and SIGTERM turned into a cancelled
//! [`CancellationToken`], which every service loop of the binaries takes as an argument
//! (so tests stop them the same way, by cancelling it).

use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;

/// A token cancelled on the first SIGINT or SIGTERM. `announce`, when given, is logged
/// then, after the signal's name (what the binary does now, e.g. `draining`); commands
/// that Ctrl-C simply ends (a live tail) give none. Spawns its watcher on the current
/// tokio runtime.
pub fn cancel_on_signal(announce: Option<&'static str>) -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        let (mut term, mut int) = match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(term), Ok(int)) => (term, int),
            (Err(e), _) | (_, Err(e)) => {
                return tracing::error!(error = %e, "cannot watch SIGINT and SIGTERM; stop with SIGKILL")
            }
        };
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        if let Some(announce) = announce {
            tracing::info!("{name}: {announce}");
        }
        cancel.cancel();
    });
    token
}
