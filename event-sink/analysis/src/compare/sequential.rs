//! `compare --sequential`: an anytime-valid confidence sequence for the paired difference
//! in solve rate, valid at every look and under optional stopping.
//!
//! # The construction
//!
//! The betting confidence sequence of Waudby-Smith & Ramdas, "Estimating means of bounded
//! random variables by betting", JRSS-B 86(1), 2024, with their aGRAPA bet (Section 5.3).
//! A paired outcome `z = candidate − baseline` of one task in one round lies in [-1, 1];
//! it is mapped to `x = (z + 1) / 2` in [0, 1]. For each candidate mean `m` a gambler
//! starts with wealth 1 and bets `λ (x − m)` on every outcome:
//!
//! ```text
//! K_t(m) = Π (1 + λ_r(m) (x_i − m)),
//! λ_r(m) = clip((μ̂ − m) / (σ̂² + (μ̂ − m)²), −c / (1 − m), c / m),   c = 1/2,
//! μ̂ = (1/2 + Σ x) / (n + 1),   σ̂² = (1/4 + Σ (x − x̄)²) / (n + 1)
//! ```
//!
//! over the `n` outcomes of the rounds before round `r`. The sequence at a look is every
//! `m` whose wealth never reached `1/α` (the running intersection); by Ville's inequality
//! the true mean leaves it with probability at most `α`, however many looks.
//!
//! With `--detect D` (the difference the experiment was planned to detect, `plan
//! --detect`), the gambler bets differently ([`Bet::Tuned`]): half its wealth on the
//! truth lying `D` above `m`, half on it lying `D` below, each with the Kelly bet for
//! that alternative under the running variance (a mixture of bets in the spirit of the
//! paper's diversified Kelly, with two bets sized from the plan instead of a grid of
//! constants):
//!
//! ```text
//! K_t(m) = ½ Π (1 + λ⁺_r (x_i − m)) + ½ Π (1 + λ⁻_r (x_i − m)),
//! λ±_r = clip(±δ / (s² + δ²), −c / (1 − m), c / m),   δ = D / 2,
//! s² = (1/8 + Σ (x − x̄)²) / (n + 1)
//! ```
//!
//! (1/8 is the variance of `x` when both policies solve half the time.) Each half is a
//! product of predictable bets like aGRAPA's, so the mixture is a supermartingale too and
//! the threshold on the mixture, 1/α, is 2/α on the sum of the halves. It decides
//! sooner at the planned difference (it bets that size from the first round, where
//! aGRAPA bets nothing); for a true difference much smaller than `D` its bets are too
//! large. (`tests/bench/src/bin/sequential-sim.rs` measures both.)
//!
//! One change to the paper: the bet is fixed for a whole round (every task once), not
//! per outcome. Tasks have different rates, so one outcome's mean is not the mean being
//! estimated; but the product over a round of `1 + λ (x_i − m)` has expectation
//! `Π (1 + λ (μ_i − m)) ≤ exp(λ Σ (μ_i − m)) = 1` at `m` = the mean `μ` of the tasks'
//! `μ_i`, so the wealth at round ends is a nonnegative supermartingale and Ville applies
//! at every round end, which is where the looks are. The estimand is the mean over the
//! shared tasks of each task's difference in solve rate, the tasks being fixed.
//!
//! The sequence is computed on a grid of differences 0.001 apart and widened by one grid
//! step on each side, so it holds every difference whose wealth stayed below `1/α`.
//! The decision reads the gambler at 0 (on the grid): `candidate_better` or
//! `baseline_better` when 0 has left the sequence, by the sign of the mean difference;
//! `equivalent` when the whole sequence lies strictly inside ±`margin`.

use std::collections::BTreeMap;

use clickhouse::Client;

use super::analyze::{Comparison, Decision, SequentialResult, SINGLE_LOOK_ONLY};
use super::decisions::StoredDecision;
use super::outcomes::{Dimension, PolicyRuns, NO_EXPERIMENT, UNKNOWN};
use super::stats::CONFIDENCE;
use super::{CompareError, Filters};
use crate::queries::Query;
use crate::table::Table;

/// The bet's cap `c`: at most half the wealth is staked on an outcome.
const CAP: f64 = 0.5;

/// How a gambler sizes its bets.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Bet {
    /// aGRAPA: the bet learnt from the outcomes so far; needs no guess of the difference.
    #[default]
    Adaptive,
    /// Tuned to the difference (in (0, 1)) the experiment was planned to detect:
    /// half the wealth bets on it above, half below (see the module docs).
    Tuned(f64),
}

