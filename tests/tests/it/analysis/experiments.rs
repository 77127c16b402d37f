//! Experiments in the analysis, end to end (runs published, stored by the sink, read by
//! `compare`): `--experiment` keeps only an experiment's runs, a policy seen in two
//! experiments is two policies unless pooling is asked for (and the output says so), runs
//! at two temperatures or two endpoints are two configs that `--by cfg` names by the
//! setting that tells them apart (never a bare hash) and no other grouping pools
//! silently; and an experiment of two models × 8 tasks × 3 repeats compares as the
//! reference computation (statsmodels, scipy) does.

use bench_analysis::command::{self, CompareArgs};
use bench_analysis::Format;
use bench_clickhouse::{ClickHouseArgs, ConnectionArgs};
use bench_schemas::{Canonical, EventType, ExitStatus, Payload};
use benchstream_tests::events::{fixture, publish, Run};
use serde_json::Value;

use crate::common::{jetstream, repo_path, start_pipeline};

const POLICY: &str = "bench/model-a:raw";

/// Publishes one judged run of `POLICY` on `task` in `experiment` at `temperature`
/// (which gives it its own `cfg_hash`), solved or not; returns its event count.
async fn publish_run(
    js: &async_nats::jetstream::Context,
    (experiment, temperature): (&str, f64),
    task: &str,
    solved: bool,
) -> usize {
    publish_with(js, task, solved, |start| {
        start.policy_id = POLICY.to_owned();
        if let Payload::RunStart(data) = &mut start.payload {
            data.experiment.name = Some(experiment.to_owned());
            data.config.temperature = Some(temperature);
        }
    })
    .await
}

/// Publishes one judged run on `task`, solved or not, whose `run_start` (policy,
/// config, experiment) `change` sets; its `cfg_hash` is its config's. Returns its event
/// count.
async fn publish_with(
    js: &async_nats::jetstream::Context,
    task: &str,
    solved: bool,
    change: impl FnOnce(&mut bench_schemas::BenchmarkEvent),
) -> usize {
    let mut run = Run::default();
    let mut start = fixture(EventType::RunStart);
    change(&mut start);
    if let Payload::RunStart(data) = &start.payload {
        start.cfg_hash = data.config.canonical_hash();
    }
    let mut stop = fixture(EventType::RunStop);
    stop.cfg_hash = start.cfg_hash.clone();
    if let Payload::RunStop(data) = &mut stop.payload {
        data.success = Some(solved);
        data.exit_status = ExitStatus::Submitted;
    }
    stop.policy_id = start.policy_id.clone();
    for event in [start, stop] {
        let mut event = run.stamp(event);
        event.task_id = task.to_owned();
        publish(js, &event).await;
    }
    2
}

/// `compare --format json` of the runs at `url` after `change` to its flags.
async fn compare(url: &str, change: impl FnOnce(&mut CompareArgs)) -> Value {
    let connection = ConnectionArgs {
        clickhouse: ClickHouseArgs {
            url: Some(url.to_owned()),
            ..ClickHouseArgs::default()
        },
        ..ConnectionArgs::default()
    };
    let mut args = CompareArgs::every_policy(connection, Format::Json);
    change(&mut args);
    let output = command::compare(args).await.expect("compare answers");
    serde_json::from_str(&output).expect("JSON")
}

