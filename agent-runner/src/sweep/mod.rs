//! Sweeps: many configurations (models × strategies × hyper-parameters × tasks × seeds)
//! run by several worker processes, on several hosts, each configuration exactly once.
//! Format and usage: `agent-runner/docs/sweeps.md`.
//!
//! - [`file`](mod@file): the sweep file ([`SweepFile`]): matrix, constraints, tasks, seeds, method.
//! - [`expand`]: the matrix → distinct configs (arms) → configurations with claim keys.
//! - [`claim`]: the JetStream KV bucket through which workers claim configurations.
//! - [`adaptive`]: the UCB1 bandit of the `adaptive` method and the ClickHouse query
//!   feeding it.
//! - [`bayes`]: the search space and TPE proposals of the `bayes` method.
//! - [`trials`]: the results of a `bayes` sweep's finished trials, from ClickHouse.
//! - [`worker`]: one worker's loop ([`run`]): claim, run through the run loop, mark done.
//! - [`args`]: the `agent-runner sweep` flags → [`SweepConfig`] (or the dry run's
//!   [`Plan`]).
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

pub use crate::error::SweepError;
pub use args::SweepArgs;
pub use file::{Method, SweepFile};
pub use worker::{run, Plan, SweepConfig, SweepReport};
