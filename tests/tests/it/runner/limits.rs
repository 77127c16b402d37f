//! Limits end a run early with the documented exit status and reason.

use bench_schemas::ExitStatus;

use crate::common::{fixture_scenario, run_offline};

async fn run_alone(scenario: &str) -> agent_runner::RunSummary {
    let (_dir, mut report) = run_offline(fixture_scenario(scenario), true).await;
    report.runs.remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_tests_patience_stops_a_run_that_does_not_improve() {
    let run = run_alone("patience").await;
    let r = &run.result;
    assert_eq!(r.exit_status, ExitStatus::ExitForfeit);
    assert_eq!(
        r.early_stop_reason.as_deref(),
        Some("failing_tests_patience")
    );
    assert!(r.early_stopped && r.success == Some(false));
    assert_eq!((r.turns, r.files_modified), (Some(3), Some(3)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_iterations_forfeits_the_run() {
    let run = run_alone("max-iterations").await;
    let r = &run.result;
    assert_eq!(r.exit_status, ExitStatus::ExitForfeit);
    assert_eq!(r.early_stop_reason.as_deref(), Some("max_iterations"));
    assert_eq!(r.turns, Some(2));
}
