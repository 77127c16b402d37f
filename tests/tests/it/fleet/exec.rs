//! `agent-runner exec`: the example Python agent's events, completed by the runner, reach
//! ClickHouse in full; a malformed line is skipped, not fatal.

use std::ffi::OsString;
use std::path::Path;

use agent_runner::exec::ExecConfig;
use agent_runner::PriceTable;
use bench_schemas::{Payload, PricingSource};

use super::query;
use crate::common::{exec_smoke, journal_events, repo_path, run_exec, start_pipeline};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn example_agent_events_reach_clickhouse() {
    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("dir");
    // Canonical: the sandbox has no `tests/` directory for a `tests/..` path to go through.
    let agent = repo_path("scenarios/agents/example_agent.py")
        .canonicalize()
        .expect("example agent");
    // A wrapper prints one line that is not JSON before the agent starts.
    let command = format!("echo 'progress: 10%'; exec python3 '{}'", agent.display());
    let report = run_exec(ExecConfig {
        // The agent's script is named inside the shell text, not as a file argument.
        read_only: agent.parent().map(Path::to_path_buf).into_iter().collect(),
        ..exec_smoke(
            ["sh", "-c", &command].map(OsString::from).to_vec(),
            "python:example-agent",
            &nats.url(),
            dir.path(),
        )
    })
    .await;
    assert_eq!(report.agent_exit, Some(0));
    assert_eq!(report.skipped, 1, "the non-JSON line is skipped");
    // run_start + 9 agent lines (2 steps of reason/act/tool_call/observe, conclude) +
    // run_stop by the runner, which judged the untouched workdir.
    let events = report.summary.events;
    assert_eq!(events, 11);
    assert_eq!(report.summary.result.success, Some(false));
    let delivery = report.delivery.expect("published");
    assert_eq!((delivery.published, delivery.left_in_spool), (events, 0));

    let run = report.summary.run_id;
    sink.wait_for_run(&report.summary).await;
    // The agent reported no model call: what it spent and how many calls it made are
    // unknown, not $0 and 0. Nobody counted its turns either: NULL, not 0.
    assert_eq!(report.summary.result.turns, None);
    sink.wait_for(
        &format!(
            "SELECT isNull(cost_usd), isNull(total_tokens), isNull(api_calls), isNull(turns) \
             FROM benchstream.run_stops FINAL WHERE run_id = '{run}' FORMAT TSV"
        ),
        "1\t1\t1\t1",
    )
    .await;
    assert_eq!(
        query(
            &sink.clickhouse,
            &format!(
                "SELECT min(seq), max(seq), uniqExact(seq), uniqExact(event_id), any(policy_id) \
                 FROM benchstream.events_raw FINAL WHERE run_id = '{run}' FORMAT TSV"
            )
        ),
        format!(
            "0\t{}\t{events}\t{events}\tpython:example-agent",
            events - 1
        )
    );
    assert_eq!(
        query(
            &sink.clickhouse,
            &format!(
                "SELECT groupArray(type) FROM (SELECT type FROM benchstream.events_raw FINAL \
                 WHERE run_id = '{run}' ORDER BY seq) FORMAT TSV"
            )
        ),
        "['run_start','step','step','tool_call','step','step','step','tool_call','step','step','run_stop']"
    );
    assert_eq!(
        query(
            &sink.clickhouse,
            &format!(
                "SELECT count(), uniqExact(step_id), sum(tool_name = 'bash') FROM benchstream.tool_calls FINAL \
                 WHERE run_id = '{run}' FORMAT TSV"
            )
        ),
        "2\t2\t2"
    );
    // The isolation the run had, which the leaderboard splits runs by.
    assert_eq!(
        query(
            &sink.clickhouse,
            &format!(
                "SELECT sandbox_kind FROM benchstream.run_starts FINAL \
                 WHERE run_id = '{run}' FORMAT TSV"
            )
        ),
        "bwrap"
    );
    sink.stop().await;
}

