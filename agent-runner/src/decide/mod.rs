//! `agent-runner run SCENARIO --experiment NAME --until-decided --models BASELINE,CANDIDATE`:
//! an experiment run in rounds until its answer is known, on one host or shared by
//! several workers running the same command.
//!
//! Round `r` (from 0) runs every task once with each of the two models (the scenario's
//! policy with its model replaced, baseline first), as repeat `r` with seed `seed + r`.
//! Every run's `planned_runs` states the whole plan: `max_repeats` × tasks × 2 models
//! (an experiment that decides sooner runs fewer). Workers share the rounds through the
//! claim bucket of sweeps ([`round`]): each (round, model, task) runs once, whoever runs
//! it. A run that ended in an infrastructure failure (`exit_environment`, `exit_api`) is
//! no outcome: that task is run again for that model, up to [`INFRA_RETRIES`] times,
//! within its claim. When every unit of a round is done, each worker waits for the
//! round's runs to reach ClickHouse and reads the experiment's counted runs of rounds up
//! to this one ([`outcomes`]: the `run_outcomes` query `bench-analysis compare
//! --sequential` reads, so the runs counted are the same) and the anytime-valid
//! confidence sequence of `compare --sequential` (`bench_analysis::compare::sequential`:
//! betting, Waudby-Smith & Ramdas 2024; its bets learnt, or tuned to `--detect`) gives
//! the decision: every worker computes the same one from the same runs. The experiment
//! stops as soon as the decision is no longer `undecided`, or after `max_repeats`
//! rounds. Looking after every round keeps the error rate at `alpha`, however many
//! rounds run: that is what the sequence is built for. The decision is then published
//! once, by the worker that claims its key, as an `experiment_decision` event (a stream
//! of its own, stored in `experiment_decisions`).
//!
//! Started again on an experiment whose rounds are done, the command runs nothing: it
//! reads the same runs round by round, reaches the same decision, finds it published and
//! reports it. Stopped (Ctrl-C) mid-round, a worker gives its units back and publishes
//! nothing: the same command started again resumes the experiment.

mod config;
mod outcomes;
mod round;

use std::fmt;

use bench_analysis::compare::analyze::{Decision, SequentialResult};
use bench_analysis::compare::sequential::{self, Outcomes};
use bench_delivery::Publisher;
use bench_schemas::{sha256_hex, DecisionKind, ExperimentDecision, Payload, RunSequencer};
use bench_task::LoadedScenario;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::agent::RunSummary;
use crate::error::{Error, Exit, Outcome, RunTally};
use crate::recorder::RunRecorder;
use crate::runner::PolicyOverrides;
use crate::sweep::claim::{ClaimBoard, ClaimRecord};
use round::Rounds;

pub use config::DecideConfig;
pub use round::{Keys, Side, INFRA_RETRIES};

/// `policy_id` of an `experiment_decision` stream.
pub const DECISION_POLICY_ID: &str = "decision";

