//! A test's ClickHouse as the tests read it: polling a query until it gives the answer a
//! guarantee promises.

use std::time::{Duration, Instant};

use crate::ClickHouseServer;

/// Runs `sql` until it answers `expected` (trimmed), or panics after `timeout` with the
/// last answer. Blocking: call it from a plain test or through `block_in_place`.
pub fn wait_for(clickhouse: &ClickHouseServer, sql: &str, expected: &str, timeout: Duration) {
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
            start.elapsed() < timeout,
            "after {timeout:?}, {sql}\nanswers {answer:?}, expected {expected:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
