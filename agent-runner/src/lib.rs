//! agent-runner (work in progress).
