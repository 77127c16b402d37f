//! Tool sandboxing seen from the event stream: a timed-out bash call takes its whole
//! process group down and is reported as `timeout`; a path escaping the workspace is a
//! `user_error` with a `path` failure. A tool error (any `exit_kind` but `ok`, a command
//! exiting non-zero included) counts the same in `failure` events, `run_stop.tool_errors`
//! and the `tool_errors` query, checked in ClickHouse.

use std::time::Duration;

use bench_schemas::{ExitKind, ExitStatus, FailureRoot, Payload};
use benchstream_tests::processes_with;

use bench_analysis::{ParamValues, Query};
use bench_schemas::SubjectPrefix;
use tokio_util::sync::CancellationToken;

use crate::common::{
    fixture_scenario, journal_events, publish_setup, run_offline, runner_config, start_pipeline,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_timeout_kills_the_process_group_and_reports_timeout() {
    let (_dir, report) = run_offline(fixture_scenario("tool-timeout"), true).await;

    // Both sleeps (the background one included) are gone, not reparented to init.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(processes_with("sleep 1000.424"), Vec::<String>::new());

    let run = &report.runs[0];
    assert_eq!(run.result.exit_status, ExitStatus::Submitted);
    assert_eq!(run.result.tool_errors, Some(2));
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
    let latency = calls[0]
        .latency_ms
        .expect("the runner times every tool call");
    assert!((1000..10_000).contains(&latency), "{latency}");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_command_counts_once_in_events_run_stop_and_the_query() {
    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let setup = publish_setup(&nats.url(), &SubjectPrefix::default(), dir.path());
    let config = runner_config(
        fixture_scenario("tool-errors"),
        None,
        true,
        Some(setup),
        dir.path(),
    );
    let report = agent_runner::run(config, CancellationToken::new())
        .await
        .expect("scenario runs");
    let run = &report.runs[0];
    let run_id = run.run_id;
    sink.wait_for_run(run).await;

    // `cp` of a missing file (exits 1: deterministic, root `tool`) and the view of a
    // missing file (user_error, root `path`), each with its failure.
    sink.wait_for(
        &format!(
            "SELECT groupArray(exit_kind) FROM (SELECT exit_kind FROM benchstream.tool_calls \
             FINAL WHERE run_id = '{run_id}' ORDER BY seq) FORMAT TSV"
        ),
        "['deterministic','ok','user_error','ok']",
    )
    .await;
    sink.wait_for(
        &format!(
            "SELECT groupArray(root_kind) FROM (SELECT root_kind FROM benchstream.failures \
             FINAL WHERE run_id = '{run_id}' AND isNotNull(step_id) ORDER BY seq) FORMAT TSV"
        ),
        "['tool','path']",
    )
    .await;
    // The command's failure carries what it printed, not an empty string.
    sink.wait_for(
        &format!(
            "SELECT position(visitParamExtractString(first_failure_root, 'usage_error'), \
             'cp: cannot stat') > 0, position(contributing_factors[1], 'cp: cannot stat') > 0, \
             has(contributing_factors, '') FROM benchstream.failures FINAL \
             WHERE run_id = '{run_id}' AND root_kind = 'tool' FORMAT TSV"
        ),
        "1\t1\t0",
    )
    .await;
    sink.wait_for(
        &format!(
            "SELECT tool_errors FROM benchstream.run_stops FINAL WHERE run_id = '{run_id}' \
             FORMAT TSV"
        ),
        "2",
    )
    .await;
    let client = sink.clickhouse.client_of("benchstream");
    let answer = Query::find("tool_errors")
        .expect("shipped query")
        .run(&client, &ParamValues::new())
        .await
        .expect("tool_errors runs");
    let errors: f64 = (0..answer.rows.len())
        .filter(|&row| answer.get(row, "exit_kind") != Some("ok"))
        .filter_map(|row| answer.number(row, "calls"))
        .sum();
    assert_eq!(errors, 2.0, "{answer:?}");
    let bash = (0..answer.rows.len())
        .find(|&row| answer.get(row, "tool_name") == Some("bash"))
        .expect("a bash row");
    assert_eq!(answer.number(bash, "tool_error_rate"), Some(0.5));
    sink.stop().await;
}
