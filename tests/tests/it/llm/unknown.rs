//! The end-to-end test of the unknown for a native run: a provider that sends no usage,
//! no prices and no confidence. Every Nullable column of the run's `deliberations` and
//! `steps` rows is NULL in ClickHouse, except the envelope columns the runner always
//! sets; the list of columns is read from ClickHouse itself, so a column added later is
//! covered without touching this test.

use serde_json::Value;

use benchstream_tests::OpenAiServer;

use super::{fixture, provider, reference_replies, run_published, unpriced_models, TASK};
use crate::common::start_pipeline;

/// Nullable columns a native run always fills: ids and the envelope.
const ALWAYS_SET: [&str; 4] = ["step_id", "seq", "host", "stream_seq"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_reports_nothing_optional_leaves_every_optional_column_null() {
    let (nats, sink) = start_pipeline().await;
    let silent = reference_replies(TASK)
        .into_iter()
        .map(|reply| reply.usage(Value::Null));
    let server = OpenAiServer::with_replies(unpriced_models("bench/priced-model"), silent);

    let summary = run_published(fixture("raw"), provider(&server), &nats, &sink).await;

    let run_id = summary.run_id;
    for table in ["deliberations", "steps"] {
        let described = sink
            .clickhouse
            .query(&format!("DESCRIBE TABLE benchstream.{table} FORMAT TSV"));
        let optional: Vec<&str> = described
            .lines()
            .filter_map(|line| {
                let mut cells = line.split('\t');
                let (name, ty) = (cells.next()?, cells.next()?);
                (ty.starts_with("Nullable(") && !ALWAYS_SET.contains(&name)).then_some(name)
            })
            .collect();
        assert!(!optional.is_empty(), "{table}: {described}");
        let counts: Vec<String> = optional
            .iter()
            .map(|c| format!("countIf(isNotNull({c}))"))
            .collect();
        let zeros = vec!["0"; optional.len()].join("\t");
        sink.wait_for(
            &format!(
                "SELECT {} FROM benchstream.{table} FINAL WHERE run_id = '{run_id}' FORMAT TSV",
                counts.join(", ")
            ),
            &zeros,
        )
        .await;
        // The run did write rows here: the zeros are not of an empty table.
        sink.wait_for(
            &format!(
                "SELECT count() > 0 FROM benchstream.{table} FINAL WHERE run_id = '{run_id}' \
                 FORMAT TSV"
            ),
            "1",
        )
        .await;
    }
    sink.stop().await;
}
