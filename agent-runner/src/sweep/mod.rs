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

pub(crate) mod adaptive;
pub(crate) mod args;
pub(crate) mod bayes;
pub mod claim;
mod error;
pub(crate) mod expand;
pub(crate) mod file;
pub(crate) mod trials;
pub(crate) mod worker;

pub use args::SweepArgs;
pub use error::SweepError;
pub use file::{Method, SweepFile};
pub use worker::{run, Plan, SweepConfig, SweepReport};

/// Inputs the sweep modules' unit tests share.
#[cfg(test)]
mod test_inputs {
    use std::path::Path;

    use bench_schemas::RunConfig;

    use super::SweepFile;

    /// The `[config]` of the shipped `smoke` scenario: the base every test sweep varies.
    pub(super) fn smoke_config() -> RunConfig {
        let text = include_str!("../../../scenarios/smoke.toml");
        bench_task::Scenario::parse(Path::new("smoke.toml"), text)
            .expect("smoke scenario")
            .config
    }

    /// The sweep file `text`, which must be valid.
    pub(super) fn sweep(text: &str) -> SweepFile {
        SweepFile::parse(Path::new("sweep.toml"), text).expect("valid sweep")
    }
}
