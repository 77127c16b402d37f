//! The answer of `compare`: per policy, its solve rate with a Wilson interval (over every
//! counted run, and over the runs no integrity flag singles out), its cost
//! with bootstrap intervals, turns, tokens and (with repeats) pass@k and pass^k; per pair
//! of policies, on the tasks both ran, the paired difference in solve rate and cost
//! with paired bootstrap intervals, an exact test, Holm-adjusted p-values, a
//! non-inferiority verdict and the minimum detectable difference.
//!
//! Pure computation over [`PolicyRuns`]: no I/O. The field names of [`Comparison`] are the
//! JSON output of `compare --format json`, documented in event-sink/analysis/README.md.

use serde::Serialize;

use super::decisions::StoredDecision;
use super::outcomes::{Exclusions, PolicyRuns, TaskRuns};
use super::resample::{bootstrap, mean_at, stream_seed};
use super::stats::{
    binomial_two_sided, clustered_mean, holm, mean_over_tasks, min_detectable_difference,
    pass_at_k, pass_hat_k, tasks_needed, wilson, Interval, CONFIDENCE, POWER,
};

/// The non-inferiority margin unless `--margin` says otherwise: 5 points of solve rate.
pub const DEFAULT_MARGIN: f64 = 0.05;

/// How to compare: which pairs, the margin, and the bootstrap's size and seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Compare every other policy with this one (its group label); `None`: every pair.
    pub baseline: Option<String>,
    /// The non-inferiority margin, as a difference in solve rate (0.05 = 5 points).
    pub margin: f64,
    /// Seed of the bootstrap's generator.
    pub seed: u64,
    /// Resamples per bootstrap interval.
    pub resamples: usize,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The level of every interval (0.95).
    pub confidence: f64,
    /// The power the minimum detectable differences are for (0.8).
    pub power: f64,
    /// The non-inferiority margin used.
    pub margin: f64,
    /// The bootstrap's seed and resamples.
    pub seed: u64,
    /// Bootstrap resamples drawn.
    pub resamples: usize,
    /// Each policy over its counted runs.
    pub policies: Vec<PolicySummary>,
    /// Each candidate against the baseline.
    pub comparisons: Vec<PairComparison>,
    /// What to know before reading the numbers: policies that pool the runs of several
    /// experiments (asked for with `--pool-experiments`).
    pub notes: Vec<String>,
}

