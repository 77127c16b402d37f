//! agent-runner end to end, in process, against a real nats-server: scenarios from
//! `scenarios/` and `tests/fixtures/runner/` run through [`agent_runner::run`], and the
//! events are read back from the JetStream stream. Process-level tests (the runner binary
//! killed with SIGKILL) live in `agent-runner/tests/`; `decided_together` starts two
//! `agent-runner` processes (build the binaries first) on one experiment run until
//! decided. The helpers (configs, stream
//! reading, the in-process sink) are in [`crate::common`], shared with the other areas.

mod decided_together;
mod events;
mod experiment;
mod hostile_judge;
mod limits;
mod mount_namespace;
mod outage;
mod pins;
mod protect;
mod reference;
mod sandbox;
mod tools;