impl Bet {
    /// The difference tuned to; `None` for [`Bet::Adaptive`].
    pub fn detect(self) -> Option<f64> {
        match self {
            Bet::Adaptive => None,
            Bet::Tuned(d) => Some(d),
        }
    }
}

/// Steps of the grid of differences in [-1, 1]; 0 is the middle point.
const GRID_STEPS: usize = 2000;

/// The running sums of the outcomes so far, on the [0, 1] scale.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Running {
    n: f64,
    sum: f64,
    sum_sq: f64,
}

impl Running {
    fn add(&mut self, x: f64) {
        self.n += 1.0;
        self.sum += x;
        self.sum_sq += x * x;
    }

    /// The sum of squared deviations from the mean so far.
    fn spread(&self) -> f64 {
        if self.n > 0.0 {
            (self.sum_sq - self.sum * self.sum / self.n).max(0.0)
        } else {
            0.0
        }
    }

    /// The bets of `bet`'s halves against mean `m` from the outcomes so far (aGRAPA's
    /// second half is never used: it bets nothing and weighs nothing).
    fn bets(&self, bet: Bet, m: f64) -> [f64; 2] {
        let clip = |l: f64| l.clamp(-CAP / (1.0 - m), CAP / m);
        match bet {
            Bet::Adaptive => {
                let mean = (0.5 + self.sum) / (self.n + 1.0);
                let variance = (0.25 + self.spread()) / (self.n + 1.0);
                let gap = mean - m;
                [clip(gap / (variance + gap * gap)), 0.0]
            }
            Bet::Tuned(detect) => {
                let variance = (0.125 + self.spread()) / (self.n + 1.0);
                let gap = detect / 2.0;
                let size = gap / (variance + gap * gap);
                [clip(size), clip(-size)]
            }
        }
    }
}

/// The gambler against one difference.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Gambler {
    /// The difference it bets against, on the [0, 1] scale.
    m: f64,
    /// The log wealth of each half of the bet ([`Bet::Adaptive`] has one: the other stays
    /// at −∞).
    log_wealth: [f64; 2],
    /// Its wealth reached 1/α once: the difference has left the sequence for good.
    rejected: bool,
}

/// The anytime-valid confidence sequence of one pair, fed round by round.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfidenceSequence {
    log_threshold: f64,
    bet: Bet,
    running: Running,
    /// The gamblers, by increasing difference; one stands at 0.
    gamblers: Vec<Gambler>,
    /// Whether `gamblers` is the whole grid (an interval can be read).
    grid: bool,
    rounds: u64,
}

impl ConfidenceSequence {
    /// A sequence at level `1 − alpha` over the whole grid of differences, its gamblers
    /// betting as `bet` says.
    pub fn new(alpha: f64, bet: Bet) -> ConfidenceSequence {
        let points = (1..GRID_STEPS).map(|j| j as f64 / GRID_STEPS as f64 * 2.0 - 1.0);
        Self::build(alpha, bet, points.collect(), true)
    }

    /// A sequence that only tracks 0 and the differences `at` (for simulations: whether
    /// they are in the sequence, without the cost of the grid); it has no interval.
    pub fn at(alpha: f64, bet: Bet, at: &[f64]) -> ConfidenceSequence {
        let mut points = at.to_vec();
        points.push(0.0);
        points.sort_by(f64::total_cmp);
        points.dedup();
        Self::build(alpha, bet, points, false)
    }

    fn build(alpha: f64, bet: Bet, points: Vec<f64>, grid: bool) -> ConfidenceSequence {
        let halves = match bet {
            Bet::Adaptive => [0.0, f64::NEG_INFINITY],
            Bet::Tuned(_) => [0.0, 0.0],
        };
        let gamblers = points
            .into_iter()
            .map(|d| Gambler {
                m: (d + 1.0) / 2.0,
                log_wealth: halves,
                rejected: false,
            })
            .collect();
        // A tuned gambler's wealth is the mean of its halves: its threshold on their sum
        // is 2/α.
        let halves = if bet == Bet::Adaptive { 1.0 } else { 2.0 };
        ConfidenceSequence {
            log_threshold: (halves / alpha).ln(),
            bet,
            running: Running::default(),
            gamblers,
            grid,
            rounds: 0,
        }
    }

