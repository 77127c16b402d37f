//! One worker's share of the rounds of an experiment run until decided, claimed through
//! the claim bucket of sweeps ([`crate::sweep::claim`]).
//!
//! The unit of work is (round, model side, task), one key each:
//! `decide.<experiment>.<round>.<side>.<task>`, where `<experiment>` is 16 hex digits of
//! the SHA-256 of the experiment's name and its two models (a KV key allows only
//! `[-/_=.a-zA-Z0-9]`), `<side>` is `baseline` or `candidate` and `<task>` 16 hex digits
//! of the task id's SHA-256. A worker claims free units of the round (up to
//! `--concurrency` of one side at a time, baseline first), runs them, and marks each done
//! with its run id; when none is left to claim it waits until every unit of the round is
//! done, taking over a claim whose lease passed (its worker died). The decision of the
//! experiment has a key of its own, `decide.<experiment>.decision.<rounds>`: the worker
//! that creates it publishes the decision, so it is published once.

use std::collections::BTreeMap;
use std::time::Duration;

use bench_schemas::{sha256_hex, ExitStatus};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::config::DecideConfig;
use crate::agent::RunSummary;
use crate::error::Error;
use crate::runner;
use crate::sweep::claim::{Claim, ClaimBoard, ClaimRecord};
use crate::sweep::SweepError;

/// Times a task whose run was an infrastructure failure is run again within its claim.
pub const INFRA_RETRIES: u32 = 2;

/// Between two looks at the claims of a round while other workers run its last units.
const CLAIM_POLL: Duration = Duration::from_millis(500);

/// The two models of the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The first of `--models`.
    Baseline,
    /// The second.
    Candidate,
}

impl Side {
    /// Both, in the order a round runs them.
    pub(super) const BOTH: [Side; 2] = [Side::Baseline, Side::Candidate];

    fn name(self) -> &'static str {
        match self {
            Side::Baseline => "baseline",
            Side::Candidate => "candidate",
        }
    }

    /// The model of this side.
    pub(super) fn model(self, config: &DecideConfig) -> &str {
        match self {
            Side::Baseline => &config.baseline,
            Side::Candidate => &config.candidate,
        }
    }
}

/// The claim keys of one experiment and pair of models (what an operator finds in the
/// bucket).
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// The keys of `experiment` run with the models `baseline` and `candidate`.
    pub fn new(experiment: &str, baseline: &str, candidate: &str) -> Keys {
        let identity = serde_json::json!({
            "experiment": experiment,
            "baseline": baseline,
            "candidate": candidate,
        });
        let digest = sha256_hex(bench_schemas::canonical_json(&identity).as_bytes());
        Keys {
            prefix: format!("decide.{}", &digest.as_str()[..16]),
        }
    }

    /// The key of the run of `task` by `side` in round `round` (from 0).
    pub fn unit(&self, round: u32, side: Side, task: &str) -> String {
        let task = sha256_hex(task.as_bytes());
        format!(
            "{}.{round}.{}.{}",
            self.prefix,
            side.name(),
            &task.as_str()[..16]
        )
    }

    /// The key of the decision made after `rounds` rounds.
    pub fn decision(&self, rounds: u32) -> String {
        format!("{}.decision.{rounds}", self.prefix)
    }
}

/// One unit of a round.
#[derive(Debug, Clone)]
struct Unit {
    side: Side,
    task: String,
    key: String,
}

/// This worker's share of the rounds.
pub(super) struct Rounds<'a> {
    pub(super) config: &'a DecideConfig,
    pub(super) board: ClaimBoard,
    pub(super) keys: Keys,
    /// The tasks of every round, in scenario order.
    pub(super) tasks: Vec<String>,
    pub(super) shutdown: &'a CancellationToken,
    /// Every run of this worker, in the order they ended.
    pub(super) runs: Vec<RunSummary>,
}

