//! A run's artifacts on disk, as the runner writes them: `<out>/<run_id>/events.jsonl`
//! and `summary.json`.
//!
//! Read as files only, so that the tests of the runner binary, which see runs from
//! another process, read them the same way as the in-process tests.

use std::fs;
use std::path::{Path, PathBuf};

use bench_schemas::BenchmarkEvent;

/// The directory of the only run under `runs`.
pub fn only_run_dir(runs: &Path) -> PathBuf {
    fs::read_dir(runs)
        .expect("runs")
        .next()
        .expect("one run")
        .expect("entry")
        .path()
}

/// Lines of the `events.jsonl` of the only run under `runs`; 0 while there is none.
pub fn journal_lines(runs: &Path) -> usize {
    fs::read_dir(runs)
        .ok()
        .and_then(|mut entries| entries.next())
        .and_then(Result::ok)
        .and_then(|run| fs::read_to_string(run.path().join("events.jsonl")).ok())
        .map_or(0, |text| text.lines().count())
}

/// The `summary.json` of the run in `run_dir`.
pub fn summary(run_dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(run_dir.join("summary.json")).expect("summary")).expect("json")
}

/// The `events.jsonl` of the run in `run_dir`, as written.
pub fn journal(run_dir: &Path) -> String {
    fs::read_to_string(run_dir.join("events.jsonl")).expect("events.jsonl")
}

/// The events of the `events.jsonl` in `run_dir`, decoded (and so known valid).
pub fn journal_events(run_dir: &Path) -> Vec<BenchmarkEvent> {
    journal(run_dir)
        .lines()
        .map(|line| bench_schemas::decode(line.as_bytes()).expect("recorded events are valid"))
        .collect()
}
