//! Provider trouble: a hung call is a `timeout` deliberation and the run goes on; 429 and
//! 5xx are retried per `retry_policy` (honouring `Retry-After`) and the retries counted;
//! errors that outlast the retries end the run with `exit_api`, and so does a provider
//! that leaves `max_provider_failures` calls in a row unanswered, both with a `failure`
//! rooted in the provider and calls whose tokens and cost are unknown (NULL), checked in
//! ClickHouse. A run whose provider never answered is an infrastructure failure (not
//! judged, success NULL, 0 turns); one that got an answer first is a judged result; a prompt over the context window ends it with `exit_context`, whether the
//! provider or the estimate says so.

use std::time::Duration;

use agent_runner::agent::RunSummary;
use bench_schemas::{DeliberationStatus, ExitStatus};
use benchstream_tests::{OpenAiServer, Reply};

use super::{fixture, models, provider, reference_replies, run, run_published, TASK};
use crate::common::{start_pipeline, SinkToClickHouse};

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
async fn a_provider_that_fails_after_an_answered_call_ends_a_run_that_is_still_a_result() {
    let (nats, sink) = start_pipeline().await;
    // One answered call (the first step of the reference solution), then the provider
    // fails for good.
    let first = reference_replies(TASK).remove(0);
    let server = OpenAiServer::with_replies(
        models(),
        std::iter::once(first).chain([500, 502, 503].map(|s| Reply::error(s, "provider down"))),
    );

    let summary = run_published(fixture("raw"), provider(&server), &nats, &sink).await;

    // The agent acted on the answer, so the run is judged like any other: it did not
    // solve the task (success 0, the judge's counts), after 1 turn.
    sink.wait_for(
        &format!(
            "SELECT exit_status, success, isNotNull(tests_passed), isNotNull(final_score), \
             turns, api_calls FROM benchstream.run_stops FINAL WHERE run_id = '{}' \
             FORMAT TSV",
            summary.run_id
        ),
        "exit_api\t0\t1\t1\t1\t2",
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