    /// Adds a complete round: one paired outcome (candidate − baseline, in [-1, 1]) per
    /// task.
    pub fn push_round(&mut self, outcomes: &[f64]) {
        let xs: Vec<f64> = outcomes
            .iter()
            .map(|z| (z.clamp(-1.0, 1.0) + 1.0) / 2.0)
            .collect();
        for gambler in &mut self.gamblers {
            let bets = self.running.bets(self.bet, gambler.m);
            for (log_wealth, bet) in gambler.log_wealth.iter_mut().zip(bets) {
                *log_wealth += xs
                    .iter()
                    .map(|x| (1.0 + bet * (x - gambler.m)).ln())
                    .sum::<f64>();
            }
            let [a, b] = gambler.log_wealth;
            let total = a.max(b) + (-(a - b).abs()).exp().ln_1p();
            gambler.rejected |= total >= self.log_threshold;
        }
        for x in xs {
            self.running.add(x);
        }
        self.rounds += 1;
    }

    /// Complete rounds fed.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// The mean paired difference so far; `None` before the first outcome.
    pub fn mean(&self) -> Option<f64> {
        (self.running.n > 0.0).then(|| self.running.sum / self.running.n * 2.0 - 1.0)
    }

    /// Whether difference `d` (one given to [`ConfidenceSequence::at`], or a grid point)
    /// has left the sequence; `None` when it is not tracked.
    pub fn excludes(&self, d: f64) -> Option<bool> {
        let m = (d + 1.0) / 2.0;
        self.gamblers
            .iter()
            .find(|g| (g.m - m).abs() < 1e-12)
            .map(|g| g.rejected)
    }

    /// The sequence's ends, widened by one grid step; `None` for a sequence built with
    /// [`ConfidenceSequence::at`], or when every grid point has left (which happens with
    /// probability below α).
    pub fn interval(&self) -> Option<(f64, f64)> {
        if !self.grid {
            return None;
        }
        let step = 2.0 / GRID_STEPS as f64;
        let mut kept = self.gamblers.iter().filter(|g| !g.rejected);
        let first = kept.next()?;
        let last = kept.next_back().unwrap_or(first);
        let d = |g: &Gambler| g.m * 2.0 - 1.0;
        Some(((d(first) - step).max(-1.0), (d(last) + step).min(1.0)))
    }

    /// The decision at this look; `margin` is `--equivalence-margin`.
    pub fn decision(&self, margin: Option<f64>) -> Decision {
        if self.excludes(0.0) == Some(true) {
            match self.mean() {
                Some(mean) if mean > 0.0 => return Decision::CandidateBetter,
                Some(mean) if mean < 0.0 => return Decision::BaselineBetter,
                _ => {}
            }
        }
        match (margin, self.interval()) {
            (Some(e), Some((low, high))) if low > -e && high < e => Decision::Equivalent,
            _ => Decision::Undecided,
        }
    }
}

/// The sequence of `rounds`, each the paired outcomes of the shared tasks in that round,
/// its gamblers betting as `bet` says.
pub fn sequential(
    rounds: &[Vec<f64>],
    alpha: f64,
    margin: Option<f64>,
    bet: Bet,
) -> SequentialResult {
    let mut sequence = ConfidenceSequence::new(alpha, bet);
    for round in rounds {
        sequence.push_round(round);
    }
    let interval = sequence.interval().filter(|_| sequence.rounds() > 0);
    SequentialResult {
        cs_low: interval.map(|i| i.0),
        cs_high: interval.map(|i| i.1),
        rounds: sequence.rounds(),
        decision: sequence.decision(margin),
        sequential_alpha: alpha,
        sequential_detect: bet.detect(),
        single_look_only: SINGLE_LOOK_ONLY,
        stored_decision: None,
    }
}

/// Per task id, the outcomes of a policy's counted runs (1 solved, 0 not) in round
/// order: a task's k-th run of a policy, by `repeat` when set, otherwise by run start
/// time, is round k.
pub type Outcomes = BTreeMap<String, Vec<u8>>;

/// The rounds of a pair: `baseline` and `candidate` hold, per task, the counted runs'
/// outcomes (1 solved, 0 not) in round order. Only tasks both ran are used; round k
/// holds the k-th run of each, and only rounds complete on every shared task.
pub fn rounds(baseline: &Outcomes, candidate: &Outcomes) -> Vec<Vec<f64>> {
    let shared: Vec<(&Vec<u8>, &Vec<u8>)> = baseline
        .iter()
        .filter_map(|(task, b)| Some((b, candidate.get(task)?)))
        .filter(|(b, c)| !b.is_empty() && !c.is_empty())
        .collect();
    let complete = shared
        .iter()
        .map(|(b, c)| b.len().min(c.len()))
        .min()
        .unwrap_or(0);
    (0..complete)
        .map(|k| {
            shared
                .iter()
                .map(|(b, c)| f64::from(c[k]) - f64::from(b[k]))
                .collect()
        })
        .collect()
}

