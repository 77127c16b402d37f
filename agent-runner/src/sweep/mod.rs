//! Sweeps: many configurations (models × strategies × hyper-parameters × tasks × seeds)
//! run by several worker processes, on several hosts, each configuration exactly once.
//! Format and usage: `agent-runner/docs/sweeps.md`.
//!
//! - [`file`]: the sweep file ([`SweepFile`]): matrix, constraints, tasks, seeds, method.
//! - [`expand`]: the matrix → distinct configs (arms) → configurations with claim keys.
//! - [`claim`]: the JetStream KV bucket through which workers claim configurations.
//! - [`adaptive`]: the UCB1 bandit of the `adaptive` method and the ClickHouse query
//!   feeding it.
//! - [`bayes`]: the search space and TPE proposals of the `bayes` method.
//! - [`trials`]: the results of a `bayes` sweep's finished trials, from ClickHouse.
//! - [`worker`]: one worker's loop ([`run`]): claim, run through the run loop, mark done.
//! - [`args`]: the `agent-runner sweep` flags → [`SweepConfig`].
//!
//! Coordination goes through NATS only (no shared file): the claim of a configuration is
//! an atomic create of its key, so two workers never both run it, and a claim whose
//! worker died is taken over after its lease, so none is missed.

pub mod adaptive;
pub mod args;
pub mod bayes;
pub mod claim;
pub mod expand;
pub mod file;
pub mod trials;
pub mod worker;

use std::path::PathBuf;

pub use args::SweepArgs;
pub use file::{Method, SweepFile};
pub use worker::{run, Plan, SweepConfig, SweepReport};

use crate::error::Exit;

/// Why a sweep could not run.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("{path}: {message}")]
    File { path: PathBuf, message: String },
    #[error("invalid sweep: {0}")]
    Invalid(String),
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Scenario(#[from] crate::scenario::ScenarioError),
    #[error(transparent)]
    Policy(#[from] crate::policy::PolicyError),
    #[error(transparent)]
    Connect(#[from] bench_nats::ConnectError),
    #[error("sweep claims: {0}")]
    Claims(String),
    #[error("reading past results from clickhouse: {0}")]
    ClickHouse(String),
    #[error(transparent)]
    Record(#[from] crate::recorder::RecordError),
    #[error(transparent)]
    Publish(#[from] crate::publish::PublishFailure),
    #[error(transparent)]
    Runner(#[from] crate::Error),
}

impl SweepError {
    /// The exit code this error ends the process with.
    pub fn exit(&self) -> Exit {
        match self {
            SweepError::File { .. }
            | SweepError::Invalid(_)
            | SweepError::Config(_)
            | SweepError::Policy(_) => Exit::Usage,
            SweepError::Scenario(e) => e.exit(),
            SweepError::Publish(e) => e.exit(),
            SweepError::Runner(e) => e.exit(),
            SweepError::Connect(_)
            | SweepError::Claims(_)
            | SweepError::ClickHouse(_)
            | SweepError::Record(_) => Exit::Failure,
        }
    }
}
