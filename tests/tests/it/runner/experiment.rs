//! An experiment: `run --experiment --repeats K --tag` runs every task K times with seeds
//! `seed..seed+K-1`, and each run's `run_start` reaches ClickHouse with its experiment,
//! repeat, tags and the runs the command planned.

use std::collections::BTreeMap;

use agent_runner::PolicyOverrides;
use bench_schemas::{Canonical, ContextStrategy, ExperimentRef, SubjectPrefix};
use tokio_util::sync::CancellationToken;

use agent_runner::decide::DecideConfig;
use bench_analysis::compare::sequential::Bet;
use benchstream_tests::NatsServer;

use crate::common::{publish_setup, repo_path, runner_config, start_pipeline, SinkToClickHouse};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeats_of_an_experiment_land_with_their_repeat_seed_tags_and_plan() {
    let (nats, sink) = start_pipeline().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let tasks = ["py-slugify-unicode", "sh-ci-exit-status"];
    let mut config = runner_config(
        repo_path("scenarios/smoke.toml"),
        Some(tasks.map(str::to_owned).to_vec()),
        false,
        Some(publish_setup(
            &nats.url(),
            &SubjectPrefix::default(),
            dir.path(),
        )),
        dir.path(),
    );
    config.repeats = 3;
    config.seed = Some(100);
    config.experiment = ExperimentRef {
        name: Some("exp-a".to_owned()),
        tags: BTreeMap::from([
            ("arm".to_owned(), "baseline".to_owned()),
            ("owner".to_owned(), "ci".to_owned()),
        ]),
        ..ExperimentRef::default()
    };
    let report = agent_runner::run(config, CancellationToken::new())
        .await
        .expect("run");
    assert_eq!(report.runs.len(), 6, "2 tasks x 3 repeats");
    for run in &report.runs {
        sink.wait_for_run(run).await;
    }
    // One row per task and repeat: the repeat's seed, the experiment, both tags (sorted
    // by key) and the 6 runs planned.
    let expected: String = tasks
        .iter()
        .flat_map(|task| {
            (0..3).map(move |r| {
                format!(
                    "{task}\t{r}\t{}\texp-a\t6\t['arm','owner']\t['baseline','ci']\n",
                    100 + r
                )
            })
        })
        .collect();
    sink.wait_for(
        "SELECT task_id, repeat, seed, experiment, planned_runs, tag_keys, tag_values \
         FROM benchstream.run_starts FINAL ORDER BY task_id, repeat FORMAT TSV",
        expected.trim(),
    )
    .await;
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_for_a_scenario_that_calls_none_is_refused_and_a_strategy_changes_the_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = runner_config(
        repo_path("scenarios/smoke.toml"),
        None,
        false,
        None,
        dir.path(),
    );
    config.overrides = PolicyOverrides {
        model: Some("model-b".to_owned()),
        strategy: None,
    };
    let error = agent_runner::run(config, CancellationToken::new())
        .await
        .expect_err("refused");
    assert_eq!(
        error.to_string(),
        "invalid configuration: --model: scenario smoke runs the scripted policy, which calls no model"
    );
    assert!(!dir.path().join("runs").exists(), "no run started");
    let strategy = PolicyOverrides {
        model: None,
        strategy: Some(ContextStrategy::ObservationMasking),
    };
    let mut smoke =
        bench_task::LoadedScenario::load(&repo_path("scenarios/smoke.toml"), &Default::default())
            .expect("smoke");
    let before = smoke.scenario.config.canonical_hash();
    strategy
        .apply(&mut smoke)
        .expect("masking has a default window");
    assert_eq!(
        smoke.scenario.config.strategy,
        Some(ContextStrategy::ObservationMasking)
    );
    assert_ne!(
        smoke.scenario.config.canonical_hash(),
        before,
        "another cfg_hash"
    );
}

