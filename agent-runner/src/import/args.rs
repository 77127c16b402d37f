//! `agent-runner import ...`: flags → the import loop over a directory of trajectories,
//! publishing each file's events (or printing them with `--no-publish`).

use std::io::Write;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};

use super::swe_agent::{self, TrajFile};
use super::ImportError;
use crate::cli::{host_or_default, PublishArgs};
use crate::error::Exit;
use crate::fixture_tree::{walk, Symlinks};
use crate::publish::DeliveryReport;
use crate::runner::{finish_optional_publisher, start_optional_publisher, PublishSetup};

/// `agent-runner import ...`
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Import SWE-agent trajectories: every `*.traj` file under <dir> (recursively).
    SweAgent(Box<ImportArgs>),
}

/// `agent-runner import swe-agent`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Directory holding `.traj` files (searched recursively), or one `.traj` file.
    pub dir: PathBuf,
    /// `host` on the imported events. Default: the host name.
    #[arg(long, env = "BENCH_RUNNER_HOST")]
    pub host: Option<String>,
    /// Print the events as JSON lines on stdout instead of publishing them.
    #[arg(long, env = "BENCH_RUNNER_NO_PUBLISH")]
    pub no_publish: bool,
    #[command(flatten)]
    pub publish: PublishArgs,
}

/// What an import did.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    /// Files imported.
    pub files: u64,
    /// Events sent (or printed).
    pub events: u64,
    /// Files skipped, with the reason.
    pub failed: Vec<String>,
    /// What the publisher did; `None` without publishing.
    pub delivery: Option<DeliveryReport>,
}

impl ImportCommand {
    /// Runs the command and prints its report.
    pub async fn execute(self) -> Result<Exit, ImportError> {
        let ImportCommand::SweAgent(args) = self;
        let publish = args.publish.into_setup_unless(args.no_publish)?;
        let host = host_or_default(args.host);
        let report = import_dir(&args.dir, &host, publish.as_ref()).await?;
        for failure in &report.failed {
            eprintln!("agent-runner: skipped {failure}");
        }
        eprintln!(
            "imported {} trajectories ({} events), {} skipped",
            report.files,
            report.events,
            report.failed.len()
        );
        if let Some(d) = &report.delivery {
            eprintln!("{d} (duplicates: already imported)");
        }
        Ok(match report.delivery.as_ref().map(|d| d.exit()) {
            Some(exit) if exit != Exit::Ok => exit,
            _ if !report.failed.is_empty() => Exit::Failure,
            _ => Exit::Ok,
        })
    }
}

/// Imports every `.traj` file under `dir` (sorted by path), publishing through `publish`
/// or, without it, printing the events on stdout.
pub async fn import_dir(
    dir: &Path,
    host: &str,
    publish: Option<&PublishSetup>,
) -> Result<ImportReport, ImportError> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    let publisher = start_optional_publisher(publish).await?;
    let handle = publisher.as_ref().map(|p| p.handle());
    let mut report = ImportReport::default();
    let mut stdout = std::io::stdout().lock();
    for path in &files {
        let events = match read(path).and_then(|(bytes, modified)| {
            swe_agent::events(
                &TrajFile {
                    path,
                    bytes: &bytes,
                    modified,
                },
                host,
            )
        }) {
            Ok(events) => events,
            Err(e) => {
                tracing::error!(error = %e, "trajectory skipped");
                report.failed.push(e.to_string());
                continue;
            }
        };
        report.files += 1;
        for (event, bytes) in events {
            report.events += 1;
            match &handle {
                Some(handle) => {
                    handle.send(&event, Bytes::from(bytes));
                }
                None => {
                    let _ = stdout
                        .write_all(&bytes)
                        .and_then(|()| stdout.write_all(b"\n"));
                }
            }
        }
    }
    drop(handle);
    report.delivery = finish_optional_publisher(publisher).await?;
    Ok(report)
}

fn read(path: &Path) -> Result<(Vec<u8>, DateTime<Utc>), ImportError> {
    let read_err = |source| ImportError::Read {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::read(path).map_err(read_err)?;
    let modified = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map_err(read_err)?;
    // Whole milliseconds: the wire keeps ms, and a re-import must give the same ts.
    let modified = DateTime::<Utc>::from(modified);
    let millis = modified.timestamp_millis();
    Ok((
        bytes,
        DateTime::from_timestamp_millis(millis).unwrap_or(modified),
    ))
}

/// Every `.traj` file under `path` (or `path` itself).
fn collect(path: &Path, out: &mut Vec<PathBuf>) -> Result<(), ImportError> {
    if path.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    // Not a fixture: every directory counts, linked ones too.
    let entries = walk(path).include_ignored().symlinks(Symlinks::Follow);
    for entry in entries {
        let entry = entry.map_err(|e| ImportError::Read {
            path: e.path().to_path_buf(),
            source: e.into(),
        })?;
        if !entry.file_type().is_dir() && entry.path().extension().is_some_and(|e| e == "traj") {
            out.push(entry.into_path());
        }
    }
    Ok(())
}