impl Rounds<'_> {
    /// Runs round `round` with the other workers, and waits until every unit of it is
    /// done; returns the run id each unit was marked done with, or `None` when shutdown
    /// came first (the units this worker held are released).
    pub(super) async fn run(&mut self, round: u32) -> Result<Option<Vec<Uuid>>, Error> {
        let keys = &self.keys;
        let units: Vec<Unit> = Side::BOTH
            .into_iter()
            .flat_map(|side| {
                self.tasks.iter().map(move |task| Unit {
                    side,
                    task: task.clone(),
                    key: keys.unit(round, side, task),
                })
            })
            .collect();
        let batch_size = self.config.run.concurrency.max(1);
        let mut done: BTreeMap<usize, Uuid> = BTreeMap::new();
        let mut waiting = false;
        loop {
            if self.shutdown.is_cancelled() {
                return Ok(None);
            }
            // Free units of one side, up to the concurrency; the others' states.
            let mut batch: Vec<(usize, Claim)> = Vec::new();
            for (i, unit) in units.iter().enumerate() {
                if done.contains_key(&i) {
                    continue;
                }
                if let Some(ClaimRecord::Done { run_id, .. }) = self.board.record(&unit.key).await?
                {
                    done.insert(i, run_id);
                    continue;
                }
                let fits = batch.len() < batch_size
                    && batch
                        .first()
                        .is_none_or(|(j, _)| units[*j].side == unit.side);
                if fits {
                    if let Some(claim) = self.board.claim(&unit.key).await? {
                        batch.push((i, claim));
                    }
                }
            }
            if !batch.is_empty() {
                match self.run_claimed(round, &units, batch).await? {
                    Some(ran) => done.extend(ran),
                    None => return Ok(None),
                }
                continue;
            }
            if done.len() == units.len() {
                return Ok(Some(done.into_values().collect()));
            }
            if !waiting {
                tracing::info!(
                    round,
                    left = units.len() - done.len(),
                    "no unit of the round left to claim: waiting for the other workers'"
                );
                waiting = true;
            }
            tokio::select! {
                () = self.shutdown.cancelled() => return Ok(None),
                () = tokio::time::sleep(CLAIM_POLL) => {}
            }
        }
    }

    /// Runs the claimed units of `batch` (one side), each task again (up to
    /// [`INFRA_RETRIES`] times) while its run is an infrastructure failure, and marks each
    /// done with its last run; `None` when shutdown cut them short (released, for anyone).
    /// A unit whose runs all failed that way is done without an outcome: the round goes
    /// on, as the counted runs leave that task out of it.
    async fn run_claimed(
        &mut self,
        round: u32,
        units: &[Unit],
        batch: Vec<(usize, Claim)>,
    ) -> Result<Option<Vec<(usize, Uuid)>>, Error> {
        let side = units[batch[0].0].side;
        let model = side.model(self.config).to_owned();
        let mut pending = batch;
        let mut ran = Vec::new();
        for attempt in 0..=INFRA_RETRIES {
            let mut run = self.config.run.clone();
            run.repeats = 1;
            run.first_repeat = round;
            run.overrides.model = Some(model.clone());
            run.load.tasks = Some(
                pending
                    .iter()
                    .map(|(i, _)| units[*i].task.clone())
                    .collect(),
            );
            let report = match runner::run(run, self.shutdown.clone()).await {
                Ok(report) => report,
                Err(e) => {
                    self.release(pending).await?;
                    return Err(e);
                }
            };
            let last: BTreeMap<String, (Uuid, ExitStatus)> = report
                .runs
                .iter()
                .map(|r| (r.task_id.clone(), (r.run_id, r.result.exit_status)))
                .collect();
            self.runs.extend(report.runs);
            if self.shutdown.is_cancelled() {
                self.release(pending).await?;
                return Ok(None);
            }
            if let Some((i, _)) = pending
                .iter()
                .find(|(i, _)| !last.contains_key(&units[*i].task))
            {
                let task = units[*i].task.clone();
                self.release(pending).await?;
                return Err(SweepError::Invalid(format!(
                    "round {round}: task {task} of model {model} did not run"
                ))
                .into());
            }
            let mut again = Vec::new();
            for (i, claim) in pending {
                let (run_id, status) = last[&units[i].task];
                let infrastructure =
                    matches!(status, ExitStatus::ExitApi | ExitStatus::ExitEnvironment);
                if infrastructure && attempt < INFRA_RETRIES {
                    again.push((i, claim));
                    continue;
                }
                if infrastructure {
                    tracing::warn!(
                        model,
                        round,
                        task = %units[i].task,
                        "infrastructure failures only: no outcome for this task in this round"
                    );
                }
                self.board.complete(claim, run_id, None).await?;
                ran.push((i, run_id));
            }
            if again.is_empty() {
                break;
            }
            tracing::warn!(
                model,
                round,
                failed = ?again.iter().map(|(i, _)| &units[*i].task).collect::<Vec<_>>(),
                "infrastructure failures: running those tasks again"
            );
            pending = again;
        }
        Ok(Some(ran))
    }

    async fn release(&self, claims: Vec<(usize, Claim)>) -> Result<(), Error> {
        for (_, claim) in claims {
            self.board.release(claim).await?;
        }
        Ok(())
    }
}
