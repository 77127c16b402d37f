//! The `bayes` sweep method end to end (NATS, the sink, ClickHouse, the stand-in model):
//! it finds a narrow band of a continuous hyper-parameter in fewer trials than random
//! search with the same budget and seed; two workers share one sweep through trial claims
//! (a dead worker's trial included) without running a trial twice; each trial runs its
//! config on every task of the sweep with every seed; every proposal lands in ClickHouse
//! as an `optimizer_update` with its trial's result, and the shipped `sweep_trajectory`
//! query shows the best config and the objective's trajectory, each row equal to the
//! runs it names.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::Duration;

use agent_runner::sweep::claim::{ClaimBoard, ClaimConfig, ClaimRecord};
use agent_runner::sweep::{self, Plan, SweepConfig, SweepReport};
use bench_analysis::queries::{ParamValues, Query};
use bench_nats::NatsConfig;
use benchstream_tests::{OpenAiServer, Reply};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::{assert_split, clickhouse_source, fixture, query};
use crate::common::{repo_path, start_pipeline, SinkToClickHouse};
use crate::llm::{models, provider, reference_solution};

/// The task of the band sweeps.
const TASK: &str = "sh-ci-exit-status";

/// Temperatures for which the stand-in model solves the task.
const BAND: std::ops::Range<f64> = 0.62..0.70;