/// One policy over its counted runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicySummary {
    /// The policy's label (see [`PolicyRuns::label`]).
    pub policy_id: String,
    /// The judge version of its runs; null when the runs do not say.
    pub scoring_version: Option<String>,
    /// The experiments its runs belong to (`(none)`: outside any); several only when
    /// they were pooled.
    pub experiments: Vec<String>,
    /// Counted runs, the tasks they cover, and the solved runs.
    pub runs: u64,
    /// Tasks the counted runs cover.
    pub tasks: u64,
    /// Counted runs judged solved.
    pub solved: u64,
    /// solved / runs, with its Wilson interval; null without runs.
    pub rate: Option<f64>,
    /// Lower bound of `rate`'s interval.
    pub rate_ci_low: Option<f64>,
    /// Upper bound of `rate`'s interval.
    pub rate_ci_high: Option<f64>,
    /// The standard error of `rate` clustered by task (Miller 2024): the runs of one task
    /// share its difficulty, so with repeats it is wider than the binomial one.
    pub rate_se_clustered: Option<f64>,
    /// Lower bound of `rate ± 1.96 · rate_se_clustered`.
    pub rate_ci_clustered_low: Option<f64>,
    /// Upper bound of `rate ± 1.96 · rate_se_clustered`.
    pub rate_ci_clustered_high: Option<f64>,
    /// Tasks solved at least once (by any of their counted runs).
    pub tasks_solved_once: u64,
    /// Tasks solved in every counted run.
    pub tasks_solved_every_repeat: u64,
    /// Runs left out, by reason (never counted as failures).
    pub excluded: Exclusions,
    /// Counted runs an integrity flag singles out.
    pub flagged_runs: u64,
    /// Counted runs whose flags are unknown: neither flagged nor clean.
    pub integrity_unknown_runs: u64,
    /// Counted runs whose every integrity flag is known and clear.
    pub clean_runs: u64,
    /// Solved runs among `clean_runs`.
    pub clean_solved: u64,
    /// `clean_solved / clean_runs`; null without clean runs.
    pub clean_rate: Option<f64>,
    /// Lower bound of `clean_rate`'s Wilson 95 % interval.
    pub clean_rate_ci_low: Option<f64>,
    /// Upper bound of `clean_rate`'s Wilson 95 % interval.
    pub clean_rate_ci_high: Option<f64>,
    /// Counted runs whose cost is known.
    pub priced_runs: u64,
    /// Mean cost per run, USD, with its bootstrap interval (tasks resampled); null when
    /// any counted run's cost is unknown.
    pub mean_cost_usd: Option<f64>,
    /// Lower bound of `mean_cost_usd`'s interval.
    pub mean_cost_ci_low: Option<f64>,
    /// Upper bound of `mean_cost_usd`'s interval.
    pub mean_cost_ci_high: Option<f64>,
    /// Total cost / solved runs, USD, with its bootstrap interval; null when a cost is
    /// unknown or nothing was solved.
    pub cost_per_solved_usd: Option<f64>,
    /// Lower bound of `cost_per_solved_usd`'s interval.
    pub cost_per_solved_ci_low: Option<f64>,
    /// Upper bound of `cost_per_solved_usd`'s interval.
    pub cost_per_solved_ci_high: Option<f64>,
    /// Mean turns over the counted runs whose turns are known (`turn_runs`).
    pub turn_runs: u64,
    /// The mean; null when no run's turns are known.
    pub mean_turns: Option<f64>,
    /// Mean total tokens over the counted runs whose tokens are known (`token_runs`).
    pub token_runs: u64,
    /// The mean; null when no run's tokens are known.
    pub mean_tokens: Option<f64>,
    /// pass@k and pass^k per k, when some task was run more than once; else null.
    pub repeats: Option<Repeats>,
}

/// What repeated runs of a task say.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Repeats {
    /// For k = 1 up to the most runs of a task.
    pub pass_at_k: Vec<PassAtK>,
    /// The mean over tasks run at least twice of the sample variance of their outcomes
    /// (0 = every task always or never solved), and how many tasks that is.
    pub outcome_variance: f64,
    /// The tasks run at least twice, which `outcome_variance` averages over.
    pub variance_tasks: u64,
}

/// pass@k and pass^k at one k, averaged over the tasks with at least k runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassAtK {
    /// The number of runs drawn.
    pub k: u64,
    /// The tasks with at least k counted runs.
    pub tasks: u64,
    /// Some of k runs succeeds (unbiased estimator of Chen et al. 2021).
    pub pass_at_k: f64,
    /// Lower bound of pass@k's 95 % interval (standard error over the tasks).
    pub pass_at_k_ci_low: f64,
    /// Upper bound of pass@k's interval.
    pub pass_at_k_ci_high: f64,
    /// All of k runs succeed (pass^k, τ-bench).
    pub pass_hat_k: f64,
    /// Lower bound of pass^k's 95 % interval (standard error over the tasks).
    pub pass_hat_k_ci_low: f64,
    /// Upper bound of pass^k's interval.
    pub pass_hat_k_ci_high: f64,
}

