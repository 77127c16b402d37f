//! Tool sandboxing seen from the event stream: a timed-out bash call takes its whole
//! process group down and is reported as `timeout`; a path escaping the workspace is a
//! `user_error` with a `path` failure.

use std::time::Duration;

use benchstream_tests::processes_with;
use schemas::{ExitKind, ExitStatus, FailureRoot, Payload};

use crate::common::{fixture_scenario, journal_events, run_offline};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_timeout_kills_the_process_group_and_reports_timeout() {
    let (_dir, report) = run_offline(fixture_scenario("tool-timeout"), true).await;

    // Both sleeps (the background one included) are gone, not reparented to init.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(processes_with("sleep 1000.424"), Vec::<String>::new());

    let run = &report.runs[0];
    assert_eq!(run.result.exit_status, ExitStatus::Submitted);
    assert_eq!(run.result.tool_errors, 2);
    let events = journal_events(run);
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.payload {
            Payload::ToolCall(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(calls[0].tool_name, "bash");
    assert_eq!(calls[0].exit_kind, ExitKind::Timeout);
    assert!(calls[0]
        .exit_message
        .as_deref()
        .is_some_and(|m| m.contains("process tree")));
    assert!(
        (1000..10_000).contains(&calls[0].latency_ms),
        "{}",
        calls[0].latency_ms
    );
    assert_eq!(calls[1].exit_kind, ExitKind::UserError);

    let roots: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.payload {
            Payload::Failure(f) => Some(&f.first_failure_root),
            _ => None,
        })
        .collect();
    assert!(matches!(roots[0], FailureRoot::Tool { tool_name, .. } if tool_name == "bash"));
    assert!(
        matches!(roots[1], FailureRoot::Path { invalid_path, .. } if invalid_path == "../outside.txt")
    );
}
