//! The whole pipeline with a model in the loop: the shipped `llm-local` scenario, a model
//! (the stand-in) solving a shipped task, events published to NATS, the sink storing them
//! in ClickHouse, where the run, its deliberations and their costs can be queried, each
//! step with the tokens of the calls it made.

use bench_schemas::{ExitStatus, SubjectPrefix};
use benchstream_tests::OpenAiServer;
use tokio_util::sync::CancellationToken;

use super::{agent_requests, models, provider, reference_replies, TASK};
use crate::common::{publish_setup, repo_path, runner_config, start_pipeline};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_solves_a_shipped_task_and_its_events_land_in_clickhouse() {
    let (nats, sink) = start_pipeline().await;
    let prefix = SubjectPrefix::default();
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
    assert_eq!(run.result.success, Some(true), "{:?}", run.result);
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
    sink.wait_for_run(run).await;
    // 4 calls of 100 prompt + 20 completion tokens at $0.03 / $0.09 per Mtok.
    sink.wait_for(
        &format!(
            "SELECT count(), sum(input_tokens), sum(output_tokens), groupUniqArray(agent), \
             groupUniqArray(pricing_source), round(sum(cost_usd) * 1e9) \
             FROM benchstream.deliberations FINAL WHERE run_id = '{run_id}' FORMAT TSV"
        ),
        "4\t400\t80\t['agent']\t['provider_api']\t19200",
    )
    .await;
    sink.wait_for(
        &format!(
            "SELECT success, exit_status, api_calls FROM benchstream.run_stops FINAL \
             WHERE run_id = '{run_id}' FORMAT TSV"
        ),
        "1\tsubmitted\t4",
    )
    .await;
    // The model wrote no text, so each turn's call is on its act step; the steps that
    // made no call have NULL tokens, not a made-up 0.
    let turn = "act\t100\t20\nobserve\t\\N\t\\N\n";
    sink.wait_for(
        &format!(
            "SELECT step_type, tokens_in, tokens_out FROM benchstream.steps FINAL \
             WHERE run_id = '{run_id}' ORDER BY seq FORMAT TSV"
        ),
        &format!("{}conclude\t\\N\t\\N", turn.repeat(4)),
    )
    .await;
    // Each tool call keeps the id the model gave it (`call_<i>_<n>` from the stand-in).
    sink.wait_for(
        &format!(
            "SELECT count(), countIf(call_id LIKE 'call%') FROM benchstream.tool_calls FINAL \
             WHERE run_id = '{run_id}' FORMAT TSV"
        ),
        "4\t4",
    )
    .await;
    // A chat completion states no confidence: NULL, never a made-up 1.
    sink.wait_for(
        &format!(
            "SELECT count(), countIf(isNull(confidence)) FROM benchstream.deliberations FINAL \
             WHERE run_id = '{run_id}' FORMAT TSV"
        ),
        "4\t4",
    )
    .await;
    sink.stop().await;
}
