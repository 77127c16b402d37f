//! Retrying model calls per the run's `retry_policy`, and counting the retries.
//!
//! What is retried is decided here and nowhere else: transient failures (HTTP 429, 408
//! and 5xx, a connection that failed) up to `max_retries`; timeouts only with
//! `retry_on_timeout`; never a bad request, a context overflow or a reply that is not a
//! chat completion (sending the same request again would get the same answer). The wait
//! before retry `n` (0-based) is [`crate::backoff::delay`] (`backoff_ms`, doubled per retry
//! with `exponential_backoff`), and at least the provider's `Retry-After` (capped at
//! [`MAX_RETRY_AFTER`]).

use std::future::Future;
use std::time::{Duration, Instant};

use bench_schemas::RetryPolicy;

use super::client::CallError;

/// The longest `Retry-After` honoured; the run's execution limit bounds the rest.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The end of a call: its last attempt's result, with the retries spent on it.
#[derive(Debug)]
pub struct Attempts<T> {
    /// The last attempt's result.
    pub result: Result<T, CallError>,
    /// Attempts beyond the first.
    pub retries: u32,
    /// Wall time of all attempts and waits.
    pub latency: Duration,
}

/// Runs `attempt` until it succeeds, fails for good, or the policy's retries are spent.
pub async fn with_retries<T, F, Fut>(policy: &RetryPolicy, mut attempt: F) -> Attempts<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, CallError>>,
{
    let started = Instant::now();
    let mut retries = 0;
    loop {
        let error = match attempt().await {
            Err(e) if retries < policy.max_retries && is_retryable(&e, policy) => e,
            result => {
                return Attempts {
                    result,
                    retries,
                    latency: started.elapsed(),
                }
            }
        };
        let wait = backoff(policy, retries, &error);
        tracing::info!(%error, retry = retries + 1, wait_ms = wait.as_millis() as u64, "retrying a model call");
        tokio::time::sleep(wait).await;
        retries += 1;
    }
}

/// Whether `error` is worth another attempt under `policy`.
pub fn is_retryable(error: &CallError, policy: &RetryPolicy) -> bool {
    match error {
        CallError::Timeout(_) => policy.retry_on_timeout,
        CallError::Transport(_) => true,
        CallError::Status { status, .. } => matches!(status, 408 | 429 | 500..=599),
        CallError::ContextLength(_) | CallError::Malformed { .. } => false,
    }
}

/// The wait before retry number `retry` (0-based) after `error`.
fn backoff(policy: &RetryPolicy, retry: u32, error: &CallError) -> Duration {
    let wait = crate::backoff::delay(policy, retry);
    match error {
        CallError::Status {
            retry_after: Some(after),
            ..
        } => wait.max((*after).min(MAX_RETRY_AFTER)),
        _ => wait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(max_retries: u32, retry_on_timeout: bool) -> RetryPolicy {
        RetryPolicy {
            max_retries,
            backoff_ms: 1,
            exponential_backoff: true,
            retry_on_flake: false,
            retry_on_timeout,
        }
    }

    fn status(status: u16) -> CallError {
        CallError::Status {
            status,
            message: String::new(),
            retry_after: None,
        }
    }

    #[tokio::test]
    async fn transient_errors_are_retried_and_counted() {
        let mut errors = vec![status(500), status(429)];
        let done = with_retries(&policy(3, false), || {
            let next = errors.pop();
            async move { next.map_or(Ok("ok"), Err) }
        })
        .await;
        assert_eq!((done.result, done.retries), (Ok("ok"), 2));
    }

    #[tokio::test]
    async fn retries_stop_at_max_retries() {
        let done = with_retries(&policy(2, false), || async { Err::<(), _>(status(503)) }).await;
        assert_eq!(done.retries, 2);
        assert_eq!(done.result, Err(status(503)));
    }

    #[test]
    fn bad_requests_and_timeouts_follow_the_policy() {
        let timeout = CallError::Timeout(Duration::from_secs(1));
        assert!(!is_retryable(&status(400), &policy(3, true)));
        assert!(!is_retryable(&timeout, &policy(3, false)));
        assert!(is_retryable(&timeout, &policy(3, true)));
        assert!(!is_retryable(
            &CallError::ContextLength(String::new()),
            &policy(3, true)
        ));
    }

    #[test]
    fn backoff_doubles_and_honours_retry_after() {
        let p = RetryPolicy {
            backoff_ms: 100,
            ..policy(5, false)
        };
        assert_eq!(backoff(&p, 3, &status(500)), Duration::from_millis(800));
        let limited = CallError::Status {
            status: 429,
            message: String::new(),
            retry_after: Some(Duration::from_secs(2)),
        };
        assert_eq!(backoff(&p, 0, &limited), Duration::from_secs(2));
    }
}
