//! The edge every benchstream binary (`agent-runner`, `event-sink`, `bench-analysis`)
//! shares, so all three behave the same there (ripgrep's `crates/cli` is the model).
//! Each `main.rs` parses its command line, sets up logging and hands off to its library's
//! `command::execute`, which builds the runtime here ([`runtime()`]) and dispatches; the
//! error that comes back is printed and mapped to an exit status here ([`exit_code`]).
//!
//! # Layout
//!
//! - [`config_file`]: reading the TOML file of `--config`, with its one error type, and
//!   the error of a setting out of range.
//! - [`logging`]: `--log-format` ([`LogArgs`]) and the tracing subscriber on stderr,
//!   filtered by `RUST_LOG`.
//! - [`paths`]: path flags resolved against the current directory as they are parsed.
//! - [`signal`]: SIGINT / SIGTERM into a `CancellationToken`.
//! - [`runtime`](mod@runtime): the tokio runtime of a command, and a command's result as the exit code.
//! - [`token`]: `--bearer-token`, the secret the servers require of their clients.
//! - [`exit`]: the exit statuses all three share (0 ok, 1 failure, 2 usage, 130
//!   interrupted) and the one way the error that ends a command is printed.

#![warn(missing_docs)]

pub mod config_file;
pub mod exit;
pub mod logging;
pub mod paths;
pub mod runtime;
pub mod signal;
pub mod token;

pub use config_file::{ConfigFileError, InvalidSetting, TomlError, TomlPosition};
pub use exit::{report, Status};
pub use logging::{init_tracing, init_tracing_with, LogArgs, LogFormat};
pub use runtime::{exit_code, runtime};
pub use signal::cancel_on_signal;
