//! `/runs/{run_id}` (a run's whole trajectory) and the side-by-side view of two runs of
//! a task (`/tasks/{task_id}?a=&b=`).

use std::path::Path;

use clickhouse::Client;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::error::DataError;
use crate::serve::db;

/// A final diff shown at most this long; the page says it was cut.
const DIFF_MAX_BYTES: usize = 2 << 20;

/// `/runs/{run_id}`: the run's events and what its end says.
#[derive(Debug, Clone, Serialize)]
pub struct RunPage {
    /// The run.
    pub run_id: String,
    /// Its `run_start` event; `None` when none is stored (yet).
    pub run_start: Option<Value>,
    /// Every stored event in `seq` order (`run_start` and `run_stop` included).
    pub events: Vec<Value>,
    /// Its `run_stop` event; `None` while running (or when it was lost).
    pub run_stop: Option<Value>,
    /// The final diff.
    pub diff: Diff,
    /// Its `test_outcome` events, those whose outcome flipped first.
    pub test_outcomes: Vec<Value>,
    /// `run_stop.data.integrity`; `None` when the run was not judged here.
    pub integrity: Option<Value>,
    /// Where seq numbers are missing: events lost (or not stored yet).
    pub gaps: Vec<Gap>,
}

/// The final diff of a run of a SWE-bench-format task.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Diff {
    /// `run_stop.data.diff_sha256`; `None` when the run has no diff.
    pub sha256: Option<String>,
    /// The diff: as the run sent it (`run_stop.final_diff`), or read from `--runs-dir`
    /// and matching the hash.
    pub text: Option<String>,
    /// Why `text` is missing or cut.
    pub note: Option<String>,
}

/// Missing seq numbers before an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// The last seq before the gap; `None` when the first events are missing.
    pub after_seq: Option<u64>,
    /// How many seq numbers are missing.
    pub missing: u64,
}

/// `/runs/{run_id}`'s data; the diff is read from `runs_dir` when given.
pub async fn run(
    client: &Client,
    run_id: Uuid,
    runs_dir: Option<&Path>,
) -> Result<RunPage, DataError> {
    let rows = db::run_events(client, &run_id).await?;
    if rows.is_empty() {
        return Err(DataError::NotFound(format!(
            "no event of run {run_id} is stored"
        )));
    }
    let gaps = gaps(rows.iter().map(|r| r.seq));
    let events: Vec<Value> = rows
        .iter()
        .map(|row| serde_json::from_str(&row.raw).unwrap_or_else(|_| unreadable(&row.raw)))
        .collect();
    let of_type = |kind: &'static str| events.iter().filter(move |e| e["type"] == kind);
    let run_start = of_type("run_start").next().cloned();
    let run_stop = of_type("run_stop").next().cloned();
    let mut test_outcomes: Vec<Value> = of_type("test_outcome").cloned().collect();
    test_outcomes.sort_by_key(|t| !flipped(t));
    let integrity = run_stop
        .as_ref()
        .map(|s| s["data"]["integrity"].clone())
        .filter(|i| !i.is_null());
    Ok(RunPage {
        run_id: run_id.to_string(),
        diff: read_diff(run_stop.as_ref().map(|s| &s["data"]), runs_dir, &run_id),
        run_start,
        events,
        run_stop,
        test_outcomes,
        integrity,
        gaps,
    })
}

/// What an event whose stored text is not JSON shows.
fn unreadable(raw: &str) -> Value {
    serde_json::json!({ "type": "unreadable", "raw": raw })
}

/// Whether a `test_outcome` event's test passed before and not after, or the reverse.
pub fn flipped(test: &Value) -> bool {
    let data = &test["data"];
    data["before"]
        .as_bool()
        .zip(data["after"].as_bool())
        .is_some_and(|(before, after)| before != after)
}

/// The gaps in `seqs` (ascending), the first seq being 0.
fn gaps(seqs: impl Iterator<Item = u64>) -> Vec<Gap> {
    let mut gaps = Vec::new();
    let mut last: Option<u64> = None;
    for seq in seqs {
        let expected = last.map_or(0, |l| l + 1);
        if seq > expected {
            gaps.push(Gap {
                after_seq: last,
                missing: seq - expected,
            });
        }
        last = Some(last.map_or(seq, |l| l.max(seq)));
    }
    gaps
}

