//! bench-task: what a benchmark run executes. A scenarios directory holds scenario files,
//! tasks (`task.toml` and a fixture) and `pins.toml`; this crate reads them, hashes
//! everything and checks the hashes against the pins, so that a run is refused when what
//! it would execute is not what was reviewed. Nothing here runs a task.
//!
//! The one entry point is [`LoadedScenario::load`]: a scenario with the tasks it selects
//! ([`LoadedTask`]), each with its fixture listing, its judge's protected files
//! ([`Protected`]) and its pins. A run's configuration is checked into a [`ContextPlan`],
//! and what an agent asks of its tools is a [`ToolRequest`] parsed into a [`ToolCommand`].
//!
//! Formats: `scenarios/README.md`. It imports nothing of the runner
//! (`tests/tests/module_graph.rs` checks).
//!
//! # Layout
//!
//! - `scenario`: scenario files, tasks, `pins.toml`, the `[swe_bench]` section of a task
//!   imported from a SWE-bench-format instance, and what `tasks validate` found about one.
//! - `protected`: the judge's own files of a task ([`Protected`]), compiled from its
//!   `[judge] protect` patterns.
//! - `context_plan`: a run's context strategy with its parameters checked ([`ContextPlan`];
//!   scenario and sweep files are checked with it when loaded).
//! - `tool_request`: a tool call as a policy or a scripted scenario states it
//!   ([`ToolRequest`]) and as the toolbox runs it ([`ToolCommand`]).

#![warn(missing_docs)]
// The module docs link the crate's private modules too, for readers of
// `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

mod context_plan;
mod protected;
mod scenario;
mod tool_request;

pub use context_plan::{
    ContextPlan, SummaryPlan, DEFAULT_OBSERVATION_WINDOW, DEFAULT_SUMMARY_INTERVAL,
    DEFAULT_SUMMARY_KEEP,
};
pub use protected::Protected;
pub use scenario::{
    base_message, patch_paths, Judge, JudgeTest, Language, LoadOptions, LoadedScenario, LoadedTask,
    PinError, Pins, PolicyKind, Scenario, ScenarioError, ScriptedActions, SubmissionLimits,
    SweBench, Task, TaskImage, TaskPin, TestRunner, ValidatedTest, Validation, DEFAULT_TEST_CMD,
    ENVS_DIR, FIXTURE_DIR, PINS_FILE, TASKS_DIR, TASK_FILE, VALIDATION_FILE,
};
pub use tool_request::{ToolCommand, ToolRequest, TOOL_NAMES};
