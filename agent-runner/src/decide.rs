//! `agent-runner run SCENARIO --experiment NAME --until-decided --models BASELINE,CANDIDATE`:
//! an experiment run in rounds until its answer is known.
//!
//! Round `r` (from 0) runs every task once with each of the two models (the scenario's
//! policy with its model replaced, baseline first), as repeat `r` with seed `seed + r`.
//! Every run's `planned_runs` states the whole plan: `max_repeats` × tasks × 2 models
//! (an experiment that decides sooner runs fewer). A run that ended in an
//! infrastructure failure (`exit_environment`, `exit_api`) is no outcome: that task is
//! run again for that model, up to [`INFRA_RETRIES`] times, within the round. After each
//! round, the experiment's counted runs are read back from ClickHouse (the
//! `run_outcomes` query `bench-analysis compare --sequential` reads, so the runs counted
//! are the same) and the anytime-valid confidence sequence of `compare --sequential`
//! (`bench_analysis::compare::sequential`: betting, Waudby-Smith & Ramdas 2024; its bets
//! learnt, or tuned to `--detect`) gives the decision. The experiment stops as soon as the decision is no
//! longer `undecided`, or after `max_repeats` rounds. Looking after every round keeps the
//! error rate at `alpha`, however many rounds run: that is what the sequence is built for.
//! The decision is then published as an `experiment_decision` event (a stream of its
//! own, stored in `experiment_decisions`).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use bench_analysis::compare::analyze::{Decision, SequentialResult};
use bench_analysis::compare::sequential::{self, Bet, Outcomes};
use bench_analysis::queries::{ParamValues, Query};
use bench_clickhouse::ClickHouseConfig;
use bench_delivery::Publisher;
use bench_schemas::{
    sha256_hex, DecisionKind, ExitStatus, ExperimentDecision, Payload, RunSequencer,
};
use bench_task::LoadedScenario;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::agent::RunSummary;
use crate::error::{Error, Exit, Outcome, RunTally};
use crate::recorder::RunRecorder;
use crate::runner::{self, RunnerConfig};

/// `policy_id` of an `experiment_decision` stream.
pub const DECISION_POLICY_ID: &str = "decision";

/// Times a task whose run was an infrastructure failure is run again within a round.
pub const INFRA_RETRIES: u32 = 2;

/// How long the runs of a round may take to reach ClickHouse (the sink's delay).
const STORED_WAIT: Duration = Duration::from_secs(60);

/// Between two reads while waiting for them.
const STORED_POLL: Duration = Duration::from_millis(250);

/// The runs of the round among the ids bound (`?`) that the sink has stored.
const STORED_SQL: &str = "SELECT count() FROM run_stops FINAL WHERE has(?, toString(run_id))";

/// What `--until-decided` needs, validated.
#[derive(Debug, Clone)]
pub struct DecideConfig {
    /// The runs of every round: scenario, experiment (named), publishing, provider.
    /// `repeats`, `first_repeat` and the model are set per round.
    pub run: RunnerConfig,
    /// The baseline's model (`--models`, first).
    pub baseline: String,
    /// The candidate's model (second).
    pub candidate: String,
    /// The level of the confidence sequence (`--alpha`).
    pub alpha: f64,
    /// `--equivalence-margin`: decide `equivalent` when the whole sequence lies within
    /// ±this difference; `None` = never.
    pub equivalence_margin: Option<f64>,
    /// How the sequence bets: tuned to `--detect`, or learnt from the outcomes.
    pub bet: Bet,
    /// Rounds run at most (`--max-repeats`).
    pub max_repeats: u32,
    /// Where the sink stores the runs.
    pub clickhouse: ClickHouseConfig,
}

/// How an experiment run until decided ended.
#[derive(Debug, Clone)]
pub struct DecisionReport {
    /// The experiment's name.
    pub experiment: String,
    /// The baseline's `policy_id` (`model:strategy`).
    pub baseline: String,
    /// The candidate's.
    pub candidate: String,
    /// Rounds run.
    pub rounds_run: u32,
    /// The decision after the last round, with the sequence.
    pub result: SequentialResult,
    /// Every run, in the order they ended.
    pub runs: Vec<RunSummary>,
}

