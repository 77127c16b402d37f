//! Claims: how several workers (processes, hosts) share one sweep, or one experiment run
//! until decided, through a JetStream key-value bucket so that no unit of work runs twice
//! and none is missed.
//!
//! One key per configuration (`<sweep>.<hash>`, [`super::expand::Configuration::key`]),
//! per trial of a `bayes` sweep (`<sweep>.trial.<n>`), or per round, model and task of
//! an experiment run until decided (`decide.<hash>.<round>.<side>.<hash>`,
//! `crate::decide`).
//! A worker claims a configuration with an atomic *create* (it fails when the key
//! exists), runs it, then marks it `done`. A claim older than the lease whose worker never
//! marked it done (the worker died) is taken over with a compare-and-set *update* on the
//! revision the taker read, so exactly one worker wins it. A run that fails for the
//! runner's own reasons releases its claim (delete) for another worker.
//!
//! This module owns the bucket and the claim records; it does not run anything.

use std::collections::BTreeMap;
use std::time::Duration;

use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::SweepError;

/// Default bucket name.
pub const DEFAULT_BUCKET: &str = "BENCH_SWEEPS";

/// Added to the scenario's execution timeout, per run a claim holds, for the default
/// lease: judge, setup and delivery time of one run.
const LEASE_MARGIN: Duration = Duration::from_secs(600);

/// Where claims live and how long one holds, as the command line gives them: the lease
/// may be left to the command, which knows how long what it claims runs.
#[derive(Debug, Clone)]
pub struct ClaimSettings {
    /// KV bucket. Default [`DEFAULT_BUCKET`].
    pub bucket: String,
    /// Replicas when this worker creates the bucket. Default 1.
    pub replicas: usize,
    /// See [`ClaimConfig::lease`]; `None`: [`ClaimSettings::config`]'s default.
    pub lease: Option<Duration>,
}

impl Default for ClaimSettings {
    fn default() -> ClaimSettings {
        ClaimSettings {
            bucket: DEFAULT_BUCKET.to_owned(),
            replicas: 1,
            lease: None,
        }
    }
}

impl ClaimSettings {
    /// The claim config of a command whose claims each hold `runs` runs of a scenario
    /// whose execution timeout is `execution_timeout_ms`: the lease given, else the
    /// timeout plus ten minutes, per run held.
    pub fn config(&self, execution_timeout_ms: u64, runs: u32) -> ClaimConfig {
        ClaimConfig {
            bucket: self.bucket.clone(),
            replicas: self.replicas,
            lease: self.lease.unwrap_or_else(|| {
                (Duration::from_millis(execution_timeout_ms) + LEASE_MARGIN) * runs.max(1)
            }),
        }
    }
}

/// Where claims live and how long one holds.
#[derive(Debug, Clone)]
pub struct ClaimConfig {
    /// KV bucket. Default [`DEFAULT_BUCKET`].
    pub bucket: String,
    /// Replicas when this worker creates the bucket: 1 locally, 3 on a cluster.
    /// Default 1.
    pub replicas: usize,
    /// Age after which a claim not marked done is presumed dead and may be taken over.
    /// Must exceed the longest run (the sweep uses the scenario's execution timeout plus
    /// a margin when not given).
    pub lease: Duration,
}

/// The state of one configuration, as stored in its key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ClaimRecord {
    /// A worker runs it.
    Running {
        /// The worker's name.
        worker: String,
        /// When it claimed the configuration.
        #[serde(with = "chrono::serde::ts_milliseconds")]
        since: DateTime<Utc>,
    },
    /// It ran; `run_id` is the run's id on its events.
    Done {
        /// The worker that ran it.
        worker: String,
        /// The run's id; for a `bayes` trial, which is several runs, the run id of its
        /// proposal's `optimizer_update`, which holds the trial's result and run ids.
        run_id: Uuid,
        /// When the run was marked done.
        #[serde(with = "chrono::serde::ts_milliseconds")]
        at: DateTime<Utc>,
        /// `bayes` trials: the values of the matrix keys its config used (field path →
        /// value), what later proposals are told along with the trial's objective.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        values: Option<BTreeMap<String, serde_json::Value>>,
    },
}

/// A configuration this worker holds.
#[derive(Debug, Clone)]
pub struct Claim {
    key: String,
}

/// The claim bucket, seen by one worker.
#[derive(Debug, Clone)]
pub struct ClaimBoard {
    store: kv::Store,
    worker: String,
    lease: Duration,
}

