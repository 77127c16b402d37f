//! `bench-analysis compare --sequential` end to end: rounds of runs published to a real
//! nats-server, stored by the event-sink into a real ClickHouse 18.16, compared with
//! `compare --sequential --format json`. A task's k-th counted run of a policy, by run
//! start time, is round k (published in reverse order here, so the start time decides);
//! a run with an infrastructure failure is no outcome and takes no round; a task only
//! one policy ran is left out. A clearly better candidate is decided better, with the
//! confidence sequence of exactly those rounds.

use bench_analysis::command::{self, CompareArgs};
use bench_analysis::compare::sequential::sequential;
use bench_analysis::Format;
use bench_clickhouse::{ClickHouseArgs, ConnectionArgs};
use bench_schemas::{EventType, ExitStatus, Payload};
use benchstream_tests::events::{fixture, publish, Run};
use chrono::Duration;
use serde_json::Value;

use crate::common::{jetstream, start_pipeline};

const BASELINE: &str = "bench/baseline:raw";
const CANDIDATE: &str = "bench/candidate:raw";
const TASKS: usize = 20;
const ROUNDS: usize = 6;

/// Whether the baseline solves `task` in `round`: about 30 % of the time, varying by
/// round. The candidate solves every task but one in every round.
fn baseline_solves(task: usize, round: usize) -> bool {
    (task + 3 * round) % 10 < 3
}

fn candidate_solves(task: usize, _round: usize) -> bool {
    task != 0
}

/// Publishes one run started `round` hours after the fixture's time; returns its events.
async fn publish_run(
    js: &async_nats::jetstream::Context,
    policy: &str,
    task: &str,
    round: usize,
    end: (bool, ExitStatus),
) -> usize {
    let mut run = Run::default();
    let mut events = vec![fixture(EventType::RunStart), fixture(EventType::RunStop)];
    if let Payload::RunStop(data) = &mut events[1].payload {
        data.success = Some(end.0);
        data.exit_status = end.1;
    }
    for event in &mut events {
        *event = run.stamp(event.clone());
        event.policy_id = policy.to_owned();
        event.task_id = task.to_owned();
        event.ts += Duration::hours(round as i64);
        publish(js, event).await;
    }
    events.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_sequential_decides_a_clearly_better_candidate_from_rounds_in_start_order() {
    let (nats, sink) = start_pipeline().await;
    let js = jetstream(&nats.url()).await;
    let mut published = 0;
    let submitted = |solved: bool| (solved, ExitStatus::Submitted);
    for round in (0..ROUNDS).rev() {
        for task in 0..TASKS {
            let name = format!("task-{task:02}");
            published += publish_run(
                &js,
                BASELINE,
                &name,
                round,
                submitted(baseline_solves(task, round)),
            )
            .await;
            published += publish_run(
                &js,
                CANDIDATE,
                &name,
                round,
                submitted(candidate_solves(task, round)),
            )
            .await;
        }
    }
    // Between rounds 2 and 3 of task 0, a baseline run whose sandbox failed: no outcome.
    let broken = (true, ExitStatus::ExitEnvironment);
    published += publish_run(&js, BASELINE, "task-00", 2, broken).await;
    // A task only the candidate ran.
    published += publish_run(&js, CANDIDATE, "task-99", 0, submitted(true)).await;
    sink.wait_for(
        "SELECT count() FROM benchstream.events_raw FINAL",
        &published.to_string(),
    )
    .await;

    let connection = ConnectionArgs {
        clickhouse: ClickHouseArgs {
            url: Some(sink.clickhouse.http_url()),
            ..ClickHouseArgs::default()
        },
        ..ConnectionArgs::default()
    };
    let args = CompareArgs {
        baseline: Some(BASELINE.to_owned()),
        sequential: true,
        ..CompareArgs::every_policy(connection, Format::Json)
    };
    let output = command::compare(args.clone())
        .await
        .expect("compare answers");
    let answer: Value = serde_json::from_str(&output).expect("JSON");
    let pair = &answer["comparisons"][0];

    assert_eq!(pair["decision"], "candidate_better", "{output}");
    assert_eq!(pair["rounds"], ROUNDS, "{output}");
    let expected_rounds: Vec<Vec<f64>> = (0..ROUNDS)
        .map(|round| {
            (0..TASKS)
                .map(|task| {
                    f64::from(u8::from(candidate_solves(task, round)))
                        - f64::from(u8::from(baseline_solves(task, round)))
                })
                .collect()
        })
        .collect();
    let expected = sequential(&expected_rounds, 0.05, None);
    let bound = |key: &str| {
        pair[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} in {output}"))
    };
    assert_eq!(
        (Some(bound("cs_low")), Some(bound("cs_high"))),
        (expected.cs_low, expected.cs_high),
        "the sequence of the rounds in start order: {output}"
    );
    assert!(bound("cs_low") > 0.0, "{output}");
    // The fixed-sample results stay, labelled.
    assert!(pair["p_value"].as_f64().is_some(), "{output}");
    assert!(
        pair["single_look_only"]
            .as_str()
            .is_some_and(|s| s.contains("p_value")),
        "{output}"
    );

    let table = command::compare(CompareArgs {
        format: Format::Table,
        ..args
    })
    .await
    .expect("compare answers");
    assert!(table.contains("candidate_better"), "{table}");
}
