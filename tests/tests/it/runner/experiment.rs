//! An experiment: `run --experiment --repeats K --tag` runs every task K times with seeds
//! `seed..seed+K-1`, and each run's `run_start` reaches ClickHouse with its experiment,
//! repeat, tags and the runs the command planned.

use std::collections::BTreeMap;

use agent_runner::PolicyOverrides;
use bench_schemas::{Canonical, ContextStrategy, ExperimentRef, SubjectPrefix};
use tokio_util::sync::CancellationToken;

use crate::common::{publish_setup, repo_path, runner_config, start_pipeline};

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
    let mut smoke = agent_runner::scenario::LoadedScenario::load(
        &repo_path("scenarios/smoke.toml"),
        &Default::default(),
    )
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
