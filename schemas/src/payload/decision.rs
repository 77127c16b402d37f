//! `experiment_decision`: what an experiment run until decided concluded.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `experiment_decision`: the decision of an experiment of two policies run in rounds
/// until an anytime-valid confidence sequence for their difference in solve rate decided
/// (`agent-runner run --until-decided`). Each decision is a stream of its own: a fresh
/// `run_id` with this one event (`seq` 0), `task_id` `experiment:<name>`, `policy_id`
/// `decision`, `step_id` and `seed` null.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExperimentDecision {
    /// The experiment's name (`run_start.experiment` of its runs).
    pub experiment: String,
    /// The baseline's `policy_id`.
    pub baseline: String,
    /// The candidate's `policy_id`.
    pub candidate: String,
    /// What the sequence decided at the last look.
    pub decision: DecisionKind,
    /// Lower end of the confidence sequence for the difference in solve rate (candidate
    /// minus baseline); null when no round was complete.
    pub cs_low: Option<f64>,
    /// Upper end; null when no round was complete.
    pub cs_high: Option<f64>,
    /// Complete rounds the decision used: every shared task had that many counted runs
    /// of both policies.
    pub rounds: u64,
    /// The level: the sequence holds the true difference at every look with probability
    /// 1 − `alpha`.
    pub alpha: f64,
    /// How the sequence bet: the difference in solve rate its bets were tuned to
    /// (`--detect`); null when they were learnt from the outcomes (aGRAPA), and on
    /// decisions published before this field existed.
    #[serde(default)]
    pub detect: Option<f64>,
}

/// What an anytime-valid comparison of two policies says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// 0 has left the sequence, which lies above it.
    CandidateBetter,
    /// 0 has left the sequence, which lies below it.
    BaselineBetter,
    /// The whole sequence lies within ± the equivalence margin.
    Equivalent,
    /// None of those: the experiment stopped at its maximum of rounds (or was stopped).
    Undecided,
}

impl DecisionKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::CandidateBetter => "candidate_better",
            DecisionKind::BaselineBetter => "baseline_better",
            DecisionKind::Equivalent => "equivalent",
            DecisionKind::Undecided => "undecided",
        }
    }
}
