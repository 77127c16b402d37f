//! `agent-runner tasks ...`: making tasks from other benchmarks' data.
//!
//! - `args`: the flags ([`TasksCommand`]) → a validated [`TasksConfig`].
//! - `instance`: SWE-bench instance records as the published dataset writes them
//!   ([`Instance`](instance::Instance)), from a JSON array or JSON lines.
//! - `environment`: the per repository and version environment an import prepares once,
//!   with network, and runs then use read-only and offline.
//! - `swe_bench_import`: the import itself ([`import_swe_bench`]) and its report ([`ImportReport`]):
//!   one task per instance, its fixture the tree at `base_commit` in a fresh one-commit
//!   repository, the scenario file naming them, the pins.
//! - `validate`: `tasks validate` ([`validate`]): the gold patches checked K times, broken
//!   tasks and flaky tests written down ([`ValidateReport`]).

mod args;
mod environment;
mod error;
mod instance;
mod swe_bench_import;
mod validate;

pub use args::{
    ImportImage, SweBenchImport, SweBenchImportArgs, TasksCommand, TasksConfig, ValidateArgs,
};
pub use error::TasksError;
pub use swe_bench_import::{import_swe_bench, ImportLine, ImportReport, LineKind};
pub use validate::{validate, TaskValidation, ValidateConfig, ValidateReport};
