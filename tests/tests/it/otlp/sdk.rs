//! The OpenTelemetry Python SDK's own OTLP/HTTP exporter sends an agent trace, and the
//! same batch again: every fact lands in ClickHouse exactly as the trace states it, once.

use bench_analysis::Query;
use bench_nats::StreamSpec;
use bench_schemas::Canonical;

use super::{export, query, Receiver};
use crate::common::{start_pipeline, stream_messages};

/// Events of one fixture trace: run_start and run_stop (root), step + deliberation per
/// chat span (2), a tool_call per tool span (2), a failure for the one that timed out.
const EVENTS_PER_TRACE: usize = 9;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_trace_exported_twice_lands_exactly_and_once() {
    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("dir");
    // Prices of one of the trace's two models: the other's calls cost NULL, never these.
    let prices = dir.path().join("prices.toml");
    std::fs::write(
        &prices,
        "[models.\"claude-3-5-haiku\"]\nprompt = 1\ncompletion = 2\n",
    )
    .expect("price table");
    let receiver = Receiver::start(
        &nats.url(),
        dir.path(),
        &["--prices", prices.to_str().expect("utf-8 path")],
    )
    .await;
    let lines = export(&receiver.endpoint, &["twice"], &[("OTLP_GZIP", "1")]).await;
    let results: Vec<&str> = lines.iter().filter_map(|l| l["result"].as_str()).collect();
    assert_eq!(results, ["SUCCESS", "SUCCESS"], "both exports answered 200");
    let report = receiver.stop().await;
    assert_eq!(
        (
            report.counts.requests,
            report.counts.spans,
            report.counts.rejected_spans
        ),
        (2, 10, 0)
    );
    assert_eq!(
        (report.delivery.published, report.delivery.duplicates),
        (2 * EVENTS_PER_TRACE as u64, EVENTS_PER_TRACE as u64),
        "the second batch carries the same event ids"
    );
    let stored = stream_messages(&nats.url(), &StreamSpec::default()).await;
    assert_eq!(
        stored.len(),
        EVENTS_PER_TRACE,
        "the stream holds each event once"
    );

    let ch = &sink.clickhouse;
    sink.wait_for(
        "SELECT count() FROM benchstream.events_raw FINAL",
        &EVENTS_PER_TRACE.to_string(),
    )
    .await;
    assert_eq!(
        query(
            ch,
            "SELECT count(), countIf(isNull(seq)), uniqExact(run_id), any(host), \
             any(task_id), any(policy_id) FROM benchstream.events_raw FORMAT TSV"
        ),
        "9\t9\t1\totlp-test\totlp-fixture-task\totel:fixer",
        "no row twice, seq NULL, one run"
    );
    assert_eq!(
        query(
            ch,
            "SELECT count(), any(scenario_name), any(scoring_version), any(model) \
             FROM benchstream.run_starts FORMAT TSV"
        ),
        "1\totlp\totlp-stated\tclaude-3-5-haiku",
        "a verdict stated by the trace; of two models called once each, the first by name"
    );
    assert_eq!(
        query(
            ch,
            "SELECT count(), any(success), any(final_score), any(wall_time_ms), \
             any(exit_status), any(early_stopped), any(total_tokens), any(api_calls), \
             isNull(any(cost_usd)), isNull(any(turns)) FROM benchstream.run_stops FORMAT TSV"
        ),
        "1\t1\t1\t5000\tsubmitted\t0\t2050\t2\t1\t1",
        "judged by its evaluation event; totals of its calls, each counted once; the \
         cost is NULL since one model has no price; no trace states turns"
    );
    assert_eq!(
        query(
            ch,
            "SELECT visitParamExtractRaw(raw, 'models') FROM benchstream.events_raw \
             WHERE type = 'run_stop' FORMAT TSV"
        ),
        r#"{"claude-3-5-haiku":1,"gpt-4o-mini-2024-07-18":1}"#,
        "the models of the run are listed with their calls"
    );
    assert_eq!(
        query(
            ch,
            "SELECT model, provider, status, latency_ms, input_tokens, cached_input_tokens, \
             cache_write_tokens, output_tokens, reasoning_tokens, cost_usd, pricing_source, \
             summary, retries FROM benchstream.deliberations ORDER BY latency_ms FORMAT TSV"
        ),
        "claude-3-5-haiku\tanthropic\tok\t800\t500\t\\N\t200\t50\t\\N\t0.0006\ttable\t\t\\N\n\
         gpt-4o-mini-2024-07-18\topenai\tok\t1200\t1200\t1000\t\\N\t300\t100\t\\N\tunknown\t\
         finish_reasons: tool_calls\t\\N",
        "legacy and alias attributes read; what no attribute states is NULL (a span does \
         not say how often the call was tried); a model the price table does not name \
         has a NULL cost"
    );
    let ls_hash = serde_json::json!({"command": "ls"}).canonical_hash();
    let empty_hash = serde_json::json!({}).canonical_hash();
    assert_eq!(
        query(
            ch,
            "SELECT tool_name, call_id, exit_kind, latency_ms, retries, tool_args_hash, \
             exit_message FROM benchstream.tool_calls ORDER BY latency_ms FORMAT TSV"
        ),
        format!(
            "bash\tcall_1\tok\t250\t\\N\t{ls_hash}\t\\N\n\
             run_tests\tcall_2\ttimeout\t2000\t\\N\t{empty_hash}\tTimeoutError: tests timed out"
        )
    );
    assert_eq!(
        query(
            ch,
            "SELECT root_kind, error_category, recoverable FROM benchstream.failures FORMAT TSV"
        ),
        "tool\tTimeoutError\t1"
    );
    assert_eq!(
        query(
            ch,
            "SELECT count(), sum(tokens_in), sum(tokens_out), \
             countIf(step_id IN (SELECT step_id FROM benchstream.deliberations)) \
             FROM benchstream.steps FORMAT TSV"
        ),
        "2\t1700\t350\t2",
        "each inference span starts the step its deliberation belongs to"
    );
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_trace_whose_root_never_came_is_lost_with_its_missing_count_unknown() {
    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("dir");
    let receiver = Receiver::start(&nats.url(), dir.path(), &[]).await;
    let lines = export(&receiver.endpoint, &["orphans"], &[]).await;
    assert_eq!(lines.len(), 1);
    receiver.stop().await;
    // The children only: 2 x (step, deliberation), 2 tool calls, 1 failure.
    sink.wait_for("SELECT count() FROM benchstream.events_raw FINAL", "7")
        .await;
    let client = sink.clickhouse.client_of("benchstream");
    let params = [("stale_minutes".to_owned(), "0".to_owned())].into();
    let lost = Query::find("lost_events")
        .expect("shipped query")
        .run(&client, &params)
        .await
        .expect("lost_events answers");
    assert_eq!(lost.rows.len(), 1, "{lost:?}");
    assert_eq!(lost.get(0, "problem"), Some("no_run_stop"));
    assert_eq!(lost.get(0, "missing"), None, "no seq: unknown, not 0");
    assert_eq!(lost.get(0, "last_seq"), None);
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_trace_whose_root_never_came_is_closed_by_the_run_timeout_unjudged() {
    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("dir");
    let receiver = Receiver::start(&nats.url(), dir.path(), &["--run-timeout", "1"]).await;
    let lines = export(&receiver.endpoint, &["orphans"], &[]).await;
    assert_eq!(lines.len(), 1);
    // The children (7 events), then the run_start and run_stop of the timeout.
    sink.wait_for("SELECT count() FROM benchstream.events_raw FINAL", "9")
        .await;
    let report = receiver.stop().await;
    assert_eq!(
        (report.counts.timed_out_runs, report.counts.late_roots),
        (1, 0)
    );
    let ch = &sink.clickhouse;
    assert_eq!(
        query(
            ch,
            "SELECT count(), any(model), any(scoring_version), any(task_id) \
             FROM benchstream.run_starts FORMAT TSV"
        ),
        "1\tunknown\totlp-unevaluated\totlp-fixture-task"
    );
    assert_eq!(
        query(
            ch,
            "SELECT count(), isNull(any(success)), any(exit_status), any(early_stopped), \
             isNull(any(wall_time_ms)), isNull(any(total_tokens)), isNull(any(cost_usd)), \
             isNull(any(api_calls)) FROM benchstream.run_stops FORMAT TSV"
        ),
        "1\t1\texit_error\t1\t1\t1\t1\t1",
        "unjudged; without the root nothing tells the wall time or whether every call came"
    );
    assert_eq!(
        query(
            ch,
            "SELECT uniqExact(run_id) FROM benchstream.events_raw FINAL FORMAT TSV"
        ),
        "1",
        "closed in the run of its children"
    );
    sink.stop().await;
}
