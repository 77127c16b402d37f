//! The handle of computing ahead ([`super::warm`]): experiments to look at now (a page
//! visited, runs changed on the live feed), what to compute (`--precompute-experiments`,
//! `--refresh-poll-ms`), and how far it has come (`/api/status`'s `ahead`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::mpsc;

/// The background's handle: experiments to look at now, and how far it has come.
#[derive(Debug)]
pub struct Ahead {
    wake: mpsc::UnboundedSender<String>,
    /// Looks at everything done.
    sweeps: AtomicU64,
    /// From the server's start to the end of its first look at everything, ms.
    warmed_up_ms: OnceLock<u64>,
    started: Instant,
}

/// How far computing ahead has come (`/api/status`'s `ahead`).
#[derive(Debug, Clone, Serialize)]
pub struct AheadStatus {
    /// Looks at everything done since the start.
    pub sweeps: u64,
    /// From the server's start until the first look ended (the newest experiments'
    /// standings and comparisons kept), ms; `None` while under way.
    pub warmed_up_ms: Option<u64>,
}

impl Ahead {
    /// A handle and the receiving end of its wake-ups (for [`spawn`]).
    pub fn new() -> (Ahead, mpsc::UnboundedReceiver<String>) {
        let (wake, woken) = mpsc::unbounded_channel();
        let ahead = Ahead {
            wake,
            sweeps: AtomicU64::new(0),
            warmed_up_ms: OnceLock::new(),
            started: Instant::now(),
        };
        (ahead, woken)
    }

    /// Where the live feed says an experiment's runs changed.
    pub fn sender(&self) -> mpsc::UnboundedSender<String> {
        self.wake.clone()
    }

    /// Look at experiment `name` soon (its page was visited, its runs changed).
    pub fn wake(&self, name: &str) {
        // Closed only when the server stops.
        let _ = self.wake.send(name.to_owned());
    }

    /// A look at everything done: counted, and the first one ends the warm-up.
    pub fn swept(&self) {
        self.sweeps.fetch_add(1, Ordering::Relaxed);
        let ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let _ = self.warmed_up_ms.set(ms);
    }

    /// How far it has come.
    pub fn status(&self) -> AheadStatus {
        AheadStatus {
            sweeps: self.sweeps.load(Ordering::Relaxed),
            warmed_up_ms: self.warmed_up_ms.get().copied(),
        }
    }
}

/// What to compute ahead.
#[derive(Debug, Clone, Copy)]
pub struct AheadSettings {
    /// The newest experiments whose standing and linked comparison are computed.
    pub experiments: usize,
    /// How often every kept experiment's version is read.
    pub poll: Duration,
}