/// A stand-in provider of two models of known quality on `tasks`: `bench/priced-model`
/// follows each task's reference solution, `qwen2.5-coder:7b` submits the fixture
/// untouched. The task is told by its title in the task message.
pub(super) fn better_and_worse_models(tasks: &[&str]) -> benchstream_tests::OpenAiServer {
    use benchstream_tests::Reply;
    use serde_json::{json, Value};
    let solutions: Vec<(String, Vec<bench_task::ToolRequest>)> = tasks
        .iter()
        .map(|task| {
            let path = repo_path(&format!("scenarios/tasks/{task}/task.toml"));
            let text = std::fs::read_to_string(path).expect("task.toml");
            let title = text
                .lines()
                .find_map(|l| l.strip_prefix("title = \""))
                .and_then(|t| t.strip_suffix('"'))
                .expect("a one-line title")
                .to_owned();
            (title, crate::llm::reference_solution(task))
        })
        .collect();
    benchstream_tests::OpenAiServer::start(crate::llm::models(), move |body| {
        let usage = json!({"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110});
        let messages = body["messages"].to_string();
        let done = body["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
        let solution = solutions
            .iter()
            .find(|(title, _)| messages.contains(title.as_str()))
            .map(|(_, steps)| steps);
        let reply = match solution.and_then(|steps| steps.get(done)) {
            Some(step) if body["model"] == "bench/priced-model" => {
                Reply::call(&step.tool, &Value::Object(step.args.clone()))
            }
            _ => Reply::call("submit", &json!({})),
        };
        reply.usage(usage)
    })
}

/// The tasks of the experiments run until decided.
pub(super) const DECIDED_TASKS: [&str; 4] = [
    "sh-ci-exit-status",
    "sh-collect-logs-spaces",
    "py-slugify-unicode",
    "py-paginate-last-page",
];

/// The baseline (worse) and the candidate (better) model of [`better_and_worse_models`].
pub(super) const MODELS: [&str; 2] = ["qwen2.5-coder:7b", "bench/priced-model"];

/// Where an experiment run until decided reads its outcomes: `sink`'s ClickHouse.
pub(super) fn sink_clickhouse(sink: &SinkToClickHouse) -> bench_clickhouse::ClickHouseConfig {
    bench_clickhouse::ClickHouseArgs {
        url: Some(sink.clickhouse.http_url()),
        user: Some("default".to_owned()),
        database: Some("benchstream".to_owned()),
        ..Default::default()
    }
    .resolve()
    .expect("the sink's ClickHouse")
}

/// `experiment` of [`MODELS`] on [`DECIDED_TASKS`] with `server`'s models, seed 7, run
/// until decided (at most `max_repeats` rounds, alpha 0.05, bets `bet`), publishing to
/// `nats` with its spool and artifacts in `dir`, on `sink`'s ClickHouse.
pub(super) fn decide_config(
    nats: &NatsServer,
    sink: &SinkToClickHouse,
    server: &benchstream_tests::OpenAiServer,
    dir: &std::path::Path,
    experiment: &str,
    bet: Bet,
    max_repeats: u32,
) -> DecideConfig {
    let mut run = runner_config(
        repo_path("scenarios/llm-local.toml"),
        Some(DECIDED_TASKS.map(str::to_owned).to_vec()),
        false,
        Some(publish_setup(&nats.url(), &SubjectPrefix::default(), dir)),
        dir,
    );
    run.llm = Some(crate::llm::provider(server));
    run.seed = Some(7);
    run.experiment = ExperimentRef {
        name: Some(experiment.to_owned()),
        ..ExperimentRef::default()
    };
    DecideConfig {
        run,
        baseline: MODELS[0].to_owned(),
        candidate: MODELS[1].to_owned(),
        alpha: 0.05,
        equivalence_margin: None,
        bet,
        max_repeats,
        clickhouse: sink_clickhouse(sink),
        claims: Default::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_experiment_run_until_decided_stops_early_with_the_better_model() {
    let (nats, sink) = start_pipeline().await;
    let server = better_and_worse_models(&DECIDED_TASKS);
    let dir = tempfile::tempdir().expect("tempdir");
    let max_repeats = 8;
    // Bets tuned to a large difference, as `--detect 0.5` sets them.
    let config = decide_config(
        &nats,
        &sink,
        &server,
        dir.path(),
        "ab",
        Bet::Tuned(0.5),
        max_repeats,
    );
    let report = agent_runner::decide::run_until_decided(config, CancellationToken::new())
        .await
        .expect("the experiment runs");
    eprintln!("{report}");
    let rounds = report.rounds_run;
    assert_eq!(
        report.result.decision.name(),
        "candidate_better",
        "{report}"
    );
    assert!(rounds < max_repeats, "stopped early: {report}");
    assert_eq!(
        u64::from(rounds),
        report.result.rounds,
        "every round complete"
    );
    assert!(
        report.result.cs_low.is_some_and(|low| low > 0.0),
        "{report}"
    );
    assert_eq!(
        (report.baseline.as_str(), report.candidate.as_str()),
        (
            "qwen2.5-coder:7b:observation_masking",
            "bench/priced-model:observation_masking"
        )
    );
    // What reached ClickHouse: each model ran every task once per round, as repeat r with
    // seed 7 + r, and solved exactly as scripted.
    let per_model = |model: &str, solved: u32| -> String {
        (0..rounds)
            .map(|r| format!("{model}\t{r}\t{}\t4\t{}", 7 + r, solved * 4))
            .collect::<Vec<_>>()
            .join("\n")
    };
    sink.wait_for(
        "SELECT model, repeat, seed, count(), sum(success) FROM benchstream.run_starts FINAL \
         ANY INNER JOIN (SELECT run_id, success FROM benchstream.run_stops FINAL) AS stops \
         USING run_id WHERE experiment = 'ab' \
         GROUP BY model, repeat, seed ORDER BY model, repeat FORMAT TSV",
        &format!(
            "{}\n{}",
            per_model("bench/priced-model", 1),
            per_model("qwen2.5-coder:7b", 0)
        ),
    )
    .await;
    // Every run states the whole plan: every round of both models on the 4 tasks.
    sink.wait_for(
        "SELECT DISTINCT planned_runs FROM benchstream.run_starts FINAL \
         WHERE experiment = 'ab' FORMAT TSV",
        &(max_repeats * 4 * 2).to_string(),
    )
    .await;
    // The decision, published as an experiment_decision, stored as the report says, with
    // the difference its bets were tuned to.
    let (low, high) = (
        report.result.cs_low.expect("a sequence"),
        report.result.cs_high.expect("a sequence"),
    );
    sink.wait_for(
        "SELECT task_id, policy_id, experiment, baseline, candidate, decision, rounds, alpha, \
         toString(cs_low), toString(cs_high), toString(detect) \
         FROM benchstream.experiment_decisions FINAL FORMAT TSV",
        &format!(
            "experiment:ab\tdecision\tab\tqwen2.5-coder:7b:observation_masking\t\
             bench/priced-model:observation_masking\tcandidate_better\t{rounds}\t0.05\t\
             {low}\t{high}\t0.5"
        ),
    )
    .await;
    sink.stop().await;
}
