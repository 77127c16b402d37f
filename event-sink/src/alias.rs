//! `event-sink query` and `event-sink report`: aliases of `bench-analysis query` and
//! `bench-analysis report`. The sink holds no analysis code; these hand the process over
//! (`exec`) to the `bench-analysis` binary beside the running `event-sink`, or else the
//! first one on `PATH`, with the arguments unchanged, so its output and exit status are
//! the command's.

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::ValueEnum as _;

use bench_cli::LogFormat;

/// The binary the aliases run (package `bench-analysis`).
pub const ANALYSIS_BINARY: &str = "bench-analysis";

/// Why an alias could not hand over to [`ANALYSIS_BINARY`].
#[derive(Debug, thiserror::Error)]
pub enum AliasError {
    /// Neither beside the running executable nor on `PATH`.
    #[error(
        "`event-sink {command}` runs `{ANALYSIS_BINARY} {command}`, which is neither in {} \
         nor on PATH: build it with `cargo build -p bench-analysis` (it lands beside \
         event-sink) or install it with `cargo install --path event-sink/analysis`",
        beside.display()
    )]
    NotFound {
        /// The alias run: `query` or `report`.
        command: &'static str,
        /// The directory of the running executable, searched first.
        beside: PathBuf,
    },
    /// Found but not started (not executable, say).
    #[error("cannot run {}: {source}", program.display())]
    Exec {
        /// The path or name that was executed.
        program: PathBuf,
        /// What `execve` said.
        #[source]
        source: std::io::Error,
    },
}

/// The program to run: `bench-analysis` in `beside` if there is one, else the bare name,
/// which the OS looks up on `PATH`.
pub fn analysis_program(beside: &Path) -> PathBuf {
    let sibling = beside.join(ANALYSIS_BINARY);
    if sibling.is_file() {
        sibling
    } else {
        PathBuf::from(ANALYSIS_BINARY)
    }
}

/// Replaces this process with `bench-analysis [--log-format F] <command> <args>`, where
/// `log_format` is one the sink read from its own command line (the environment passes
/// on by itself). Returns only if the program could not be started.
pub fn exec_analysis(
    command: &'static str,
    args: &[OsString],
    log_format: Option<LogFormat>,
) -> AliasError {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let program = analysis_program(&beside);
    let mut analysis = Command::new(&program);
    if let Some(format) = log_format.and_then(|f| f.to_possible_value()) {
        analysis.args(["--log-format", format.get_name()]);
    }
    let source = analysis.arg(command).args(args).exec();
    if source.kind() == std::io::ErrorKind::NotFound {
        AliasError::NotFound { command, beside }
    } else {
        AliasError::Exec { program, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binary_beside_wins_over_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(analysis_program(dir.path()), PathBuf::from(ANALYSIS_BINARY));
        let sibling = dir.path().join(ANALYSIS_BINARY);
        std::fs::write(&sibling, "").expect("write");
        assert_eq!(analysis_program(dir.path()), sibling);
    }

    #[test]
    fn a_missing_binary_says_how_to_build_it() {
        let error = AliasError::NotFound {
            command: "query",
            beside: PathBuf::from("/opt/bench"),
        };
        let text = error.to_string();
        assert!(text.contains("bench-analysis query"), "{text}");
        assert!(text.contains("/opt/bench"), "{text}");
        assert!(text.contains("cargo build -p bench-analysis"), "{text}");
    }
}
