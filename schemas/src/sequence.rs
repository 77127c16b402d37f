//! [`RunSequencer`]: the producer side of the envelope. It owns a run's identity and its
//! `seq` counter, so every producer (runner, external-agent bridge, importer) numbers events
//! the same way: 0 at `run_start`, +1 per event, no gaps.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::canonical::Hash256;
use crate::envelope::{BenchmarkEvent, SCHEMA_VERSION};
use crate::payload::Payload;

/// Stamps envelopes for one run.
#[derive(Debug, Clone)]
pub struct RunSequencer {
    /// The run's id, on every event.
    pub run_id: Uuid,
    /// The task, on every event.
    pub task_id: String,
    /// The policy under test.
    pub policy_id: String,
    /// Hash of the run config.
    pub cfg_hash: Hash256,
    /// Hash of the environment descriptor.
    pub env_hash: Hash256,
    /// Seed of the run; `None` when its producer states none.
    pub seed: Option<u64>,
    /// Producing host.
    pub host: String,
    /// `seq` of the next event.
    next_seq: u64,
}

impl RunSequencer {
    /// A sequencer for a new run; the first event gets `seq` 0.
    pub fn new(
        run_id: Uuid,
        task_id: impl Into<String>,
        policy_id: impl Into<String>,
        cfg_hash: Hash256,
        env_hash: Hash256,
        seed: Option<u64>,
        host: impl Into<String>,
    ) -> Self {
        RunSequencer {
            run_id,
            task_id: task_id.into(),
            policy_id: policy_id.into(),
            cfg_hash,
            env_hash,
            seed,
            host: host.into(),
            next_seq: 0,
        }
    }

    /// The `seq` the next event will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Stamps the next event with a fresh UUIDv7 and the current time.
    pub fn next(&mut self, step_id: Option<Uuid>, payload: Payload) -> BenchmarkEvent {
        self.next_at(Uuid::now_v7(), Utc::now(), step_id, payload)
    }

    /// Stamps the next event with a given id and time (importers derive both from their
    /// input so that importing twice yields the same events).
    pub fn next_at(
        &mut self,
        event_id: Uuid,
        ts: DateTime<Utc>,
        step_id: Option<Uuid>,
        payload: Payload,
    ) -> BenchmarkEvent {
        let seq = self.next_seq;
        self.next_seq += 1;
        BenchmarkEvent {
            schema_version: SCHEMA_VERSION,
            event_id,
            run_id: self.run_id,
            task_id: self.task_id.clone(),
            step_id,
            seq: Some(seq),
            ts,
            policy_id: self.policy_id.clone(),
            cfg_hash: self.cfg_hash.clone(),
            env_hash: self.env_hash.clone(),
            seed: self.seed,
            host: self.host.clone(),
            payload,
            extra: serde_json::Map::new(),
        }
    }
}
