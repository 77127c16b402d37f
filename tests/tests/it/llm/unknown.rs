//! The end-to-end test of the unknown: each kind of producer reports nothing optional,
//! and every Nullable column of its rows outside an explicit "always known" list is NULL
//! in ClickHouse; the list of columns is read from ClickHouse itself, so a column added
//! later is covered without touching this test. The producers:
//!
//! - a native run against a provider that sends no usage, no prices and no confidence;
//! - an `exec` agent that sends only its act steps, and one that sends a tool call and a
//!   model call with only their required fields (`tests/fixtures/unknown/`);
//! - the smallest SWE-agent trajectory the importer reads (`tests/fixtures/unknown/`);
//! - a Smith run's `RunStart` and `RunStop`, which carry Smith's own numbers only.
//!
//! For the last three, every shipped query scoped to the run's policy (or run), and every
//! table of the report of that policy, shows NULL, never 0, in each column named after a
//! value the producer did not state.

use std::ffi::OsString;

use agent_runner::run_import::{self, Destination};
use bench_analysis::{generate_report, ParamValues, Query, ReportOptions, QUERIES};
use bench_schemas::{decode_message, sha256_hex, Decoded, SubjectPrefix};
use serde_json::Value;

use benchstream_tests::events::publish_raw;
use benchstream_tests::{NatsServer, OpenAiServer};

use super::{fixture, provider, reference_replies, run_published, unpriced_models, TASK};
use crate::common::{
    exec_smoke, jetstream, publish_setup, repo_path, run_exec, start_pipeline, SinkToClickHouse,
};

/// Nullable envelope columns every native producer fills.
const ALWAYS_SET: [&str; 4] = ["step_id", "seq", "host", "stream_seq"];

/// sha256 of `tests/fixtures/unknown/actions_only_agent.py`.
const ACTIONS_ONLY_AGENT_SHA256: &str =
    "b99d39f70be8e4f48d913ec405dc10bba5221ceb60f5321a9a5ef7a813190e75";
/// sha256 of `tests/fixtures/unknown/untimed_calls_agent.py`.
const UNTIMED_CALLS_AGENT_SHA256: &str =
    "2e0dade216a66220bfcae15c5940dfc694edb9b495e72d1de4230f53386553e5";
/// sha256 of `tests/fixtures/unknown/minimal.traj`.
const MINIMAL_TRAJ_SHA256: &str =
    "7d6990b2e00bffbb4325ef67dde39b37612701dc86f5bd0ebac5f25f6152dd11";

/// The policy the `exec` agent runs under.
const EXEC_POLICY: &str = "exec:actions-only";
/// The policy the `exec` agent that times nothing runs under.
const UNTIMED_POLICY: &str = "exec:untimed-calls";

/// The columns of the shipped queries that show a call's time or retries.
const CALL_TIMES: [&str; 6] = [
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "max_ms",
    "avg_latency_ms",
    "retries",
];