impl fmt::Display for DecisionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.result;
        let interval = match (r.cs_low, r.cs_high) {
            (Some(low), Some(high)) => format!("{low:+.3} .. {high:+.3}"),
            _ => "none yet".to_owned(),
        };
        writeln!(
            f,
            "experiment {}: {} after {} rounds ({} complete); {} vs {} (baseline): \
             difference in solve rate within {interval} at every look (alpha {})",
            self.experiment,
            r.decision.name(),
            self.rounds_run,
            r.rounds,
            self.candidate,
            self.baseline,
            r.sequential_alpha
        )?;
        let tally = self.tally();
        writeln!(
            f,
            "{} runs, {} infrastructure failures (no outcome, run again)",
            tally.runs, tally.infrastructure
        )
    }
}

impl DecisionReport {
    fn tally(&self) -> RunTally {
        RunTally::of(self.runs.iter().map(|r| r.result.exit_status))
    }
}

impl Outcome for DecisionReport {
    fn exit(&self) -> Exit {
        crate::error::runs_exit(self.tally(), None)
    }
}

/// Runs the experiment of `config` in rounds until decided, `--max-repeats`, or
/// `shutdown`.
pub async fn run_until_decided(
    mut config: DecideConfig,
    shutdown: CancellationToken,
) -> Result<DecisionReport, Error> {
    let experiment = config
        .run
        .experiment
        .name
        .clone()
        .ok_or_else(|| Error::Config("--until-decided needs --experiment".into()))?;
    // `planned_runs` of every run states the whole plan: every round, both models.
    let mut scenario = LoadedScenario::load(&config.run.scenario, &config.run.load)?;
    scenario.without_broken();
    let planned = u64::from(config.max_repeats) * scenario.tasks.len() as u64 * 2;
    config.run.experiment.planned_runs = Some(u32::try_from(planned).unwrap_or(u32::MAX));
    let mut runs: Vec<RunSummary> = Vec::new();
    let mut policies: [Option<String>; 2] = [None, None];
    let mut result =
        sequential::sequential(&[], config.alpha, config.equivalence_margin, config.bet);
    let mut rounds_run = 0;
    for round in 0..config.max_repeats {
        let mut ids = Vec::new();
        for (side, model) in [&config.baseline, &config.candidate]
            .into_iter()
            .enumerate()
        {
            let ran = run_round(&config, model, round, &shutdown).await?;
            if let Some(first) = ran.first() {
                policies[side] = Some(first.policy_id.clone());
            }
            ids.extend(ran.iter().map(|r| r.run_id));
            runs.extend(ran);
        }
        if shutdown.is_cancelled() {
            break;
        }
        rounds_run = round + 1;
        wait_stored(&config.clickhouse, &ids).await?;
        let (Some(baseline), Some(candidate)) = (&policies[0], &policies[1]) else {
            continue;
        };
        let outcomes = read_outcomes(&config.clickhouse, &experiment).await?;
        let none = Outcomes::new();
        let of = |policy: &String| outcomes.get(policy).unwrap_or(&none);
        let rounds = sequential::rounds(of(baseline), of(candidate));
        result =
            sequential::sequential(&rounds, config.alpha, config.equivalence_margin, config.bet);
        tracing::info!(
            round,
            decision = result.decision.name(),
            cs_low = ?result.cs_low,
            cs_high = ?result.cs_high,
            "looked at the experiment"
        );
        if result.decision != Decision::Undecided {
            break;
        }
    }
    let [baseline, candidate] = policies.map(Option::unwrap_or_default);
    if let Some(first) = runs.first().filter(|_| rounds_run > 0) {
        let decision = ExperimentDecision {
            experiment: experiment.clone(),
            baseline: baseline.clone(),
            candidate: candidate.clone(),
            decision: match result.decision {
                Decision::CandidateBetter => DecisionKind::CandidateBetter,
                Decision::BaselineBetter => DecisionKind::BaselineBetter,
                Decision::Equivalent => DecisionKind::Equivalent,
                Decision::Undecided => DecisionKind::Undecided,
            },
            cs_low: result.cs_low,
            cs_high: result.cs_high,
            rounds: result.rounds,
            alpha: config.alpha,
        };
        publish_decision(&config, first.scenario.sha256.clone(), decision).await?;
    }
    Ok(DecisionReport {
        experiment,
        baseline,
        candidate,
        rounds_run,
        result,
        runs,
    })
}

