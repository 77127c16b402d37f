//! Runs recorded elsewhere (a SWE-agent trajectory, a received OpenTelemetry trace), shared
//! by every producer that turns them into events: their `run_start`
//! ([`recorded_run_start`]), what their `env_hash` covers ([`Provenance`]), and the ids of
//! their events ([`derived_uuid`]), derived from what they came from so that a second
//! import or a resent trace yields the same ids and is dropped downstream.

use serde::Serialize;
use uuid::Uuid;

use crate::canonical::{sha256_hex, Canonical, Hash256};
use crate::payload::{ExperimentRef, RunConfig, RunStart, ScenarioRef};

/// The `run_start` of a run recorded elsewhere, by `runner_version` and scored (or not)
/// as `scoring_version` says: its sandbox is not known (NULL, never this runner's) and it
/// belongs to no sweep of this runner; it is in the `experiment` its importer names.
pub fn recorded_run_start(
    config: RunConfig,
    scenario: ScenarioRef,
    fixture_sha256: Hash256,
    (runner_version, scoring_version): (String, &str),
    experiment: ExperimentRef,
) -> RunStart {
    RunStart {
        config,
        scenario,
        fixture_sha256,
        scoring_version: scoring_version.to_owned(),
        runner_version,
        sandbox: None,
        sweep: None,
        experiment: Box::new(experiment),
        image: None,
    }
}

/// Where a run recorded elsewhere came from: what its `env_hash` covers, since the
/// environment it ran in is not known. Its `source` keeps it apart from every environment
/// of a run the runner executes.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Provenance<'a> {
    /// A SWE-agent trajectory file.
    SweAgent {
        /// `swe-agent`.
        source: &'static str,
        /// The SWE-agent version that wrote it.
        swe_agent_version: &'a str,
        /// Its `environment` field.
        environment: &'a str,
    },
    /// An OpenTelemetry trace received by `agent-runner otlp`.
    Trace {
        /// `otlp`.
        source: &'static str,
        /// `service.name`.
        service: &'a str,
        /// `service.version`, when the resource has it.
        service_version: Option<&'a str>,
        /// `telemetry.sdk.name`, when the resource has it.
        sdk: Option<&'a str>,
        /// `telemetry.sdk.version`, when the resource has it.
        sdk_version: Option<&'a str>,
    },
}

impl Provenance<'_> {
    /// The `env_hash` of a run that came from here.
    pub fn env_hash(&self) -> Hash256 {
        self.canonical_hash()
    }
}

/// A UUIDv8 from the SHA-256 of `name`: deterministic, and distinct for distinct names.
pub fn derived_uuid(name: &str) -> Uuid {
    let digest = sha256_hex(name.as_bytes());
    // The first 32 hex chars of the digest are 16 bytes in UUID "simple" form.
    let bytes = Uuid::try_parse(&digest.as_str()[..32])
        .map(Uuid::into_bytes)
        .unwrap_or_default();
    uuid::Builder::from_custom_bytes(bytes).into_uuid()
}