impl ClaimBoard {
    /// Opens the bucket, creating it when absent.
    pub async fn open(
        js: &jetstream::Context,
        config: &ClaimConfig,
        worker: impl Into<String>,
    ) -> Result<ClaimBoard, SweepError> {
        let kv_error = |e: &dyn std::fmt::Display| {
            SweepError::Claims(format!("bucket {}: {e}", config.bucket))
        };
        let store = match js.get_key_value(&config.bucket).await {
            Ok(store) => store,
            Err(_) => js
                .create_key_value(kv::Config {
                    bucket: config.bucket.clone(),
                    description: "benchstream claims (agent-runner sweep, run --until-decided)"
                        .to_owned(),
                    history: 1,
                    storage: jetstream::stream::StorageType::File,
                    num_replicas: config.replicas,
                    ..Default::default()
                })
                .await
                .map_err(|e| kv_error(&e))?,
        };
        Ok(ClaimBoard {
            store,
            worker: worker.into(),
            lease: config.lease,
        })
    }

    /// Claims `key` for this worker: `None` when another worker runs it (within its
    /// lease) or it is done.
    pub async fn claim(&self, key: &str) -> Result<Option<Claim>, SweepError> {
        let record = self.encode(&ClaimRecord::Running {
            worker: self.worker.clone(),
            since: Utc::now(),
        })?;
        match self.store.create(key, record.clone()).await {
            Ok(_) => {
                return Ok(Some(Claim {
                    key: key.to_owned(),
                }))
            }
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => {}
            Err(e) => return Err(SweepError::Claims(format!("claim {key}: {e}"))),
        }
        let entry = self
            .store
            .entry(key)
            .await
            .map_err(|e| SweepError::Claims(format!("read claim {key}: {e}")))?;
        let Some(entry) = entry else {
            // Deleted between our create and read: try once more next round.
            return Ok(None);
        };
        let stale = match serde_json::from_slice::<ClaimRecord>(&entry.value) {
            Ok(ClaimRecord::Done { .. }) => false,
            Ok(ClaimRecord::Running { since, worker }) => {
                let age = (Utc::now() - since).to_std().unwrap_or_default();
                if age > self.lease {
                    tracing::warn!(%key, %worker, ?age, "taking over a claim past its lease");
                }
                age > self.lease
            }
            // A deleted or purged key reads as an empty value: free to take.
            Err(_) if entry.operation != kv::Operation::Put => true,
            Err(e) => {
                return Err(SweepError::Claims(format!(
                    "claim {key} holds an unreadable record: {e}"
                )))
            }
        };
        if !stale {
            return Ok(None);
        }
        match self.store.update(key, record, entry.revision).await {
            Ok(_) => Ok(Some(Claim {
                key: key.to_owned(),
            })),
            Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => Ok(None),
            Err(e) => Err(SweepError::Claims(format!("take over {key}: {e}"))),
        }
    }

    /// Marks the claimed configuration as run by `run_id` (with the matrix values of a
    /// `bayes` trial).
    pub async fn complete(
        &self,
        claim: Claim,
        run_id: Uuid,
        values: Option<BTreeMap<String, serde_json::Value>>,
    ) -> Result<(), SweepError> {
        let record = self.encode(&ClaimRecord::Done {
            worker: self.worker.clone(),
            run_id,
            at: Utc::now(),
            values,
        })?;
        self.store
            .put(&claim.key, record)
            .await
            .map(drop)
            .map_err(|e| SweepError::Claims(format!("mark {} done: {e}", claim.key)))
    }

    /// Gives the configuration back (the run could not be recorded).
    pub async fn release(&self, claim: Claim) -> Result<(), SweepError> {
        self.store
            .delete(&claim.key)
            .await
            .map_err(|e| SweepError::Claims(format!("release {}: {e}", claim.key)))
    }

    /// The record of `key`, if any (for reports and tests).
    pub async fn record(&self, key: &str) -> Result<Option<ClaimRecord>, SweepError> {
        let value = self
            .store
            .get(key)
            .await
            .map_err(|e| SweepError::Claims(format!("read claim {key}: {e}")))?;
        Ok(value.and_then(|v| serde_json::from_slice(&v).ok()))
    }

    fn encode(&self, record: &ClaimRecord) -> Result<Bytes, SweepError> {
        serde_json::to_vec(record)
            .map(Bytes::from)
            .map_err(|e| SweepError::Claims(e.to_string()))
    }
}
