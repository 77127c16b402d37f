//! What `--until-decided` runs with.

use bench_analysis::compare::sequential::Bet;
use bench_clickhouse::ClickHouseConfig;

use crate::runner::RunnerConfig;
use crate::sweep::claim::ClaimSettings;

/// What `--until-decided` needs, validated.
#[derive(Debug, Clone)]
pub struct DecideConfig {
    /// The runs of every round: scenario, experiment (named), publishing, provider,
    /// host (the worker's name on its claims), concurrency (units run at once).
    /// `repeats`, `first_repeat`, the model and the tasks are set per claim.
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
    /// The claim bucket shared with the other workers of the experiment (that of
    /// sweeps); the lease defaults to the scenario's execution timeout plus ten minutes,
    /// per run a claim may hold (1 + `INFRA_RETRIES`, the retries of an infrastructure
    /// failure).
    pub claims: ClaimSettings,
}
