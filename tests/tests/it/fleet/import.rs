//! `agent-runner import swe-agent`: a real-layout trajectory becomes one run's events,
//! and importing it twice stores one copy; nobody judged it, so its success, score and
//! test counts are NULL, and so are tokens and cost when the file has none.

use agent_runner::run_import::{self, Destination};
use bench_schemas::{sha256_hex, SubjectPrefix};

use super::query;
use crate::common::{publish_setup, repo_path, start_pipeline};

/// sha256 of the fixture (also in tests/fixtures/swe-agent/README.md).
const FIXTURE_SHA256: &str = "b8bff84c7cccb9608ad5ec27fea471b08731ce4905ecd8442c50e728ce5c5577";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn importing_a_trajectory_twice_stores_one_copy() {
    let fixtures = repo_path("tests/fixtures/swe-agent");
    let bytes = std::fs::read(fixtures.join("django__django-11099.traj")).expect("fixture");
    assert_eq!(
        sha256_hex(&bytes).as_str(),
        FIXTURE_SHA256,
        "fixture changed"
    );

    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("dir");
    let setup = publish_setup(&nats.url(), &SubjectPrefix::default(), dir.path());
    let first = run_import::import_dir(
        &fixtures,
        ("importer", &Default::default()),
        Destination::Publish(&setup),
    )
    .await
    .expect("import");
    let second = run_import::import_dir(
        &fixtures,
        ("importer", &Default::default()),
        Destination::Publish(&setup),
    )
    .await
    .expect("again");
    assert_eq!((first.files, first.failed.len()), (1, 0));
    // run_start, 6 steps x (reason, act, tool_call, observe), conclude, run_stop.
    assert_eq!(first.events, 27);
    assert_eq!(second.events, first.events);
    // A line per file says which run it became and how it ended.
    let [line] = &first.imported[..] else {
        panic!("one line per file: {:?}", first.imported)
    };
    assert!(
        line.contains("django__django-11099.traj: run ")
            && line.contains(", 27 events, submitted unjudged, tokens 120229 cost 0.0187341"),
        "{line}"
    );
    let (d1, d2) = (
        first.delivery.expect("published"),
        second.delivery.expect("published"),
    );
    assert_eq!((d1.published, d1.duplicates), (27, 0));
    assert_eq!(
        (d2.published, d2.duplicates),
        (27, 27),
        "same event ids the second time"
    );

    let count =
        "SELECT count() FROM benchstream.events_raw FINAL WHERE task_id = 'django__django-11099'";
    sink.wait_for(count, "27").await;
    assert_eq!(
        query(
            &sink.clickhouse,
            "SELECT success, exit_status, total_tokens, api_calls, cost_usd, turns, files_modified \
             FROM benchstream.run_stops FINAL WHERE task_id = 'django__django-11099' FORMAT TSV"
        ),
        "\\N\tsubmitted\t120229\t6\t0.0187341\t6\t1"
    );
    assert_eq!(
        query(
            &sink.clickhouse,
            "SELECT isNull(final_score), isNull(tests_passed), isNull(tests_failed), \
             isNull(stability_variance) FROM benchstream.run_stops FINAL \
             WHERE task_id = 'django__django-11099' FORMAT TSV"
        ),
        "1\t1\t1\t1",
        "nobody judged the patch"
    );
    assert_eq!(
        query(
            &sink.clickhouse,
            "SELECT model, provider, policy_id FROM benchstream.run_starts FINAL \
             WHERE task_id = 'django__django-11099' FORMAT TSV"
        ),
        "openai/gpt-4o-mini\topenai\tswe-agent/openai/gpt-4o-mini"
    );
    assert_eq!(
        query(
            &sink.clickhouse,
            "SELECT groupArray(tool_name) FROM (SELECT tool_name FROM benchstream.tool_calls FINAL \
             WHERE task_id = 'django__django-11099' ORDER BY seq) FORMAT TSV"
        ),
        "['find_file','open','edit','edit','python','submit']"
    );

    // The same trajectory as SWE-agent writes it when it kept no totals (null), and when
    // it had no price and counted nothing (0 after its 6 model calls): tokens and cost
    // are unknown, not 0.
    for unknown in [serde_json::Value::Null, serde_json::Value::from(0)] {
        let mut traj: serde_json::Value = serde_json::from_slice(&bytes).expect("trajectory");
        for total in ["tokens_sent", "tokens_received", "instance_cost"] {
            traj["info"]["model_stats"][total] = unknown.clone();
        }
        let untotalled = tempfile::tempdir().expect("dir");
        std::fs::write(
            untotalled.path().join("django__django-11099.traj"),
            serde_json::to_vec(&traj).expect("json"),
        )
        .expect("write trajectory");
        let third = run_import::import_dir(
            untotalled.path(),
            ("importer", &Default::default()),
            Destination::Publish(&setup),
        )
        .await
        .expect("import");
        assert_eq!((third.files, third.events), (1, 27));
    }
    sink.wait_for(
        "SELECT count(), countIf(isNull(total_tokens)), countIf(isNull(cost_usd)), \
         countIf(isNull(success)) FROM benchstream.run_stops FINAL \
         WHERE task_id = 'django__django-11099' FORMAT TSV",
        "3\t2\t2\t3",
    )
    .await;
    sink.stop().await;
}
