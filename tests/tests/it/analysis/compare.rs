//! `bench-analysis compare` end to end: runs published to a real nats-server as runners
//! publish them, stored by the event-sink into a real ClickHouse 18.16, compared with
//! `compare --format json`. Only finished, judged runs count: a run without `run_stop`,
//! one with a lost event, an infrastructure failure (`exit_environment`, `exit_api`, even
//! after an answered call and whatever `success` says) and an unjudged run are each left
//! out and counted under their reason, never as failures. The runs of
//! a task whose latest `task_validation` found it broken are left out as `broken_task`
//! (a re-validation that finds it sound counts them again), and the rate is given again
//! over the runs no integrity flag singles out, with the flagged and unknown ones
//! counted; a validation's own stream is never reported as a run that lost events.

use bench_analysis::command::{self, CompareArgs};
use bench_analysis::Format;
use bench_clickhouse::{ClickHouseArgs, ConnectionArgs};
use bench_schemas::{BenchmarkEvent, EventType, ExitStatus, Payload, RunIntegrity};
use benchstream_tests::events::{fixture, publish, Run};
use serde_json::Value;

use crate::common::{jetstream, start_pipeline};

const BASELINE: &str = "bench/baseline:raw";
const CANDIDATE: &str = "bench/candidate:observation_masking";

/// How a published run ends.
#[derive(Debug, Clone)]
enum End {
    /// A run_stop with this success and exit status.
    Stop(Option<bool>, ExitStatus),
    /// No run_stop: still running, or its runner died.
    Unfinished,
    /// A solved run whose seq 1 never arrived.
    LostEvent,
    /// The provider answered one call, then kept failing: `exit_api` after the agent
    /// acted, with `success` false as runners before the provider rule recorded it.
    ApiAfterAnAnswer,
    /// A judged run of a SWE-bench-format task with these integrity flags.
    Flags(bool, RunIntegrity),
}

/// `compare` of the runs in the ClickHouse at `url`, every flag but these at its default.
fn compare_args(url: String, baseline: Option<&str>, format: Format) -> CompareArgs {
    let connection = ConnectionArgs {
        clickhouse: ClickHouseArgs {
            url: Some(url),
            ..ClickHouseArgs::default()
        },
        ..ConnectionArgs::default()
    };
    CompareArgs {
        baseline: baseline.map(str::to_owned),
        ..CompareArgs::every_policy(connection, format)
    }
}