/// The final diff of `run_id` whose `run_stop` data is `stop`: the text the run sent
/// (`final_diff`) when it is whole, else `final.diff` under `runs_dir` when it is there
/// and matches `diff_sha256`, else the head the run sent, else a note saying where the
/// diff is.
fn read_diff(stop: Option<&Value>, runs_dir: Option<&Path>, run_id: &Uuid) -> Diff {
    let Some(expected) = stop.and_then(|s| s["diff_sha256"].as_str()) else {
        return Diff::default();
    };
    let stop = stop.unwrap_or(&Value::Null);
    let sent = stop["final_diff"].as_str();
    let cut = stop["final_diff_truncated"].as_bool().unwrap_or(false);
    let diff = |text: Option<&str>, note: Option<String>| Diff {
        sha256: Some(expected.to_owned()),
        text: text.map(str::to_owned),
        note,
    };
    if let Some(text) = sent.filter(|_| !cut) {
        let matches = hex::encode(Sha256::digest(text.as_bytes())) == expected;
        let note = (!matches).then(|| "the diff sent does not match its diff_sha256".to_owned());
        return diff(Some(text), note);
    }
    let from_file = match runs_dir {
        Some(dir) => match file_diff(dir, run_id, expected) {
            Ok(found) => return found,
            Err(why) => why,
        },
        None => {
            "start the viewer with --runs-dir (the runner's runs directory) to read the whole diff"
                .to_owned()
        }
    };
    match sent {
        Some(head) => diff(
            Some(head),
            Some(format!(
                "the first {} chars the run sent, of a longer diff: {from_file}",
                head.chars().count()
            )),
        ),
        None => diff(
            None,
            Some(format!(
                "the run did not send its diff (not UTF-8 text, over the event's size, or a runner from before run_stop.final_diff): {from_file}"
            )),
        ),
    }
}

/// `final.diff` of `run_id` under `dir`, when it matches `expected`; else why not.
fn file_diff(dir: &Path, run_id: &Uuid, expected: &str) -> Result<Diff, String> {
    // A parsed UUID: no path can be made of it but a file name.
    let path = dir.join(run_id.to_string()).join("final.diff");
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if hex::encode(Sha256::digest(&bytes)) != expected {
        return Err(format!(
            "{} does not match the run's diff_sha256",
            path.display()
        ));
    }
    let cut = bytes.len() > DIFF_MAX_BYTES;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(DIFF_MAX_BYTES)]).into_owned();
    Ok(Diff {
        sha256: Some(expected.to_owned()),
        text: Some(text),
        note: cut.then(|| format!("cut at {DIFF_MAX_BYTES} of {} bytes", bytes.len())),
    })
}

/// One step of a run in the side-by-side view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepView {
    /// Its seq.
    pub seq: u64,
    /// `reason`, `act`, `observe`, ...
    pub step_type: String,
    /// Its text.
    pub content: String,
}

/// The n-th steps of two runs.
#[derive(Debug, Clone, Serialize)]
pub struct StepPair {
    /// n, from 1.
    pub step: usize,
    /// Run a's n-th step; `None` when it has fewer.
    pub a: Option<StepView>,
    /// Run b's n-th step.
    pub b: Option<StepView>,
    /// Whether both have one and they agree in type and text.
    pub same: bool,
}

/// Two runs aligned by step.
#[derive(Debug, Clone, Serialize)]
pub struct SideBySide {
    /// Run a.
    pub a: String,
    /// Run b.
    pub b: String,
    /// Step by step.
    pub steps: Vec<StepPair>,
    /// The first step (from 1) where they differ; `None` when they never do.
    pub first_divergence: Option<usize>,
}

/// Runs `a` and `b` aligned by step, the first divergent step marked.
pub async fn side_by_side(client: &Client, a: Uuid, b: Uuid) -> Result<SideBySide, DataError> {
    let (steps_a, steps_b) = (steps(client, a).await?, steps(client, b).await?);
    let steps = align(steps_a, steps_b);
    Ok(SideBySide {
        a: a.to_string(),
        b: b.to_string(),
        first_divergence: steps.iter().find(|p| !p.same).map(|p| p.step),
        steps,
    })
}

