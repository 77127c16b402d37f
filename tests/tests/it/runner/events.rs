//! What one run puts on the wire: gapless `seq`, consistent hashes, subjects and headers
//! per the wire contract (`schemas/README.md`), and the same bytes in `events.jsonl` as in the stream.

use bench_schemas::subject::{header_safe, headers};
use bench_schemas::{Canonical, Payload, StepType, SubjectPrefix};
use bench_task::{LoadOptions, LoadedScenario};
use tokio_util::sync::CancellationToken;

use crate::common::{create_stream, publish_setup, repo_path, runner_config, stream_messages};
use benchstream_tests::runs;
use benchstream_tests::NatsServer;

const TASK: &str = "py-slugify-unicode";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_stream_has_gapless_seq_hashes_subjects_and_headers() {
    let nats = NatsServer::start();
    let prefix: SubjectPrefix = "team-a.bench".parse().expect("valid prefix");
    let spec = create_stream(&nats.url(), &prefix).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario_path = repo_path("scenarios/smoke.toml");
    let config = runner_config(
        scenario_path.clone(),
        Some(vec![TASK.to_owned()]),
        false,
        Some(publish_setup(&nats.url(), &prefix, dir.path())),
        dir.path(),
    );

    let report = agent_runner::run(config, CancellationToken::new())
        .await
        .expect("run");
    let run = &report.runs[0];
    let messages = stream_messages(&nats.url(), &spec).await;
    assert_eq!(messages.len() as u64, run.events);

    let scenario = LoadedScenario::load(&scenario_path, &LoadOptions::default()).expect("load");
    let task = scenario
        .tasks
        .iter()
        .find(|t| t.task.id == TASK)
        .expect("task in smoke");
    let cfg_hash = scenario.scenario.config.canonical_hash();

    for (i, m) in messages.iter().enumerate() {
        let e = &m.event;
        assert_eq!(e.seq, Some(i as u64), "seq without gaps, in order");
        assert_eq!((e.run_id, e.task_id.as_str()), (run.run_id, TASK));
        assert_eq!(e.cfg_hash, cfg_hash);
        assert_eq!(e.env_hash, run.env_hash);
        assert_eq!((e.seed, e.host.as_str()), (Some(42), "test-host"));
        assert_eq!(e.policy_id, "scripted:reference");
        assert_eq!(m.subject, prefix.event_subject(run.run_id, e.event_type()));
        assert_eq!(
            m.header(headers::MSG_ID),
            Some(e.event_id.to_string().as_str())
        );
        assert_eq!(m.header(headers::SCHEMA), Some("1"));
        assert_eq!(m.header(headers::TYPE), Some(e.event_type().as_str()));
        assert_eq!(m.header(headers::TASK), Some(header_safe(TASK).as_str()));
        // Run-level events have no step; everything a turn produced shares one.
        let run_level = match &e.payload {
            Payload::RunStart(_) | Payload::RunStop(_) => true,
            Payload::Step(s) => s.step_type == StepType::Conclude,
            _ => false,
        };
        assert_eq!(
            e.step_id.is_none(),
            run_level,
            "step_id of {}",
            e.event_type()
        );
    }

    let first = &messages[0].event;
    let Payload::RunStart(start) = &first.payload else {
        panic!("first event is {}", first.event_type())
    };
    assert_eq!(start.config, scenario.scenario.config);
    assert_eq!(start.fixture_sha256, task.fixture_sha256());
    assert_eq!(start.scenario.sha256, scenario.sha256);
    assert!(
        matches!(messages.last().map(|m| &m.event.payload), Some(Payload::RunStop(s)) if s.success == Some(true))
    );

    // Tool calls hash their arguments canonically, in solution order.
    let hashes: Vec<_> = messages
        .iter()
        .filter_map(|m| match &m.event.payload {
            Payload::ToolCall(t) => Some(t.tool_args_hash.clone()),
            _ => None,
        })
        .collect();
    let expected: Vec<_> = task.task.solution.iter().map(|s| s.args_hash()).collect();
    assert_eq!(hashes, expected);

    // The local artifact holds the same bytes as the stream.
    let journal = runs::journal(run.artifacts.as_deref().expect("artifacts"));
    let lines: Vec<&str> = journal.lines().collect();
    assert_eq!(lines.len(), messages.len());
    for (line, m) in lines.iter().zip(&messages) {
        assert_eq!(line.as_bytes(), &m.payload[..]);
    }
}
