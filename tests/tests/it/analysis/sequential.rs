//! `bench-analysis compare --sequential` end to end: rounds of runs published to a real
//! nats-server, stored by the event-sink into a real ClickHouse 18.16, compared with
//! `compare --sequential --format json`. A task's k-th counted run of a policy, by its
//! `repeat` when set (here started in the reverse order of their repeats, so `repeat`
//! decides), otherwise by run start time (published in reverse order here, so the start
//! time decides), is round k; a run with an infrastructure failure is no outcome and
//! takes no round; a task only one policy ran is left out. A clearly better candidate is
//! decided better, with the confidence sequence of exactly those rounds (its bets learnt,
//! and tuned to `--detect`); the latest decision an experiment run until decided stored
//! for the pair is shown beside it.

use bench_analysis::command::{self, CompareArgs};
use bench_analysis::compare::sequential::{sequential, Bet};
use bench_analysis::Format;
use bench_clickhouse::{ClickHouseArgs, ConnectionArgs};
use bench_schemas::{DecisionKind, EventType, ExitStatus, Payload};
use benchstream_tests::events::{fixture, publish, Run};
use chrono::Duration;
use serde_json::Value;

use crate::common::{jetstream, start_pipeline};

const BASELINE: &str = "bench/baseline:raw";
const CANDIDATE: &str = "bench/candidate:raw";
const TASKS: usize = 20;
const EXPERIMENT: &str = "ab";
const ROUNDS: usize = 6;

/// Whether the baseline solves `task` in `round`: about 30 % of the time, varying by
/// round. The candidate solves every task but one in every round.
fn baseline_solves(task: usize, round: usize) -> bool {
    (task + 3 * round) % 10 < 3
}

fn candidate_solves(task: usize, _round: usize) -> bool {
    task != 0
}

/// Whether `task`'s runs carry their `repeat`: the even tasks', started in the reverse
/// order of their repeats; the odd tasks' carry none, and start in round order.
fn repeated(task: usize) -> bool {
    task.is_multiple_of(2)
}

/// Publishes the run of `task` in `round` of experiment [`EXPERIMENT`], started `round`
/// hours after the fixture's time (`ROUNDS − 1 − round` hours and `repeat` = `round` for
/// a task whose runs are [`repeated`]); returns its events.
async fn publish_run(
    js: &async_nats::jetstream::Context,
    policy: &str,
    task: usize,
    round: usize,
    end: (bool, ExitStatus),
) -> usize {
    let mut run = Run::default();
    let mut events = vec![fixture(EventType::RunStart), fixture(EventType::RunStop)];
    let hours = if repeated(task) {
        ROUNDS - 1 - round
    } else {
        round
    };
    if let Payload::RunStart(data) = &mut events[0].payload {
        data.experiment.name = Some(EXPERIMENT.to_owned());
        data.experiment.repeat = repeated(task).then_some(round as u32);
    }
    if let Payload::RunStop(data) = &mut events[1].payload {
        data.success = Some(end.0);
        data.exit_status = end.1;
    }
    for event in &mut events {
        *event = run.stamp(event.clone());
        event.policy_id = policy.to_owned();
        event.task_id = format!("task-{task:02}");
        event.ts += Duration::hours(hours as i64);
        publish(js, event).await;
    }
    events.len()
}

/// Publishes a decision of `experiment` on the pair, made `minutes` after the fixture's
/// time.
async fn publish_decision(
    js: &async_nats::jetstream::Context,
    experiment: &str,
    decision: DecisionKind,
    rounds: u64,
    minutes: i64,
) -> usize {
    let mut event = Run::default().stamp(fixture(EventType::ExperimentDecision));
    event.seq = Some(0);
    event.task_id = format!("experiment:{experiment}");
    event.ts += Duration::minutes(minutes);
    if let Payload::ExperimentDecision(data) = &mut event.payload {
        data.experiment = experiment.to_owned();
        data.baseline = BASELINE.to_owned();
        data.candidate = CANDIDATE.to_owned();
        data.decision = decision;
        data.rounds = rounds;
    }
    publish(js, &event).await;
    1
}

