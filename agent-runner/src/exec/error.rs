//! What only `agent-runner exec` can meet ([`ExecError`]) and the exit code of each kind.

use bench_sandbox::{ScratchError, UnmountablePath};

use crate::error::{CommandError, Error, Exit};

/// What only an external-agent run can meet; everything else it meets is a
/// [`Error`] of its own. A misbehaving agent is not an error: its bad lines are
/// skipped and its exit status recorded.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The agent program does not exist or is not executable (checked before anything
    /// is published).
    #[error("agent program {program:?}: {why}")]
    ProgramNotFound {
        /// The program as given.
        program: String,
        /// Why it cannot run.
        why: String,
    },
    /// The agent's exit could not be waited for.
    #[error("cannot wait for the agent: {0}")]
    Wait(std::io::Error),
    /// The agent's scratch copy of the fixture could not be made.
    #[error(transparent)]
    Scratch(#[from] ScratchError),
    /// A path the agent was to read (its program, `--sandbox-ro`) cannot be
    /// made visible in its sandbox.
    #[error(transparent)]
    Unmountable(#[from] UnmountablePath),
    /// The directory with the agent's problem statement (`BENCH_TASK_DIR`) could not be
    /// made.
    #[error("cannot write the task brief: {0}")]
    Brief(std::io::Error),
}

impl CommandError for ExecError {
    fn exit(&self) -> Exit {
        match self {
            ExecError::ProgramNotFound { .. } | ExecError::Unmountable(_) => Exit::Usage,
            ExecError::Scratch(_) | ExecError::Wait(_) | ExecError::Brief(_) => Exit::Failure,
        }
    }
}

impl From<ExecError> for Error {
    fn from(e: ExecError) -> Error {
        Error::Command(e.into())
    }
}
