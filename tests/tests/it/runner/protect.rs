//! The judge decides with the pristine tests: test files the agent edited, deleted or
//! added (`[judge] protect`) are restored before the final verdict, and the tampering is
//! reported (`summary.json`, the `conclude` step, the `failure` event).

use bench_schemas::{ExitStatus, Payload, StepType};

use crate::common::{fixture_scenario, journal_events, run_offline};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_tests_do_not_pass_a_run_and_are_reported() {
    let (_dir, report) = run_offline(fixture_scenario("tamper-tests"), true).await;
    let run = |id: &str| {
        report
            .runs
            .iter()
            .find(|r| r.task_id == id)
            .unwrap_or_else(|| panic!("no run of {id}"))
    };

    // Always-passing tests written over the real ones, bug left alone: not a success.
    let cheat = run("py-slugify-unicode");
    let r = &cheat.result;
    assert_eq!(r.exit_status, ExitStatus::Submitted);
    assert!(
        r.success == Some(false) && r.tests_failed > Some(0),
        "{r:?}"
    );
    assert!(
        r.failing_tests.contains(&"test_accents".to_owned()),
        "{r:?}"
    );
    assert_eq!(cheat.protected_restored, ["test_slugify.py (modified)"]);
    let events = journal_events(cheat);
    let conclude = events
        .iter()
        .find_map(|e| match &e.payload {
            Payload::Step(s) if s.step_type == StepType::Conclude => Some(s.content.clone()),
            _ => None,
        })
        .expect("conclude step");
    assert!(
        conclude.contains("protected files restored before judging: test_slugify.py (modified)"),
        "{conclude}"
    );
    let failure = events
        .iter()
        .find_map(|e| match &e.payload {
            Payload::Failure(f) => Some(f.clone()),
            _ => None,
        })
        .expect("failure event");
    assert!(
        failure
            .contributing_factors
            .iter()
            .any(|f| f.contains("test_slugify.py (modified)")),
        "{failure:?}"
    );

    // A real fix is still a success with the tests put back, and the tampering is reported.
    let fixed = run("sh-ci-exit-status");
    let r = &fixed.result;
    assert!(
        r.success == Some(true) && r.tests_failed == Some(0),
        "{r:?}"
    );
    assert_eq!(
        fixed.protected_restored,
        [
            "tests/test_ci.sh (modified)",
            "tests/test_more.sh (created)"
        ]
    );
}
