//! Logging on stderr for the benchstream binaries: the
//! `--log-format` choice and the tracing subscriber it installs. Filtered by `RUST_LOG`
//! (default `info`).

use tracing_subscriber::EnvFilter;

/// The format of log lines on stderr (`--log-format`, `BENCH_LOG_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event, coloured on a terminal.
    Text,
    /// One JSON object per event.
    Json,
}

/// Installs the global tracing subscriber writing `format` to stderr.
pub fn init_tracing(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colour only on a terminal, and not with NO_COLOR set (https://no-color.org).
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