/// `tests/fixtures/unknown/<name>`, checked against its pinned sha256.
fn pinned(name: &str, sha256: &str) -> std::path::PathBuf {
    let path = repo_path(&format!("tests/fixtures/unknown/{name}"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(sha256_hex(&bytes).as_str(), sha256, "{name} changed");
    path
}

/// Asserts that the rows of `run_id` in `table` exist, and that each Nullable column
/// outside [`ALWAYS_SET`] and `known` is NULL in all of them.
async fn assert_unknown(sink: &SinkToClickHouse, table: &str, run_id: &str, known: &[&str]) {
    sink.wait_for(
        &format!(
            "SELECT count() > 0 FROM benchstream.{table} FINAL WHERE run_id = '{run_id}' \
             FORMAT TSV"
        ),
        "1",
    )
    .await;
    let described = sink
        .clickhouse
        .query(&format!("DESCRIBE TABLE benchstream.{table} FORMAT TSV"));
    let optional: Vec<&str> = described
        .lines()
        .filter_map(|line| {
            let mut cells = line.split('\t');
            let (name, ty) = (cells.next()?, cells.next()?);
            (ty.starts_with("Nullable(") && !ALWAYS_SET.contains(&name) && !known.contains(&name))
                .then_some(name)
        })
        .collect();
    assert!(!optional.is_empty(), "{table}: {described}");
    let set: Vec<String> = optional
        .iter()
        .map(|c| format!("if(countIf(isNotNull({c})) > 0, '{c}', '')"))
        .collect();
    let answer = tokio::task::block_in_place(|| {
        sink.clickhouse.query(&format!(
            "SELECT arrayFilter(c -> c != '', [{}]) FROM benchstream.{table} FINAL \
             WHERE run_id = '{run_id}' FORMAT TSV",
            set.join(", ")
        ))
    });
    assert_eq!(
        answer.trim(),
        "[]",
        "{table}: columns with a value nobody stated"
    );
}

/// Asserts that every shipped query scoped to `policy` (and `run_timeline` of `run_id`)
/// shows NULL in each of its columns named in `unknown`, and that `unknown` names a
/// column of some answer row (so the check is not vacuous).
async fn assert_queries_show_null(
    sink: &SinkToClickHouse,
    policy: &str,
    run_id: &str,
    unknown: &[&str],
) {
    let client = sink.clickhouse.client_of("benchstream");
    let mut seen = std::collections::BTreeSet::new();
    for query in QUERIES {
        let params = query.params().expect("declared params");
        let mut values = ParamValues::new();
        if params.iter().any(|p| p.name == "policy") {
            values.insert("policy".into(), policy.into());
        } else if params.iter().any(|p| p.name == "run_id") {
            values.insert("run_id".into(), run_id.into());
        } else {
            // Not scoped to one policy or run (conflicts, lost_events, sweeps).
            continue;
        }
        let table = Query::find(query.name)
            .expect("shipped")
            .run(&client, &values)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", query.name));
        for (i, column) in table.columns.iter().enumerate() {
            if !unknown.contains(&column.name.as_str()) {
                continue;
            }
            for row in &table.rows {
                seen.insert(column.name.clone());
                assert_eq!(
                    row[i], None,
                    "{}.{}: a value nobody stated, in {row:?}",
                    query.name, column.name
                );
            }
        }
    }
    assert!(!seen.is_empty(), "no answer has any of {unknown:?}");
    assert_report_shows_null(&client, policy, unknown).await;
}

/// Asserts that every table of the report of `policy` shows `NULL` in each of its
/// columns named in `unknown`, and that some table has such a column.
async fn assert_report_shows_null(client: &clickhouse::Client, policy: &str, unknown: &[&str]) {
    let options = ReportOptions {
        policy: Some(policy.to_owned()),
        ..ReportOptions::default()
    };
    let html = generate_report(client, &options).await.expect("the report");
    let mut seen = 0;
    // Each table: `<table id=…><thead><tr><th>name</th>…</tr></thead><tbody><tr…><td…>v</td>…`.
    for table in html.split("<table id=\"").skip(1) {
        let id = table.split('"').next().unwrap_or_default();
        let (head, body) = table.split_once("</thead>").expect("a table head");
        let names: Vec<&str> = head
            .split("<th>")
            .skip(1)
            .filter_map(|th| th.split("</th>").next())
            .collect();
        let body = body.split("</tbody>").next().unwrap_or_default();
        for row in body.split("</tr>").filter(|r| r.contains("<td")) {
            let cells: Vec<&str> = row
                .split("<td")
                .skip(1)
                .filter_map(|td| {
                    td.split_once('>')
                        .and_then(|(_, v)| v.split("</td>").next())
                })
                .collect();
            for (name, cell) in names.iter().zip(&cells) {
                if unknown.contains(name) {
                    seen += 1;
                    assert_eq!(*cell, "NULL", "report table {id}, column {name}: {row}");
                }
            }
        }
    }
    assert!(seen > 0, "no report table has any of {unknown:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_reports_nothing_optional_leaves_every_optional_column_null() {
    let (nats, sink) = start_pipeline().await;
    let silent = reference_replies(TASK)
        .into_iter()
        .map(|reply| reply.usage(Value::Null));
    let server = OpenAiServer::with_replies(unpriced_models("bench/priced-model"), silent);

    let summary = run_published(fixture("raw"), provider(&server), &nats, &sink).await;

    let run_id = summary.run_id.to_string();
    // Native envelopes always carry the run's seed; the runner times each tool call's
    // observe step and measures the context it sends with each model call; it times
    // every model and tool call and counts their retries.
    assert_unknown(
        &sink,
        "deliberations",
        &run_id,
        &["seed", "latency_ms", "retries"],
    )
    .await;
    assert_unknown(
        &sink,
        "tool_calls",
        &run_id,
        &["seed", "latency_ms", "retries", "call_id"],
    )
    .await;
    assert_unknown(
        &sink,
        "steps",
        &run_id,
        &["seed", "wall_time_ms", "context_kb"],
    )
    .await;
    // Which steps: a time only on observe steps, a context size only on the steps that
    // made the turn's model call.
    sink.wait_for(
        &format!(
            "SELECT countIf(isNotNull(wall_time_ms) AND step_type != 'observe'), \
             countIf(isNotNull(context_kb) AND step_type NOT IN ('reason', 'act')) \
             FROM benchstream.steps FINAL WHERE run_id = '{run_id}' FORMAT TSV"
        ),
        "0\t0",
    )
    .await;
    sink.stop().await;
}

/// Runs the pinned exec agent `tests/fixtures/unknown/<file>` (sha256 `sha256`) as
/// `policy` on the smoke scenario's `sh-ci-exit-status`, published through a pipeline of
/// its own; the pipeline and the run's id, once the run's events are in ClickHouse.
async fn exec_pinned_agent(
    file: &str,
    sha256: &str,
    policy: &str,
) -> (NatsServer, SinkToClickHouse, String) {
    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("dir");
    let agent = pinned(file, sha256).canonicalize().expect("agent");
    let report = run_exec(exec_smoke(
        vec![OsString::from("python3"), agent.into_os_string()],
        policy,
        &nats.url(),
        dir.path(),
    ))
    .await;
    assert_eq!(report.agent_exit, Some(0));
    sink.wait_for_run(&report.summary).await;
    (nats, sink, report.summary.run_id.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_exec_agent_that_sends_only_its_actions_leaves_its_totals_null() {
    let (_nats, sink, run_id) = exec_pinned_agent(
        "actions_only_agent.py",
        ACTIONS_ONLY_AGENT_SHA256,
        EXEC_POLICY,
    )
    .await;
    // The runner judged the run from its submitted diff (and the workspace as a
    // cross-check), timed it, counted the lines it refused and named its end; the agent
    // reported no model call, tool call or turn.
    assert_unknown(
        &sink,
        "run_stops",
        &run_id,
        &[
            "seed",
            "success",
            "final_score",
            "tests_passed",
            "tests_failed",
            "files_modified",
            "wall_time_ms",
            "exit_status",
            "early_stop_reason",
            "diff_sha256",
            "test_files_edited",
            "diff_excluded",
            "workspace_verdict_differs",
            "forged_events",
            "final_diff",
            "final_diff_truncated",
        ],
    )
    .await;
    assert_unknown(&sink, "steps", &run_id, &["seed"]).await;
    assert_queries_show_null(
        &sink,
        EXEC_POLICY,
        &run_id,
        &[
            "cost_usd",
            "avg_cost_usd",
            "total_tokens",
            "api_calls",
            "turns",
            "avg_turns",
            "solved_per_usd",
            "tool_errors",
            "tokens_in",
            "tokens_out",
        ],
    )
    .await;
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_exec_agent_that_times_no_call_leaves_latency_and_retries_null() {
    let (_nats, sink, run_id) = exec_pinned_agent(
        "untimed_calls_agent.py",
        UNTIMED_CALLS_AGENT_SHA256,
        UNTIMED_POLICY,
    )
    .await;
    // The agent sent one call of each kind with only the fields the wire requires: no
    // time, retries, tokens, price, confidence or call id.
    assert_unknown(&sink, "deliberations", &run_id, &["seed"]).await;
    assert_unknown(&sink, "tool_calls", &run_id, &["seed"]).await;
    assert_queries_show_null(&sink, UNTIMED_POLICY, &run_id, &CALL_TIMES).await;
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minimal_swe_agent_trajectory_leaves_what_it_does_not_state_null() {
    let (nats, sink) = start_pipeline().await;
    let traj = pinned("minimal.traj", MINIMAL_TRAJ_SHA256);
    let dir = tempfile::tempdir().expect("dir");
    let setup = publish_setup(&nats.url(), &SubjectPrefix::default(), dir.path());
    let report = run_import::import_dir(
        &traj,
        ("importer", &Default::default()),
        Destination::Publish(&setup),
    )
    .await
    .expect("import");
    assert_eq!((report.files, report.failed.len()), (1, 0), "{report:?}");
    sink.wait_for(
        "SELECT count() FROM benchstream.events_raw FINAL WHERE task_id = 'minimal' FORMAT TSV",
        &report.events.to_string(),
    )
    .await;
    let run_id = tokio::task::block_in_place(|| {
        sink.clickhouse.query(
            "SELECT toString(run_id) FROM benchstream.run_starts FINAL \
             WHERE task_id = 'minimal' FORMAT TSV",
        )
    });
    let run_id = run_id.trim().to_owned();
    assert!(!run_id.is_empty(), "the run_start landed");
    // The importer's own labels (model `unknown`, provider `swe-agent`, its scenario,
    // scoring and runner versions, the file's hash as fixture) are always set.
    assert_unknown(
        &sink,
        "run_starts",
        &run_id,
        &[
            "model",
            "provider",
            "scenario_name",
            "scenario_sha256",
            "fixture_sha256",
            "scoring_version",
            "runner_version",
        ],
    )
    .await;
    // It ended without a submission (no `exit_status`): unsolved, counted as such; the
    // observation shows no failure and the one step is a turn.
    assert_unknown(
        &sink,
        "run_stops",
        &run_id,
        &[
            "success",
            "exit_status",
            "early_stop_reason",
            "tool_errors",
            "turns",
        ],
    )
    .await;
    // The step states no execution time: its tool call's latency and retries and its
    // observe step's time are NULL, as is everything else a step may leave out.
    assert_unknown(&sink, "tool_calls", &run_id, &[]).await;
    assert_unknown(&sink, "steps", &run_id, &[]).await;
    let policy = tokio::task::block_in_place(|| {
        sink.clickhouse.query(&format!(
            "SELECT any(policy_id) FROM benchstream.run_starts FINAL \
             WHERE run_id = '{run_id}' FORMAT TSV"
        ))
    });
    assert_queries_show_null(
        &sink,
        policy.trim(),
        &run_id,
        &[
            "cost_usd",
            "avg_cost_usd",
            "total_tokens",
            "api_calls",
            "wall_time_ms",
            "avg_wall_time_s",
            "solved_per_usd",
            "final_score",
            "tokens_in",
            "tokens_out",
            "avg_latency_ms",
            "retries",
        ],
    )
    .await;
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_smith_run_leaves_what_smith_does_not_send_null() {
    let (nats, sink) = start_pipeline().await;
    let lines = crate::sink::smith::smith_events();
    let js = jetstream(&nats.url()).await;
    // The first run of the fixture: its RunStart (line 1) and RunStop (line 14).
    let mut run = None;
    for bytes in [&lines[0], &lines[13]] {
        let Ok(Decoded::Smith(event)) = decode_message(bytes, None) else {
            panic!("not a Smith event: {}", String::from_utf8_lossy(bytes))
        };
        let subject = SubjectPrefix::default().event_subject(event.run_id, event.event_type());
        publish_raw(&js, subject, None, bytes.clone()).await;
        assert!(run.is_none_or(|(id, _)| id == event.run_id), "one run");
        run = Some((event.run_id, event.policy_id));
    }
    let (run_id, policy) = run.expect("two events");
    let run_id = run_id.to_string();
    // Smith states its config and result numbers, its seed and a step id on every event;
    // it names no host, seq, model, provider, strategy, scenario or versions, exit
    // status, cost, call or turn count.
    assert_unknown(
        &sink,
        "run_starts",
        &run_id,
        &[
            "seed",
            "max_iterations",
            "temperature",
            "context_window",
            "tool_timeout_ms",
            "docker_image",
            "sandbox_memory_mb",
        ],
    )
    .await;
    assert_unknown(
        &sink,
        "run_stops",
        &run_id,
        &[
            "seed",
            "success",
            "final_score",
            "total_tokens",
            "stability_variance",
            "tests_passed",
            "tests_failed",
            "tool_errors",
            "files_modified",
            "wall_time_ms",
        ],
    )
    .await;
    assert_queries_show_null(
        &sink,
        &policy,
        &run_id,
        &[
            "cost_usd",
            "avg_cost_usd",
            "api_calls",
            "turns",
            "avg_turns",
            "solved_per_usd",
            // `exit_status` is not here: the query of that name groups runs by it and
            // labels the NULL group `unknown`.
            "model",
            "strategy",
        ],
    )
    .await;
    sink.stop().await;
}
