//! The wait before a retry under a run's `retry_policy`: `backoff_ms`, doubled per retry
//! with `exponential_backoff`. Tool calls ([`crate::tools`]) and model calls
//! ([`crate::provider::retry`]) wait the same way; what each retries is decided there.

use std::time::Duration;

use bench_schemas::RetryPolicy;

/// The wait before retry number `retry` (0-based) under `policy`.
pub fn delay(policy: &RetryPolicy, retry: u32) -> Duration {
    let factor = if policy.exponential_backoff {
        2u64.saturating_pow(retry)
    } else {
        1
    };
    Duration::from_millis(policy.backoff_ms.saturating_mul(factor))
}
