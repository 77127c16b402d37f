//! A SWE-bench-format task end to end: imported from a local repository, run by `exec`
//! agents (one applies the fix, one edits the test file `test_patch` touches, one does
//! nothing), judged by SWE-bench's rules, and stored: each test's outcome in
//! `test_outcomes`, the verdict, the final diff's hash and the integrity flags in
//! `run_stops`, the shipped `test_outcomes` query finding the test that flips and
//! `swe_integrity` giving the resolve rate without the flagged run and counting the runs
//! whose commands nobody saw as unknown. A task whose lists contradict its gold patch,
//! validated with a broker, lands in `task_validations`, and `compare` leaves the runs
//! made on it before out as `broken_task`.

use std::ffi::OsString;

use agent_runner::tasks::{import_swe_bench, validate, SweBenchImport, ValidateConfig};
use bench_analysis::command::{self, CompareArgs};
use bench_analysis::{Format, Query};
use bench_clickhouse::{ClickHouseArgs, ConnectionArgs};
use bench_schemas::SubjectPrefix;
use bench_task::LoadOptions;
use benchstream_tests::swe_bench::{Project, F2P, FIXED, P2P};

use super::query;
use crate::common::{exec_published, publish_setup, run_exec, start_pipeline, SinkToClickHouse};

const POLICY: &str = "exec:swe-test-agent";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fix_resolves_and_editing_the_tests_or_nothing_does_not_in_clickhouse() {
    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("dir");
    let project = Project::create(dir.path());
    let instances = dir.path().join("instances.jsonl");
    std::fs::write(&instances, project.instance("o__calc-1", &project.base)).expect("write");
    let scenarios = dir.path().join("scenarios");
    let report = import_swe_bench(&SweBenchImport {
        instances,
        repos: project.repos.clone(),
        scenarios_dir: scenarios.clone(),
        scenario: "swe-local".into(),
        install: None,
        test_cmd: "python -m pytest -rA".into(),
        python: "/usr/bin/python3".into(),
        judge_timeout_ms: 120_000,
        image: None,
    })
    .expect("import");
    assert_eq!(report.lines.len(), 1, "{report}");

    // Each agent is a shell command in its scratch copy; exiting 0 submits.
    let fix = format!("printf '%s' '{FIXED}' > calc.py");
    let cheat = "printf 'def test_add():\\n    pass\\n\\n\\ndef test_neg():\\n    pass\\n' \
                 > tests/test_calc.py";
    let mut runs = Vec::new();
    for command in [fix.as_str(), cheat, "true"] {
        let summary = run_exec(exec_published(
            ["sh", "-c", command].map(OsString::from).to_vec(),
            scenarios.join("swe-local.toml"),
            "o__calc-1",
            POLICY,
            &nats.url(),
            dir.path(),
        ))
        .await
        .summary;
        sink.wait_for_run(&summary).await;
        runs.push(summary);
    }
    let [fixed, cheated, idle] = &runs[..] else {
        panic!("three runs")
    };
    assert_eq!(fixed.result.success, Some(true));
    assert_eq!(cheated.result.success, Some(false));
    assert_eq!(idle.result.success, Some(false));

    // Per run: its tests as the judge decided them, and the verdict beside them.
    for (run, expected) in [
        (fixed, "1\t1\t2\t1"),
        (cheated, "0\t1\t1\t0.5"),
        (idle, "0\t1\t1\t0.5"),
    ] {
        let answer = query(
            &sink.clickhouse,
            &format!(
                "SELECT anyIf(after, test_id = '{F2P}'), anyIf(after, test_id = '{P2P}'), \
                 (SELECT tests_passed FROM benchstream.run_stops FINAL WHERE run_id = '{id}'), \
                 (SELECT final_score FROM benchstream.run_stops FINAL WHERE run_id = '{id}') \
                 FROM benchstream.test_outcomes FINAL WHERE run_id = '{id}' FORMAT TSV",
                id = run.run_id
            ),
        );
        assert_eq!(answer, expected, "run {}", run.run_id);
        let stored = query(
            &sink.clickhouse,
            &format!(
                "SELECT assumeNotNull(diff_sha256) FROM benchstream.run_stops FINAL \
                 WHERE run_id = '{}' FORMAT TSV",
                run.run_id
            ),
        );
        let diff = std::fs::read(
            run.artifacts
                .as_ref()
                .expect("artifacts")
                .join("final.diff"),
        )
        .expect("final.diff");
        assert_eq!(stored, bench_schemas::sha256_hex(&diff).as_str());
        // The diff itself travels with the result: readable without the runner's files.
        let sent = query(
            &sink.clickhouse,
            &format!(
                "SELECT final_diff AS diff, final_diff_truncated AS cut \
                 FROM benchstream.run_stops FINAL WHERE run_id = '{}' FORMAT JSONEachRow",
                run.run_id
            ),
        );
        let sent: serde_json::Value = serde_json::from_str(&sent).expect("a row");
        let text = String::from_utf8(diff).expect("a UTF-8 diff");
        assert_eq!(
            (sent["diff"].as_str(), sent["cut"].as_u64()),
            (Some(text.as_str()), Some(0)),
            "run {}",
            run.run_id
        );
    }
    // What the test-editing run failed on, and its edit in the diff it submitted.
    assert_eq!(
        query(
            &sink.clickhouse,
            &format!(
                "SELECT reason, isNull(before), isNotNull(duration_ms) \
                 FROM benchstream.test_outcomes FINAL WHERE run_id = '{}' AND after = 0 \
                 FORMAT TSV",
                cheated.run_id
            )
        ),
        "failed\t1\t1"
    );

    // Integrity flags: the test file the second agent rewrote; an exec agent's commands
    // are unseen (NULL, not 0); similarity to the gold patch.
    assert_eq!(
        query(
            &sink.clickhouse,
            &format!(
                "SELECT run_id = '{fixed}', test_files_edited, isNull(history_commands), \
                 isNull(network_commands), gold_similarity FROM benchstream.run_stops FINAL \
                 WHERE run_id IN ('{fixed}', '{cheated}') ORDER BY run_id = '{fixed}' \
                 FORMAT TSV",
                fixed = fixed.run_id,
                cheated = cheated.run_id
            )
        ),
        "0\t1\t1\t1\t0\n1\t0\t1\t1\t1"
    );

    assert_shipped_test_queries(&sink).await;
    sink.stop().await;
}

