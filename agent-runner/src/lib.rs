//! agent-runner: executes agent benchmark scenarios on a worker host and reports every
//! happening as one `BenchmarkEvent` (see `schemas/README.md`) on NATS JetStream, spooling to disk
//! while the broker is away.
//!
//! # Layout
//!
//! - [`policy`]: the [`Policy`](policy::Policy) trait, the `scripted` policy and the `llm`
//!   policy (a model behind an OpenAI-compatible API, with context strategies).
//! - [`provider`]: chat-completions client, retries, the model listing.
//! - prices and call costs are `bench-pricing`'s; token counts from `usage` blocks too.
//! - [`tools`]: the agent's tools (`bash`, `view`, `str_replace`, `write_file`, `grep`,
//!   `submit`) in a per-run scratch copy of the fixture.
//! - [`agent`]: one run, the agent loop from `run_start` to `run_stop`.
//! - `run_lifecycle`: what every run of this runner does before its first and after its
//!   last turn, native or external agent: sandbox in force → `env_hash` → `run_start`
//!   (every `run_start` is built there), the judge on the scratch copy, `run_stop` →
//!   `summary.json`.
//! - [`limits`]: the limits that end a run early and the exit status of each.
//! - [`backoff`]: the wait before a retry under a run's `retry_policy` (tools and models).
//! - [`recorder`]: a run's event stream (stamping, `events.jsonl`, `summary.json`).
//! - [`runner`]: a whole scenario: concurrency, progress, publisher life cycle ([`run`]).
//! - [`sweep`]: sweeps over models × strategies × hyper-parameters, shared by several
//!   workers through a JetStream KV bucket (`agent-runner sweep`).
//! - [`decide`]: an experiment of two models run in rounds until the anytime-valid
//!   sequential test decides (`agent-runner run --until-decided`), on one host or shared
//!   by several workers through the sweeps' claim bucket.
//! - [`exec`]: external agents over JSON lines (`agent-runner exec -- <command...>`).
//! - [`run_import`]: runs recorded by other frameworks (`agent-runner import swe-agent`);
//!   tasks made from other benchmarks are [`tasks`]'.
//! - [`tail`]: live events from the stream, filtered, one readable line each
//!   (`agent-runner tail`).
//! - [`otlp`]: an OTLP/HTTP receiver turning OpenTelemetry GenAI traces into events
//!   (`agent-runner otlp`).
//! - [`pin_report`]: `scenarios hash|check`, a scenarios directory's `pins.toml` rewritten or
//!   checked.
//! - [`spool_report`]: `spool flush|status`, the spool replayed or listed.
//! - [`tasks`]: tasks made from other benchmarks' data (`agent-runner tasks import
//!   swe-bench`: SWE-bench-format instances and local clones).
//! - [`cli`]: the command line ([`cli::Cli`]): every command, and the flags of `run`,
//!   `scenarios` and `spool` → validated configs.
//! - [`command`]: running what the command line asks for ([`command::execute`]): the
//!   runner's mount namespace, the runtime, the subcommand, its outcome and exit code.
//! - [`flags`]: the flag groups several commands share (scenarios, events and publishing,
//!   the LLM provider), declared once and flattened into each.
//! - [`error`]: the one error type, the process exit codes, and [`Outcome`]: what a
//!   command reports and the exit code it ends with. What only one command can meet is
//!   declared beside it (`sweep/error.rs`, `exec/error.rs`, `run_import/error.rs`,
//!   `tail/error.rs`, `tasks/error.rs`), with the exit code of each kind.
//!
//! The agent sandbox (bwrap, seccomp, the network, the bounded workspace and the runner's
//! mount namespace, the confined shell), the scratch copy, fixture trees and their hash,
//! one-commit git repositories and what reaches the operator's terminal are the
//! `bench-sandbox` crate (`agent-runner/sandbox/`): a run's [`bench_sandbox::Confinement`]
//! starts every process its agent causes.
//!
//! What a run executes (scenario files, tasks and `pins.toml`, a run's context plan, the
//! tool requests an agent may make) is the `bench-task` crate (`agent-runner/task/`):
//! every command that runs tasks loads a [`bench_task::LoadedScenario`].
//!
//! Judging (the submission as one bounded diff, the judge's tests run by its own harness
//! on a pristine copy with the diff applied, the SWE-bench judge, the protected files put
//! back, the integrity flags) is the `bench-judge` crate (`agent-runner/judge/`): a run's
//! end judges its scratch copy with [`bench_judge::judge_submitted`].
//!
//! Delivery (acknowledged publishing, the spool, the quarantine) is the `bench-delivery`
//! crate (`agent-runner/delivery/`): every publishing command starts a
//! [`bench_delivery::Publisher`] from a [`bench_delivery::PublishSetup`] and hands its
//! runs a [`bench_delivery::PublisherHandle`].
//!
//! Every subcommand has one shape: flags → validated config (`cli`, `flags` and each
//! command's `args`) → a function that runs it → an outcome (a report implementing
//! [`Outcome`], or an [`Error`]) → an exit code. Only [`command::execute`], which the
//! binary (`src/main.rs`) hands off to, prints outcomes and errors.
//!
//! Running a scenario from code (what the tests and `agent-runner run` do):
//!
//! ```no_run
//! # async fn demo() -> Result<(), agent_runner::Error> {
//! use agent_runner::{run, RunnerConfig};
//! # let config: RunnerConfig = todo!();
//! let report = run(config, tokio_util::sync::CancellationToken::new()).await?;
//! println!("{report}");
//! # Ok(()) }
//! ```

#![warn(missing_docs)]
// The module docs link the crate's private modules too, for readers of
// `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

mod agent;
mod backoff;
pub mod cli;
pub mod command;
pub mod decide;
mod error;
pub mod exec;
mod flags;
mod limits;
pub mod otlp;
mod pin_report;
mod policy;
mod provider;
mod recorder;
pub mod run_import;
mod run_lifecycle;
mod runner;
mod spool_report;
pub mod sweep;
mod tail;
mod task_image;
pub mod tasks;
mod tools;

pub use agent::RunSummary;
pub use bench_pricing::{PriceTable, Prices, TokenPrice};
pub use error::{Error, Exit, Outcome};
pub use policy::LlmConfig;
pub use provider::ProviderConfig;
pub use recorder::RunRecorder;
pub use runner::{flush_spool, run, PolicyOverrides, RunnerConfig, ScenarioReport};
pub use tools::DEFAULT_OUTPUT_CAP;
