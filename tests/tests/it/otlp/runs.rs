//! How a run received as a trace is closed and judged when its root span does not do it
//! alone: a span stating `benchstream.run_end` closes it as its root would (and the root
//! that comes after publishes nothing), and a `gen_ai.evaluation.result` log record
//! judges it when it comes before the run closes, and is only its own row after.
//! Requests are built with the protocol's own types and sent as OTLP/HTTP protobuf.

use super::otel::{chat, export, flag, text, Trace};
use super::{query, Receiver};
use crate::common::start_pipeline;

/// Per million tokens: `model-a` $3 / $15.
const PRICES: &str = "[models.\"model-a\"]\nprompt = 3\ncompletion = 15\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_span_stating_run_end_closes_its_run_with_its_totals_and_a_later_root_publishes_nothing()
{
    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("dir");
    let prices = dir.path().join("prices.toml");
    std::fs::write(&prices, PRICES).expect("price table");
    let receiver = Receiver::start(
        &nats.url(),
        dir.path(),
        &["--prices", prices.to_str().expect("utf-8 path")],
    )
    .await;
    let base = receiver.base.clone();

    // The agent's span (2) encloses its calls and closes the run, judged; the trace's
    // root (1, a harness's) comes last.
    let enclosing = Trace::new("closer-encloses", 1);
    let calls = enclosing.spans(vec![
        enclosing.span(3, Some(2), (1000, 2000), chat("model-a", 100, 10)),
        enclosing.span(4, Some(2), (2500, 4000), chat("model-a", 200, 20)),
    ]);
    export(&base, "/v1/traces", &calls).await;
    let agent = vec![
        text("gen_ai.operation.name", "invoke_agent"),
        flag("benchstream.run_end", true),
        flag("benchstream.success", true),
    ];
    let closer = enclosing.spans(vec![enclosing.span(2, Some(1), (500, 5000), agent)]);
    export(&base, "/v1/traces", &closer).await;
    // Sent again (an exporter that got no answer): the same events.
    export(&base, "/v1/traces", &closer).await;
    let root = enclosing.spans(vec![enclosing.span(1, None, (0, 6000), Vec::new())]);
    export(&base, "/v1/traces", &root).await;

    // A final span, after the one call, closes the run without a verdict, in the same
    // batch as the call; its root never comes.
    let last = Trace::new("closer-final", 2);
    let batch = last.spans(vec![
        last.span(
            9,
            Some(1),
            (3000, 3100),
            vec![flag("benchstream.run_end", true)],
        ),
        last.span(3, Some(1), (1000, 2000), chat("model-a", 100, 10)),
    ]);
    export(&base, "/v1/traces", &batch).await;

    let report = receiver.stop().await;
    assert_eq!(
        (report.counts.late_roots, report.counts.timed_out_runs),
        (1, 0),
        "the root that came after the run_end span closed nothing: {report}"
    );
    // Per run: step + deliberation per call, run_start, run_stop.
    sink.wait_for("SELECT count() FROM benchstream.events_raw FINAL", "10")
        .await;
    let ch = &sink.clickhouse;
    assert_eq!(
        query(
            ch,
            "SELECT policy_id, count(), any(success), any(wall_time_ms), any(exit_status), \
             any(early_stopped), any(total_tokens), any(api_calls), any(cost_usd) \
             FROM benchstream.run_stops GROUP BY policy_id ORDER BY policy_id FORMAT TSV"
        ),
        "otlp:closer-encloses\t1\t1\t4500\tsubmitted\t0\t330\t2\t0.00135\n\
         otlp:closer-final\t1\t\\N\t\\N\tsubmitted\t0\t110\t1\t0.00045",
        "one run_stop per run, with the totals of its calls and the verdict it states; a \
         wall time only from a span that encloses the run"
    );
    assert_eq!(
        query(
            ch,
            &format!(
                "SELECT policy_id, count(), any(model), any(scoring_version), \
                 any(ts_ms) - {} FROM benchstream.run_starts GROUP BY policy_id \
                 ORDER BY policy_id FORMAT TSV",
                enclosing.ms(0)
            )
        ),
        format!(
            "otlp:closer-encloses\t1\tmodel-a\totlp-stated\t500\n\
             otlp:closer-final\t1\tmodel-a\totlp-unevaluated\t{}",
            last.ms(1000) - enclosing.ms(0)
        ),
        "the run starts at its first span seen; unevaluated unless a verdict is stated"
    );
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_evaluation_log_record_judges_its_run_only_when_it_comes_before_the_run_closes() {
    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("dir");
    let receiver = Receiver::start(&nats.url(), dir.path(), &[]).await;
    let base = receiver.base.clone();
    let run = |trace: &Trace| {
        trace.spans(vec![
            trace.span(2, Some(1), (100, 900), chat("model-a", 10, 5)),
            trace.span(1, None, (0, 1000), Vec::new()),
        ])
    };

    // Before: an evaluation of the call (not the run's verdict), then one of the root.
    let before = Trace::new("judged-before", 3);
    let evaluations = before.logs(vec![
        before.evaluation(2, 950, "fail", 0.1),
        before.evaluation(1, 960, "pass", 0.75),
    ]);
    export(&base, "/v1/logs", &evaluations).await;
    export(&base, "/v1/traces", &run(&before)).await;

    // After: the run_stop is out; the record is its row only.
    let after = Trace::new("judged-after", 4);
    export(&base, "/v1/traces", &run(&after)).await;
    let late = after.logs(vec![after.evaluation(1, 1100, "pass", 1.0)]);
    export(&base, "/v1/logs", &late).await;

    let report = receiver.stop().await;
    assert_eq!(report.counts.late_evaluations, 1, "{report}");
    // Per run: step, deliberation, run_start, run_stop, one row per record.
    sink.wait_for("SELECT count() FROM benchstream.events_raw FINAL", "11")
        .await;
    let ch = &sink.clickhouse;
    assert_eq!(
        query(
            ch,
            "SELECT policy_id, count(), any(success), any(final_score), any(api_calls) \
             FROM benchstream.run_stops GROUP BY policy_id ORDER BY policy_id FORMAT TSV"
        ),
        "otlp:judged-after\t1\t\\N\t\\N\t1\n\
         otlp:judged-before\t1\t1\t0.75\t1",
        "judged by the run's evaluation that came first, never by its call's; one that \
         came after the run closed rewrites nothing"
    );
    assert_eq!(
        query(
            ch,
            "SELECT policy_id, any(scoring_version) FROM benchstream.run_starts \
             GROUP BY policy_id ORDER BY policy_id FORMAT TSV"
        ),
        "otlp:judged-after\totlp-unevaluated\n\
         otlp:judged-before\totlp-stated"
    );
    assert_eq!(
        query(
            ch,
            "SELECT policy_id, count(), arraySort(groupArray(visitParamExtractString(\
             attributes, 'gen_ai.evaluation.score.label'))) FROM benchstream.genai_events \
             GROUP BY policy_id ORDER BY policy_id FORMAT TSV"
        ),
        "otlp:judged-after\t1\t['pass']\n\
         otlp:judged-before\t2\t['fail','pass']",
        "every evaluation record is stored as its row, whenever it came"
    );
    sink.stop().await;
}