/// A stand-in model that follows `TASK`'s reference solution when the request's
/// temperature lies in [`BAND`] and submits the untouched fixture otherwise; each reply
/// uses more prompt tokens the further the temperature is from the band's centre.
fn band_model() -> OpenAiServer {
    let solution = reference_solution(TASK);
    OpenAiServer::start(models(), move |body| {
        let temperature = body["temperature"].as_f64().unwrap_or(f64::NAN);
        let distance = (temperature - 0.66).abs();
        let prompt = 1_000 + (200_000.0 * distance) as u64;
        let usage =
            json!({"prompt_tokens": prompt, "completion_tokens": 20, "total_tokens": prompt + 20});
        if body.get("tools").is_none() {
            return Reply::text("summary").usage(usage);
        }
        let done = body["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
        let reply = match solution.get(done) {
            Some(step) if BAND.contains(&temperature) => {
                Reply::call(&step.tool, &Value::Object(step.args.clone()))
            }
            _ => Reply::call("submit", &json!({})),
        };
        reply.usage(usage)
    })
}

/// A worker of `file` with the stand-in `model`, publishing to `nats_url`, reading
/// `sink`'s ClickHouse.
fn worker(
    file: &Path,
    nats_url: &str,
    name: &str,
    dir: &Path,
    model: &OpenAiServer,
    sink: &SinkToClickHouse,
) -> SweepConfig {
    SweepConfig {
        out_dir: None,
        llm: Some(provider(model)),
        clickhouse: Some(clickhouse_source(sink)),
        ..super::worker(file, nats_url, name, dir)
    }
}

/// 1-based position of the first solved run, in the order the worker ran them.
fn first_solved(report: &SweepReport) -> Option<usize> {
    report
        .runs
        .iter()
        .position(|r| r.summary.result.success == Some(true))
        .map(|i| i + 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bayes_finds_a_narrow_band_in_fewer_trials_than_random_search() {
    let (nats, sink) = start_pipeline().await;
    let model = band_model();
    let dir = tempfile::tempdir().expect("dir");
    let bayes_file = fixture("bayes-band.toml");
    let plan = Plan::load(&bayes_file, &repo_path("scenarios"), false, None).expect("bayes plan");
    let dry_run = plan.to_string();
    assert!(
        dry_run.contains("temperature in 0..=1 (float)") && dry_run.contains("first 3 proposals"),
        "{dry_run}"
    );

    let run_alone = |file: &Path| {
        sweep::run(
            worker(file, &nats.url(), "worker-a", dir.path(), &model, &sink),
            CancellationToken::new(),
        )
    };
    let bayes = run_alone(&bayes_file).await.expect("bayes sweep");
    let random = run_alone(&fixture("random-band.toml"))
        .await
        .expect("random sweep");
    assert_eq!(
        (bayes.runs.len(), random.runs.len()),
        (10, 10),
        "same budget"
    );
    let (b, r) = (first_solved(&bayes), first_solved(&random));
    let solved = |report: &SweepReport| {
        report
            .runs
            .iter()
            .filter(|r| r.summary.result.success == Some(true))
            .count()
    };
    eprintln!(
        "band [0.62, 0.70) of temperature, 10 trials, seed 1: bayes first solved at trial {b:?} \
         ({} of 10 solved), random at {r:?} ({} of 10 solved)",
        solved(&bayes),
        solved(&random)
    );
    let b = b.expect("bayes finds the band");
    assert!(r.is_none_or(|r| b < r), "bayes {b} vs random {r:?}");
    assert!(
        solved(&bayes) > solved(&random),
        "bayes keeps proposing in the band"
    );

    // Every proposal is an optimizer_update in ClickHouse, with its trial's result.
    sink.wait_for(
        "SELECT count() FROM benchstream.optimizer_updates FINAL WHERE task_id = 'sweep:fleet-bayes-band'",
        "10",
    )
    .await;
    sink.wait_for("SELECT count() FROM benchstream.run_stops FINAL", "20")
        .await;
    assert_eq!(
        query(
            &sink.clickhouse,
            "SELECT uniqExact(policy_id), uniqExact(run_id), min(exploration_vs_exploitation) < 1 \
             FROM benchstream.optimizer_updates FINAL \
             WHERE task_id = 'sweep:fleet-bayes-band' FORMAT TSV"
        ),
        "1\t10\t1",
        "one stream per proposal; the model's proposals, after the random start, exploit"
    );
    let startup = query(
        &sink.clickhouse,
        "SELECT countIf(exploration_vs_exploitation = 1), countIf(reasoning LIKE '%random start%') \
         FROM benchstream.optimizer_updates FINAL WHERE task_id = 'sweep:fleet-bayes-band' FORMAT TSV",
    );
    assert_eq!(startup, "3\t3", "the random start is pure exploration");

    let trajectory = trajectory_of(&sink, "fleet-bayes-band", 1).await;
    let column = |name: &str| trajectory.column(name);
    assert_eq!(
        column("solved")
            .iter()
            .position(|s| s == "1")
            .map(|i| i + 1),
        Some(b),
        "the trajectory is in trial order"
    );
    let best: Vec<f64> = column("best_so_far")
        .iter()
        .map(|v| v.parse().expect("a number"))
        .collect();
    assert!(best.windows(2).all(|w| w[0] <= w[1]), "{best:?}");
    assert!(
        best[9] > 0.9,
        "the best objective is a solved trial: {best:?}"
    );
    let best_rows: Vec<usize> = column("is_best")
        .iter()
        .enumerate()
        .filter(|(_, v)| *v == "1")
        .map(|(i, _)| i)
        .collect();
    let [best_row] = best_rows[..] else {
        panic!("one best row: {best_rows:?}")
    };
    assert_eq!(
        column("trial"),
        column("proposal"),
        "one worker: trial n is proposal n"
    );
    let best_cfg = column("cfg_hash")[best_row].clone();
    let best_config: Value = serde_json::from_str(&query(
        &sink.clickhouse,
        &format!(
            "SELECT any(suggested_config) FROM benchstream.optimizer_updates FINAL \
             WHERE cfg_hash = '{best_cfg}' FORMAT TSVRaw"
        ),
    ))
    .expect("config JSON");
    let t = best_config["temperature"].as_f64().expect("temperature");
    assert!(BAND.contains(&t), "best config's temperature {t}");
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workers_share_a_bayes_sweep_and_a_dead_workers_trial_is_rerun() {
    let (nats, sink) = start_pipeline().await;
    let model = band_model();
    let file = fixture("bayes-strategies.toml");
    let plan = Plan::load(&file, &repo_path("scenarios"), false, None).expect("plan");

    // A worker claimed trial 1 a day ago and died: its claim is past the lease (the
    // scenario's execution timeout plus ten minutes, for each of the trial's 4 runs).
    let client = bench_nats::connect(&NatsConfig::plain(nats.url()), false)
        .await
        .expect("connect");
    let js = async_nats::jetstream::new(client);
    ClaimBoard::open(
        &js,
        &ClaimConfig {
            bucket: "BENCH_SWEEPS".to_owned(),
            replicas: 1,
            lease: Duration::from_secs(60),
        },
        "dead",
    )
    .await
    .expect("bucket");
    let since = chrono::Utc::now() - chrono::Duration::days(1);
    let abandoned = ClaimRecord::Running {
        worker: "dead".to_owned(),
        since,
    };
    js.get_key_value("BENCH_SWEEPS")
        .await
        .expect("bucket")
        .put(
            plan.trial_key(1),
            serde_json::to_vec(&abandoned).expect("record").into(),
        )
        .await
        .expect("abandoned claim");

    let (a_dir, b_dir) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let a = worker(&file, &nats.url(), "worker-a", a_dir.path(), &model, &sink);
    let b = worker(&file, &nats.url(), "worker-b", b_dir.path(), &model, &sink);
    let (a, b) = tokio::join!(
        sweep::run(a, CancellationToken::new()),
        sweep::run(b, CancellationToken::new())
    );
    let (a, b) = (a.expect("worker a"), b.expect("worker b"));
    let all: HashSet<String> = (0..6).map(|n| plan.trial_key(n)).collect();
    assert_split(&a, &b, &all);

    // Each trial ran its config on both tasks with both seeds (4 runs), and its proposal
    // reached ClickHouse with the trial's result; no proposal broke the conditions or
    // the constraint.
    sink.wait_for("SELECT count() FROM benchstream.run_stops FINAL", "24")
        .await;
    sink.wait_for(
        "SELECT count() FROM benchstream.optimizer_updates FINAL WHERE task_id = 'sweep:fleet-bayes-strategies'",
        "6",
    )
    .await;
    // Each run says which sweep and trial it is, numbered from 0 as the claims are, and
    // which of the sweep's seeds it ran with.
    sink.wait_for(
        "SELECT groupUniqArray(sweep_name), arraySort(groupUniqArray(sweep_trial)), \
         countIf(sweep_key = concat(sweep_name, '.trial.', toString(sweep_trial))), \
         arraySort(groupUniqArray(repeat)), arraySort(groupUniqArray(seed)) \
         FROM benchstream.run_starts FINAL",
        "['fleet-bayes-strategies']\t[0,1,2,3,4,5]\t24\t[0,1]\t[3,4]",
    )
    .await;
    let trajectory = trajectory_of(&sink, "fleet-bayes-strategies", 2).await;
    // A run of another model than the base scenario's keeps the scenario's name (its
    // tasks and file) but states its own model, policy and cfg_hash: its trial's.
    assert_eq!(
        query(
            &sink.clickhouse,
            "SELECT groupUniqArray(scenario_name), groupUniqArray(model), \
             countIf(model = suggested_model AND cfg_hash = proposed_cfg \
                 AND policy_id = concat(model, ':', ifNull(strategy, ''))) \
             FROM (SELECT assumeNotNull(sweep_trial) AS t, scenario_name, model, cfg_hash, \
                 policy_id, strategy FROM benchstream.run_starts FINAL) AS runs \
             ANY INNER JOIN (SELECT assumeNotNull(trial) AS t, suggested_model, \
                 cfg_hash AS proposed_cfg FROM benchstream.optimizer_updates FINAL \
                 WHERE task_id = 'sweep:fleet-bayes-strategies') AS proposals \
             USING t FORMAT TSV"
        )
        .split('\t')
        .map(|cell| {
            let mut parts: Vec<&str> = cell.trim_matches(['[', ']']).split(',').collect();
            parts.sort();
            parts.join(",")
        })
        .collect::<Vec<_>>(),
        [
            "'llm-local'",
            "'bench/priced-model','qwen2.5-coder:7b'",
            "24"
        ],
        "every run states the model, policy and cfg of its trial"
    );
    let mut trials = trajectory.column("trial");
    trials.sort();
    assert_eq!(trials, ["0", "1", "2", "3", "4", "5"], "one row per trial");
    let configs = query(
        &sink.clickhouse,
        "SELECT suggested_config FROM benchstream.optimizer_updates FINAL \
         WHERE task_id = 'sweep:fleet-bayes-strategies' FORMAT TSVRaw",
    );
    let mut per_strategy = BTreeMap::new();
    for line in configs.lines() {
        let config: Value = serde_json::from_str(line).expect("config JSON");
        let params = &config["strategy_params"];
        let strategy = config["strategy"].as_str().expect("strategy").to_owned();
        let summarises = strategy == "llm_summary" || strategy == "hybrid";
        let masks = strategy == "observation_masking" || strategy == "hybrid";
        assert_eq!(params["summary_keep"].is_u64(), summarises, "{config}");
        assert_eq!(params["observation_window"].is_u64(), masks, "{config}");
        if summarises {
            assert!(params["summary_keep"].as_u64() < params["summary_interval"].as_u64());
        }
        *per_strategy.entry(strategy).or_insert(0) += 1;
    }
    assert_eq!(per_strategy.values().sum::<i32>(), 6, "{per_strategy:?}");
    assert!(
        per_strategy.len() > 1,
        "one strategy tried: {per_strategy:?}"
    );
    sink.stop().await;
}

/// The `sweep_trajectory` answer of a sweep.
struct Trajectory(bench_analysis::table::Table);

impl Trajectory {
    /// The values of column `name`, `NULL` for null.
    fn column(&self, name: &str) -> Vec<String> {
        let t = &self.0;
        let i = t
            .columns
            .iter()
            .position(|c| c.name == name)
            .unwrap_or_else(|| panic!("column {name}"));
        t.rows
            .iter()
            .map(|row| row[i].clone().unwrap_or_else(|| "NULL".to_owned()))
            .collect()
    }
}

/// `sweep_trajectory` of `sweep`, checked row by row against the runs it names, joined
/// on run id: each trial ran its config on every task of the sweep with each of its
/// `seeds` seeds (each pair once), all its runs carry that trial and config, and its
/// solved count, cost and tokens are the sums of those runs' own results.
async fn trajectory_of(sink: &SinkToClickHouse, sweep: &str, seeds: usize) -> Trajectory {
    let mut params = ParamValues::new();
    params.insert("sweep".into(), sweep.into());
    let client = clickhouse::Client::default()
        .with_url(sink.clickhouse.http_url())
        .with_database("benchstream")
        .with_validation(false);
    let trajectory = Trajectory(
        Query::find("sweep_trajectory")
            .expect("shipped query")
            .run(&client, &params)
            .await
            .expect("sweep_trajectory answers"),
    );
    let tasks: usize = query(
        &sink.clickhouse,
        &format!(
            "SELECT uniqExact(task_id) FROM benchstream.run_starts FINAL \
             WHERE sweep_name = '{sweep}'"
        ),
    )
    .parse()
    .expect("a count");
    let proposals: Vec<u64> = trajectory
        .column("proposal")
        .iter()
        .map(|v| v.parse().expect("a number"))
        .collect();
    assert_eq!(
        proposals,
        (0..proposals.len() as u64).collect::<Vec<_>>(),
        "numbered from 0 like trials"
    );
    let nullable = |sum: &str, of: &str| {
        format!("if(countIf(isNull({of})) > 0, 'NULL', toString({sum}({of})))")
    };
    let cell = |name: &str, row: usize| trajectory.column(name)[row].clone();
    for (row, ids) in trajectory.column("run_ids").iter().enumerate() {
        let own = query(
            &sink.clickhouse,
            &format!(
                "SELECT count(), uniqExact(task_id, seed), groupUniqArray(toString(sweep_trial)), \
                 groupUniqArray(cfg_hash), {}, {}, {} \
                 FROM benchstream.run_starts FINAL ANY INNER JOIN (SELECT run_id, success, \
                 cost_usd, total_tokens FROM benchstream.run_stops FINAL) AS stops USING run_id \
                 WHERE has({ids}, toString(run_id)) AND sweep_name = '{sweep}' FORMAT TSV",
                nullable("sum", "success"),
                nullable("sum", "cost_usd"),
                nullable("sum", "total_tokens"),
            ),
        );
        let own: Vec<&str> = own.split('\t').collect();
        let runs = (tasks * seeds).to_string();
        assert_eq!(
            cell("runs", row),
            runs,
            "trial {row}: every task, every seed"
        );
        assert_eq!(
            own[0], runs,
            "trial {row}: its runs are in ClickHouse: {ids}"
        );
        assert_eq!(own[1], runs, "trial {row}: each task and seed once");
        assert_eq!(own[2], format!("['{}']", cell("trial", row)), "trial {row}");
        assert_eq!(
            own[3],
            format!("['{}']", cell("cfg_hash", row)),
            "trial {row}"
        );
        assert_eq!(own[4], cell("solved", row), "trial {row}: solved");
        assert_eq!(own[6], cell("total_tokens", row), "trial {row}: tokens");
        match (own[5], cell("cost_usd", row).as_str()) {
            ("NULL", shown) => assert_eq!(shown, "NULL", "trial {row}: cost"),
            (sum, shown) => {
                let (sum, shown): (f64, f64) =
                    (sum.parse().expect("a cost"), shown.parse().expect("a cost"));
                assert!(
                    (sum - shown).abs() < 1e-12,
                    "trial {row}: cost {sum} vs {shown}"
                );
            }
        }
    }
    trajectory
}
