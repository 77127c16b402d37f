//! A run's event stream: stamps payloads into envelopes (ids, `seq`, `ts`, hashes) with
//! the run's [`RunSequencer`], enforces the wire limits, appends the wire bytes to the
//! run's `events.jsonl` and hands them to the publisher. It also keeps the run's model
//! usage, summed from its `deliberation` events.
//!
//! Every event goes through [`RunRecorder::emit`], so the local artifact and the stream
//! hold the same bytes and `seq` has no gaps: an event still too large after truncation is
//! replaced, under the same `seq` and id, by a `failure` event saying so.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use schemas::{
    BenchmarkEvent, Deliberation, Failure, FailureRoot, FinalErrorState, Payload, RunSequencer,
};
use uuid::Uuid;

use crate::pricing::Usd;
use crate::publish::PublisherHandle;

/// File names of the per-run artifacts.
pub const EVENTS_FILE: &str = "events.jsonl";
pub const SUMMARY_FILE: &str = "summary.json";

/// Writing a run's artifacts failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct RecordError {
    path: PathBuf,
    source: io::Error,
}

/// Model usage of a run, summed over its `deliberation` events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// Model calls.
    pub api_calls: u32,
    /// Prompt tokens (cached included).
    pub input_tokens: u64,
    /// Completion tokens (reasoning included).
    pub output_tokens: u64,
    /// Exact sum of the known costs.
    pub known_cost: Usd,
    /// Some call's cost is unknown: so is the run's.
    pub cost_unknown: bool,
}

impl Usage {
    fn add(&mut self, d: &Deliberation) {
        self.api_calls += 1;
        // Token counts come from providers: a huge one saturates instead of wrapping.
        self.input_tokens = self.input_tokens.saturating_add(d.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(d.output_tokens);
        match d.cost_usd.and_then(Usd::from_number) {
            Some(cost) => self.known_cost = self.known_cost.saturating_add(cost),
            None => self.cost_unknown = true,
        }
    }

    /// Input plus output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// The run's cost, converted once from the exact sum; `None` when some call's cost
    /// was unknown.
    pub fn cost_usd(&self) -> Option<f64> {
        (!self.cost_unknown).then(|| self.known_cost.to_number())
    }
}

/// Stamps, stores and forwards the events of one run.
#[derive(Debug)]
pub struct RunRecorder {
    sequencer: RunSequencer,
    /// Where the events go; `None` = local artifacts only.
    publisher: Option<PublisherHandle>,
    /// `<out>/<run_id>/`, when artifacts are kept.
    dir: Option<PathBuf>,
    /// `events.jsonl`, appended one event per write.
    journal: Option<File>,
    usage: Usage,
    events: u64,
    /// The publisher refused a send (it stopped): logged once.
    publisher_gone: bool,
}

impl RunRecorder {
    /// A recorder for the run `sequencer` stamps. With `out_dir`, creates
    /// `<out_dir>/<run_id>/events.jsonl`.
    pub fn new(
        sequencer: RunSequencer,
        publisher: Option<PublisherHandle>,
        out_dir: Option<&Path>,
    ) -> Result<RunRecorder, RecordError> {
        let dir = out_dir.map(|out| out.join(sequencer.run_id.to_string()));
        let journal = match &dir {
            Some(dir) => {
                let record_err = |source| RecordError {
                    path: dir.clone(),
                    source,
                };
                fs::create_dir_all(dir).map_err(record_err)?;
                Some(File::create(dir.join(EVENTS_FILE)).map_err(record_err)?)
            }
            None => None,
        };
        Ok(RunRecorder {
            sequencer,
            publisher,
            dir,
            journal,
            usage: Usage::default(),
            events: 0,
            publisher_gone: false,
        })
    }

    /// Stamps and records one event.
    pub fn emit(&mut self, step_id: Option<Uuid>, payload: Payload) -> Result<(), RecordError> {
        if let Payload::Deliberation(d) = &payload {
            self.usage.add(d);
        }
        let mut event = self.sequencer.next(step_id, payload);
        let bytes = match event.enforce_limits() {
            Ok(bytes) => bytes,
            Err(too_large) => {
                tracing::error!(event_type = %event.event_type(), size = too_large.size, "event too large; replaced by a failure event");
                event.payload = oversize_failure(&event, too_large.size);
                event.to_json()
            }
        };
        self.events += 1;
        if let Some(journal) = &mut self.journal {
            let mut line = Vec::with_capacity(bytes.len() + 1);
            line.extend_from_slice(&bytes);
            line.push(b'\n');
            journal.write_all(&line).map_err(|source| RecordError {
                path: self.dir.clone().unwrap_or_default().join(EVENTS_FILE),
                source,
            })?;
        }
        if let Some(publisher) = &self.publisher {
            if !publisher.send(&event, Bytes::from(bytes)) && !self.publisher_gone {
                self.publisher_gone = true;
                tracing::error!(run_id = %event.run_id, "publisher stopped; further events of this run are only in events.jsonl");
            }
        }
        Ok(())
    }

    /// Writes `summary.json` beside `events.jsonl` (no-op without an output dir).
    pub fn write_summary<T: serde::Serialize>(&self, summary: &T) -> Result<(), RecordError> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let path = dir.join(SUMMARY_FILE);
        let body = serde_json::to_vec_pretty(summary).map_err(|e| RecordError {
            path: path.clone(),
            source: io::Error::other(e),
        })?;
        fs::write(&path, body).map_err(|source| RecordError { path, source })
    }

    /// The run's stamping identity (run id, task, policy, hashes, seed, host).
    pub fn sequencer(&self) -> &RunSequencer {
        &self.sequencer
    }

    /// Model usage so far.
    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    /// Events emitted so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The run's artifact directory, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }
}

fn oversize_failure(event: &BenchmarkEvent, size: usize) -> Payload {
    Payload::Failure(Failure {
        first_failure_root: FailureRoot::Tool {
            tool_name: "recorder".to_owned(),
            usage_error: format!(
                "{} event of {size} bytes exceeds the 1 MiB limit after truncation",
                event.event_type()
            ),
        },
        recovery_attempts: Vec::new(),
        final_error_state: FinalErrorState {
            recoverable: true,
            error_category: "event_too_large".to_owned(),
            confidence: 1.0,
            similar_failures: 0,
        },
        contributing_factors: Vec::new(),
        remediation_suggestions: vec!["keep tool outputs and file lists smaller".to_owned()],
    })
}
