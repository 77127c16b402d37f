//! Provider trouble: a hung call is a `timeout` deliberation and the run goes on; 429 and
//! 5xx are retried per `retry_policy` (honouring `Retry-After`) and the retries counted;
//! errors that outlast the retries end the run with `exit_api`; a prompt over the context
//! window ends it with `exit_context`, whether the provider or the estimate says so.

use std::time::Duration;

use benchstream_tests::{OpenAiServer, Reply};
use schemas::{DeliberationStatus, ExitStatus};

use super::{fixture, models, provider, reference_replies, run, TASK};

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
    assert!(
        (300..5000).contains(&timeout.latency_ms),
        "gave up after the per-call timeout, not the delay: {} ms",
        timeout.latency_ms
    );
    assert!(timeout
        .error
        .as_deref()
        .is_some_and(|e| e.contains("300 ms")));
    let result = &finished.summary.result;
    assert_eq!(result.success, Some(true), "{result:?}");
    assert_eq!((result.turns, result.api_calls), (5, 5));
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
    assert_eq!((first.status, first.retries), (DeliberationStatus::Ok, 2));
    assert!(first.latency_ms >= 1000, "Retry-After: 1 was honoured");
    assert!(deliberations[1..].iter().all(|d| d.retries == 0));
    assert_eq!(
        finished.summary.result.api_calls, 4,
        "a call with retries is one api call"
    );
    assert_eq!(finished.summary.result.success, Some(true));
    assert_eq!(server.chat_requests().len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_errors_after_retries_end_the_run_with_exit_api() {
    let server = OpenAiServer::with_replies(
        models(),
        [500, 502, 503].map(|status| Reply::error(status, "provider down")),
    );

    let finished = run(fixture("raw"), provider(&server)).await;

    let [d] = finished.deliberations()[..] else {
        panic!("one deliberation expected")
    };
    assert_eq!((d.status, d.retries), (DeliberationStatus::ApiError, 2));
    assert!(d.error.as_deref().is_some_and(|e| e.contains("HTTP 503")));
    let result = &finished.summary.result;
    assert_eq!(result.exit_status, ExitStatus::ExitApi, "{result:?}");
    assert_eq!(server.chat_requests().len(), 3);
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
    assert_eq!((d.status, d.retries), (DeliberationStatus::ApiError, 0));
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