/// Publishes one run of `policy` on `task`; returns how many events it published.
async fn publish_run(
    js: &async_nats::jetstream::Context,
    policy: &str,
    task: &str,
    end: End,
) -> usize {
    let mut run = Run::default();
    let mut restamp = |mut event: BenchmarkEvent| {
        event = run.stamp(event);
        event.policy_id = policy.to_owned();
        event.task_id = task.to_owned();
        event
    };
    let mut events = vec![restamp(fixture(EventType::RunStart))];
    let mut stop = fixture(EventType::RunStop);
    match end {
        End::Stop(success, status) => {
            if let Payload::RunStop(data) = &mut stop.payload {
                data.success = success;
                data.exit_status = status;
            }
            events.push(restamp(stop));
        }
        End::Unfinished => {}
        End::LostEvent => {
            // Stamped (seq 1) but never published: a gap before the run_stop.
            let _lost = restamp(fixture(EventType::Step));
            events.push(restamp(stop));
        }
        End::Flags(success, integrity) => {
            if let Payload::RunStop(data) = &mut stop.payload {
                data.success = Some(success);
                data.exit_status = ExitStatus::Submitted;
                data.integrity = Some(integrity);
            }
            events.push(restamp(stop));
        }
        End::ApiAfterAnAnswer => {
            // The fixture's call has status ok: the provider answered.
            events.push(restamp(fixture(EventType::Deliberation)));
            if let Payload::RunStop(data) = &mut stop.payload {
                data.success = Some(false);
                data.exit_status = ExitStatus::ExitApi;
            }
            events.push(restamp(stop));
        }
    }
    for event in &events {
        publish(js, event).await;
    }
    events.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_counts_only_finished_judged_runs_and_tests_the_pairs() {
    let (nats, sink) = start_pipeline().await;
    let js = jetstream(&nats.url()).await;
    let solved = |yes: bool| End::Stop(Some(yes), ExitStatus::Submitted);
    let mut published = 0;
    // Ten tasks both ran once: the baseline solves 0-7, the candidate 0-4 and 8. The
    // discordant tasks: 5, 6, 7 (baseline only) and 8 (candidate only).
    for task in 0..10 {
        let name = format!("task-{task:02}");
        published += publish_run(&js, BASELINE, &name, solved(task < 8)).await;
        published += publish_run(&js, CANDIDATE, &name, solved(task < 5 || task == 8)).await;
    }
    // Runs that must not count, each on a task of its own.
    for (policy, task, end) in [
        (CANDIDATE, "task-10", End::Unfinished),
        (
            CANDIDATE,
            "task-11",
            End::Stop(Some(false), ExitStatus::ExitEnvironment),
        ),
        // The provider down before any answer: infrastructure, whatever success says.
        (
            CANDIDATE,
            "task-14",
            End::Stop(Some(false), ExitStatus::ExitApi),
        ),
        (BASELINE, "task-12", End::LostEvent),
        (BASELINE, "task-13", End::Stop(None, ExitStatus::Submitted)),
    ] {
        published += publish_run(&js, policy, task, end).await;
    }
    // Left out too: the provider failed after the agent acted, which is still the
    // provider's failure, not the policy's.
    published += publish_run(&js, CANDIDATE, "task-15", End::ApiAfterAnAnswer).await;
    sink.wait_for(
        "SELECT count() FROM benchstream.events_raw FINAL",
        &published.to_string(),
    )
    .await;

    // `compare --baseline <BASELINE> --format json`, every other flag at its default.
    let args = compare_args(sink.clickhouse.http_url(), Some(BASELINE), Format::Json);
    let output = command::compare(args).await.expect("compare answers");
    let answer: Value = serde_json::from_str(&output).expect("JSON");

    let policy = |id: &str| -> &Value {
        answer["policies"]
            .as_array()
            .expect("policies")
            .iter()
            .find(|p| p["policy_id"] == id)
            .unwrap_or_else(|| panic!("no policy {id} in {output}"))
    };
    let base = policy(BASELINE);
    assert_eq!(
        (&base["runs"], &base["tasks"], &base["solved"]),
        (&Value::from(10), &Value::from(10), &Value::from(8))
    );
    assert_eq!(
        base["excluded"],
        serde_json::json!({"lost_events": 1, "unjudged": 1}),
        "{output}"
    );
    let cand = policy(CANDIDATE);
    assert_eq!(
        (&cand["runs"], &cand["solved"]),
        (&Value::from(10), &Value::from(6)),
        "the unfinished and the infrastructure runs are not failures, \
         exit_api after an answer included"
    );
    assert_eq!(
        cand["excluded"],
        serde_json::json!({"unfinished": 1, "infrastructure": 3}),
        "{output}"
    );
    let rate = |p: &Value, key: &str| p[key].as_f64().expect(key);
    assert!((rate(base, "rate") - 0.8).abs() < 1e-12);
    // Wilson 95 % of 8/10 (statsmodels): 0.4902 .. 0.9433.
    assert!(
        (rate(base, "rate_ci_low") - 0.490_156).abs() < 1e-5,
        "{output}"
    );
    assert!(
        (rate(base, "rate_ci_high") - 0.943_317).abs() < 1e-5,
        "{output}"
    );
    // Every run is priced (the fixture's cost): the mean is known.
    assert!((rate(base, "mean_cost_usd") - 0.001_234_5).abs() < 1e-12);

    let comparisons = answer["comparisons"].as_array().expect("comparisons");
    assert_eq!(comparisons.len(), 1);
    let pair = &comparisons[0];
    assert_eq!(pair["baseline"], BASELINE);
    assert_eq!(pair["candidate"], CANDIDATE);
    assert_eq!(pair["tasks"], 10, "only the tasks both ran and counted");
    assert!((rate(pair, "difference") + 0.2).abs() < 1e-12);
    assert_eq!(pair["method"], "mcnemar-exact");
    assert_eq!(
        (&pair["candidate_better"], &pair["baseline_better"]),
        (&Value::from(1), &Value::from(3))
    );
    // Exact McNemar on 1 vs 3 discordant pairs: 2 · P(X ≤ 1), X ~ Bin(4, 1/2) = 0.625.
    assert!((rate(pair, "p_value") - 0.625).abs() < 1e-9);
    assert_eq!(pair["p_adjusted"], pair["p_value"], "one comparison");
    assert!(rate(pair, "ci_low") < -0.2 && rate(pair, "ci_high") > -0.2);
    assert_eq!(pair["non_inferior"], false);
    assert_eq!(pair["cost_difference"], 0.0);
    sink.stop().await;
}

/// Integrity flags: `edited` test files, history commands (`None`: unseen), network
/// commands (`None`: unseen or the network was on).
fn flags(edited: usize, history: Option<u32>, network: Option<u32>) -> RunIntegrity {
    RunIntegrity {
        test_files_edited: vec!["tests/test_calc.py (modified)".to_owned(); edited],
        history_commands: history,
        network_commands: network,
        ..RunIntegrity::default()
    }
}

/// Publishes a `task_validation` of `task` at the fixture of `run_start.json` (the one
/// every published run has), `broken` or not, `ms` after the fixture's time.
async fn publish_validation(
    js: &async_nats::jetstream::Context,
    task: &str,
    broken: bool,
    ms: i64,
) {
    let fixture_sha256 = match fixture(EventType::RunStart).payload {
        Payload::RunStart(start) => start.fixture_sha256,
        _ => unreachable!("a run_start fixture"),
    };
    let mut event = Run::default().stamp(fixture(EventType::TaskValidation));
    event.task_id = task.to_owned();
    event.ts += chrono::Duration::milliseconds(ms);
    if let Payload::TaskValidation(data) = &mut event.payload {
        data.fixture_sha256 = fixture_sha256;
        data.broken = broken;
        if !broken {
            data.reasons.clear();
        }
    }
    publish(js, &event).await;
}

/// A `task_validation` that a run carries (an agent's forgery, under the run's own
/// envelope, or with `policy_id` `validation` on the run's id) breaks no task: only
/// validations `tasks validate` published, on an id without `run_start`, count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validation_carried_by_a_run_breaks_no_task() {
    let (nats, sink) = start_pipeline().await;
    let js = jetstream(&nats.url()).await;
    let mut run = Run::default();
    let mut events = vec![run.stamp(fixture(EventType::RunStart))];
    let fixture_sha256 = match &events[0].payload {
        Payload::RunStart(start) => start.fixture_sha256.clone(),
        _ => unreachable!("a run_start fixture"),
    };
    for policy in [CANDIDATE, "validation"] {
        let mut forged = run.stamp(fixture(EventType::TaskValidation));
        forged.policy_id = policy.to_owned();
        if let Payload::TaskValidation(data) = &mut forged.payload {
            data.fixture_sha256 = fixture_sha256.clone();
            data.broken = true;
        }
        events.push(forged);
    }
    let mut stop = run.stamp(fixture(EventType::RunStop));
    if let Payload::RunStop(data) = &mut stop.payload {
        data.success = Some(true);
        data.exit_status = ExitStatus::Submitted;
    }
    events.push(stop);
    for event in &mut events {
        event.task_id = "task-f".to_owned();
        if event.policy_id != "validation" {
            event.policy_id = CANDIDATE.to_owned();
        }
        publish(&js, event).await;
    }
    sink.wait_for(
        "SELECT count() FROM benchstream.task_validations FINAL",
        "1",
    )
    .await;
    sink.wait_for("SELECT count() FROM benchstream.run_stops FINAL", "1")
        .await;
    let args = compare_args(sink.clickhouse.http_url(), None, Format::Json);
    let output = command::compare(args).await.expect("compare answers");
    let answer: Value = serde_json::from_str(&output).expect("JSON");
    let p = &answer["policies"][0];
    assert_eq!(p["excluded"], serde_json::json!({}), "{output}");
    assert_eq!(p["runs"], 1, "{output}");
    assert_eq!(p["solved"], 1, "{output}");
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_tasks_are_left_out_and_flagged_runs_are_shown_apart() {
    let (nats, sink) = start_pipeline().await;
    let js = jetstream(&nats.url()).await;
    let mut published = 0;
    // task-b's latest validation finds it broken: its two runs are no results.
    // task-r was found broken, then sound again (a later validation): its run counts.
    for (task, solved) in [("task-b", true), ("task-b", false), ("task-r", true)] {
        let end = End::Flags(solved, flags(0, Some(0), Some(0)));
        published += publish_run(&js, CANDIDATE, task, end).await;
    }
    publish_validation(&js, "task-b", true, 0).await;
    publish_validation(&js, "task-r", true, 0).await;
    publish_validation(&js, "task-r", false, 1_000).await;
    published += 3;
    // Counted runs: task-r's (clean, solved), two flagged (a test file edited and
    // solved, history read), two clean (one solved), and two whose commands nobody saw
    // (an exec agent's: unknown, however they ended).
    for (task, end) in [
        ("task-1", End::Flags(true, flags(1, Some(0), Some(0)))),
        ("task-2", End::Flags(false, flags(0, Some(2), None))),
        ("task-3", End::Flags(true, flags(0, Some(0), None))),
        ("task-4", End::Flags(false, flags(0, Some(0), Some(0)))),
        ("task-5", End::Flags(true, flags(0, None, None))),
        ("task-6", End::Flags(false, flags(0, None, None))),
    ] {
        published += publish_run(&js, CANDIDATE, task, end).await;
    }
    sink.wait_for(
        "SELECT count() FROM benchstream.events_raw FINAL",
        &published.to_string(),
    )
    .await;

    let args = compare_args(sink.clickhouse.http_url(), None, Format::Json);
    let output = command::compare(args).await.expect("compare answers");
    let answer: Value = serde_json::from_str(&output).expect("JSON");
    let policies = answer["policies"].as_array().expect("policies");
    assert_eq!(policies.len(), 1, "{output}");
    let p = &policies[0];
    assert_eq!(
        p["excluded"],
        serde_json::json!({"broken_task": 2}),
        "{output}"
    );
    let counts = [
        "runs",
        "solved",
        "flagged_runs",
        "integrity_unknown_runs",
        "clean_runs",
        "clean_solved",
    ]
    .map(|k| p[k].as_u64().unwrap_or_else(|| panic!("{k} in {output}")));
    assert_eq!(counts, [7, 4, 2, 2, 3, 2], "{output}");
    let value = |key: &str| {
        p[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} in {output}"))
    };
    assert!((value("rate") - 4.0 / 7.0).abs() < 1e-12, "{output}");
    assert!((value("clean_rate") - 2.0 / 3.0).abs() < 1e-12, "{output}");
    // Wilson 95 % of 2/3 (statsmodels): 0.20766 .. 0.93851.
    assert!(
        (value("clean_rate_ci_low") - 0.207_660).abs() < 1e-5,
        "{output}"
    );
    assert!(
        (value("clean_rate_ci_high") - 0.938_508).abs() < 1e-5,
        "{output}"
    );

    // The table and CSV forms show the same counts per policy.
    let args = compare_args(sink.clickhouse.http_url(), None, Format::Csv);
    let table = command::compare(args).await.expect("compare answers");
    let header = table.lines().next().expect("a header");
    assert!(
        header.contains("flagged_runs,integrity_unknown_runs,clean_runs,clean_rate"),
        "{table}"
    );
    assert!(table.contains("broken_task 2"), "{table}");

    // A validation is a stream of one event, no run: never a run that lost its run_stop.
    let client = sink.clickhouse.client_of("benchstream");
    let params = [("stale_minutes".to_owned(), "0".to_owned())].into();
    let lost = bench_analysis::Query::find("lost_events")
        .expect("shipped")
        .run(&client, &params)
        .await
        .expect("query runs");
    assert_eq!(lost.rows.len(), 0, "{lost:?}");
    sink.stop().await;
}