/// An agent that fixes nothing and sends its own `run_stop` declaring success (99 tests,
/// 999999 tokens, $0) is judged by the runner anyway: ClickHouse holds the judge's verdict
/// and the sums of the events the runner saw, and the declaration only as a claim, with
/// the fields that disagree.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agent_that_declares_its_own_success_is_judged_and_its_claims_kept_apart() {
    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("dir");
    let agent = repo_path("tests/fixtures/exec/self_judging_agent.py")
        .canonicalize()
        .expect("agent");
    let report = run_exec(exec_smoke(
        vec!["python3".into(), agent.into_os_string()],
        "exec:self-judging",
        &nats.url(),
        dir.path(),
    ))
    .await;
    let r = &report.summary.result;
    // The judge's verdict on the untouched fixture: 5 of 8 (the regression guards).
    assert_eq!(
        (r.success, r.tests_passed, r.tests_failed),
        (Some(false), Some(5), Some(3)),
        "{r:?}"
    );
    let claim = r
        .claim
        .as_ref()
        .expect("the agent's run_stop is kept as a claim");
    assert_eq!(
        (claim.success, claim.tests_passed, claim.total_tokens),
        (Some(true), Some(99), Some(999_999))
    );
    assert_eq!(
        claim.discrepancies,
        [
            "cost_usd",
            "final_score",
            "success",
            "tests_failed",
            "tests_passed",
            "total_tokens"
        ]
    );

    let run = report.summary.run_id;
    sink.wait_for_run(&report.summary).await;
    // One run_stop, the runner's: judged, totals summed from the one call it saw.
    sink.wait_for(
        &format!(
            "SELECT count(), any(success), any(tests_passed), any(total_tokens), any(cost_usd), \
             any(api_calls), isNull(any(turns)) \
             FROM benchstream.run_stops FINAL WHERE run_id = '{run}' FORMAT TSV"
        ),
        "1\t0\t5\t120\t0.0001\t1\t1",
    )
    .await;
    assert_eq!(
        query(
            &sink.clickhouse,
            &format!(
                "SELECT count(), sum(position(raw, '\"claim\":{{') > 0), \
                 sum(position(raw, '\"discrepancies\":[\"cost_usd\",\"final_score\",\"success\"') > 0) \
                 FROM benchstream.events_raw FINAL WHERE run_id = '{run}' AND type = 'run_stop' \
                 FORMAT TSV"
            )
        ),
        "1\t1\t1"
    );
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_calls_are_priced_from_the_table_for_the_models_it_names_only() {
    let dir = tempfile::tempdir().expect("dir");
    let call = |model: &str| {
        format!(
            "{{\"type\": \"deliberation\", \"step\": 1, \"data\": {{\"agent\": \"agent\", \
             \"provider\": \"local\", \"model\": \"{model}\", \"status\": \"ok\", \
             \"pricing_source\": \"unknown\", \"actions\": [], \"summary\": \"\", \
             \"raw_output\": \"\", \"raw_output_truncated\": false, \"input_tokens\": 1000, \
             \"cached_input_tokens\": 0, \"cache_write_tokens\": 0, \"output_tokens\": 100, \
             \"reasoning_tokens\": 0}}}}"
        )
    };
    let script = format!("printf '%s\\n' '{}' '{}'", call("model-a"), call("model-b"));
    let table = "[models.\"model-a\"]\nprompt = 1\ncompletion = 2\n";
    let report = run_exec(ExecConfig {
        publish: None,
        prices: Some(PriceTable::parse(table).expect("table")),
        ..exec_smoke(
            ["sh", "-c", &script].map(OsString::from).to_vec(),
            "exec:priced",
            "nats://127.0.0.1:1",
            dir.path(),
        )
    })
    .await;
    let priced: Vec<(String, Option<f64>, PricingSource)> = journal_events(&report.summary)
        .into_iter()
        .filter_map(|e| match e.payload {
            Payload::Deliberation(d) => Some((d.model, d.cost_usd, d.pricing_source)),
            _ => None,
        })
        .collect();
    // model-a: 1000 prompt tokens at $1 and 100 completion at $2 per million; model-b is
    // not in the table: as the agent reported it, never model-a's price.
    assert_eq!(
        priced,
        [
            ("model-a".to_owned(), Some(0.0012), PricingSource::Table),
            ("model-b".to_owned(), None, PricingSource::Unknown)
        ]
    );
}