/// The `step` events of `run_id` in seq order.
async fn steps(client: &Client, run_id: Uuid) -> Result<Vec<StepView>, DataError> {
    Ok(db::run_events(client, &run_id)
        .await?
        .into_iter()
        .filter(|row| row.kind == "step")
        .filter_map(|row| {
            let event: Value = serde_json::from_str(&row.raw).ok()?;
            Some(StepView {
                seq: row.seq,
                step_type: event["data"]["step_type"].as_str()?.to_owned(),
                content: event["data"]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            })
        })
        .collect())
}

/// Pairs the n-th steps of `a` and `b`.
fn align(a: Vec<StepView>, b: Vec<StepView>) -> Vec<StepPair> {
    let n = a.len().max(b.len());
    let (mut a, mut b) = (a.into_iter(), b.into_iter());
    (1..=n)
        .map(|step| {
            let (a, b) = (a.next(), b.next());
            let same = matches!((&a, &b), (Some(x), Some(y))
                if x.step_type == y.step_type && x.content == y.content);
            StepPair { step, a, b, same }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const DIFF: &str = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n";

    /// `run_stop.data` with the diff's hash, and `sent` as the run sent it.
    fn stop(sent: Option<&str>, truncated: bool) -> Value {
        json!({
            "diff_sha256": hex::encode(Sha256::digest(DIFF.as_bytes())),
            "final_diff": sent,
            "final_diff_truncated": truncated,
        })
    }

    #[test]
    fn the_diff_is_the_whole_text_the_run_sent_else_the_runs_file_else_the_head_sent() {
        let id = Uuid::now_v7();
        let dir = tempfile::tempdir().expect("runs dir");
        // Sent whole: no runs directory needed.
        let whole = read_diff(Some(&stop(Some(DIFF), false)), None, &id);
        assert_eq!((whole.text.as_deref(), whole.note), (Some(DIFF), None));
        // Sent cut, the whole file beside the run's events: the file.
        std::fs::create_dir_all(dir.path().join(id.to_string())).expect("run dir");
        std::fs::write(dir.path().join(id.to_string()).join("final.diff"), DIFF).expect("diff");
        let head = &DIFF[..10];
        let file = read_diff(Some(&stop(Some(head), true)), Some(dir.path()), &id);
        assert_eq!((file.text.as_deref(), file.note), (Some(DIFF), None));
        // Sent cut, no runs directory: the head, saying so.
        let cut = read_diff(Some(&stop(Some(head), true)), None, &id);
        assert_eq!(cut.text.as_deref(), Some(head));
        assert!(cut.note.expect("a note").contains("first 10 chars"));
        // Not sent, no runs directory: the hash and where the diff is.
        let unsent = read_diff(Some(&stop(None, true)), None, &id);
        assert_eq!(unsent.text, None);
        assert!(unsent.note.expect("a note").contains("--runs-dir"));
        // No diff at all.
        assert_eq!(read_diff(Some(&json!({})), None, &id).sha256, None);
    }

    fn step(seq: u64, kind: &str, content: &str) -> StepView {
        StepView {
            seq,
            step_type: kind.to_owned(),
            content: content.to_owned(),
        }
    }

    #[test]
    fn gaps_name_the_missing_seq_numbers() {
        assert_eq!(gaps([0, 1, 2].into_iter()), []);
        assert_eq!(
            gaps([2, 3, 7].into_iter()),
            [
                Gap {
                    after_seq: None,
                    missing: 2
                },
                Gap {
                    after_seq: Some(3),
                    missing: 3
                }
            ]
        );
    }

    #[test]
    fn steps_align_by_position_and_the_first_difference_is_marked() {
        let a = vec![
            step(1, "reason", "x"),
            step(2, "act", "ls"),
            step(3, "act", "cat"),
        ];
        let b = vec![step(1, "reason", "x"), step(2, "act", "pwd")];
        let pairs = align(a, b);
        assert_eq!(pairs.len(), 3);
        assert!(pairs[0].same && !pairs[1].same && !pairs[2].same);
        assert!(pairs[2].b.is_none());
    }

    #[test]
    fn a_test_flipped_when_its_outcome_changed() {
        let t = |before: Value, after: bool| serde_json::json!({"data": {"before": before, "after": after}});
        assert!(flipped(&t(Value::Bool(false), true)));
        assert!(!flipped(&t(Value::Bool(true), true)));
        assert!(
            !flipped(&t(Value::Null, true)),
            "unknown before: not known to flip"
        );
    }
}
