//! `agent-runner import ...`: flags → [`ImportConfig`], and the import loop over a
//! directory of trajectories, publishing each file's events (or writing them out as JSON
//! lines with `--no-publish`).

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};

use bench_delivery::{DeliveryReport, PublishSetup, Publisher};
use bench_sandbox::{walk, Symlinks};
use bench_schemas::{BenchmarkEvent, ExperimentRef, Payload};

use super::swe_agent::{self, TrajFile};
use super::ImportError;
use crate::agent::result_words;
use crate::error::{Error, Exit, Outcome};
use crate::flags::{ExperimentArgs, OptionalEventArgs};
use crate::runner::finish_optional_publisher;

/// `agent-runner import ...`
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Import SWE-agent trajectories: every `*.traj` file under <dir> (recursively).
    // This doc is the --help text: `<name>` is a placeholder, not an HTML tag.
    #[allow(rustdoc::invalid_html_tags)]
    SweAgent(Box<ImportArgs>),
}

/// `agent-runner import swe-agent`.
#[derive(Debug, Args)]
#[command(
    mut_arg("host", |a| a.help("`host` on the imported events. Default: the host name")),
    mut_arg("no_publish", |a| a.help(
        "Print the events as JSON lines on stdout instead of publishing them"
    ))
)]
pub struct ImportArgs {
    /// Directory holding `.traj` files (searched recursively), or one `.traj` file.
    #[arg(value_parser = bench_cli::paths::absolute)]
    pub dir: PathBuf,
    /// The experiment the imported runs belong to and their tags.
    #[command(flatten)]
    pub experiment: ExperimentArgs,
    /// Where the events go (publishing, spool, `events.jsonl`), or `--no-publish`.
    #[command(flatten)]
    pub events: OptionalEventArgs,
}

/// Everything `agent-runner import swe-agent` needs, validated.
#[derive(Debug, Clone)]
pub struct ImportConfig {
    /// A directory of `.traj` files, or one `.traj` file.
    pub dir: PathBuf,
    /// `host` on the imported events.
    pub host: String,
    /// Where events go; `None` = written out as JSON lines instead (`--no-publish`).
    pub publish: Option<PublishSetup>,
    /// The experiment and tags of the imported runs.
    pub experiment: ExperimentRef,
}

impl ImportCommand {
    /// The validated config.
    pub fn into_config(self) -> Result<ImportConfig, Error> {
        let ImportCommand::SweAgent(args) = self;
        let (host, publish) = args.events.into_setup()?;
        Ok(ImportConfig {
            dir: args.dir,
            host,
            publish,
            experiment: args.experiment.into_experiment()?,
        })
    }
}

/// Where imported events go.
pub enum Destination<'a> {
    /// Published through this setup.
    Publish(&'a PublishSetup),
    /// Written as JSON lines, one per event (`--no-publish`).
    Print(&'a mut (dyn Write + Send)),
}

/// What an import did.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    /// One line per imported file, in import order: its path, run id, events and how
    /// the run ended (see [`file_line`]).
    pub imported: Vec<String>,
    /// Files imported.
    pub files: u64,
    /// Events sent (or printed).
    pub events: u64,
    /// Files skipped, with the reason.
    pub failed: Vec<String>,
    /// What the publisher did; `None` without publishing.
    pub delivery: Option<DeliveryReport>,
}

/// The skipped files, the counts and the delivery (for stderr: stdout may carry the
/// events).
impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in &self.imported {
            writeln!(f, "{line}")?;
        }
        for failure in &self.failed {
            writeln!(f, "agent-runner: skipped {failure}")?;
        }
        writeln!(
            f,
            "imported {} trajectories ({} events), {} skipped",
            self.files,
            self.events,
            self.failed.len()
        )?;
        if let Some(d) = &self.delivery {
            writeln!(f, "{d} (duplicates: already imported)")?;
        }
        Ok(())
    }
}

/// The delivery's exit code when it is not 0, else [`Exit::Failure`] when a file was
/// skipped.
impl Outcome for ImportReport {
    fn exit(&self) -> Exit {
        match self.delivery.as_ref().map(DeliveryReport::exit) {
            Some(exit) if exit != Exit::Ok => exit,
            _ if !self.failed.is_empty() => Exit::Failure,
            _ => Exit::Ok,
        }
    }
}

/// Imports what `config` names: published, or written to `out` as JSON lines without
/// publishing.
pub async fn run(
    config: ImportConfig,
    out: &mut (dyn Write + Send),
) -> Result<ImportReport, Error> {
    let destination = match &config.publish {
        Some(setup) => Destination::Publish(setup),
        None => Destination::Print(out),
    };
    import_dir(&config.dir, (&config.host, &config.experiment), destination).await
}

/// Imports every `.traj` file under `dir` (sorted by path) to `destination`, with `host`
/// on every event and every run in `experiment`.
pub async fn import_dir(
    dir: &Path,
    (host, experiment): (&str, &ExperimentRef),
    destination: Destination<'_>,
) -> Result<ImportReport, Error> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    let (publisher, mut out) = match destination {
        Destination::Publish(setup) => (Some(Publisher::connect(setup).await?), None),
        Destination::Print(out) => (None, Some(out)),
    };
    let handle = publisher.as_ref().map(|p| p.handle());
    let mut report = ImportReport::default();
    for path in &files {
        let events = match read(path).and_then(|bytes| {
            swe_agent::events(
                &TrajFile {
                    path,
                    bytes: &bytes,
                    recorded_at: now_ms(),
                },
                host,
                experiment,
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
        report.imported.push(file_line(path, &events));
        for (event, bytes) in events {
            report.events += 1;
            if let Some(handle) = &handle {
                handle.send(&event, Bytes::from(bytes));
            } else if let Some(out) = &mut out {
                let _ = out.write_all(&bytes).and_then(|()| out.write_all(b"\n"));
            }
        }
    }
    drop(handle);
    report.delivery = finish_optional_publisher(publisher).await?;
    Ok(report)
}

/// `<path>: run <run_id>, <n> events, <exit_status> <outcome>, tokens <t> cost <c>`,
/// unknown values as `-` (the outcome as [`result_words`] reads it).
fn file_line(path: &Path, events: &[(BenchmarkEvent, Vec<u8>)]) -> String {
    let run_id = events
        .first()
        .map_or_else(|| "-".to_owned(), |(e, _)| e.run_id.to_string());
    let ended = events.iter().rev().find_map(|(e, _)| match &e.payload {
        Payload::RunStop(stop) => Some(stop),
        _ => None,
    });
    let how = ended.map_or_else(
        || "no run_stop".to_owned(),
        |stop| {
            let known = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
            format!(
                "{} {}, tokens {} cost {}",
                stop.exit_status.as_str(),
                result_words(stop).0,
                known(stop.total_tokens.map(|t| t.to_string())),
                known(stop.cost_usd.map(|c| c.to_string()))
            )
        },
    );
    format!(
        "{}: run {run_id}, {} events, {how}",
        path.display(),
        events.len()
    )
}

fn read(path: &Path) -> Result<Vec<u8>, ImportError> {
    std::fs::read(path).map_err(|source| ImportError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Now, in whole milliseconds (what the wire keeps).
fn now_ms() -> DateTime<Utc> {
    let now = Utc::now();
    DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now)
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