/// A candidate against a baseline, on the tasks both ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairComparison {
    /// The baseline policy's label.
    pub baseline: String,
    /// The candidate policy's label.
    pub candidate: String,
    /// Tasks with counted runs of both.
    pub tasks: u64,
    /// Mean over those tasks of each policy's per-task solve rate.
    pub baseline_rate: Option<f64>,
    /// The same for the candidate.
    pub candidate_rate: Option<f64>,
    /// candidate_rate − baseline_rate, with its paired bootstrap interval.
    pub difference: Option<f64>,
    /// Lower bound of `difference`'s interval.
    pub ci_low: Option<f64>,
    /// Upper bound of `difference`'s interval.
    pub ci_high: Option<f64>,
    /// The standard error of `difference` clustered by task (each task's difference of
    /// rates is one cluster), and the normal interval it gives.
    pub difference_se_clustered: Option<f64>,
    /// Lower bound of `difference ± 1.96 · difference_se_clustered`.
    pub clustered_ci_low: Option<f64>,
    /// Upper bound of `difference ± 1.96 · difference_se_clustered`.
    pub clustered_ci_high: Option<f64>,
    /// Tasks where the candidate's rate is higher, and where the baseline's is.
    pub candidate_better: u64,
    /// Tasks where the baseline's rate is higher.
    pub baseline_better: u64,
    /// The exact two-sided p-value of `method`, and Holm-adjusted over every
    /// comparison of the call.
    pub p_value: Option<f64>,
    /// `p_value`, Holm-adjusted.
    pub p_adjusted: Option<f64>,
    /// `mcnemar-exact` (one run per task and policy) or `sign-test-exact` (the signs of
    /// the per-task rate differences, with repeats).
    pub method: Option<&'static str>,
    /// Mean over the tasks of the per-task difference in mean cost per run, USD, with
    /// its paired bootstrap interval; null when any of the runs' costs is unknown.
    pub cost_difference: Option<f64>,
    /// Lower bound of `cost_difference`'s interval.
    pub cost_ci_low: Option<f64>,
    /// Upper bound of `cost_difference`'s interval.
    pub cost_ci_high: Option<f64>,
    /// Whether the candidate is non-inferior: `ci_low > -margin`.
    pub non_inferior: Option<bool>,
    /// The probability that a random pair of runs (one each) disagrees on a task,
    /// averaged over the tasks: (b + c) / n with one run each.
    pub discordance: Option<f64>,
    /// The smallest difference the test detects with 80 % power on these tasks at this
    /// discordance (normal approximation of McNemar, Connor 1987); null when no pair
    /// disagreed or too few tasks.
    pub min_detectable_difference: Option<f64>,
    /// The paired tasks needed to detect the observed difference with 80 % power;
    /// null when the difference is 0.
    pub tasks_needed: Option<u64>,
    /// A reason to read the result with care (different scoring versions).
    pub note: Option<String>,
    /// The p-value, the detectable difference and the tasks needed in one sentence,
    /// saying what each means.
    pub reading: Option<String>,
    /// `--sequential`: the anytime-valid confidence sequence and its decision.
    #[serde(flatten)]
    pub sequential: Option<SequentialResult>,
}

/// Compares `policies` under `settings`.
pub fn compare(policies: &[PolicyRuns], settings: &Settings) -> Comparison {
    let summaries = summarize_all(policies, settings);
    let pairs: Vec<(&PolicyRuns, &PolicyRuns)> = match &settings.baseline {
        Some(baseline) => policies
            .iter()
            .filter(|b| &b.group == baseline)
            .flat_map(|b| {
                policies
                    .iter()
                    .filter(move |c| &c.group != baseline)
                    .map(move |c| (b, c))
            })
            .collect(),
        None => policies
            .iter()
            .enumerate()
            .flat_map(|(i, b)| policies[i + 1..].iter().map(move |c| (b, c)))
            .collect(),
    };
    let mut comparisons = parallel_map(&pairs, |(b, c)| pair(b, c, settings));
    let tested: Vec<usize> = (0..comparisons.len())
        .filter(|&i| comparisons[i].p_value.is_some())
        .collect();
    let raw: Vec<f64> = tested
        .iter()
        .filter_map(|&i| comparisons[i].p_value)
        .collect();
    for (&i, adjusted) in tested.iter().zip(holm(&raw)) {
        comparisons[i].p_adjusted = Some(adjusted);
    }
    for comparison in &mut comparisons {
        comparison.reading = reading(comparison);
    }
    let task_sets: std::collections::BTreeSet<Vec<&String>> =
        policies.iter().map(|p| p.tasks.keys().collect()).collect();
    let different_tasks = (task_sets.len() > 1).then(|| {
        let counts: Vec<String> = policies
            .iter()
            .map(|p| format!("{} {}", p.label, p.tasks.len()))
            .collect();
        format!(
            "the policies ran different task sets (tasks: {}): each comparison is made on \
             the tasks both ran, counted in its tasks column",
            counts.join(", ")
        )
    });
    let notes = different_tasks
        .into_iter()
        .chain(
            policies
                .iter()
                .filter(|p| p.experiments.len() > 1)
                .map(|p| {
                    let names: Vec<&str> = p.experiments.iter().map(String::as_str).collect();
                    format!(
                        "{} pools the runs of {} experiments ({}), as asked",
                        p.label,
                        names.len(),
                        names.join(", ")
                    )
                }),
        )
        .chain(policies.iter().filter_map(|p| {
            let (configs, settings) = p.pooled_configs.as_ref()?;
            Some(format!(
                "{} pools the runs of {configs} configs that differ in {}: add cfg to --by \
                 to keep them apart",
                p.label,
                settings.join(", ")
            ))
        }))
        .collect();
    Comparison {
        confidence: CONFIDENCE,
        power: POWER,
        margin: settings.margin,
        seed: settings.seed,
        resamples: settings.resamples,
        policies: summaries,
        comparisons,
        notes,
    }
}

