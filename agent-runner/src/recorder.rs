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

use bench_delivery::PublisherHandle;
use bench_schemas::{
    BenchmarkEvent, Deliberation, DeliberationStatus, Failure, FailureRoot, FinalErrorState,
    Payload, RunSequencer,
};
use bytes::Bytes;
use uuid::Uuid;

use bench_pricing::Usd;

/// File name of a run's events, one JSON line each.
pub const EVENTS_FILE: &str = "events.jsonl";
/// File name of a run's [`crate::agent::RunSummary`].
pub const SUMMARY_FILE: &str = "summary.json";
/// The final diff of a run of a SWE-bench-format task, beside its events.
pub const DIFF_FILE: &str = "final.diff";

/// Writing a run's artifacts failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct RecordError {
    path: PathBuf,
    source: io::Error,
}

/// Model usage of a run, summed over its `deliberation` events. Tokens and cost follow
/// one rule: the sums are of what is known, and a run with any unknown count or cost has
/// an unknown total (`None`), never a made-up one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// Model calls.
    pub api_calls: u32,
    /// Model calls the provider answered with a usable completion (status `ok`): none
    /// in a run that ended `exit_api` makes it an infrastructure failure
    /// ([`crate::limits::RunEnd::is_infrastructure_failure`]).
    pub answered_calls: u32,
    /// Prompt tokens (cached included) of the calls whose counts are known.
    pub known_input_tokens: u64,
    /// Completion tokens (reasoning included) of the calls whose counts are known.
    pub known_output_tokens: u64,
    /// Calls whose input or output tokens are unknown: with any, the run's are unknown.
    pub calls_with_unknown_tokens: u32,
    /// Exact sum of the known costs.
    pub known_cost: Usd,
    /// Some call's cost is unknown: so is the run's.
    pub cost_unknown: bool,
}

impl Usage {
    fn add(&mut self, d: &Deliberation) {
        self.api_calls += 1;
        if d.status == DeliberationStatus::Ok {
            self.answered_calls += 1;
        }
        match (d.input_tokens, d.output_tokens) {
            (Some(input), Some(output)) => {
                // Token counts come from providers: a huge one saturates instead of wrapping.
                self.known_input_tokens = self.known_input_tokens.saturating_add(input);
                self.known_output_tokens = self.known_output_tokens.saturating_add(output);
            }
            _ => self.calls_with_unknown_tokens += 1,
        }
        match d.cost_usd.and_then(Usd::from_number) {
            Some(cost) => self.known_cost = self.known_cost.saturating_add(cost),
            None => self.cost_unknown = true,
        }
    }

    /// Input plus output tokens of the run; `None` when some call's were unknown.
    pub fn total_tokens(&self) -> Option<u64> {
        (self.calls_with_unknown_tokens == 0).then(|| {
            self.known_input_tokens
                .saturating_add(self.known_output_tokens)
        })
    }

    /// Input and output tokens of the calls made since `before` (an earlier copy of this
    /// usage): `None` when there were none, or when some of them had unknown counts, so a
    /// step never shows a made-up 0 or a partial sum.
    pub fn tokens_since(&self, before: &Usage) -> Option<(u64, u64)> {
        let made_calls = self.api_calls > before.api_calls;
        let all_known = self.calls_with_unknown_tokens == before.calls_with_unknown_tokens;
        (made_calls && all_known).then(|| {
            (
                self.known_input_tokens - before.known_input_tokens,
                self.known_output_tokens - before.known_output_tokens,
            )
        })
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

    /// Writes `bytes` as `<name>` beside `events.jsonl` (no-op without an output dir).
    pub fn write_artifact(&self, name: &str, bytes: &[u8]) -> Result<(), RecordError> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let path = dir.join(name);
        fs::write(&path, bytes).map_err(|source| RecordError { path, source })
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A call with these token counts and cost.
    fn call(input: Option<u64>, output: Option<u64>, cost_usd: Option<f64>) -> Deliberation {
        serde_json::from_value(json!({
            "agent": "agent", "provider": "local", "model": "m", "status": "ok",
            "latency_ms": 1, "input_tokens": input, "cached_input_tokens": input.map(|_| 0),
            "cache_write_tokens": input.map(|_| 0), "output_tokens": output,
            "reasoning_tokens": output.map(|_| 0), "cost_usd": cost_usd,
            "pricing_source": if cost_usd.is_some() { "override" } else { "unknown" },
            "prompt_price_per_mtok": null, "completion_price_per_mtok": null,
            "actions": [], "summary": "", "confidence": null, "raw_output": "",
            "raw_output_truncated": false
        }))
        .expect("a deliberation")
    }

    fn usage_of(calls: &[Deliberation]) -> Usage {
        let mut usage = Usage::default();
        calls.iter().for_each(|d| usage.add(d));
        usage
    }

    #[test]
    fn known_tokens_sum_exactly() {
        let usage = usage_of(&[
            call(Some(1000), Some(20), Some(0.01)),
            call(Some(0), Some(0), Some(0.0)),
            call(Some(u64::MAX), Some(1), Some(0.0)),
        ]);
        assert_eq!(usage.total_tokens(), Some(u64::MAX), "saturates");
        let usage = usage_of(&[
            call(Some(1000), Some(20), Some(0.01)),
            call(Some(5), Some(7), Some(0.02)),
        ]);
        assert_eq!(usage.total_tokens(), Some(1032));
        assert_eq!(usage.cost_usd(), Some(0.03));
    }

    #[test]
    fn one_call_with_unknown_tokens_makes_the_run_total_unknown_not_a_smaller_sum() {
        for unknown in [
            call(None, None, None),
            call(Some(10), None, None),
            call(None, Some(10), None),
        ] {
            let usage = usage_of(&[call(Some(1000), Some(20), Some(0.01)), unknown]);
            assert_eq!(usage.api_calls, 2);
            assert_eq!(usage.total_tokens(), None);
            assert_eq!(usage.cost_usd(), None);
            // What is known stays counted: the cost limit reads a lower bound.
            assert_eq!(usage.known_input_tokens, 1000);
            assert_eq!(usage.known_cost.to_number(), 0.01);
        }
    }

    #[test]
    fn tokens_since_are_those_of_the_new_calls_and_unknown_without_calls_or_with_an_unknown_one() {
        let before = usage_of(&[call(None, None, None), call(Some(7), Some(3), None)]);
        let mut after = before.clone();
        assert_eq!(after.tokens_since(&before), None, "no call since");
        after.add(&call(Some(100), Some(20), Some(0.0)));
        after.add(&call(Some(1), Some(2), Some(0.0)));
        assert_eq!(
            after.tokens_since(&before),
            Some((101, 22)),
            "an unknown call before does not hide the new ones"
        );
        after.add(&call(None, Some(5), None));
        assert_eq!(after.tokens_since(&before), None, "one new unknown call");
    }

    #[test]
    fn no_call_is_zero_tokens() {
        assert_eq!(Usage::default().total_tokens(), Some(0));
    }
}