/// Who published the decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Publication {
    /// This worker, on the stream of this run id.
    Published(Uuid),
    /// Another worker, or this command started before (the decision's claim was done).
    Already {
        /// The worker that published it.
        worker: String,
        /// Its stream's run id.
        run_id: Uuid,
    },
    /// Nobody: stopped before the experiment ended, or no round ran.
    Unpublished,
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
    /// Rounds done (by every worker).
    pub rounds_run: u32,
    /// The decision after the last round, with the sequence.
    pub result: SequentialResult,
    /// Every run of this worker, in the order they ended.
    pub runs: Vec<RunSummary>,
    /// Who published the decision.
    pub publication: Publication,
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
        match &self.publication {
            Publication::Published(run_id) => {
                writeln!(f, "decision published (experiment_decision, run {run_id})")?
            }
            Publication::Already { worker, run_id } => writeln!(
                f,
                "decision already published by {worker} (run {run_id}): not published again"
            )?,
            Publication::Unpublished => writeln!(
                f,
                "stopped before the experiment ended: nothing published; the same command resumes it"
            )?,
        }
        let tally = self.tally();
        writeln!(
            f,
            "this worker: {} runs, {} infrastructure failures (no outcome, run again)",
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

/// Runs this worker's share of the experiment of `config` in rounds until decided,
/// `--max-repeats`, or `shutdown`.
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
    let Some(setup) = config.run.publish.clone() else {
        return Err(Error::Config(
            "--until-decided: the runs must be published".into(),
        ));
    };
    // `planned_runs` of every run states the whole plan: every round, both models.
    let mut scenario = LoadedScenario::load(&config.run.scenario, &config.run.load)?;
    scenario.without_broken();
    let planned = u64::from(config.max_repeats) * scenario.tasks.len() as u64 * 2;
    config.run.experiment.planned_runs = Some(u32::try_from(planned).unwrap_or(u32::MAX));
    let policies = Side::BOTH.map(|side| policy_id(&config, &scenario, side.model(&config)));
    let [baseline, candidate] = policies;
    let (baseline, candidate) = (baseline?, candidate?);
    // Claims need the broker now: without it, fail rather than risk running twice.
    let claims = config.claims.config(
        scenario.scenario.config.execution_timeout_ms,
        1 + INFRA_RETRIES,
    );
    let client = bench_nats::connect(&setup.nats, false).await?;
    let js = async_nats::jetstream::new(client);
    let board = ClaimBoard::open(&js, &claims, config.run.host.clone()).await?;
    let keys = Keys::new(&experiment, &config.baseline, &config.candidate);
    let mut rounds = Rounds {
        config: &config,
        board,
        keys: keys.clone(),
        tasks: scenario.tasks.iter().map(|t| t.task.id.clone()).collect(),
        shutdown: &shutdown,
        runs: Vec::new(),
    };
    let mut result =
        sequential::sequential(&[], config.alpha, config.equivalence_margin, config.bet);
    let mut rounds_run = 0;
    let mut ended = false;
    for round in 0..config.max_repeats {
        let Some(ids) = rounds.run(round).await? else {
            break;
        };
        rounds_run = round + 1;
        outcomes::wait_stored(&config.clickhouse, &ids).await?;
        let outcomes = outcomes::read_outcomes(&config.clickhouse, &experiment, round).await?;
        let none = Outcomes::new();
        let of = |policy: &String| outcomes.get(policy).unwrap_or(&none);
        let paired = sequential::rounds(of(&baseline), of(&candidate));
        result =
            sequential::sequential(&paired, config.alpha, config.equivalence_margin, config.bet);
        tracing::info!(
            round,
            decision = result.decision.name(),
            cs_low = ?result.cs_low,
            cs_high = ?result.cs_high,
            "looked at the experiment"
        );
        ended = result.decision != Decision::Undecided || rounds_run == config.max_repeats;
        if ended {
            break;
        }
    }
    let publication = if ended {
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
            detect: config.bet.detect(),
        };
        let key = keys.decision(rounds_run);
        publish_once(&config, &rounds.board, &key, &scenario, decision, &shutdown).await?
    } else {
        Publication::Unpublished
    };
    Ok(DecisionReport {
        experiment,
        baseline,
        candidate,
        rounds_run,
        result,
        runs: rounds.runs,
        publication,
    })
}

/// The `policy_id` of the scenario's policy with `model` (`model:strategy`), as its runs
/// name it.
fn policy_id(
    config: &DecideConfig,
    scenario: &LoadedScenario,
    model: &str,
) -> Result<String, Error> {
    let mut scenario = scenario.clone();
    PolicyOverrides {
        model: Some(model.to_owned()),
        ..config.run.overrides.clone()
    }
    .apply(&mut scenario)?;
    let task = scenario
        .tasks
        .first()
        .ok_or_else(|| Error::Config("--until-decided: no task to run".into()))?;
    let policy = crate::policy::build(&scenario, task, 0, config.run.llm.as_ref())?;
    Ok(policy.policy_id())
}

/// Publishes `decision` unless another worker has (or is about to): the worker that
/// claims `key` publishes and marks it done with the decision's run id; the others wait
/// until it is done (taking the claim over when its lease passed).
async fn publish_once(
    config: &DecideConfig,
    board: &ClaimBoard,
    key: &str,
    scenario: &LoadedScenario,
    decision: ExperimentDecision,
    shutdown: &CancellationToken,
) -> Result<Publication, Error> {
    loop {
        if let Some(ClaimRecord::Done { worker, run_id, .. }) = board.record(key).await? {
            return Ok(Publication::Already { worker, run_id });
        }
        if let Some(claim) = board.claim(key).await? {
            return match publish_decision(config, scenario.sha256.clone(), decision).await {
                Ok(run_id) => {
                    board.complete(claim, run_id, None).await?;
                    Ok(Publication::Published(run_id))
                }
                Err(e) => {
                    board.release(claim).await?;
                    Err(e)
                }
            };
        }
        tokio::select! {
            () = shutdown.cancelled() => return Ok(Publication::Unpublished),
            () = tokio::time::sleep(std::time::Duration::from_millis(250)) => {}
        }
    }
}

/// Publishes `decision` on a stream of its own: `task_id` `experiment:<name>`, `policy_id`
/// [`DECISION_POLICY_ID`], `cfg_hash` the SHA-256 of the two policies compared (one per
/// line), `env_hash` the scenario's; returns the stream's run id.
async fn publish_decision(
    config: &DecideConfig,
    env_hash: bench_schemas::Hash256,
    decision: ExperimentDecision,
) -> Result<Uuid, Error> {
    let Some(setup) = &config.run.publish else {
        return Err(Error::Config(
            "--until-decided: the runs must be published".into(),
        ));
    };
    let publisher = Publisher::connect(setup).await?;
    let pair = format!("{}\n{}", decision.baseline, decision.candidate);
    let run_id = Uuid::now_v7();
    let mut recorder = RunRecorder::new(
        RunSequencer::new(
            run_id,
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
    Ok(run_id)
}