/// `f` of every item, in order, spread over the machine's cores: each bootstrap draws
/// from its own seeded stream, so the answer does not depend on the threads.
fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = items.len().div_ceil(threads).max(1);
    if items.len() <= 1 || threads == 1 {
        return items.iter().map(&f).collect();
    }
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            // A panic in a worker is a bug in this module; re-raise it here.
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// [`summarize`] of every policy, in order, spread over the machine's cores.
pub fn summarize_all(policies: &[PolicyRuns], settings: &Settings) -> Vec<PolicySummary> {
    parallel_map(policies, |p| summarize(p, settings))
}

/// One policy over its counted runs: what `compare` lists per policy, without the
/// pairs (the viewer's leaderboard).
pub fn summarize(policy: &PolicyRuns, settings: &Settings) -> PolicySummary {
    let tasks: Vec<&TaskRuns> = policy.tasks.values().collect();
    let mut total = TaskRuns::default();
    for task in &tasks {
        total.add(task);
    }
    let rate_ci = wilson(total.successes, total.runs);
    let clustered = clustered_mean(
        &tasks
            .iter()
            .map(|t| (t.successes as f64, t.runs as f64))
            .collect::<Vec<_>>(),
    );
    let clean_rate_ci = wilson(total.clean_successes, total.clean_runs);
    let cost_known = total.runs > 0 && tasks.iter().all(|t| t.cost_known());
    let ratio = |num: f64, den: u64| (den > 0).then(|| num / den as f64);
    let clean_rate = ratio(total.clean_successes as f64, total.clean_runs);
    let (mean_cost, per_solved) = if cost_known {
        (
            ratio(total.cost_usd, total.runs),
            ratio(total.cost_usd, total.successes),
        )
    } else {
        (None, None)
    };
    let [mean_cost_ci, per_solved_ci] = if cost_known {
        // Each task's cost, runs and successes; the counts summed as floats are exact
        // (whole numbers far below 2^53), so the ratios are those of integer counts.
        let per_task: Vec<[f64; 3]> = tasks
            .iter()
            .map(|t| [t.cost_usd, t.runs as f64, t.successes as f64])
            .collect();
        bootstrap(
            &per_task,
            settings.resamples,
            stream_seed(settings.seed, &policy.label),
            |[spent, runs, solved]| {
                let ratio = |num: f64, den: f64| (den > 0.0).then(|| num / den);
                [ratio(spent, runs), ratio(spent, solved)]
            },
        )
    } else {
        [None, None]
    };
    PolicySummary {
        policy_id: policy.label.clone(),
        scoring_version: policy.scoring_version.clone(),
        experiments: policy.experiments.iter().cloned().collect(),
        runs: total.runs,
        tasks: tasks.len() as u64,
        solved: total.successes,
        rate: total.rate(),
        rate_ci_low: rate_ci.map(|i| i.low),
        rate_ci_high: rate_ci.map(|i| i.high),
        rate_se_clustered: clustered.map(|c| c.se),
        rate_ci_clustered_low: clustered.map(|c| c.interval.low.max(0.0)),
        rate_ci_clustered_high: clustered.map(|c| c.interval.high.min(1.0)),
        tasks_solved_once: tasks.iter().filter(|t| t.successes > 0).count() as u64,
        tasks_solved_every_repeat: tasks
            .iter()
            .filter(|t| t.runs > 0 && t.successes == t.runs)
            .count() as u64,
        excluded: policy.excluded,
        flagged_runs: total.flagged_runs,
        integrity_unknown_runs: total.integrity_unknown_runs,
        clean_runs: total.clean_runs,
        clean_solved: total.clean_successes,
        clean_rate,
        clean_rate_ci_low: clean_rate_ci.map(|i| i.low),
        clean_rate_ci_high: clean_rate_ci.map(|i| i.high),
        priced_runs: total.priced_runs,
        mean_cost_usd: mean_cost,
        mean_cost_ci_low: mean_cost_ci.map(|i| i.low),
        mean_cost_ci_high: mean_cost_ci.map(|i| i.high),
        cost_per_solved_usd: per_solved,
        cost_per_solved_ci_low: per_solved_ci.map(|i| i.low),
        cost_per_solved_ci_high: per_solved_ci.map(|i| i.high),
        turn_runs: total.turn_runs,
        mean_turns: ratio(total.turns, total.turn_runs),
        token_runs: total.token_runs,
        mean_tokens: ratio(total.tokens, total.token_runs),
        repeats: repeats(&tasks),
    }
}

