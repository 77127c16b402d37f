//! `agent-runner exec`: the example Python agent's events, completed by the runner, reach
//! ClickHouse in full; a malformed line is skipped, not fatal.

use std::ffi::OsString;
use std::path::Path;

use agent_runner::exec::{self, ExecConfig};
use schemas::SubjectPrefix;
use tokio_util::sync::CancellationToken;

use super::query;
use crate::common::{publish_setup, repo_path, start_pipeline};

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
    let report = exec::run(
        ExecConfig {
            command: ["sh", "-c", &command].map(OsString::from).to_vec(),
            scenario: repo_path("scenarios/smoke.toml"),
            task: "sh-ci-exit-status".to_owned(),
            allow_unpinned: false,
            seed: None,
            policy_id: Some("python:example-agent".to_owned()),
            host: "exec-host".to_owned(),
            sandbox: Default::default(),
            // The agent's script is named inside the shell text, not as a file argument.
            read_only: agent.parent().map(Path::to_path_buf).into_iter().collect(),
            out_dir: Some(dir.path().join("runs")),
            publish: Some(publish_setup(
                &nats.url(),
                &SubjectPrefix::default(),
                dir.path(),
            )),
        },
        CancellationToken::new(),
    )
    .await
    .expect("exec run");
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
    // The agent reported no model call: what it spent is unknown, not $0. Nobody counted
    // its turns either: NULL, not 0.
    assert_eq!(report.summary.result.turns, None);
    sink.wait_for(
        &format!(
            "SELECT isNull(cost_usd), isNull(total_tokens), api_calls, isNull(turns) \
             FROM benchstream.run_stops FINAL WHERE run_id = '{run}' FORMAT TSV"
        ),
        "1\t1\t0\t1",
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
    sink.stop().await;
}
