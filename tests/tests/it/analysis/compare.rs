//! `bench-analysis compare` end to end: runs published to a real nats-server as runners
//! publish them, stored by the event-sink into a real ClickHouse 18.16, compared with
//! `compare --format json`. Only finished, judged runs count: a run without `run_stop`,
//! one with a lost event, an infrastructure failure (`exit_environment`, `exit_api`
//! before any answer) and an unjudged run are each left out and counted under their
//! reason, never as failures; `exit_api` after an answered call is a failure.

use bench_analysis::command::{self, CompareArgs};
use bench_analysis::compare::resample::{DEFAULT_RESAMPLES, DEFAULT_SEED};
use bench_analysis::Format;
use bench_clickhouse::{ClickHouseArgs, ConnectionArgs};
use bench_schemas::{BenchmarkEvent, EventType, ExitStatus, Payload};
use benchstream_tests::events::{fixture, publish, Run};
use serde_json::Value;

use crate::common::{jetstream, start_pipeline};

const BASELINE: &str = "bench/baseline:raw";
const CANDIDATE: &str = "bench/candidate:observation_masking";

/// How a published run ends.
#[derive(Debug, Clone, Copy)]
enum End {
    /// A run_stop with this success and exit status.
    Stop(Option<bool>, ExitStatus),
    /// No run_stop: still running, or its runner died.
    Unfinished,
    /// A solved run whose seq 1 never arrived.
    LostEvent,
    /// The provider answered one call, then kept failing: `exit_api` after the agent
    /// acted, an ordinary failure.
    ApiAfterAnAnswer,
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
    // A run that counts, as a failure: the provider failed after the agent acted.
    published += publish_run(&js, CANDIDATE, "task-15", End::ApiAfterAnAnswer).await;
    sink.wait_for(
        "SELECT count() FROM benchstream.events_raw FINAL",
        &published.to_string(),
    )
    .await;

    // `compare --baseline <BASELINE> --format json`, every other flag at its default.
    let args = CompareArgs {
        policies: Vec::new(),
        baseline: Some(BASELINE.to_owned()),
        by: "policy".to_owned(),
        since: None,
        until: None,
        scenario: None,
        tasks: Vec::new(),
        margin: 0.05,
        seed: DEFAULT_SEED,
        resamples: DEFAULT_RESAMPLES,
        format: Format::Json,
        connection: ConnectionArgs {
            clickhouse: ClickHouseArgs {
                url: Some(sink.clickhouse.http_url()),
                ..ClickHouseArgs::default()
            },
            ..ConnectionArgs::default()
        },
    };
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
        (&Value::from(11), &Value::from(6)),
        "the unfinished and the infrastructure runs are not failures; \
         exit_api after an answer is"
    );
    assert_eq!(
        cand["excluded"],
        serde_json::json!({"unfinished": 1, "infrastructure": 2}),
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
