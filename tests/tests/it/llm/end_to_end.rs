//! The whole pipeline with a model in the loop: the shipped `llm-local` scenario, a model
//! (the stand-in) solving a shipped task, events published to NATS, the sink storing them
//! in ClickHouse, where the run, its deliberations and their costs can be queried.

use std::time::{Duration, Instant};

use bench_nats::NatsArgs;
use benchstream_tests::{ClickHouseServer, NatsServer, OpenAiServer};
use event_sink::config::{BatchArgs, ClickHouseArgs, MetricsArgs};
use event_sink::SinkArgs;
use schemas::{ExitStatus, SubjectPrefix};
use tokio_util::sync::CancellationToken;

use super::{agent_requests, models, provider, reference_replies, TASK};
use crate::runner::{create_stream, publish_setup, repo_path, runner_config};

/// Runs `sql` until it answers `expected`, or panics after 30 s.
fn wait_for(clickhouse: &ClickHouseServer, sql: &str, expected: &str) {
    let start = Instant::now();
    loop {
        let answer = clickhouse
            .try_query(sql)
            .map(|a| a.trim().to_owned())
            .unwrap_or_else(|e| e.to_string());
        if answer == expected {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{sql}\nanswers {answer:?}, expected {expected:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_solves_a_shipped_task_and_its_events_land_in_clickhouse() {
    let (nats, clickhouse) = tokio::task::spawn_blocking(|| {
        let clickhouse = std::thread::spawn(ClickHouseServer::start);
        (
            NatsServer::start(),
            clickhouse.join().expect("clickhouse starts"),
        )
    })
    .await
    .expect("servers start");
    let prefix = SubjectPrefix::default();
    create_stream(&nats.url(), &prefix).await;
    let sink_args = SinkArgs {
        nats: NatsArgs {
            url: Some(nats.url()),
            ..NatsArgs::default()
        },
        clickhouse: ClickHouseArgs {
            url: Some(clickhouse.http_url()),
            ..ClickHouseArgs::default()
        },
        batch: BatchArgs {
            flush_interval_ms: Some(200),
            ..BatchArgs::default()
        },
        metrics: MetricsArgs {
            listen: Some("off".into()),
        },
        ..SinkArgs::default()
    };
    let sink_stop = CancellationToken::new();
    let sink = tokio::spawn(event_sink::run(
        sink_args.resolve().expect("sink settings"),
        sink_stop.clone(),
    ));
    let server = OpenAiServer::with_replies(models(), reference_replies(TASK));
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = runner_config(
        repo_path("scenarios/llm-local.toml"),
        Some(vec![TASK.to_owned()]),
        false,
        Some(publish_setup(&nats.url(), &prefix, dir.path())),
        dir.path(),
    );
    config.llm = Some(provider(&server));

    let report = agent_runner::run(config, CancellationToken::new())
        .await
        .expect("llm-local runs");

    let run = &report.runs[0];
    assert!(run.result.success, "{:?}", run.result);
    assert_eq!(run.result.exit_status, ExitStatus::Submitted);
    assert_eq!(run.policy_id, "qwen2.5-coder:7b:observation_masking");
    assert_eq!(report.undelivered(), 0);
    // Every turn sent the whole conversation so far: one more tool result each time.
    let requests = agent_requests(&server);
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[3]["model"], "qwen2.5-coder:7b");
    assert_eq!(requests[3]["seed"], 42);
    assert!(requests[3]["tools"]
        .as_array()
        .is_some_and(|t| t.len() == 6));

    let run_id = run.run_id;
    let events = run.events;
    tokio::task::spawn_blocking(move || {
        wait_for(
            &clickhouse,
            &format!("SELECT count() FROM benchstream.events_raw FINAL WHERE run_id = '{run_id}'"),
            &events.to_string(),
        );
        // 4 calls of 100 prompt + 20 completion tokens at $0.03 / $0.09 per Mtok.
        wait_for(
            &clickhouse,
            &format!(
                "SELECT count(), sum(input_tokens), sum(output_tokens), groupUniqArray(agent), \
                 groupUniqArray(pricing_source), round(sum(cost_usd) * 1e9) \
                 FROM benchstream.deliberations FINAL WHERE run_id = '{run_id}' FORMAT TSV"
            ),
            "4\t400\t80\t['agent']\t['provider_api']\t19200",
        );
        wait_for(
            &clickhouse,
            &format!(
                "SELECT success, exit_status, api_calls FROM benchstream.run_stops FINAL \
                 WHERE run_id = '{run_id}' FORMAT TSV"
            ),
            "1\tsubmitted\t4",
        );
    })
    .await
    .expect("rows landed");
    sink_stop.cancel();
    sink.await.expect("sink task").expect("sink stops cleanly");
}