/// The shipped queries over the three runs of [`a_fix_resolves_and_editing_the_tests_or_nothing_does_not_in_clickhouse`]:
/// `test_outcomes` per test and `swe_integrity` per policy.
async fn assert_shipped_test_queries(sink: &SinkToClickHouse) {
    // The shipped query: test_add passed in one of three runs of one config (it flips);
    // test_neg in all three.
    let client = sink.clickhouse.client_of("benchstream");
    let table = Query::find("test_outcomes")
        .expect("shipped")
        .run(&client, &Default::default())
        .await
        .expect("query runs");
    let row = |test: &str| {
        (0..table.rows.len())
            .find(|&r| table.get(r, "test_id") == Some(test))
            .map(|r| {
                ["runs", "passed", "never_passed", "flipping_configs"]
                    .map(|c| table.get(r, c).unwrap_or_default().to_owned())
            })
            .expect("a row per test")
    };
    assert_eq!(row(F2P), ["3", "1", "0", "1"]);
    assert_eq!(row(P2P), ["3", "3", "0", "0"]);

    // Rates with and without the flagged run (the one that rewrote the test file); the
    // other two are exec agents' runs, whose commands nobody saw: unknown, not clean.
    let rates = Query::find("swe_integrity")
        .expect("shipped")
        .run(&client, &Default::default())
        .await
        .expect("query runs");
    let r = (0..rates.rows.len())
        .find(|&r| rates.get(r, "policy_id") == Some(POLICY))
        .expect("the policy's row");
    assert_eq!(
        [
            "runs",
            "resolved",
            "flagged_runs",
            "unknown_runs",
            "clean_runs",
            "clean_resolved",
            "clean_resolve_rate"
        ]
        .map(|c| rates.get(r, c).unwrap_or_default()),
        ["3", "1", "1", "2", "0", "0", ""]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_task_validated_broken_leaves_its_runs_out_of_compare() {
    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("dir");
    let project = Project::create(dir.path());
    // o__calc-3 claims that test_neg, which passes at the base, is FAIL_TO_PASS.
    let mut wrong: serde_json::Value =
        serde_json::from_str(&project.instance("o__calc-3", &project.base)).expect("json");
    wrong["FAIL_TO_PASS"] = serde_json::json!([P2P]);
    wrong["PASS_TO_PASS"] = serde_json::json!([]);
    let instances = dir.path().join("instances.jsonl");
    std::fs::write(&instances, wrong.to_string()).expect("write");
    let scenarios = dir.path().join("scenarios");
    import_swe_bench(&SweBenchImport {
        instances,
        repos: project.repos.clone(),
        scenarios_dir: scenarios.clone(),
        scenario: "swe-local".into(),
        install: None,
        test_cmd: "python -m pytest -rA".into(),
        python: "/usr/bin/python3".into(),
        judge_timeout_ms: 120_000,
        image: None,
    })
    .expect("import");
    let scenario = scenarios.join("swe-local.toml");

    // A run made before anyone validated the task: it is judged (and solved: the test
    // it is held to passes anyway) and counts, until the validation says otherwise.
    let summary = run_exec(exec_published(
        ["true"].map(OsString::from).to_vec(),
        scenario.clone(),
        "o__calc-3",
        POLICY,
        &nats.url(),
        dir.path(),
    ))
    .await
    .summary;
    sink.wait_for_run(&summary).await;
    let compare_json = || {
        let connection = ConnectionArgs {
            clickhouse: ClickHouseArgs {
                url: Some(sink.clickhouse.http_url()),
                ..ClickHouseArgs::default()
            },
            ..ConnectionArgs::default()
        };
        CompareArgs::every_policy(connection, Format::Json)
    };
    let policy_of = |output: &str| -> serde_json::Value {
        let answer: serde_json::Value = serde_json::from_str(output).expect("JSON");
        answer["policies"][0].clone()
    };
    let before = command::compare(compare_json()).await.expect("compare");
    assert_eq!(policy_of(&before)["runs"], 1, "{before}");

    let report = validate(&ValidateConfig {
        scenario: scenario.clone(),
        load: LoadOptions::default(),
        repeat: 1,
        sandbox: Default::default(),
        images: Default::default(),
        host: "validating-host".to_owned(),
        publish: Some(publish_setup(
            &nats.url(),
            &SubjectPrefix::default(),
            dir.path(),
        )),
    })
    .await
    .expect("validate");
    assert_eq!(report.broken(), 1, "{report}");
    assert_eq!(
        report.delivery.as_ref().map(|d| d.published),
        Some(1),
        "{report}"
    );

    // The validation as ClickHouse holds it, at the fixture the run ran on.
    sink.wait_for(
        &format!(
            "SELECT broken, tests, repeats, scenario, policy_id, length(reasons), \
             fixture_sha256 = (SELECT assumeNotNull(fixture_sha256) \
                 FROM benchstream.run_starts FINAL WHERE run_id = '{}') \
             FROM benchstream.task_validations FINAL WHERE task_id = 'o__calc-3' \
             FORMAT TSV",
            summary.run_id
        ),
        "1\t1\t1\tswe-local\tvalidation\t1\t1",
    )
    .await;
    let after = command::compare(compare_json()).await.expect("compare");
    let policy = policy_of(&after);
    assert_eq!(policy["runs"], 0, "{after}");
    assert_eq!(
        policy["excluded"],
        serde_json::json!({"broken_task": 1}),
        "{after}"
    );
    sink.stop().await;
}