/// pass@k, pass^k and the outcome variance, when some task has two counted runs or more.
fn repeats(tasks: &[&TaskRuns]) -> Option<Repeats> {
    let most = tasks.iter().map(|t| t.runs).max().filter(|&n| n >= 2)?;
    let pass_at_k = (1..=most)
        .map(|k| {
            let at: Vec<(f64, f64)> = tasks
                .iter()
                .filter_map(|t| {
                    Some((
                        pass_at_k(t.runs, t.successes, k)?,
                        pass_hat_k(t.runs, t.successes, k)?,
                    ))
                })
                .collect();
            let over_tasks = |values: Vec<f64>| mean_over_tasks(&values, (0.0, 1.0));
            let at_k = over_tasks(at.iter().map(|(a, _)| *a).collect());
            let hat_k = over_tasks(at.iter().map(|(_, h)| *h).collect());
            // Every task here has k runs or more: `at` is never empty for k <= most.
            let parts = |m: Option<super::stats::ClusteredMean>| {
                m.map_or((f64::NAN, f64::NAN, f64::NAN), |m| {
                    (m.mean, m.interval.low, m.interval.high)
                })
            };
            let (at_mean, at_low, at_high) = parts(at_k);
            let (hat_mean, hat_low, hat_high) = parts(hat_k);
            PassAtK {
                k,
                tasks: at.len() as u64,
                pass_at_k: at_mean,
                pass_at_k_ci_low: at_low,
                pass_at_k_ci_high: at_high,
                pass_hat_k: hat_mean,
                pass_hat_k_ci_low: hat_low,
                pass_hat_k_ci_high: hat_high,
            }
        })
        .collect();
    let variances: Vec<f64> = tasks
        .iter()
        .filter(|t| t.runs >= 2)
        .map(|t| {
            let (n, c) = (t.runs as f64, t.successes as f64);
            c * (n - c) / (n * (n - 1.0))
        })
        .collect();
    Some(Repeats {
        pass_at_k,
        outcome_variance: variances.iter().sum::<f64>() / variances.len() as f64,
        variance_tasks: variances.len() as u64,
    })
}

