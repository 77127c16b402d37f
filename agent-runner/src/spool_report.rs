//! `agent-runner spool flush` ([`flush`]) and `spool status` ([`spool_status`]): the spool
//! replayed or listed, each returning its [`Outcome`].

use bench_delivery::{DeliveryReport, PublishSetup, SpoolStatus};
use std::fmt;
use std::path::Path;

use crate::error::{Error, Exit, Outcome};
use crate::runner::flush_spool;

/// What `spool flush` delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flushed(pub DeliveryReport);

/// Replays every slot of the spool of `setup` it can take, then stops.
pub async fn flush(setup: &PublishSetup) -> Result<Flushed, Error> {
    Ok(Flushed(flush_spool(setup).await?))
}

impl fmt::Display for Flushed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.0)
    }
}

impl Outcome for Flushed {
    fn exit(&self) -> Exit {
        self.0.exit()
    }
}

/// What `spool status` lists: every slot of a spool.
#[derive(Debug, Clone)]
pub struct SpoolReport {
    /// Each slot's pending records and quarantine.
    pub slots: Vec<SpoolStatus>,
    /// Shown as JSON lines (one compact object per slot and line, so `jq -c` and line
    /// readers take it as it is) instead of text.
    pub json: bool,
}

/// The status of every slot of the spool whose first slot is `path`.
pub fn spool_status(path: &Path, json: bool) -> Result<SpoolReport, Error> {
    let slots = bench_delivery::slot_files(path)
        .iter()
        .map(|slot| bench_delivery::spool_status(slot))
        .collect::<Result<_, _>>()?;
    Ok(SpoolReport { slots, json })
}

impl fmt::Display for SpoolReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for status in &self.slots {
            if self.json {
                let json = serde_json::to_string(status)
                    .unwrap_or_else(|e| unreachable!("the status is plain data: {e}"));
                writeln!(f, "{json}")?;
            } else {
                write!(f, "{status}")?;
            }
        }
        Ok(())
    }
}

impl Outcome for SpoolReport {
    fn exit(&self) -> Exit {
        Exit::Ok
    }
}
