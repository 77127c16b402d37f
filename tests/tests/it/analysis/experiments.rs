//! Experiments in the analysis, end to end (runs published, stored by the sink, read by
//! `compare`): `--experiment` keeps only an experiment's runs, a policy seen in two
//! experiments is two policies unless pooling is asked for (and the output says so), and
//! `--by cfg` names the setting that tells two configs apart, never a bare hash.

use bench_analysis::command::{self, CompareArgs};
use bench_analysis::Format;
use bench_clickhouse::{ClickHouseArgs, ConnectionArgs};
use bench_schemas::{Canonical, EventType, ExitStatus, Payload};
use benchstream_tests::events::{fixture, publish, Run};
use serde_json::Value;

use crate::common::{jetstream, start_pipeline};

const POLICY: &str = "bench/model-a:raw";

/// Publishes one judged run of `POLICY` on `task` in `experiment` at `temperature`
/// (which gives it its own `cfg_hash`), solved or not; returns its event count.
async fn publish_run(
    js: &async_nats::jetstream::Context,
    (experiment, temperature): (&str, f64),
    task: &str,
    solved: bool,
) -> usize {
    let mut run = Run::default();
    let mut start = fixture(EventType::RunStart);
    if let Payload::RunStart(data) = &mut start.payload {
        data.experiment.name = Some(experiment.to_owned());
        data.config.temperature = Some(temperature);
        start.cfg_hash = data.config.canonical_hash();
    }
    let mut stop = fixture(EventType::RunStop);
    stop.cfg_hash = start.cfg_hash.clone();
    if let Payload::RunStop(data) = &mut stop.payload {
        data.success = Some(solved);
        data.exit_status = ExitStatus::Submitted;
    }
    for event in [start, stop] {
        let mut event = run.stamp(event);
        event.policy_id = POLICY.to_owned();
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
    assert_eq!(apart["notes"], Value::Array(Vec::new()));

    // Pooled only when asked, and the output says so.
    let pooled = compare(&url, |a| a.pool_experiments = true).await;
    assert_eq!(policies(&pooled), [(POLICY.to_owned(), 12)]);
    assert_eq!(
        pooled["notes"][0],
        format!("{POLICY} pools the runs of 2 experiments (exp-a, exp-b), as asked")
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