/// One task both policies ran: their rates, and their mean costs when known.
struct SharedTask {
    baseline: f64,
    candidate: f64,
    single: bool,
    cost: Option<(f64, f64)>,
}

fn pair(baseline: &PolicyRuns, candidate: &PolicyRuns, settings: &Settings) -> PairComparison {
    let shared: Vec<SharedTask> = baseline
        .tasks
        .iter()
        .filter_map(|(task, b)| {
            let c = candidate.tasks.get(task)?;
            let mean_cost = |t: &TaskRuns| t.cost_known().then(|| t.cost_usd / t.runs as f64);
            Some(SharedTask {
                baseline: b.rate()?,
                candidate: c.rate()?,
                single: b.runs == 1 && c.runs == 1,
                cost: mean_cost(b).zip(mean_cost(c)),
            })
        })
        .collect();
    let n = shared.len();
    let differences: Vec<f64> = shared.iter().map(|t| t.candidate - t.baseline).collect();
    let cost_differences: Option<Vec<f64>> =
        shared.iter().map(|t| t.cost.map(|(b, c)| c - b)).collect();
    let all: Vec<usize> = (0..n).collect();
    let mean = |values: &[f64]| (n > 0).then(|| mean_at(values, &all));
    let label = format!("{}\u{0}{}", baseline.label, candidate.label);
    // Both differences side by side, summed in one pass per resample (in the order
    // drawn, so the sums are those of two passes); costs of 0 when some run's cost is
    // unknown, whose interval is then not computed.
    let both: Vec<[f64; 2]> = differences
        .iter()
        .enumerate()
        .map(|(i, &rate)| [rate, cost_differences.as_ref().map_or(0.0, |c| c[i])])
        .collect();
    let count = n as f64;
    let [rate_ci, cost_ci] = bootstrap(
        &both,
        settings.resamples,
        stream_seed(settings.seed, &label),
        |[rate, cost]| {
            [
                Some(rate / count),
                cost_differences.is_some().then(|| cost / count),
            ]
        },
    );
    let candidate_better = differences.iter().filter(|&&d| d > 0.0).count() as u64;
    let baseline_better = differences.iter().filter(|&&d| d < 0.0).count() as u64;
    let difference = mean(&differences);
    let clustered = mean_over_tasks(&differences, (-1.0, 1.0));
    let discordance = mean(
        &shared
            .iter()
            .map(|t| t.baseline * (1.0 - t.candidate) + t.candidate * (1.0 - t.baseline))
            .collect::<Vec<_>>(),
    );
    let method = (n > 0).then(|| {
        if shared.iter().all(|t| t.single) {
            "mcnemar-exact"
        } else {
            "sign-test-exact"
        }
    });
    let note = (baseline.scoring_version != candidate.scoring_version).then(|| {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
        format!(
            "judged under different scoring versions ({} and {}): the verdicts may not be comparable",
            show(&baseline.scoring_version),
            show(&candidate.scoring_version)
        )
    });
    PairComparison {
        baseline: baseline.label.clone(),
        candidate: candidate.label.clone(),
        tasks: n as u64,
        baseline_rate: mean(&shared.iter().map(|t| t.baseline).collect::<Vec<_>>()),
        candidate_rate: mean(&shared.iter().map(|t| t.candidate).collect::<Vec<_>>()),
        difference,
        ci_low: rate_ci.map(|i: Interval| i.low),
        ci_high: rate_ci.map(|i| i.high),
        difference_se_clustered: clustered.map(|c| c.se),
        clustered_ci_low: clustered.map(|c| c.interval.low),
        clustered_ci_high: clustered.map(|c| c.interval.high),
        candidate_better,
        baseline_better,
        p_value: method.map(|_| binomial_two_sided(candidate_better, baseline_better)),
        p_adjusted: None,
        method,
        cost_difference: cost_differences.as_deref().and_then(mean),
        cost_ci_low: cost_ci.map(|i| i.low),
        cost_ci_high: cost_ci.map(|i| i.high),
        non_inferior: rate_ci.map(|i| i.low > -settings.margin),
        discordance,
        min_detectable_difference: discordance
            .and_then(|psi| min_detectable_difference(n as u64, psi)),
        tasks_needed: difference
            .zip(discordance)
            .and_then(|(d, psi)| tasks_needed(d, psi))
            .map(|needed| needed.ceil() as u64),
        note,
        reading: None,
        sequential: None,
    }
}

