//! Verdicts an agent cannot forge: submissions that fix nothing but attack the judge (exit
//! early, print success lines, shadow the framework or its configuration, rewrite or delete
//! the tests while they run, kill their parent, write forged reports, collide with test
//! names) never score above the agent that does nothing, in every shipped task language,
//! and one that hangs at import times out in every test. The scenarios are
//! `tests/fixtures/runner/judge-*.toml` and `tests/fixtures/judge/`; the reference
//! solutions scoring 1.00 under the same judge is `runner::reference`.

use std::collections::BTreeMap;

use crate::common::{fixture_scenario, repo_path, run_offline_tasks};

/// The probes, one scenario each, every one over a Python, a Rust and a shell task.
const PROBES: [&str; 6] = [
    "judge-exit-early",
    "judge-fake-output",
    "judge-shadow-framework",
    "judge-tamper-during-judging",
    "judge-guessed-report",
    "judge-name-collision",
];

const TASKS: [&str; 3] = [
    "py-slugify-unicode",
    "rs-csv-quote-escapes",
    "sh-ci-exit-status",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_hostile_submission_scores_above_doing_nothing() {
    let tasks: Vec<String> = TASKS.iter().map(|t| (*t).to_owned()).collect();
    let (_dir, noop) =
        run_offline_tasks(repo_path("scenarios/empty-submit.toml"), Some(tasks), false).await;
    let baseline: BTreeMap<String, f64> = noop
        .runs
        .iter()
        .map(|r| (r.task_id.clone(), r.result.final_score.expect("judged")))
        .collect();
    assert_eq!(baseline.len(), TASKS.len());
    // The judge must see something to fail: doing nothing passes the regression guards.
    assert!(
        baseline.values().all(|s| *s > 0.0 && *s < 1.0),
        "{baseline:?}"
    );

    let mut above = Vec::new();
    for probe in PROBES {
        let (_dir, report) = run_offline_tasks(fixture_scenario(probe), None, true).await;
        assert_eq!(report.runs.len(), TASKS.len(), "{probe}");
        for run in &report.runs {
            let r = &run.result;
            let score = r.final_score.expect("every probe submits and is judged");
            eprintln!(
                "{probe} {}: score {score:.2} (doing nothing: {:.2}), failing {:?}",
                run.task_id, baseline[&run.task_id], r.failing_tests
            );
            if r.success != Some(false) || score > baseline[&run.task_id] {
                above.push(format!("{probe} {}: {r:?}", run.task_id));
            }
            // Every failing test is recorded with its reason.
            assert_eq!(run.judge_failures.len(), r.failing_tests.len(), "{probe}");
            if probe == "judge-exit-early" && run.task_id == "py-slugify-unicode" {
                assert!(
                    run.judge_failures
                        .iter()
                        .all(|f| f.ends_with(": no report (exit 0)")),
                    "an exit 0 without a report: {:?}",
                    run.judge_failures
                );
            }
        }
    }
    assert!(
        above.is_empty(),
        "hostile submissions beat doing nothing: {above:#?}"
    );
}

/// A submission that hangs at import (an infinite loop in the module under test) times out
/// in every test and scores below doing nothing, while the reference solution of the same
/// task still scores 1.00. On a task of its own (`tests/fixtures/judge/`) whose 3 s limit
/// per test keeps the hang short.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submission_that_hangs_at_import_times_out_in_every_test() {
    let scenario = |name: &str| repo_path(&format!("tests/fixtures/judge/{name}.toml"));
    let score =
        |report: &agent_runner::ScenarioReport| report.runs[0].result.final_score.expect("judged");
    let (_d1, reference) = run_offline_tasks(scenario("tiny-reference"), None, true).await;
    assert_eq!(score(&reference), 1.0, "{:?}", reference.runs[0].result);
    let (_d2, noop) = run_offline_tasks(scenario("tiny-noop"), None, true).await;
    let (_d3, hang) = run_offline_tasks(scenario("tiny-import-loop"), None, true).await;
    let run = &hang.runs[0];
    assert!(score(&hang) < score(&noop), "{:?}", run.result);
    assert_eq!(run.result.success, Some(false));
    assert_eq!(
        run.judge_failures,
        [
            "test_counts_the_first_value: timed out",
            "test_empty: timed out"
        ]
    );
}
