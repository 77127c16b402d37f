//! Every shipped query over the fixture datasets on ClickHouse 18.16.

use std::path::Path;

use bench_analysis::{Format, Query, Table, QUERIES};
use benchstream_tests::ClickHouseCluster;

use super::{
    fixture_params, fixtures_dir, pipeline_dir, seed, seeded_clickhouse, seeded_clickhouse_from,
};

/// Runs every query with the parameters of the dataset in `dir` and returns the answers
/// by name.
async fn answers(client: &clickhouse::Client, dir: &Path) -> Vec<(&'static str, Table)> {
    let mut out = Vec::new();
    for query in QUERIES {
        let table = query
            .run(client, &fixture_params(dir, query.name))
            .await
            .unwrap_or_else(|e| panic!("{} fails on 18.16: {e}", query.name));
        out.push((query.name, table));
    }
    out
}

fn answer<'a>(answers: &'a [(&'static str, Table)], name: &str) -> &'a Table {
    &answers.iter().find(|(n, _)| *n == name).expect("answer").1
}

/// The row of `table` whose `key` column is `value`.
fn row(table: &Table, key: &str, value: &str) -> usize {
    (0..table.rows.len())
        .find(|&r| table.get(r, key) == Some(value))
        .unwrap_or_else(|| panic!("no row with {key} = {value}"))
}

fn close(actual: Option<f64>, expected: f64) -> bool {
    actual.is_some_and(|a| (a - expected).abs() < 1e-9)
}

const A: &str = "openai/gpt-4o-mini:observation_masking";
const B: &str = "openai/gpt-4o:llm_summary";
const C: &str = "local/qwen2.5-coder:raw";
const D: &str = "openai/gpt-4o:raw";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_query_returns_the_known_answers_on_clickhouse_18() {
    let (server, client) = seeded_clickhouse().await;
    // The fixtures hold redelivered copies; only FINAL hides them.
    assert_eq!(
        server
            .query("SELECT count() FROM benchstream.run_stops")
            .trim(),
        "11"
    );
    assert_eq!(
        server
            .query("SELECT count() FROM benchstream.run_stops FINAL")
            .trim(),
        "10"
    );
    let answers = answers(&client, &fixtures_dir()).await;

    assert_leaderboard(&answers);
    assert_instances_exits_costs_and_prices(&answers);
    assert_lost_events_and_timeline(&answers);
    assert_tools_frontier_runs_and_pairs(&answers);

    // The same answers, byte for byte, as the files chdb_check.py compares against.
    assert_answers_equal_expected(&answers, &fixtures_dir());
}

/// The leaderboard of the fixture datasets: rates, scores, costs, unknowns.
fn assert_leaderboard(answers: &[(&'static str, Table)]) {
    let board = answer(answers, "leaderboard");
    let a = row(board, "policy_id", A);
    assert_eq!(board.get(a, "runs"), Some("4"));
    assert_eq!(
        (board.get(a, "finished"), board.get(a, "judged")),
        (Some("4"), Some("3")),
        "a4 was never judged"
    );
    assert_eq!(board.get(a, "successes"), Some("2"));
    assert!(
        close(board.number(a, "success_rate"), 0.6667),
        "2 of the 3 judged runs, the unjudged one is not a failure"
    );
    assert!(close(board.number(a, "avg_cost_usd"), 0.005));
    assert_eq!(
        board.get(a, "api_calls"),
        Some("6"),
        "duplicate run_stop counted once"
    );
    assert_eq!(
        board.get(a, "input_tokens"),
        Some("12300"),
        "duplicate call counted once"
    );
    assert_eq!(board.get(a, "cached_input_tokens"), Some("5400"));
    assert_eq!(
        board.get(a, "token_runs"),
        Some("3"),
        "a4's tokens are unknown: left out, not counted as 0"
    );
    let b = row(board, "policy_id", B);
    assert_eq!(
        (board.get(b, "runs"), board.get(b, "finished")),
        (Some("3"), Some("2"))
    );
    assert!(close(board.number(b, "avg_cost_usd"), 0.0495));
    assert_eq!(board.get(b, "reasoning_tokens"), Some("900"));
    let c = row(board, "policy_id", C);
    assert_eq!(
        board.get(c, "avg_cost_usd"),
        None,
        "unknown prices give no average"
    );
    assert_eq!(
        (
            board.get(c, "token_runs"),
            board.get(c, "input_tokens"),
            board.get(c, "output_tokens")
        ),
        (Some("1"), Some("1500"), Some("300")),
        "c1 has a call whose tokens are unknown: its run is left out of the sums"
    );
    assert!(
        close(board.number(c, "avg_turns"), 3.0),
        "c2's turns nobody counted: c1's 3 alone, not (3 + 0) / 2"
    );
    assert_eq!(
        board.get(0, "policy_id"),
        Some(B),
        "best success rate first"
    );
    let d = row(board, "policy_id", D);
    assert_eq!(
        (
            board.get(d, "finished"),
            board.get(d, "infra_failures"),
            board.get(d, "judged"),
            board.get(d, "success_rate")
        ),
        (Some("2"), Some("1"), Some("1"), Some("0")),
        "d2's provider never answered: counted apart, not as a failure of the policy"
    );
    assert!(
        close(board.number(a, "solved_per_usd"), 133.3333),
        "2 tasks solved by the judged priced runs of A, which cost $0.015"
    );
    assert_eq!(board.get(d, "solved_per_usd"), Some("0"));
    assert_eq!(
        board.get(c, "solved_per_usd"),
        None,
        "no cost known: unknown, not infinite or 0"
    );
    assert_eq!(board.get(a, "cfg_hash"), None, "not split by config");
}

/// `instances`, `exit_status`, `cost_breakdown`, `deliberation_latency` and `pricing_audit` of the fixture datasets.
fn assert_instances_exits_costs_and_prices(answers: &[(&'static str, Table)]) {
    let instances = answer(answers, "instances");
    assert_eq!(
        instances.get(row(instances, "task_id", "task-c2"), "avg_turns"),
        None,
        "no finished run of the instance has known turns"
    );

    let exits = answer(answers, "exit_status");
    let submitted = (0..exits.rows.len())
        .find(|&r| {
            exits.get(r, "policy_id") == Some(A) && exits.get(r, "exit_status") == Some("submitted")
        })
        .expect("A submitted");
    assert_eq!(exits.get(submitted, "runs"), Some("3"));
    assert!(close(exits.number(submitted, "share"), 0.75));

    let costs = answer(answers, "cost_breakdown");
    let b = row(costs, "policy_id", B);
    assert!(close(costs.number(b, "total_cost_usd"), 0.114));
    assert!(close(costs.number(b, "agent_cost_usd"), 0.077));
    assert!(close(costs.number(b, "summariser_cost_usd"), 0.017));
    assert!(close(costs.number(b, "retry_cost_usd"), 0.02));
    let c = row(costs, "policy_id", C);
    assert_eq!(
        (
            costs.get(c, "unpriced_calls"),
            costs.get(c, "total_cost_usd"),
            costs.get(c, "agent_share")
        ),
        (Some("4"), None, None),
        "no call priced: the cost and its shares are unknown, not $0 and 0"
    );
    let d = row(costs, "policy_id", D);
    assert_eq!(
        (
            costs.get(d, "agent_cost_usd"),
            costs.get(d, "retry_cost_usd"),
            costs.get(d, "total_cost_usd")
        ),
        (Some("0.03"), None, None),
        "d2's unanswered calls cost an unknown amount: the retries and the total are unknown"
    );

    let latency = answer(answers, "deliberation_latency");
    let gpt4o = row(latency, "model", "gpt-4o");
    assert_eq!(latency.get(gpt4o, "calls"), Some("13"));
    assert_eq!(
        latency.get(gpt4o, "timeouts"),
        Some("4"),
        "timeouts counted"
    );
    assert_eq!(latency.get(gpt4o, "p50_ms"), Some("2500"));
    assert_eq!(latency.get(gpt4o, "p99_ms"), Some("60000"));

    let audit = answer(answers, "pricing_audit");
    let of = |policy| {
        (0..audit.rows.len())
            .filter(|&r| audit.get(r, "policy_id") == Some(policy))
            .count()
    };
    assert_eq!(
        (audit.rows.len(), of(C), of(D)),
        (6, 4, 2),
        "every unpriced call listed once: C's, and d2's unanswered ones"
    );
}

/// `lost_events` and `run_timeline` of the fixture datasets.
fn assert_lost_events_and_timeline(answers: &[(&'static str, Table)]) {
    let lost = answer(answers, "lost_events");
    assert_eq!(lost.rows.len(), 2);
    let gap = row(lost, "run_id", "c1000000-0000-4000-8000-000000000000");
    assert_eq!(lost.get(gap, "gaps"), Some("['3']"));
    assert_eq!(lost.get(gap, "problem"), Some("seq_gap"));
    let stale = row(lost, "run_id", "b3000000-0000-4000-8000-000000000000");
    assert_eq!(lost.get(stale, "problem"), Some("no_run_stop"));

    let timeline = answer(answers, "run_timeline");
    let seqs: Vec<&str> = (0..timeline.rows.len())
        .filter_map(|r| timeline.get(r, "seq"))
        .collect();
    assert_eq!(seqs, ["0", "1", "2", "4", "5", "6", "7", "8", "9", "10"]);
    assert_eq!(
        timeline.get(0, "detail"),
        Some("qwen2.5-coder raw"),
        "duplicate run_start once"
    );
    let unreported = row(timeline, "seq", "4");
    assert_eq!(
        (
            timeline.get(unreported, "tokens_in"),
            timeline.get(unreported, "tokens_out")
        ),
        (None, None),
        "a call whose tokens nobody reported shows NULL, not 0"
    );
    let stop = row(timeline, "seq", "10");
    assert_eq!(
        (
            timeline.get(stop, "tokens_in"),
            timeline.get(stop, "total_tokens")
        ),
        (None, None),
        "so does the run's total, in its own column"
    );
    assert_eq!(
        timeline.get(stop, "message"),
        Some("3 unparseable model replies in a row; last: no tool call in the reply"),
        "why the run stopped"
    );
    let start = row(timeline, "seq", "0");
    assert_eq!(
        (
            timeline.get(start, "tokens_in"),
            timeline.get(start, "latency_ms")
        ),
        (None, None),
        "a run_start has no tokens or latency: NULL, not 0"
    );
    let failure = (0..timeline.rows.len())
        .find(|&r| timeline.get(r, "type") == Some("failure"))
        .expect("c1's failure");
    assert_eq!(
        (
            timeline.get(failure, "tokens_in"),
            timeline.get(failure, "latency_ms")
        ),
        (None, None)
    );
}

/// `tool_errors`, `pareto_frontier`, `runs` and `paired_outcomes` of the fixture datasets.
fn assert_tools_frontier_runs_and_pairs(answers: &[(&'static str, Table)]) {
    let tools = answer(answers, "tool_errors");
    let flake = row(tools, "exit_kind", "flake");
    assert_eq!(tools.get(flake, "tool_name"), Some("pytest"));
    assert!(close(tools.number(flake, "tool_error_rate"), 0.3333));

    let pareto = answer(answers, "pareto_frontier");
    let on = |policy| pareto.get(row(pareto, "policy_id", policy), "on_frontier");
    assert_eq!((on(A), on(B), on(D)), (Some("1"), Some("1"), Some("0")));
    assert!((0..pareto.rows.len()).all(|r| pareto.get(r, "policy_id") != Some(C)));

    let runs = answer(answers, "runs");
    assert_eq!(runs.rows.len(), 11);
    let a4 = row(runs, "run_id", "a4000000-0000-4000-8000-000000000000");
    assert_eq!(
        (runs.get(a4, "success"), runs.get(a4, "cost_usd")),
        (None, None),
        "unknown, not 0"
    );

    // What compare counts: excluded runs by reason, never as failures.
    let paired = answer(answers, "paired_outcomes");
    let task = |id| row(paired, "task_id", id);
    let counts = |r, columns: [&str; 3]| columns.map(|c| paired.get(r, c));
    assert_eq!(
        counts(task("task-a4"), ["runs", "successes", "unjudged"]),
        [Some("0"), Some("0"), Some("1")],
        "a4 was never judged"
    );
    assert_eq!(
        counts(task("task-b3"), ["runs", "unfinished", "lost_events"]),
        [Some("0"), Some("1"), Some("0")],
        "b3 has no run_stop"
    );
    assert_eq!(
        counts(task("task-c1"), ["runs", "unfinished", "lost_events"]),
        [Some("0"), Some("0"), Some("1")],
        "c1 lost seq 3"
    );
    let c2 = task("task-c2");
    assert_eq!(
        counts(c2, ["runs", "successes", "priced_runs"]),
        [Some("1"), Some("1"), Some("0")]
    );
    assert_eq!(paired.get(c2, "cost_usd"), None, "unknown price, not $0");
    assert!(close(paired.number(task("task-a2"), "cost_usd"), 0.012));
}

/// A run that could not get its sandbox (`exit_environment`, success and score NULL, as
/// the runner records it) is no result: it counts in no success rate, neither as a
/// failure nor as a success, and the leaderboard counts it among the infrastructure
/// failures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_without_its_sandbox_counts_in_no_success_rate_and_as_an_infrastructure_failure() {
    let (server, client) = seeded_clickhouse().await;
    let before = answer(&answers(&client, &fixtures_dir()).await, "leaderboard").clone();
    let d_before = row(&before, "policy_id", D);
    // Another run of D (rate 0 of 1 judged, one infrastructure failure already: a
    // provider that never answered), whose first command got no sandbox.
    let start = r#"{"cfg_hash": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "context_window": 128000, "env_hash": "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", "event_id": "ed300000-0000-4000-8000-000000000000", "host": "worker-1", "max_iterations": 30, "model": "gpt-4o", "policy_id": "openai/gpt-4o:raw", "provider": "openai", "received_at": 1741429301, "run_id": "d3000000-0000-4000-8000-000000000000", "seed": 7, "seq": 0, "step_id": null, "strategy": "raw", "summarizer_model": null, "task_id": "task-d1", "ts": 1741429300, "ts_ms": 1741429300123}"#;
    let stop = r#"{"api_calls": 0, "cfg_hash": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "cost_usd": 0.0, "env_hash": "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", "event_id": "ed300000-0000-4000-8000-000000000001", "exit_status": "exit_environment", "final_score": null, "host": "worker-1", "policy_id": "openai/gpt-4o:raw", "received_at": 1741429311, "run_id": "d3000000-0000-4000-8000-000000000000", "seed": 7, "seq": 1, "step_id": null, "success": null, "task_id": "task-d1", "tool_errors": 1, "total_tokens": 0, "ts": 1741429310, "ts_ms": 1741429310123, "turns": 1, "wall_time_ms": 7}"#;
    server.query(&format!(
        "INSERT INTO benchstream.run_starts FORMAT JSONEachRow\n{start}"
    ));
    server.query(&format!(
        "INSERT INTO benchstream.run_stops FORMAT JSONEachRow\n{stop}"
    ));
    let answers = answers(&client, &fixtures_dir()).await;
    let board = answer(&answers, "leaderboard");
    let d = row(board, "policy_id", D);
    let count = |table: &Table, r, column| {
        table
            .get(r, column)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{column} is not a count"))
    };
    assert_eq!(
        count(board, d, "runs"),
        count(&before, d_before, "runs") + 1
    );
    assert_eq!(
        count(board, d, "finished"),
        count(&before, d_before, "finished") + 1
    );
    assert_eq!(
        (count(board, d, "judged"), count(board, d, "successes")),
        (
            count(&before, d_before, "judged"),
            count(&before, d_before, "successes")
        ),
        "a run without its sandbox was judged"
    );
    assert_eq!(
        board.get(d, "success_rate"),
        before.get(d_before, "success_rate"),
        "a run without its sandbox changed the success rate"
    );
    assert_eq!(
        count(board, d, "infra_failures"),
        count(&before, d_before, "infra_failures") + 1,
        "a run without its sandbox is not counted as an infrastructure failure"
    );
    let instances = answer(&answers, "instances");
    let judged = (0..instances.rows.len())
        .filter(|&r| instances.get(r, "policy_id") == Some(D))
        .map(|r| count(instances, r, "judged"))
        .sum::<u64>();
    assert_eq!(judged, count(board, d, "judged"), "instances judged it");
}

/// Runs under different isolation are never pooled: another run of D, made without the
/// agent sandbox (`run_start.sandbox.kind` = `none`), gets a leaderboard row of its own
/// and leaves D's row (whose runs did not say their sandbox: NULL) as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_under_different_isolation_have_leaderboard_rows_of_their_own() {
    let (server, client) = seeded_clickhouse().await;
    let before = answer(&answers(&client, &fixtures_dir()).await, "leaderboard").clone();
    let start = r#"{"cfg_hash": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "context_window": 128000, "env_hash": "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", "event_id": "ed400000-0000-4000-8000-000000000000", "host": "worker-1", "max_iterations": 30, "model": "gpt-4o", "policy_id": "openai/gpt-4o:raw", "provider": "openai", "received_at": 1741429301, "run_id": "d4000000-0000-4000-8000-000000000000", "seed": 7, "seq": 0, "step_id": null, "strategy": "raw", "summarizer_model": null, "task_id": "task-d1", "ts": 1741429300, "ts_ms": 1741429300123, "sandbox_kind": "none"}"#;
    let stop = r#"{"api_calls": 1, "cfg_hash": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "cost_usd": 0.01, "env_hash": "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", "event_id": "ed400000-0000-4000-8000-000000000001", "exit_status": "submitted", "final_score": 1.0, "host": "worker-1", "policy_id": "openai/gpt-4o:raw", "received_at": 1741429311, "run_id": "d4000000-0000-4000-8000-000000000000", "seed": 7, "seq": 1, "step_id": null, "success": 1, "task_id": "task-d1", "tool_errors": 0, "total_tokens": 0, "ts": 1741429310, "ts_ms": 1741429310123, "turns": 1, "wall_time_ms": 7}"#;
    server.query(&format!(
        "INSERT INTO benchstream.run_starts FORMAT JSONEachRow\n{start}"
    ));
    server.query(&format!(
        "INSERT INTO benchstream.run_stops FORMAT JSONEachRow\n{stop}"
    ));
    let answers = answers(&client, &fixtures_dir()).await;
    let board = answer(&answers, "leaderboard");
    let of_d: Vec<(Option<&str>, Option<&str>, Option<&str>)> = (0..board.rows.len())
        .filter(|&r| board.get(r, "policy_id") == Some(D))
        .map(|r| {
            (
                board.get(r, "sandbox_kind"),
                board.get(r, "runs"),
                board.get(r, "success_rate"),
            )
        })
        .collect();
    let d_before = row(&before, "policy_id", D);
    assert_eq!(before.get(d_before, "sandbox_kind"), None);
    assert_eq!(
        of_d,
        vec![
            (Some("none"), Some("1"), Some("1")),
            (
                None,
                before.get(d_before, "runs"),
                before.get(d_before, "success_rate")
            ),
        ],
        "the unsandboxed run was pooled with the others"
    );
}

/// Each answer equals `<dir>/expected/<query>.csv` byte for byte (the files
/// chdb_check.py compares against); with `BENCH_BLESS` set, writes those files instead.
fn assert_answers_equal_expected(answers: &[(&'static str, Table)], dir: &Path) {
    let expected_dir = dir.join("expected");
    let bless = std::env::var_os("BENCH_BLESS").is_some();
    for (name, table) in answers {
        let path = expected_dir.join(format!("{name}.csv"));
        let csv = table.render(Format::Csv);
        if bless {
            std::fs::create_dir_all(&expected_dir).expect("create expected dir");
            std::fs::write(&path, &csv).expect("write expected answer");
        } else {
            let expected = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e} (BENCH_BLESS=1 writes it)", path.display()));
            assert_eq!(csv, expected, "{name} differs from {}", path.display());
        }
    }
}

/// The dataset exported from a real pipeline run (runner -> NATS -> sink -> 18.16, see
/// `fixtures/pipeline/README.md`): every query answers as blessed in
/// `fixtures/pipeline/expected/`, which chdb_check.py holds current ClickHouse to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_query_answers_as_blessed_over_the_pipeline_export_on_clickhouse_18() {
    let dir = pipeline_dir();
    let (server, client) = seeded_clickhouse_from(&dir).await;
    let answers = answers(&client, &dir).await;

    // What the README says the export holds, so a re-export that lost a part shows.
    let count = |sql: &str| server.query(sql).trim().to_owned();
    assert_eq!(
        count("SELECT count() FROM benchstream.run_starts FINAL"),
        "9"
    );
    assert_eq!(
        count("SELECT count() FROM benchstream.run_stops FINAL"),
        "9"
    );
    assert_eq!(
        count("SELECT count() FROM benchstream.deliberations FINAL"),
        "6"
    );
    assert_eq!(count("SELECT count() FROM benchstream.failures FINAL"), "6");
    let runs = answer(&answers, "runs");
    assert_eq!(runs.rows.len(), 9);
    assert!(
        answer(&answers, "lost_events").rows.is_empty(),
        "every event of the real runs was delivered"
    );
    assert!(!answer(&answers, "run_timeline").rows.is_empty());
    assert!(!answer(&answers, "deliberation_latency").rows.is_empty());

    assert_answers_equal_expected(&answers, &dir);
}

/// The same dataset on a 2 shards × 2 replicas cluster, read through the Distributed
/// tables with the unchanged queries: the same answers, byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_query_answers_the_same_over_the_pipeline_export_on_a_cluster() {
    let _serial = crate::cluster::serially().await;
    let dir = pipeline_dir();
    let cluster = tokio::task::spawn_blocking(ClickHouseCluster::start)
        .await
        .expect("cluster starts");
    let client = seed(&cluster.servers()[0], &dir, Some(&cluster)).await;
    let answers = answers(&client, &dir).await;
    assert_eq!(answer(&answers, "runs").rows.len(), 9);
    assert_answers_equal_expected(&answers, &dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_narrow_every_run_scoped_query() {
    let (_server, client) = seeded_clickhouse().await;
    let params = [
        ("policy".to_owned(), A.to_owned()),
        ("since".to_owned(), "2025-03-04".to_owned()),
    ]
    .into_iter()
    .collect();
    let board = Query::find("leaderboard")
        .expect("shipped")
        .run(&client, &params)
        .await
        .expect("runs");
    assert_eq!(board.rows.len(), 1);
    assert_eq!(board.get(0, "runs"), Some("3"), "a1 started before --since");
    // A hostile value is one string literal, not SQL.
    let hostile = [("policy".to_owned(), "x' OR 1=1 --".to_owned())]
        .into_iter()
        .collect();
    let none = Query::find("runs")
        .expect("shipped")
        .run(&client, &hostile)
        .await
        .expect("runs");
    assert!(none.rows.is_empty());
}

/// `by=cfg` gives one row per policy and run config: a3 ran policy A under another config.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaderboard_by_cfg_splits_a_policy_by_its_run_configs() {
    let (_server, client) = seeded_clickhouse().await;
    let params = [
        ("policy".to_owned(), A.to_owned()),
        ("by".to_owned(), "cfg".to_owned()),
    ]
    .into_iter()
    .collect();
    let board = Query::find("leaderboard")
        .expect("shipped")
        .run(&client, &params)
        .await
        .expect("runs");
    let split: Vec<(Option<&str>, Option<&str>)> = (0..board.rows.len())
        .map(|r| (board.get(r, "cfg_hash"), board.get(r, "runs")))
        .collect();
    let (c, f) = ("c".repeat(64), "f".repeat(64));
    assert_eq!(split.len(), 2, "{split:?}");
    assert!(split.contains(&(Some(c.as_str()), Some("3"))), "{split:?}");
    assert!(split.contains(&(Some(f.as_str()), Some("1"))), "{split:?}");
}

/// A sweep optimizer publishes `optimizer_update` events under its own run id, with no
/// `run_start`/`run_stop` by design: the lost-event check must not call it a lost run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_optimizer_streams_are_not_reported_as_lost_runs() {
    let (server, client) = seeded_clickhouse().await;
    let old = "2020-01-01 00:00:00";
    for seq in 0..2 {
        server.query(&format!(
            "INSERT INTO benchstream.events_raw (event_id, run_id, task_id, type, seq, ts, ts_ms, \
             host, policy_id, raw, subject, stream_seq, received_at) VALUES \
             ('f1000000-0000-4000-8000-00000000000{seq}', 'f0000000-0000-4000-8000-000000000000', 'sweep:demo', \
             'optimizer_update', {seq}, '{old}', 1577836800000, 'worker-1', 'sweep', '{{}}', \
             'bench.events.f0000000-0000-4000-8000-000000000000.optimizer_update', {}, '{old}')",
            900_000 + seq
        ));
    }
    let lost = answer(&answers(&client, &fixtures_dir()).await, "lost_events").clone();
    assert!(
        (0..lost.rows.len())
            .all(|r| lost.get(r, "run_id") != Some("f0000000-0000-4000-8000-000000000000")),
        "optimizer stream reported as lost: {:?}",
        lost.rows
    );
    assert_eq!(
        lost.rows.len(),
        2,
        "the fixture's two lost runs are still found"
    );
}