/// `pair`'s p-value, detectable difference and tasks needed in one sentence, saying what
/// each means, so that a small p-value beside a large detectable difference reads right.
fn reading(c: &PairComparison) -> Option<String> {
    let (p, difference) = (c.p_value?, c.difference?);
    let mut text = format!(
        "p = {p:.3}: if the two policies were equally good, a split of the {} tasks that \
         differ at least this unevenly ({} for the candidate, {} for the baseline) would \
         happen {:.1} % of the time",
        c.candidate_better + c.baseline_better,
        c.candidate_better,
        c.baseline_better,
        100.0 * p
    );
    match c.min_detectable_difference {
        Some(mdd) => text.push_str(&format!(
            "; detectable difference {mdd:.2}: on these {} tasks a true difference of \
             {mdd:.2} or more is found 80 % of the time, a smaller one may be missed",
            c.tasks
        )),
        None => text.push_str("; no detectable difference: no task told them apart"),
    }
    if let Some(needed) = c.tasks_needed {
        text.push_str(&format!(
            "; tasks needed {needed}: paired tasks to find the observed difference \
             ({difference:+.3}) 80 % of the time"
        ));
    }
    Some(text)
}

/// What the sequence says at a look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// 0 has left the sequence, which lies above it.
    CandidateBetter,
    /// 0 has left the sequence, which lies below it.
    BaselineBetter,
    /// The whole sequence lies within ±`--equivalence-margin`.
    Equivalent,
    /// None of those yet.
    Undecided,
}

impl Decision {
    /// The JSON name.
    pub fn name(self) -> &'static str {
        match self {
            Decision::CandidateBetter => "candidate_better",
            Decision::BaselineBetter => "baseline_better",
            Decision::Equivalent => "equivalent",
            Decision::Undecided => "undecided",
        }
    }
}

/// What `compare --sequential` adds to a comparison (flattened into its JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SequentialResult {
    /// Lower end of the confidence sequence for the paired difference; null when no
    /// round is complete.
    pub cs_low: Option<f64>,
    /// Upper end.
    pub cs_high: Option<f64>,
    /// Complete rounds used: every shared task has that many runs of both policies.
    pub rounds: u64,
    /// `candidate_better`, `baseline_better`, `equivalent` or `undecided`.
    pub decision: Decision,
    /// The level: the sequence holds the true difference at every look with probability
    /// 1 − `sequential_alpha`.
    pub sequential_alpha: f64,
    /// The difference its bets were tuned to (`--detect`); null: learnt from the data
    /// (aGRAPA).
    pub sequential_detect: Option<f64>,
    /// Which of the other fields hold for a single look only.
    pub single_look_only: &'static str,
    /// The latest decision stored for this pair by an experiment run until decided
    /// (`agent-runner run --until-decided`), as it was when made: when, after how many
    /// rounds; `None` when no experiment of the pair stored one.
    pub stored_decision: Option<StoredDecision>,
}

