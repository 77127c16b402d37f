//! An experiment run until decided, shared by several workers through the claim bucket:
//! two `agent-runner` processes started at once on one experiment run each (round,
//! model, task) once between them and publish one decision; a unit whose worker died is
//! taken over after its lease; the command started again on a decided experiment runs
//! and publishes nothing more.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use agent_runner::decide::{self, Keys, Publication, Side};
use agent_runner::sweep::claim::{ClaimBoard, ClaimConfig, ClaimRecord, ClaimSettings};
use bench_analysis::compare::sequential::Bet;
use bench_nats::NatsConfig;
use benchstream_tests::cli::{run_to_exit, workspace_binary};
use tokio_util::sync::CancellationToken;

use super::experiment::{better_and_worse_models, decide_config, DECIDED_TASKS, MODELS};
use crate::common::{repo_path, start_pipeline, SinkToClickHouse};

/// `SELECT` one answer from `sink`'s ClickHouse, blocking in place.
fn query(sink: &SinkToClickHouse, sql: &str) -> String {
    tokio::task::block_in_place(|| sink.clickhouse.query(sql))
        .trim()
        .to_owned()
}

/// Checks what reached ClickHouse of `experiment`, decided after `rounds` rounds: every
/// (round, model, task) of those rounds has exactly one counted run (and one run at
/// all), no later round ran, and exactly one decision is stored, `candidate_better`
/// after `rounds` rounds, with `detect` as given (`\N`: learnt).
fn assert_each_unit_once_and_one_decision(
    sink: &SinkToClickHouse,
    experiment: &str,
    rounds: u32,
    detect: &str,
) {
    // Runs by round and model: 4 runs of 4 distinct tasks, all finished and counted.
    let runs = format!(
        "SELECT model, repeat, count(), uniqExact(task_id) FROM benchstream.run_starts FINAL \
         WHERE experiment = '{experiment}' GROUP BY model, repeat ORDER BY model, repeat \
         FORMAT TSV"
    );
    let counted = format!(
        "SELECT policy_id, repeat, count(), uniqExact(task_id) FROM (SELECT run_id, \
         policy_id, task_id, repeat FROM benchstream.run_starts FINAL WHERE experiment = \
         '{experiment}') AS starts ANY INNER JOIN (SELECT run_id, success FROM \
         benchstream.run_stops FINAL WHERE isNotNull(success)) AS stops USING run_id \
         GROUP BY policy_id, repeat ORDER BY policy_id, repeat FORMAT TSV"
    );
    let per_round = |name: &str| -> String {
        (0..rounds)
            .map(|r| format!("{name}\t{r}\t4\t4"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let [worse, better] = MODELS;
    assert_eq!(
        query(sink, &runs),
        format!("{}\n{}", per_round(better), per_round(worse)),
        "one run of every task per model per round, none after the deciding round"
    );
    assert_eq!(
        query(sink, &counted),
        format!(
            "{}\n{}",
            per_round(&format!("{better}:observation_masking")),
            per_round(&format!("{worse}:observation_masking"))
        ),
        "each (round, policy, task) counted once"
    );
    assert_eq!(
        query(
            sink,
            &format!(
                "SELECT count(), any(decision), any(rounds), toString(any(detect)) \
                 FROM benchstream.experiment_decisions FINAL WHERE experiment = '{experiment}' \
                 FORMAT TSV"
            )
        ),
        format!("1\tcandidate_better\t{rounds}\t{detect}"),
        "exactly one decision stored"
    );
}

/// Waits until the sink has stored `rows` decisions of `experiment`.
async fn wait_decisions(sink: &SinkToClickHouse, experiment: &str, rows: u32) {
    sink.wait_for(
        &format!(
            "SELECT count() FROM benchstream.experiment_decisions FINAL \
             WHERE experiment = '{experiment}' FORMAT TSV"
        ),
        &rows.to_string(),
    )
    .await;
}

/// `agent-runner run llm-local ... --until-decided` as worker `host`, its spool and
/// artifacts in `dir`, to its exit.
fn worker(
    host: &str,
    nats_url: &str,
    clickhouse_url: &str,
    llm_url: &str,
    dir: &Path,
    max_repeats: u32,
) -> Output {
    let tasks = DECIDED_TASKS.join(",");
    let models = MODELS.join(",");
    let spool = dir.join("spool/runner.spool");
    let out = dir.join("runs");
    let max_repeats = max_repeats.to_string();
    let scenarios = repo_path("scenarios");
    run_to_exit(
        Command::new(workspace_binary("agent-runner"))
            .args(["run", "llm-local", "--tasks", &tasks, "--seed", "7"])
            .args([
                "--experiment",
                "shared",
                "--until-decided",
                "--models",
                &models,
            ])
            .args(["--max-repeats", &max_repeats, "--no-progress"])
            .args(["--clickhouse-url", clickhouse_url])
            .args([
                "--nats-url",
                nats_url,
                "--host",
                host,
                "--llm-base-url",
                llm_url,
            ])
            .arg("--scenarios-dir")
            .arg(&scenarios)
            .arg("--spool")
            .arg(&spool)
            .arg("--out")
            .arg(&out)
            .env("NO_COLOR", "1")
            .env_remove("BENCH_SCENARIOS_DIR")
            .env_remove("BENCH_NATS_URL")
            .env_remove("BENCH_CLICKHOUSE_URL"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workers_share_an_experiment_run_until_decided_each_unit_once_one_decision() {
    let (nats, sink) = start_pipeline().await;
    let server = better_and_worse_models(&DECIDED_TASKS);
    let max_repeats = 8;
    let (a_dir, b_dir) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let start = |host: &'static str, dir: std::path::PathBuf| {
        let (nats_url, clickhouse_url, llm_url) =
            (nats.url(), sink.clickhouse.http_url(), server.base_url());
        tokio::task::spawn_blocking(move || {
            worker(
                host,
                &nats_url,
                &clickhouse_url,
                &llm_url,
                &dir,
                max_repeats,
            )
        })
    };
    let a = start("worker-a", a_dir.path().to_path_buf());
    let b = start("worker-b", b_dir.path().to_path_buf());
    let (a, b) = (a.await.expect("worker a"), b.await.expect("worker b"));
    let text = |out: &Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    for out in [&a, &b] {
        assert_eq!(out.status.code(), Some(0), "{}", text(out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("experiment shared: candidate_better"),
            "every worker computes the decision: {}",
            text(out)
        );
    }
    let published = [&a, &b]
        .iter()
        .filter(|out| String::from_utf8_lossy(&out.stdout).contains("decision published"))
        .count();
    assert_eq!(
        published,
        1,
        "one worker publishes: {}{}",
        text(&a),
        text(&b)
    );

    wait_decisions(&sink, "shared", 1).await;
    let rounds: u32 = query(
        &sink,
        "SELECT rounds FROM benchstream.experiment_decisions FINAL FORMAT TSV",
    )
    .parse()
    .expect("rounds");
    assert!(
        (1..max_repeats).contains(&rounds),
        "decided before --max-repeats: {rounds}"
    );
    // Learnt bets (no --detect): the stored detect is NULL.
    assert_each_unit_once_and_one_decision(&sink, "shared", rounds, "\\N");
    assert_eq!(
        query(
            &sink,
            "SELECT uniqExact(host) FROM benchstream.run_starts FINAL \
             WHERE experiment = 'shared' FORMAT TSV"
        ),
        "2",
        "both workers ran units"
    );
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_unit_held_by_a_dead_worker_is_taken_over_and_a_decided_experiment_is_not_run_again() {
    let (nats, sink) = start_pipeline().await;
    let server = better_and_worse_models(&DECIDED_TASKS);
    let dir = tempfile::tempdir().expect("tempdir");
    let max_repeats = 8;
    // A worker claimed round 0's run of the last task by the candidate, then died.
    let client = bench_nats::connect(&NatsConfig::plain(nats.url()), false)
        .await
        .expect("connect");
    let js = async_nats::jetstream::new(client);
    let dead = ClaimBoard::open(
        &js,
        &ClaimConfig {
            bucket: "BENCH_SWEEPS".to_owned(),
            replicas: 1,
            lease: Duration::from_secs(3600),
        },
        "dead-worker",
    )
    .await
    .expect("bucket");
    let keys = Keys::new("taken-over", MODELS[0], MODELS[1]);
    let held = keys.unit(0, Side::Candidate, DECIDED_TASKS[3]);
    let _abandoned = dead.claim(&held).await.expect("claim").expect("free");

    let mut config = decide_config(
        &nats,
        &sink,
        &server,
        dir.path(),
        "taken-over",
        Bet::Tuned(0.5),
        max_repeats,
    );
    config.claims = ClaimSettings {
        lease: Some(Duration::from_secs(2)),
        ..ClaimSettings::default()
    };
    let report = decide::run_until_decided(config.clone(), CancellationToken::new())
        .await
        .expect("the experiment runs");
    eprintln!("{report}");
    assert!(
        matches!(report.publication, Publication::Published(_)),
        "{report}"
    );
    assert_eq!(report.result.decision.name(), "candidate_better");
    // The dead worker's unit, run by this worker after the lease.
    assert!(
        matches!(
            dead.record(&held).await.expect("record"),
            Some(ClaimRecord::Done { worker, .. }) if worker == "test-host"
        ),
        "taken over and marked done by the live worker"
    );
    let rounds = report.rounds_run;
    assert!(rounds < max_repeats, "{report}");
    wait_decisions(&sink, "taken-over", 1).await;
    assert_each_unit_once_and_one_decision(&sink, "taken-over", rounds, "0.5");

    // Started again on the decided experiment: it runs nothing, reaches the same
    // decision after the same rounds, and finds it published.
    let again = decide::run_until_decided(config, CancellationToken::new())
        .await
        .expect("the experiment is read again");
    assert!(again.runs.is_empty(), "nothing run again: {again}");
    assert_eq!(
        (again.rounds_run, again.result.decision, again.result.cs_low),
        (rounds, report.result.decision, report.result.cs_low)
    );
    let Publication::Published(first) = report.publication else {
        unreachable!("checked above")
    };
    assert!(
        matches!(&again.publication, Publication::Already { run_id, .. } if *run_id == first),
        "{again}"
    );
    // Published once: still one decision stored once the sink caught up with the stream.
    wait_decisions(&sink, "taken-over", 1).await;
    assert_each_unit_once_and_one_decision(&sink, "taken-over", rounds, "0.5");
    sink.stop().await;
}
