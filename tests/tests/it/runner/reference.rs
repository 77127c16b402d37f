//! The shipped tasks are genuine: every reference solution solves its task, and an empty
//! submission fails every one of them.

use std::fs;

use bench_schemas::{ExitStatus, Payload, SubjectPrefix};
use bench_task::TASKS_DIR;
use tokio_util::sync::CancellationToken;

use crate::common::{
    create_stream, journal_events, publish_setup, repo_path, run_offline, runner_config,
    sorted_seqs, stream_messages,
};
use benchstream_tests::NatsServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_solutions_solve_every_shipped_task() {
    let nats = NatsServer::start();
    let prefix = SubjectPrefix::default();
    let spec = create_stream(&nats.url(), &prefix).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = runner_config(
        repo_path("scenarios/smoke.toml"),
        None,
        false,
        Some(publish_setup(&nats.url(), &prefix, dir.path())),
        dir.path(),
    );

    let report = agent_runner::run(config, CancellationToken::new())
        .await
        .expect("smoke scenario runs");

    let shipped = fs::read_dir(repo_path("scenarios").join(TASKS_DIR))
        .expect("tasks dir")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("task.toml").is_file())
        .count();
    assert!(shipped >= 8, "at least 8 tasks ship, found {shipped}");
    assert_eq!(
        report.runs.len(),
        shipped,
        "smoke.toml must list every shipped task"
    );
    for run in &report.runs {
        let r = &run.result;
        assert!(
            r.success == Some(true)
                && r.exit_status == ExitStatus::Submitted
                && r.tests_failed == Some(0),
            "{} not solved by its reference solution: {r:?}",
            run.task_id
        );
        assert!(
            r.files_modified > Some(0),
            "{}: solution changed nothing",
            run.task_id
        );
        // Solved inside the agent sandbox, not beside it.
        let events = crate::common::journal_events(run);
        match &events[0].payload {
            bench_schemas::Payload::RunStart(start) => assert_eq!(
                start.sandbox.as_ref().map(|s| s.kind.as_str()),
                Some("bwrap"),
                "{}",
                run.task_id
            ),
            other => panic!("first event is not run_start: {other:?}"),
        }
    }
    let delivery = report.delivery.expect("published");
    let events: u64 = report.runs.iter().map(|r| r.events).sum();
    assert_eq!((delivery.published, delivery.left_in_spool), (events, 0));
    // Runs executed two at a time; each run's seq is still 0..n without gaps.
    let messages = stream_messages(&nats.url(), &spec).await;
    assert_eq!(messages.len() as u64, events);
    for run in &report.runs {
        assert_eq!(
            sorted_seqs(&messages, run.run_id),
            (0..run.events).collect::<Vec<_>>(),
            "{}",
            run.task_id
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_submit_fails_every_task_as_submitted() {
    let (_dir, report) = run_offline(repo_path("scenarios/empty-submit.toml"), false).await;

    assert!(report.runs.len() >= 8);
    for run in &report.runs {
        let r = &run.result;
        assert!(
            r.success == Some(false),
            "{}: the unmodified fixture passes its judge",
            run.task_id
        );
        assert_eq!(r.exit_status, ExitStatus::Submitted, "{}", run.task_id);
        assert!(!r.early_stopped);
        assert_eq!((r.files_modified, r.turns), (Some(0), Some(1)));
        assert!(r.tests_failed > Some(0) && Some(r.failing_tests.len() as u32) == r.tests_failed);
        assert!(r.final_score.is_some_and(|s| s < 1.0));

        // The run's own account of why: a `failure` naming the failing tests.
        let failure = journal_events(run)
            .into_iter()
            .find_map(|e| match e.payload {
                Payload::Failure(f) => Some(f),
                _ => None,
            })
            .expect("a failure event");
        assert_eq!(failure.first_failure_root.kind(), "semantic");
    }
}
