//! Provider trouble: a hung call is a `timeout` deliberation and the run goes on; 429 and
//! 5xx are retried per `retry_policy` (honouring `Retry-After`) and the retries counted;
//! errors that outlast the retries end the run with `exit_api`, and so does a provider
//! that leaves `max_provider_failures` calls in a row unanswered, both with a `failure`
//! rooted in the provider and calls whose tokens and cost are unknown (NULL), checked in
//! ClickHouse. A run the provider ended is an infrastructure failure (not judged, success
//! NULL), whether or not it had answered earlier calls, and `compare` counts it among its
//! exclusions; a provider that cannot be reached, or does not list the model, ends the
//! command before the first run, with nothing recorded. A prompt over the context window
//! ends a run with `exit_context`, whether the provider or the estimate says so.

use std::time::Duration;

use agent_runner::RunSummary;
use agent_runner::{Error, Exit, Outcome};
use bench_analysis::command::{self, CompareArgs};
use bench_analysis::Format;
use bench_clickhouse::{ClickHouseArgs, ConnectionArgs};
use bench_schemas::{DeliberationStatus, ExitStatus, SubjectPrefix};
use benchstream_tests::{free_port, OpenAiServer, Reply};
use tokio_util::sync::CancellationToken;

use super::{fixture, models, provider, reference_replies, run, run_published, TASK};
use crate::common::{publish_setup, runner_config, start_pipeline, SinkToClickHouse};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_call_is_a_timeout_deliberation_and_the_run_goes_on() {
    let hung = Reply::text("too late").delayed(Duration::from_secs(5));
    let server = OpenAiServer::with_replies(
        models(),
        std::iter::once(hung).chain(reference_replies(TASK)),
    );
    let mut llm = provider(&server);
    llm.provider.timeout = Duration::from_millis(300);

    let finished = run(fixture("raw"), llm).await;

    let statuses: Vec<_> = finished.deliberations().iter().map(|d| d.status).collect();
    assert_eq!(
        statuses,
        [
            DeliberationStatus::Timeout,
            DeliberationStatus::Ok,
            DeliberationStatus::Ok,
            DeliberationStatus::Ok,
            DeliberationStatus::Ok
        ]
    );
    let timeout = finished.deliberations()[0];
    let latency = timeout.latency_ms.expect("the runner times every call");
    assert!(
        (300..5000).contains(&latency),
        "gave up after the per-call timeout, not the delay: {latency} ms"
    );
    assert!(timeout
        .error
        .as_deref()
        .is_some_and(|e| e.contains("300 ms")));
    let result = &finished.summary.result;
    assert_eq!(result.success, Some(true), "{result:?}");
    // The unanswered call was no turn of the agent's.
    assert_eq!((result.turns, result.api_calls), (Some(4), Some(5)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_then_success_counts_the_retries() {
    let throttled = [
        Reply::error(429, "rate limited").retry_after(1),
        Reply::error(500, "upstream hiccup"),
    ];
    let server = OpenAiServer::with_replies(
        models(),
        throttled.into_iter().chain(reference_replies(TASK)),
    );

    let finished = run(fixture("raw"), provider(&server)).await;

    let deliberations = finished.deliberations();
    let first = deliberations[0];
    assert_eq!(
        (first.status, first.retries),
        (DeliberationStatus::Ok, Some(2))
    );
    assert!(
        first.latency_ms.is_some_and(|ms| ms >= 1000),
        "Retry-After: 1 was honoured"
    );
    assert!(deliberations[1..].iter().all(|d| d.retries == Some(0)));
    assert_eq!(
        finished.summary.result.api_calls,
        Some(4),
        "a call with retries is one api call"
    );
    assert_eq!(finished.summary.result.success, Some(true));
    assert_eq!(server.chat_requests().len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_errors_after_retries_end_the_run_with_exit_api() {
    let (nats, sink) = start_pipeline().await;
    let server = OpenAiServer::with_replies(
        models(),
        [500, 502, 503].map(|status| Reply::error(status, "provider down")),
    );

    let summary = run_published(fixture("raw"), provider(&server), &nats, &sink).await;

    assert_eq!(summary.result.exit_status, ExitStatus::ExitApi);
    assert_eq!(server.chat_requests().len(), 3);
    sink.wait_for(
        &format!(
            "SELECT status, retries, position(error, 'HTTP 503') > 0, \
             isNull(input_tokens) AND isNull(output_tokens) \
             FROM benchstream.deliberations FINAL WHERE run_id = '{}' FORMAT TSV",
            summary.run_id
        ),
        // No answer: its tokens are unknown (NULL), not 0.
        "api_error\t2\t1\t1",
    )
    .await;
    assert_provider_ended_the_run(&sink, &summary, 1).await;
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_provider_ends_the_run_with_exit_api_after_the_limit() {
    let (nats, sink) = start_pipeline().await;
    // Every call hangs past the per-call timeout; timeouts are not retried (raw.toml).
    let server = OpenAiServer::start(models(), |_| {
        Reply::text("too late").delayed(Duration::from_secs(5))
    });
    let mut llm = provider(&server);
    llm.provider.timeout = Duration::from_millis(300);
    llm.max_provider_failures = 3;

    let summary = run_published(fixture("raw"), llm, &nats, &sink).await;

    // Three unanswered calls, then the run ends: not after the 20 turns of
    // max_iterations. The agent never got an answer, so it took no turn.
    assert_eq!(server.chat_requests().len(), 3);
    assert!(summary
        .result
        .early_stop_reason
        .as_deref()
        .is_some_and(|r| r.starts_with("3 model calls in a row failed")));
    sink.wait_for(
        &format!(
            "SELECT exit_status, turns, api_calls FROM benchstream.run_stops FINAL \
             WHERE run_id = '{}' FORMAT TSV",
            summary.run_id
        ),
        "exit_api\t0\t3",
    )
    .await;
    assert_provider_ended_the_run(&sink, &summary, 3).await;
    sink.stop().await;
}

/// What ClickHouse holds for a run the provider ended before answering any call, an
/// infrastructure failure: `exit_api` with success, score and test counts NULL (nobody
/// judged the untouched fixture) and 0 turns; a run-level `failure` rooted in the
/// provider (`stand-in` in the fixtures) after `failed_calls` failed calls in a row;
/// calls whose cost is unknown (NULL, `pricing_source` `unknown`, never $0 from the
/// provider's prices), so the run's cost is unknown too.
async fn assert_provider_ended_the_run(
    sink: &SinkToClickHouse,
    summary: &RunSummary,
    failed_calls: u32,
) {
    let run_id = summary.run_id;
    sink.wait_for(
        &format!(
            "SELECT exit_status, isNull(cost_usd), isNull(success), isNull(final_score), \
             isNull(tests_passed), isNull(tests_failed), turns \
             FROM benchstream.run_stops FINAL WHERE run_id = '{run_id}' FORMAT TSV"
        ),
        "exit_api\t1\t1\t1\t1\t1\t0",
    )
    .await;
    sink.wait_for(
        &format!(
            "SELECT root_kind, error_category, \
             visitParamExtractString(first_failure_root, 'provider'), \
             visitParamExtractUInt(first_failure_root, 'failed_calls') \
             FROM benchstream.failures FINAL WHERE run_id = '{run_id}' AND isNull(step_id) \
             FORMAT TSV"
        ),
        &format!("provider\tprovider\tstand-in\t{failed_calls}"),
    )
    .await;
    sink.wait_for(
        &format!(
            "SELECT count(), countIf(isNull(cost_usd)), groupUniqArray(pricing_source) \
             FROM benchstream.deliberations FINAL WHERE run_id = '{run_id}' FORMAT TSV"
        ),
        &format!("{failed_calls}\t{failed_calls}\t['unknown']"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_dies_mid_run_is_an_infrastructure_failure_left_out_of_compare() {
    let (nats, sink) = start_pipeline().await;
    // One answered call (the first step of the reference solution), then the provider
    // answers 500 for good.
    let first = reference_replies(TASK).remove(0);
    let server = OpenAiServer::with_replies(
        models(),
        std::iter::once(first).chain([500, 502, 503].map(|s| Reply::error(s, "provider down"))),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let setup = publish_setup(&nats.url(), &SubjectPrefix::default(), dir.path());
    let mut config = runner_config(fixture("raw"), None, true, Some(setup), dir.path());
    config.llm = Some(provider(&server));

    let report = agent_runner::run(config, CancellationToken::new())
        .await
        .expect("scenario runs");

    // The only run was no result: the command says so with its own exit code.
    assert_eq!(report.exit(), Exit::Infrastructure, "{report}");
    let [summary] = <[RunSummary; 1]>::try_from(report.runs).expect("one run");
    sink.wait_for_run(&summary).await;
    // The provider failed, not the model: no success, no score, whatever the agent had
    // done with the answer it got.
    sink.wait_for(
        &format!(
            "SELECT exit_status, isNull(success), isNull(final_score), \
             isNull(tests_passed), turns, api_calls FROM benchstream.run_stops FINAL \
             WHERE run_id = '{}' FORMAT TSV",
            summary.run_id
        ),
        "exit_api\t1\t1\t1\t1\t2",
    )
    .await;
    // What the agent had done by the cut-off was judged for information only: the
    // reference's first step fixes nothing yet, so some judge tests fail.
    let cutoff = summary.result.cutoff_score.expect("a score at the cut-off");
    assert!((0.0..1.0).contains(&cutoff), "{cutoff}");
    sink.wait_for(
        &format!(
            "SELECT visitParamHas(raw, 'cutoff_score') FROM benchstream.events_raw FINAL \
             WHERE run_id = '{}' AND type = 'run_stop' FORMAT TSV",
            summary.run_id
        ),
        "1",
    )
    .await;
    // compare leaves it out, counted as an infrastructure failure.
    let connection = ConnectionArgs {
        clickhouse: ClickHouseArgs {
            url: Some(sink.clickhouse.http_url()),
            ..ClickHouseArgs::default()
        },
        ..ConnectionArgs::default()
    };
    let answer = command::compare(CompareArgs::every_policy(connection, Format::Json))
        .await
        .expect("compare");
    let answer: serde_json::Value = serde_json::from_str(&answer).expect("JSON");
    let policy = &answer["policies"][0];
    assert_eq!(policy["runs"], 0, "{answer}");
    assert_eq!(
        policy["excluded"],
        serde_json::json!({"infrastructure": 1}),
        "{answer}"
    );
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_provider_ends_the_command_before_the_first_run() {
    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let server = OpenAiServer::with_replies(models(), reference_replies(TASK));
    let nowhere = format!("http://127.0.0.1:{}/v1", free_port());
    let mut llm = provider(&server);
    llm.provider.base_url.clone_from(&nowhere);
    let setup = publish_setup(&nats.url(), &SubjectPrefix::default(), dir.path());
    let mut config = runner_config(fixture("raw"), None, true, Some(setup), dir.path());
    config.llm = Some(llm);

    let error = agent_runner::run(config, CancellationToken::new())
        .await
        .expect_err("the provider check fails");

    assert!(matches!(error, Error::Provider(_)), "{error}");
    assert_eq!(error.exit(), Exit::Failure);
    let message = error.to_string();
    assert_eq!(
        message.matches(&nowhere).count(),
        1,
        "the URL once: {message}"
    );
    assert!(message.contains("Connection refused"), "{message}");
    // A model the provider does not list fails the same way, naming it.
    let mut config = runner_config(fixture("raw"), None, true, None, dir.path());
    config.llm = Some(provider(&server));
    config.scenario = fixture("unlisted-model");
    let error = agent_runner::run(config, CancellationToken::new())
        .await
        .expect_err("the model check fails");
    assert!(error.to_string().contains("bench/no-such-model"), "{error}");
    assert!(server.chat_requests().is_empty(), "no model call was made");

    // Nothing was recorded: a run published afterwards is the only one ClickHouse holds.
    let summary = run_published(fixture("raw"), provider(&server), &nats, &sink).await;
    sink.wait_for(
        "SELECT count(), any(run_id) FROM benchstream.run_starts FINAL FORMAT TSV",
        &format!("1\t{}", summary.run_id),
    )
    .await;
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_context_overflow_ends_the_run_with_exit_context() {
    let server = OpenAiServer::with_replies(
        models(),
        [Reply::error(
            400,
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
        )],
    );

    let finished = run(fixture("raw"), provider(&server)).await;

    let [d] = finished.deliberations()[..] else {
        panic!("one deliberation expected")
    };
    assert_eq!(
        (d.status, d.retries),
        (DeliberationStatus::ApiError, Some(0))
    );
    assert_eq!(finished.summary.result.exit_status, ExitStatus::ExitContext);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_over_the_window_ends_the_run_before_any_call() {
    let server = OpenAiServer::with_replies(models(), reference_replies(TASK));

    let finished = run(fixture("small-window"), provider(&server)).await;

    let result = &finished.summary.result;
    assert_eq!(result.exit_status, ExitStatus::ExitContext, "{result:?}");
    assert!(result
        .early_stop_reason
        .as_deref()
        .is_some_and(|r| r.contains("context_window")));
    assert!(finished.deliberations().is_empty());
    assert!(server.chat_requests().is_empty());
}
