//! The final verdict of a run: its submission taken from the scratch copy it left, the
//! verdict computed from that diff alone on a fresh pristine copy, and the scratch copy
//! judged too, as a cross-check whose disagreement is an integrity flag.

use std::path::Path;

use bench_sandbox::Confinement;
use bench_task::LoadedTask;

use crate::judge::{judge_diff, judge_submission, Verdict};
use crate::submission::{capture, CaptureError, Submission};

/// The score of the submission at `root` (`None`: it could not be taken).
pub async fn cutoff_score(
    task: &LoadedTask,
    root: &Path,
    confinement: &Confinement,
) -> Option<f64> {
    let submission = capture(task, root, &task.task.submission)
        .await
        .map_err(
            |e| tracing::warn!(task = %task.task.id, error = %e, "no submission at the cut-off"),
        )
        .ok()?;
    Some(
        judge_diff(task, &submission.diff, confinement)
            .await
            .score(),
    )
}

/// The submission of the scratch copy at `root`, the verdict on it, and whether the
/// scratch copy's own verdict differs (both judged at once).
pub async fn judge_submitted(
    task: &LoadedTask,
    root: &Path,
    confinement: &Confinement,
) -> Result<(Verdict, Submission, Option<bool>), CaptureError> {
    let submission = capture(task, root, &task.task.submission).await?;
    if !submission.excluded.is_empty() {
        let paths: Vec<String> = submission
            .excluded
            .iter()
            .map(ToString::to_string)
            .collect();
        tracing::warn!(task = %task.task.id, paths = %paths.join(", "), "left out of the submission");
    }
    let (verdict, workspace) = tokio::join!(
        judge_diff(task, &submission.diff, confinement),
        judge_submission(task, root, confinement),
    );
    let differs =
        verdict.success() != workspace.success() || verdict.failing() != workspace.failing();
    if differs {
        tracing::warn!(
            task = %task.task.id,
            diff = %verdict.failing().join(","),
            workspace = %workspace.failing().join(","),
            "the workspace as left judges otherwise than the submitted diff; the diff's verdict stands"
        );
    }
    Ok((verdict, submission, Some(differs)))
}