/// Reads the counted runs `filters` select (the `run_outcomes` query) and files their
/// outcomes under the label of the policy of `policies` they belong to (grouped by `by`
/// and split by scoring version as [`super::group`] does), per task in round order (by
/// `repeat` when set, else by start time).
pub async fn load_outcomes(
    client: &Client,
    filters: &Filters,
    by: &[Dimension],
    policies: &[PolicyRuns],
) -> Result<BTreeMap<String, Outcomes>, CompareError> {
    let table = Query::find("run_outcomes")?
        .run(client, &filters.params(true)?)
        .await?;
    outcomes_by_label(&table, by, policies)
}

/// The outcomes of the rows of `table` (a `run_outcomes` answer), by label of `policies`.
pub fn outcomes_by_label(
    table: &Table,
    by: &[Dimension],
    policies: &[PolicyRuns],
) -> Result<BTreeMap<String, Outcomes>, CompareError> {
    file_runs(table, |row| {
        let group = by
            .iter()
            .map(|d| d.value(table, row).unwrap_or(UNKNOWN))
            .collect::<Vec<_>>()
            .join(":");
        let scoring = table.get(row, "scoring_version");
        let experiment = table.get(row, "experiment").unwrap_or(NO_EXPERIMENT);
        policies
            .iter()
            .find(|p| {
                p.group == group
                    && p.scoring_version.as_deref() == scoring
                    && p.experiments.contains(experiment)
            })
            .map(|p| p.label.clone()) // None: a policy not compared (--policy).
    })
}

/// The outcomes of the rows of `table` (a `run_outcomes` answer) by `policy_id`: what
/// `agent-runner run --until-decided` reads of its experiment.
pub fn outcomes_by_policy_id(table: &Table) -> Result<BTreeMap<String, Outcomes>, CompareError> {
    file_runs(table, |row| table.get(row, "policy_id").map(str::to_owned))
}

/// Files the runs of `table` under `label_of` their row (rows it gives `None` are left
/// out), per task in round order: by `repeat` when the run has one (runs without one
/// after those with), then by start time, then by run id.
fn file_runs(
    table: &Table,
    label_of: impl Fn(usize) -> Option<String>,
) -> Result<BTreeMap<String, Outcomes>, CompareError> {
    type Runs = Vec<((u64, i64, String), u8)>;
    let mut runs: BTreeMap<(String, String), Runs> = BTreeMap::new();
    for row in 0..table.rows.len() {
        let Some(label) = label_of(row) else {
            continue;
        };
        let bad = |name: &str, reason: String| CompareError::RunRow {
            row,
            reason: format!("{name}: {reason}"),
        };
        let needed = |name: &str| {
            table
                .get(row, name)
                .ok_or_else(|| bad(name, "NULL or absent".into()))
        };
        let repeat = match table.get(row, "repeat") {
            Some(text) => text
                .parse::<u32>()
                .map_err(|e| bad("repeat", e.to_string()))?
                .into(),
            None => u64::MAX,
        };
        let started = needed("started_ms")?
            .parse::<i64>()
            .map_err(|e| bad("started_ms", e.to_string()))?;
        let solved = needed("solved")?
            .parse::<u8>()
            .map_err(|e| bad("solved", e.to_string()))?;
        let order = (repeat, started, needed("run_id")?.to_owned());
        runs.entry((label, needed("task_id")?.to_owned()))
            .or_default()
            .push((order, solved));
    }
    let mut by_label: BTreeMap<String, Outcomes> = BTreeMap::new();
    for ((label, task), mut task_runs) in runs {
        task_runs.sort();
        let outcomes = task_runs.into_iter().map(|(_, solved)| solved).collect();
        by_label.entry(label).or_default().insert(task, outcomes);
    }
    Ok(by_label)
}

/// Adds the sequence of each pair of `comparison`, from the runs' `outcomes` by label,
/// at the level of `compare`'s intervals.
pub fn attach(
    comparison: &mut Comparison,
    outcomes: &BTreeMap<String, Outcomes>,
    margin: Option<f64>,
    bet: Bet,
) {
    let none = Outcomes::new();
    for pair in &mut comparison.comparisons {
        let of = |label: &String| outcomes.get(label).unwrap_or(&none);
        let rounds = rounds(of(&pair.baseline), of(&pair.candidate));
        pair.sequential = Some(sequential(&rounds, 1.0 - CONFIDENCE, margin, bet));
    }
}

