//! `agent-runner tasks ...`: making tasks from other benchmarks' data.
//!
//! - `args`: the flags ([`TasksCommand`]) → a validated [`SweBenchImport`].
//! - `instance`: SWE-bench instance records as the published dataset writes them
//!   ([`Instance`]), from a JSON array or JSON lines.
//! - `environment`: the per repository and version environment an import prepares once,
//!   with network, and runs then use read-only and offline.
//! - `import`: the import itself ([`import_swe_bench`]) and its report ([`ImportReport`]):
//!   one task per instance, its fixture the tree at `base_commit` in a fresh one-commit
//!   repository, the scenario file naming them, the pins.

mod args;
mod environment;
mod import;
mod instance;

pub use args::{SweBenchImport, SweBenchImportArgs, TasksCommand};
pub use import::{import_swe_bench, ImportLine, ImportReport, LineKind};
pub use instance::{parse_instances, Instance};