/// `policy_id` and runs of each policy of `answer`.
fn policies(answer: &Value) -> Vec<(String, u64)> {
    answer["policies"]
        .as_array()
        .expect("policies")
        .iter()
        .map(|p| {
            (
                p["policy_id"].as_str().unwrap_or_default().to_owned(),
                p["runs"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn experiments_are_never_pooled_unless_asked_and_configs_are_named_by_their_difference() {
    let (nats, sink) = start_pipeline().await;
    let js = jetstream(&nats.url()).await;
    let mut published = 0;
    // exp-a: 4 tasks at temperature 0.2 and at 0.7; exp-b: the same policy, 4 tasks at 0.2.
    for task in 0..4 {
        let name = format!("task-{task}");
        published += publish_run(&js, ("exp-a", 0.2), &name, true).await;
        published += publish_run(&js, ("exp-a", 0.7), &name, task < 2).await;
        published += publish_run(&js, ("exp-b", 0.2), &name, false).await;
    }
    sink.wait_for(
        "SELECT count() FROM benchstream.events_raw FINAL",
        &published.to_string(),
    )
    .await;
    let url = sink.clickhouse.http_url();

    // Every run, by policy_id: one policy per experiment, never one of 12 runs.
    let apart = compare(&url, |_| {}).await;
    assert_eq!(
        policies(&apart),
        [
            (format!("{POLICY} @experiment=exp-a"), 8),
            (format!("{POLICY} @experiment=exp-b"), 4)
        ]
    );
    // exp-a's runs at two temperatures pool into its policy: said, never silent.
    assert_eq!(
        apart["notes"],
        serde_json::json!([format!(
            "{POLICY} @experiment=exp-a pools the runs of 2 configs that differ in \
             temperature: add cfg to --by to keep them apart"
        )])
    );

    // Pooled only when asked, and the output says so.
    let pooled = compare(&url, |a| a.pool_experiments = true).await;
    assert_eq!(policies(&pooled), [(POLICY.to_owned(), 12)]);
    assert_eq!(
        pooled["notes"][0],
        format!("{POLICY} pools the runs of 2 experiments (exp-a, exp-b), as asked")
    );
    let by_cfg_everywhere = compare(&url, |a| a.by = "policy,cfg".to_owned()).await;
    assert!(
        by_cfg_everywhere["notes"]
            .as_array()
            .is_some_and(|notes| notes
                .iter()
                .all(|n| !n.as_str().unwrap_or_default().contains("configs"))),
        "{by_cfg_everywhere}"
    );

    // One experiment, by config: the two temperatures, named by the setting.
    let by_cfg = compare(&url, |a| {
        a.runs.experiments = vec!["exp-a".to_owned()];
        a.by = "cfg".to_owned();
    })
    .await;
    assert_eq!(
        policies(&by_cfg),
        [
            ("temperature=0.2".to_owned(), 4),
            ("temperature=0.7".to_owned(), 4)
        ]
    );
    let pair = &by_cfg["comparisons"][0];
    assert_eq!(pair["tasks"], 4);
    assert_eq!(pair["difference"], -0.5);

    // Filters: another experiment, or a sweep none of them is in.
    let only_b = compare(&url, |a| a.runs.experiments = vec!["exp-b".to_owned()]).await;
    assert_eq!(policies(&only_b), [(POLICY.to_owned(), 4)]);
    let no_sweep = compare(&url, |a| a.runs.sweeps = vec!["grid".to_owned()]).await;
    assert_eq!(policies(&no_sweep), []);
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_at_two_endpoints_are_two_configs_named_by_their_endpoint() {
    let (nats, sink) = start_pipeline().await;
    let js = jetstream(&nats.url()).await;
    let mut published = 0;
    let endpoints = ["http://127.0.0.1:18080/v1", "http://localhost:18080/v1"];
    for task in 0..3 {
        for (i, endpoint) in endpoints.iter().enumerate() {
            published += publish_with(&js, &format!("task-{task}"), i == 0, |start| {
                start.policy_id = POLICY.to_owned();
                if let Payload::RunStart(data) = &mut start.payload {
                    data.experiment.name = Some("endpoints".to_owned());
                    data.config.endpoint = Some((*endpoint).to_owned());
                }
            })
            .await;
        }
    }
    sink.wait_for(
        "SELECT count() FROM benchstream.events_raw FINAL",
        &published.to_string(),
    )
    .await;
    let url = sink.clickhouse.http_url();
    let by_cfg = compare(&url, |a| a.by = "cfg".to_owned()).await;
    assert_eq!(
        policies(&by_cfg),
        [
            ("endpoint=http://127.0.0.1:18080/v1".to_owned(), 3),
            ("endpoint=http://localhost:18080/v1".to_owned(), 3)
        ]
    );
    assert_eq!(by_cfg["comparisons"][0]["difference"], -1.0);
    // By policy they are one group, which says what it pools.
    let by_policy = compare(&url, |_| {}).await;
    assert_eq!(policies(&by_policy), [(POLICY.to_owned(), 6)]);
    assert_eq!(
        by_policy["notes"],
        serde_json::json!([format!(
            "{POLICY} pools the runs of 2 configs that differ in endpoint: add cfg to --by to \
             keep them apart"
        )])
    );
    sink.stop().await;
}

/// The designed experiment of `event-sink/analysis/tests/fixtures/known_answers.json`
/// and the answers statsmodels and scipy give for it.
fn reference() -> Value {
    let path = repo_path("event-sink/analysis/tests/fixtures/known_answers.json");
    let text = std::fs::read_to_string(path).expect("known_answers.json");
    let answers: Value = serde_json::from_str(&text).expect("JSON");
    answers["experiment"].clone()
}

fn close(actual: &Value, expected: f64, what: &str) {
    let actual = actual
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: {actual}"));
    assert!(
        (actual - expected).abs() < 1e-9,
        "{what}: {actual} != {expected}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_experiment_of_two_models_with_repeats_compares_as_the_reference_computes() {
    let (nats, sink) = start_pipeline().await;
    let js = jetstream(&nats.url()).await;
    let case = reference();
    let design = &case["experiment"];
    let k = design["repeats"].as_u64().expect("repeats");
    let mut published = 0;
    for (side, model) in [
        ("baseline", "bench/model-a"),
        ("candidate", "bench/model-b"),
    ] {
        let solved = design[side].as_array().expect("solved per task");
        for (task, solved) in solved.iter().enumerate() {
            let solved = solved.as_u64().expect("a count");
            for repeat in 0..k {
                for experiment in ["models-ab", "other"] {
                    // Another experiment with the same policies, all solved: filtered out.
                    let success = experiment == "other" || repeat < solved;
                    published += publish_with(&js, &format!("task-{task}"), success, |start| {
                        start.policy_id = format!("{model}:raw");
                        start.seed = Some(42 + repeat);
                        if let Payload::RunStart(data) = &mut start.payload {
                            data.config.model = model.to_owned();
                            data.experiment.name = Some(experiment.to_owned());
                            data.experiment.repeat = u32::try_from(repeat).ok();
                            data.experiment.planned_runs = Some(48);
                        }
                    })
                    .await;
                }
            }
        }
    }
    sink.wait_for(
        "SELECT count() FROM benchstream.events_raw FINAL",
        &published.to_string(),
    )
    .await;
    let answer = compare(&sink.clickhouse.http_url(), |a| {
        a.runs.experiments = vec!["models-ab".to_owned()];
        a.baseline = Some("bench/model-a:raw".to_owned());
    })
    .await;
    assert_eq!(
        policies(&answer),
        [
            ("bench/model-a:raw".to_owned(), 24),
            ("bench/model-b:raw".to_owned(), 24)
        ]
    );
    let z = 1.959_963_984_540_054;
    for (policy, side) in answer["policies"]
        .as_array()
        .expect("policies")
        .iter()
        .zip(["baseline", "candidate"])
    {
        let expected = &case[side];
        let rate = expected["rate"].as_f64().expect("rate");
        let se = expected["se"].as_f64().expect("se");
        close(&policy["rate"], rate, side);
        close(&policy["rate_se_clustered"], se, side);
        close(
            &policy["rate_ci_clustered_low"],
            (rate - z * se).max(0.0),
            side,
        );
        close(
            &policy["rate_ci_clustered_high"],
            (rate + z * se).min(1.0),
            side,
        );
        let at = |k: u64| {
            policy["repeats"]["pass_at_k"]
                .as_array()
                .expect("pass@k")
                .iter()
                .find(|p| p["k"] == k)
                .unwrap_or_else(|| panic!("k = {k}: {policy}"))
                .clone()
        };
        close(&at(1)["pass_at_k"], rate, "pass@1 is the rate");
        let hat = expected["pass_hat_k"].as_f64().expect("pass^3");
        let hat_se = expected["pass_hat_k_se"].as_f64().expect("se");
        close(&at(k)["pass_hat_k"], hat, side);
        close(
            &at(k)["pass_hat_k_ci_low"],
            (hat - z * hat_se).max(0.0),
            side,
        );
        close(
            &at(k)["pass_hat_k_ci_high"],
            (hat + z * hat_se).min(1.0),
            side,
        );
    }
    let pair = &answer["comparisons"][0];
    assert_eq!(pair["tasks"], 8);
    close(
        &pair["difference"],
        case["difference"].as_f64().expect("d"),
        "difference",
    );
    close(
        &pair["difference_se_clustered"],
        case["difference_se"].as_f64().expect("se"),
        "clustered se of the difference",
    );
    assert_eq!(pair["method"], "sign-test-exact");
    close(
        &pair["p_value"],
        case["sign_test_p"].as_f64().expect("p"),
        "sign test",
    );
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_from_an_experiment_estimates_the_correlation_and_the_price_from_its_runs() {
    let (nats, sink) = start_pipeline().await;
    let js = jetstream(&nats.url()).await;
    // The first designed case of known_answers.json: six (policy, task) groups of 3 runs.
    let answers: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_path(
            "event-sink/analysis/tests/fixtures/known_answers.json",
        ))
        .expect("known_answers.json"),
    )
    .expect("JSON");
    let case = &answers["icc"][0];
    let groups = case["groups"].as_array().expect("groups");
    let mut published = 0;
    for (i, group) in groups.iter().enumerate() {
        let (runs, solved) = (group[0].as_u64().expect("n"), group[1].as_u64().expect("s"));
        let (policy, task) = (["bench/model-a:raw", "bench/model-b:raw"][i / 3], i % 3);
        for run in 0..runs {
            for experiment in ["pilot", "other"] {
                // Another experiment's runs, all solved, must not weigh in.
                let success = experiment == "other" || run < solved;
                published += publish_with(&js, &format!("task-{task}"), success, |start| {
                    start.policy_id = policy.to_owned();
                    if let Payload::RunStart(data) = &mut start.payload {
                        data.experiment.name = Some(experiment.to_owned());
                    }
                })
                .await;
            }
        }
    }
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
    let args = |from_experiment: Option<&str>| bench_analysis::plan::PlanArgs {
        baseline_rate: 0.5,
        detect: 0.2,
        alpha: 0.05,
        power: 0.8,
        repeats: 3,
        icc: 0.3,
        format: Format::Json,
        from_experiment: from_experiment.map(str::to_owned),
        connection: connection.clone(),
    };
    let answer = |text: String| -> Value { serde_json::from_str(&text).expect("JSON") };
    let planned = answer(
        bench_analysis::plan::run(&args(Some("pilot")))
            .await
            .expect("plan answers"),
    );
    let icc = case["icc"].as_f64().expect("icc");
    close(
        &planned["icc"],
        icc,
        "the experiment's intra-task correlation",
    );
    let expected = bench_analysis::plan::plan(&bench_analysis::plan::PlanInput {
        baseline_rate: 0.5,
        detect: 0.2,
        alpha: 0.05,
        power: 0.8,
        repeats: 3,
        icc,
    })
    .expect("a plan");
    assert_eq!(planned["tasks"], expected.tasks);
    let Payload::RunStop(stop) = fixture(EventType::RunStop).payload else {
        panic!("a run_stop fixture")
    };
    let cost = stop.cost_usd.expect("the fixture's run is priced");
    close(
        &planned["cost_usd"],
        cost * expected.runs as f64,
        "the mean price of a run times the runs",
    );
    // Without the experiment: the stated correlation, no price.
    let stated = answer(bench_analysis::plan::run(&args(None)).await.expect("plan"));
    assert_eq!(
        (stated["icc"].as_f64(), &stated["cost_usd"]),
        (Some(0.3), &Value::Null)
    );
    // An experiment with no run is an error naming it, not a made-up estimate.
    let error = bench_analysis::plan::run(&args(Some("nothing")))
        .await
        .expect_err("no runs")
        .to_string();
    assert!(
        error.contains("--from-experiment nothing: no counted run"),
        "{error}"
    );
    sink.stop().await;
}