/// Files the stored decisions beside the sequences of `comparison`: a pair gets the
/// latest decision of an experiment both its policies ran in whose two policies
/// (either way round) are the pair's.
pub fn attach_stored(
    comparison: &mut Comparison,
    policies: &[PolicyRuns],
    stored: &[StoredDecision],
) {
    let of = |label: &str| policies.iter().find(|p| p.label == label);
    for pair in &mut comparison.comparisons {
        let (Some(b), Some(c)) = (of(&pair.baseline), of(&pair.candidate)) else {
            continue;
        };
        let Some(sequential) = &mut pair.sequential else {
            continue;
        };
        sequential.stored_decision = stored
            .iter()
            .filter(|d| {
                let named = (d.baseline == b.group && d.candidate == c.group)
                    || (d.baseline == c.group && d.candidate == b.group);
                named
                    && b.experiments.contains(&d.experiment)
                    && c.experiments.contains(&d.experiment)
            })
            .max_by_key(|d| d.decided_ms)
            .cloned();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clear_win_decides_and_a_tie_stays_undecided() {
        // 40 tasks, the candidate solves 60 % more of them every round.
        let round: Vec<f64> = (0..40).map(|i| if i % 5 < 3 { 1.0 } else { 0.0 }).collect();
        let win = sequential(&vec![round; 4], 0.05, None, Bet::Adaptive);
        assert_eq!(win.decision, Decision::CandidateBetter);
        let (low, high) = (win.cs_low.expect("rounds"), win.cs_high.expect("rounds"));
        assert!(low > 0.0 && high >= 0.6 && low < 0.6, "{low}..{high}");

        let tie: Vec<f64> = (0..40).map(|i| [1.0, -1.0, 0.0, 0.0][i % 4]).collect();
        let tie = sequential(&vec![tie; 3], 0.05, None, Bet::Adaptive);
        assert_eq!(tie.decision, Decision::Undecided);
    }

    #[test]
    fn equivalence_needs_the_whole_sequence_inside_the_margin() {
        let round = vec![0.0; 50];
        let rounds = vec![round; 20];
        assert_eq!(
            sequential(&rounds, 0.05, Some(0.1), Bet::Adaptive).decision,
            Decision::Equivalent
        );
        assert_eq!(
            sequential(&rounds, 0.05, None, Bet::Adaptive).decision,
            Decision::Undecided
        );
        assert_eq!(
            sequential(&rounds[..1], 0.05, Some(0.1), Bet::Adaptive).decision,
            Decision::Undecided
        );
    }

    #[test]
    fn no_complete_round_is_no_interval() {
        let answer = sequential(&[], 0.05, None, Bet::Adaptive);
        assert_eq!((answer.cs_low, answer.rounds), (None, 0));
        assert_eq!(answer.decision, Decision::Undecided);
    }

    #[test]
    fn rounds_pair_the_kth_runs_of_shared_tasks_and_stop_at_the_shortest() {
        let base: Outcomes = [
            ("a".to_owned(), vec![1, 0, 1]),
            ("b".to_owned(), vec![0, 0]),
            ("only-base".to_owned(), vec![1]),
        ]
        .into();
        let cand: Outcomes = [
            ("a".to_owned(), vec![0, 1, 1]),
            ("b".to_owned(), vec![1, 1, 1]),
        ]
        .into();
        assert_eq!(rounds(&base, &cand), vec![vec![-1.0, 1.0], vec![1.0, 1.0]]);
    }

    #[test]
    fn runs_are_filed_in_repeat_order_when_set_else_in_start_order() {
        let table = Table::from_tsv_with_names_and_types(
            "policy_id\ttask_id\trepeat\tstarted_ms\trun_id\tsolved\n\
             String\tString\tNullable(UInt32)\tInt64\tString\tUInt8\n\
             a:raw\tt1\t1\t10\tr1\t0\n\
             a:raw\tt1\t0\t30\tr2\t1\n\
             a:raw\tt2\t\\N\t30\tr3\t0\n\
             a:raw\tt2\t\\N\t5\tr4\t1\n\
             b:raw\tt1\t\\N\t20\tr5\t1\n",
        )
        .expect("parses");
        let outcomes = outcomes_by_policy_id(&table).expect("reads");
        assert_eq!(
            outcomes["a:raw"]["t1"],
            vec![1, 0],
            "repeat 0 first, though later"
        );
        assert_eq!(
            outcomes["a:raw"]["t2"],
            vec![1, 0],
            "no repeat: start order"
        );
        assert_eq!(outcomes["b:raw"]["t1"], vec![1]);
    }

    /// `run_outcomes` repeats the counting rules of `paired_outcomes`: over both fixture
    /// datasets (whose answers the query tests hold to ClickHouse 18.16 and chdb), it
    /// lists exactly the runs and successes `paired_outcomes` counts.
    #[test]
    fn run_outcomes_lists_exactly_the_runs_paired_outcomes_counts() {
        type Counts = BTreeMap<(String, String, String), (u64, u64)>;
        let read = |dataset: &str, query: &str| -> Vec<BTreeMap<String, String>> {
            let path = format!(
                "{}/../../deploy/clickhouse/fixtures/{dataset}expected/{query}.csv",
                env!("CARGO_MANIFEST_DIR")
            );
            let text = std::fs::read_to_string(&path).expect("expected answer");
            let mut lines = text.lines();
            let names: Vec<&str> = lines.next().expect("header").split(',').collect();
            lines
                .map(|l| {
                    names
                        .iter()
                        .map(|n| n.to_string())
                        .zip(l.split(',').map(str::to_owned))
                        .collect()
                })
                .collect()
        };
        for dataset in ["", "pipeline/"] {
            let key = |r: &BTreeMap<String, String>| {
                (
                    r["task_id"].clone(),
                    r["policy_id"].clone(),
                    r["cfg_hash"].clone(),
                )
            };
            let number =
                |r: &BTreeMap<String, String>, k: &str| -> u64 { r[k].parse().expect("a count") };
            let mut counted = Counts::new();
            for row in read(dataset, "paired_outcomes") {
                let entry = counted.entry(key(&row)).or_default();
                entry.0 += number(&row, "runs");
                entry.1 += number(&row, "successes");
            }
            counted.retain(|_, (runs, _)| *runs > 0);
            let mut listed = Counts::new();
            for row in read(dataset, "run_outcomes") {
                let entry = listed.entry(key(&row)).or_default();
                entry.0 += 1;
                entry.1 += number(&row, "solved");
            }
            assert_eq!(listed, counted, "dataset {dataset:?}");
            assert!(!listed.is_empty());
        }
    }

    /// The stored decisions filed beside the sequences.
    mod stored {
        use super::*;
        use crate::compare::analyze::{compare, Settings};

        fn decision(experiment: &str, baseline: &str, candidate: &str, ms: i64) -> StoredDecision {
            StoredDecision {
                experiment: experiment.to_owned(),
                baseline: baseline.to_owned(),
                candidate: candidate.to_owned(),
                decision: "candidate_better".to_owned(),
                cs_low: Some(0.02),
                cs_high: Some(0.4),
                rounds: 3,
                alpha: 0.05,
                detect: None,
                decided_ms: ms,
            }
        }

        fn policy(label: &str, experiment: &str) -> PolicyRuns {
            PolicyRuns {
                label: label.to_owned(),
                group: label.to_owned(),
                experiments: [experiment.to_owned()].into(),
                ..PolicyRuns::default()
            }
        }

        #[test]
        fn a_pair_gets_the_latest_decision_of_an_experiment_both_ran_either_way_round() {
            let policies = [policy("a", "ab"), policy("b", "ab")];
            let settings = Settings {
                baseline: Some("a".to_owned()),
                margin: 0.05,
                seed: 1,
                resamples: 10,
            };
            let mut comparison = compare(&policies, &settings);
            comparison.comparisons[0].sequential = Some(sequential(&[], 0.05, None, Bet::Adaptive));
            let stored = [
                decision("ab", "a", "b", 10),
                decision("ab", "b", "a", 20),
                decision("other", "a", "b", 30),
                decision("ab", "a", "c", 40),
            ];
            attach_stored(&mut comparison, &policies, &stored);
            let shown = comparison.comparisons[0]
                .sequential
                .as_ref()
                .and_then(|s| s.stored_decision.clone());
            assert_eq!(
                shown,
                Some(stored[1].clone()),
                "the latest of ab's pair a, b"
            );
            assert_eq!(
                stored[1].summary(),
                "candidate_better after 3 rounds (+0.0200 .. +0.4000, alpha 0.05, bets learnt), decided 1970-01-01 00:00:00 UTC"
            );
        }
    }
}