/// Publishes `decision` on a stream of its own: `task_id` `experiment:<name>`, `policy_id`
/// [`DECISION_POLICY_ID`], `cfg_hash` the SHA-256 of the two policies compared (one per
/// line), `env_hash` the scenario's.
async fn publish_decision(
    config: &DecideConfig,
    env_hash: bench_schemas::Hash256,
    decision: ExperimentDecision,
) -> Result<(), Error> {
    let Some(setup) = &config.run.publish else {
        return Ok(());
    };
    let publisher = Publisher::connect(setup).await?;
    let pair = format!("{}\n{}", decision.baseline, decision.candidate);
    let mut recorder = RunRecorder::new(
        RunSequencer::new(
            Uuid::now_v7(),
            format!("experiment:{}", decision.experiment),
            DECISION_POLICY_ID,
            sha256_hex(pair.as_bytes()),
            env_hash,
            None,
            config.run.host.clone(),
        ),
        Some(publisher.handle()),
        None,
    )?;
    recorder.emit(None, Payload::ExperimentDecision(decision))?;
    drop(recorder);
    publisher.finish().await?;
    Ok(())
}

/// Round `round` of `model`: every task once, then again (up to [`INFRA_RETRIES`] times)
/// each task whose run was an infrastructure failure.
async fn run_round(
    config: &DecideConfig,
    model: &str,
    round: u32,
    shutdown: &CancellationToken,
) -> Result<Vec<RunSummary>, Error> {
    let mut ran = Vec::new();
    let mut tasks = config.run.load.tasks.clone();
    for _ in 0..=INFRA_RETRIES {
        let mut run = config.run.clone();
        run.repeats = 1;
        run.first_repeat = round;
        run.overrides.model = Some(model.to_owned());
        run.load.tasks = tasks;
        let report = runner::run(run, shutdown.clone()).await?;
        let failed: Vec<String> = report
            .runs
            .iter()
            .filter(|r| {
                matches!(
                    r.result.exit_status,
                    ExitStatus::ExitApi | ExitStatus::ExitEnvironment
                )
            })
            .map(|r| r.task_id.clone())
            .collect();
        ran.extend(report.runs);
        if failed.is_empty() || shutdown.is_cancelled() {
            break;
        }
        tracing::warn!(
            model,
            round,
            ?failed,
            "infrastructure failures: running those tasks again"
        );
        tasks = Some(failed);
    }
    Ok(ran)
}

/// Waits until the sink has stored the `run_stop` of every run of `ids`.
async fn wait_stored(source: &ClickHouseConfig, ids: &[Uuid]) -> Result<(), Error> {
    let ids: Vec<String> = ids.iter().map(Uuid::to_string).collect();
    let deadline = tokio::time::Instant::now() + STORED_WAIT;
    loop {
        let stored = source
            .client()
            .query(STORED_SQL)
            .bind(&ids)
            .fetch_one::<u64>()
            .await
            .map_err(|e| Error::Outcomes(format!("{}: {e}", source.url)))?;
        if stored >= ids.len() as u64 {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::Outcomes(format!(
                "{stored} of the round's {} runs reached clickhouse within {}s; is the sink running?",
                ids.len(),
                STORED_WAIT.as_secs()
            )));
        }
        tokio::time::sleep(STORED_POLL).await;
    }
}

/// The counted runs of `experiment` (`run_outcomes`), per policy and task, in round
/// order: a task's k-th run of a policy, by `repeat` (which the rounds set), is round k.
async fn read_outcomes(
    source: &ClickHouseConfig,
    experiment: &str,
) -> Result<BTreeMap<String, Outcomes>, Error> {
    let mut params = ParamValues::new();
    params.insert("experiment".to_owned(), experiment.to_owned());
    let table = Query::find("run_outcomes")
        .map_err(|e| Error::Outcomes(e.to_string()))?
        .run(&source.client(), &params)
        .await
        .map_err(|e| Error::Outcomes(format!("{}: {e}", source.url)))?;
    sequential::outcomes_by_policy_id(&table).map_err(|e| Error::Outcomes(e.to_string()))
}
