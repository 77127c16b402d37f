//! External agents: `agent-runner exec -- <command...>` runs any agent program as one run
//! and publishes what it reports, so agents the runner did not write (Python game loops,
//! SWE-agent style agents) join the same pipeline. Protocol:
//! `agent-runner/docs/exec-protocol.md`; example: `scenarios/agents/example_agent.py`.
//!
//! - [`protocol`]: one JSON line → a validated payload and its step, or why not.
//! - [`bridge`]: the run: scratch copy, environment, child process, `run_start` /
//!   `run_stop`, the reading loop ([`run`]).
//! - [`program`]: the agent program, found before anything is published, and the
//!   default `policy_id` it gives.
//! - [`args`]: the `agent-runner exec` flags → [`ExecConfig`], one run per task.
//!
//! The agent never writes envelopes: ids, `seq`, `ts`, hashes, seed and host are the
//! runner's, so an agent cannot break the stream's invariants (no gaps, unique ids).

pub mod args;
pub mod bridge;
pub mod program;
pub mod protocol;

pub use args::ExecArgs;
pub use bridge::{run, ExecConfig, ExecReport};

use crate::error::Exit;

/// Why an external-agent run could not happen or be recorded. A misbehaving agent is not
/// an error: its bad lines are skipped and its exit status recorded.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Scenario(#[from] crate::scenario::ScenarioError),
    #[error(transparent)]
    Sandbox(#[from] crate::tools::SandboxError),
    #[error("agent program {program:?}: {why}")]
    ProgramNotFound {
        /// The program as given.
        program: String,
        /// Why it cannot run.
        why: String,
    },
    #[error("cannot start agent {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("cannot wait for the agent: {0}")]
    Wait(std::io::Error),
    #[error(transparent)]
    Record(#[from] crate::recorder::RecordError),
    #[error(transparent)]
    Publish(#[from] crate::publish::PublishFailure),
    #[error(transparent)]
    Runner(#[from] crate::Error),
    #[error(transparent)]
    Unsandboxed(#[from] crate::tools::bwrap::SandboxUnavailable),
}

impl ExecError {
    /// The exit code this error ends the process with.
    pub fn exit(&self) -> Exit {
        match self {
            ExecError::Config(_)
            | ExecError::ProgramNotFound { .. }
            | ExecError::Spawn { .. }
            | ExecError::Unsandboxed(_) => Exit::Usage,
            ExecError::Scenario(e) => e.exit(),
            ExecError::Publish(e) => e.exit(),
            ExecError::Runner(e) => e.exit(),
            ExecError::Sandbox(_) | ExecError::Wait(_) | ExecError::Record(_) => Exit::Failure,
        }
    }
}