/// The fields of a comparison that are valid for one look at fixed sample size only.
pub const SINGLE_LOOK_ONLY: &str = "p_value, p_adjusted, ci_low, ci_high, non_inferior: valid for a single look only; look as often as you like at cs_low, cs_high, decision";

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(label: &str, tasks: &[(u64, u64)]) -> PolicyRuns {
        PolicyRuns {
            label: label.to_owned(),
            group: label.to_owned(),
            tasks: tasks
                .iter()
                .enumerate()
                .map(|(i, &(runs, successes))| {
                    let runs = TaskRuns {
                        runs,
                        successes,
                        ..TaskRuns::default()
                    };
                    (format!("t{i}"), runs)
                })
                .collect(),
            ..PolicyRuns::default()
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn the_clean_rate_leaves_flagged_and_unknown_runs_out() {
        let mut p = policy("p", &[(4, 3), (2, 1)]);
        // Task 0: one run flagged (solved), one unknown, two clean (one solved);
        // task 1: both clean, one solved.
        let flags = [(1, 1, 2, 1), (0, 0, 2, 1)];
        for (runs, (flagged, unknown, clean, clean_solved)) in p.tasks.values_mut().zip(flags) {
            runs.flagged_runs = flagged;
            runs.integrity_unknown_runs = unknown;
            runs.clean_runs = clean;
            runs.clean_successes = clean_solved;
        }
        let settings = Settings {
            baseline: None,
            margin: DEFAULT_MARGIN,
            seed: 1,
            resamples: 100,
        };
        let summary = &compare(&[p], &settings).policies[0];
        assert_eq!((summary.runs, summary.solved), (6, 4));
        assert_eq!(
            (
                summary.flagged_runs,
                summary.integrity_unknown_runs,
                summary.clean_runs,
                summary.clean_solved
            ),
            (1, 1, 4, 2)
        );
        assert!(close(summary.clean_rate.expect("clean runs"), 0.5));
        let interval = wilson(2, 4).expect("interval");
        assert_eq!(summary.clean_rate_ci_low, Some(interval.low));
        assert_eq!(summary.clean_rate_ci_high, Some(interval.high));

        let unseen = policy("u", &[(2, 1)]);
        let summary = &compare(&[unseen], &settings).policies[0];
        assert_eq!(
            summary.clean_rate, None,
            "no clean run: no clean rate, never 0"
        );
    }

    #[test]
    fn repeats_give_pass_at_k_and_a_sign_test_on_per_task_rates() {
        let base = policy("base", &[(2, 2), (2, 1), (2, 0)]);
        let cand = policy("cand", &[(2, 2), (2, 2), (2, 1)]);
        let settings = Settings {
            baseline: Some("base".into()),
            margin: DEFAULT_MARGIN,
            seed: 1,
            resamples: 1_000,
        };
        let answer = compare(&[base, cand], &settings);
        let pair = &answer.comparisons[0];
        assert_eq!(pair.method, Some("sign-test-exact"));
        assert!(close(pair.difference.expect("tasks"), 1.0 / 3.0));
        assert_eq!((pair.candidate_better, pair.baseline_better), (2, 0));
        assert!(close(pair.p_value.expect("tested"), 0.5));
        assert_eq!(pair.p_adjusted, pair.p_value, "one comparison");
        // No run priced: no cost, not $0.
        assert_eq!(pair.cost_difference, None);
        assert_eq!(answer.policies[0].mean_cost_usd, None);

        let repeats = answer.policies[0].repeats.as_ref().expect("repeated");
        let k = |k: usize| &repeats.pass_at_k[k - 1];
        assert!(close(k(1).pass_at_k, 0.5) && close(k(1).pass_hat_k, 0.5));
        assert!(close(k(2).pass_at_k, 2.0 / 3.0) && close(k(2).pass_hat_k, 1.0 / 3.0));
        assert_eq!(k(2).tasks, 3);
        assert!(close(repeats.outcome_variance, 1.0 / 6.0));
        assert_eq!(repeats.variance_tasks, 3);
    }

    #[test]
    fn policies_without_shared_tasks_are_not_tested() {
        let answer = compare(
            &[
                policy("a", &[(1, 1)]),
                policy("b", &[]),
                policy("c", &[(1, 0)]),
            ],
            &Settings {
                baseline: None,
                margin: DEFAULT_MARGIN,
                seed: 1,
                resamples: 1_000,
            },
        );
        assert_eq!(answer.comparisons.len(), 3);
        let ab = &answer.comparisons[0];
        assert_eq!((ab.tasks, ab.p_value, ab.difference), (0, None, None));
        let ac = &answer.comparisons[1];
        assert_eq!(ac.method, Some("mcnemar-exact"));
        assert_eq!(answer.policies[1].rate, None, "no runs: no rate, not 0");
    }
}
