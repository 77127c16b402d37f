//! Logging on stderr for the benchstream binaries: the `--log-format` flag
//! ([`LogArgs`]) and the tracing subscriber it installs. Filtered by `RUST_LOG` (default
//! `info`).

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::ValueEnum;
use tracing_subscriber::fmt::format::DefaultFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::EnvFilter;

/// `--log-format`, global to every subcommand; flatten into a binary's top-level parser.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct LogArgs {
    /// Log format on stderr.
    #[arg(long, env = "BENCH_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
}

/// The format of log lines on stderr (`--log-format`, `BENCH_LOG_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event, coloured on a terminal.
    Text,
    /// One JSON object per event.
    Json,
}

impl LogFormat {
    /// The flag's parser with the values named but not described, for a binary whose
    /// `--help` pages keep clap's short layout (agent-runner's), which one described
    /// value would turn into the long one on every page: `#[command(mut_arg("log_format",
    /// |arg| arg.value_parser(LogFormat::terse_parser())))]`.
    pub fn terse_parser() -> impl TypedValueParser<Value = LogFormat> {
        PossibleValuesParser::new(["text", "json"])
            .try_map(|value| <LogFormat as ValueEnum>::from_str(&value, false))
    }
}

/// The `--log-format` the subscriber was installed with (text before it was).
static FORMAT: std::sync::OnceLock<LogFormat> = std::sync::OnceLock::new();

/// The `--log-format` in use: how [`crate::report`] prints the error that ends a command.
pub fn format() -> LogFormat {
    FORMAT.get().copied().unwrap_or(LogFormat::Text)
}

/// Installs the global tracing subscriber writing `format` to stderr.
pub fn init_tracing(format: LogFormat) {
    init_tracing_with(format, DefaultFields::new());
}

/// [`init_tracing`], with `text_fields` formatting the fields of `text` lines (a binary
/// that logs what others wrote escapes them there; JSON lines are escaped by JSON).
pub fn init_tracing_with<F>(format: LogFormat, text_fields: F)
where
    F: for<'w> FormatFields<'w> + Send + Sync + 'static,
{
    let _ = FORMAT.set(format);
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colour only on a terminal, and not with NO_COLOR set (https://no-color.org).
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.fmt_fields(text_fields).init(),
        LogFormat::Json => builder.json().init(),
    }
}