/// Publishes [`ROUNDS`] rounds of both policies over [`TASKS`] tasks (the last round
/// first), a broken run, a task only the candidate ran and three stored decisions;
/// returns the events published.
async fn publish_experiment(js: &async_nats::jetstream::Context) -> usize {
    let mut published = 0;
    let submitted = |solved: bool| (solved, ExitStatus::Submitted);
    for round in (0..ROUNDS).rev() {
        for task in 0..TASKS {
            published += publish_run(
                js,
                BASELINE,
                task,
                round,
                submitted(baseline_solves(task, round)),
            )
            .await;
            published += publish_run(
                js,
                CANDIDATE,
                task,
                round,
                submitted(candidate_solves(task, round)),
            )
            .await;
        }
    }
    // Between rounds 2 and 3 of task 1, a baseline run whose sandbox failed: no outcome.
    let broken = (true, ExitStatus::ExitEnvironment);
    published += publish_run(js, BASELINE, 1, 2, broken).await;
    // A task only the candidate ran.
    published += publish_run(js, CANDIDATE, 99, 0, submitted(true)).await;
    // Decisions stored for the pair: an early one, the latest one (shown), and one of an
    // experiment neither policy's runs belong to (not shown).
    published += publish_decision(js, EXPERIMENT, DecisionKind::Undecided, 2, 10).await;
    published += publish_decision(js, EXPERIMENT, DecisionKind::CandidateBetter, 5, 20).await;
    published += publish_decision(js, "elsewhere", DecisionKind::BaselineBetter, 9, 30).await;
    published
}

/// The paired differences (candidate − baseline) of each round, task by task, a task's
/// round `r` being its outcomes of round `round_of(task, r)`.
fn differences(round_of: impl Fn(usize, usize) -> usize) -> Vec<Vec<f64>> {
    (0..ROUNDS)
        .map(|round| {
            (0..TASKS)
                .map(|task| {
                    let r = round_of(task, round);
                    f64::from(u8::from(candidate_solves(task, r)))
                        - f64::from(u8::from(baseline_solves(task, r)))
                })
                .collect()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_sequential_decides_from_rounds_by_repeat_else_start_order_beside_the_stored_decision(
) {
    let (nats, sink) = start_pipeline().await;
    let js = jetstream(&nats.url()).await;
    let published = publish_experiment(&js).await;
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
    let expected_rounds = differences(|_, round| round);
    let expected = sequential(&expected_rounds, 0.05, None, Bet::Adaptive);
    // Had the repeated tasks' rounds gone by start time, the sequence would differ.
    let by_start = differences(|task, round| {
        if repeated(task) {
            ROUNDS - 1 - round
        } else {
            round
        }
    });
    let by_start = sequential(&by_start, 0.05, None, Bet::Adaptive);
    assert_ne!(
        (by_start.cs_low, by_start.cs_high),
        (expected.cs_low, expected.cs_high),
        "the test tells the orders apart"
    );
    let bound = |key: &str| {
        pair[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} in {output}"))
    };
    assert_eq!(
        (Some(bound("cs_low")), Some(bound("cs_high"))),
        (expected.cs_low, expected.cs_high),
        "the sequence of the rounds by repeat, else start order: {output}"
    );
    // The latest stored decision of the pair's experiment, labelled with its rounds and
    // time, beside the sequence computed now.
    let stored = &pair["stored_decision"];
    assert_eq!(
        (
            stored["experiment"].as_str(),
            stored["decision"].as_str(),
            stored["rounds"].as_u64(),
        ),
        (Some(EXPERIMENT), Some("candidate_better"), Some(5)),
        "{output}"
    );
    // How its sequence bet, as published (the fixture's bets were tuned to 0.2).
    assert_eq!(stored["detect"].as_f64(), Some(0.2), "{output}");
    let fixture_ms = fixture(EventType::ExperimentDecision).ts.timestamp_millis();
    assert_eq!(
        stored["decided_ms"].as_i64(),
        Some(fixture_ms + 20 * 60 * 1000),
        "{output}"
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

    // With --detect, the bets tuned to it: the tuned sequence of the same rounds.
    let tuned = command::compare(CompareArgs {
        detect: Some(0.3),
        ..args.clone()
    })
    .await
    .expect("compare answers");
    let tuned: Value = serde_json::from_str(&tuned).expect("JSON");
    let pair = &tuned["comparisons"][0];
    let expected = sequential(&expected_rounds, 0.05, None, Bet::Tuned(0.3));
    assert_eq!(pair["sequential_detect"].as_f64(), Some(0.3), "{tuned}");
    assert_eq!(
        (pair["cs_low"].as_f64(), pair["cs_high"].as_f64()),
        (expected.cs_low, expected.cs_high),
        "{tuned}"
    );
    assert_eq!(pair["decision"], "candidate_better", "{tuned}");

    let table = command::compare(CompareArgs {
        format: Format::Table,
        ..args
    })
    .await
    .expect("compare answers");
    assert!(table.contains("candidate_better"), "{table}");
    assert!(
        table.contains("candidate_better after 5 rounds")
            && table.contains("bets tuned to 0.2")
            && table.contains("decided 2026-"),
        "the stored decision, labelled: {table}"
    );
}
