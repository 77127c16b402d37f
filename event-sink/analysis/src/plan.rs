//! `bench-analysis plan`: how many tasks, and runs of each, a paired comparison of two
//! policies needs to detect a given difference in solve rate.
//!
//! The model: a two-sided test at level `alpha` of the mean over tasks of the per-task
//! difference of the two policies' solve rates, each task run `repeats` times by each
//! policy. One paired run has variance `p(1-p) + q(1-q)` (p the baseline's rate, q =
//! p + detect the candidate's); the runs of one task are correlated with the intra-task
//! correlation `icc`, so `repeats` runs of a task weigh as `repeats / (1 + (repeats - 1)
//! icc)` independent runs (the design effect of cluster sampling, Kish 1965; the
//! clustered-errors argument of Miller 2024, "Adding error bars to evals"). Hence
//!
//! ```text
//! tasks = ceil((z(1 - alpha/2) + z(power))^2 (p(1-p) + q(1-q)) (1 + (repeats-1) icc)
//!              / (repeats detect^2))
//! ```
//!
//! The model gives no credit for pairing: when both policies find the same tasks hard,
//! the per-task differences vary less and the plan is conservative. With a positive
//! `icc`, one run of more tasks always beats more runs of fewer tasks; repeats help when
//! the task set is fixed. Checked by simulation (unit test below, and
//! `tests/bench` `sequential-sim`): the stated power is reached within 3 points.
//!
//! `--from-experiment NAME` reads a stored experiment's counted runs (the shipped
//! `paired_outcomes` query, the runs `compare` counts) instead of assuming: the
//! intra-task correlation is estimated by the one-way ANOVA estimator over its (policy,
//! task) groups of binary outcomes ([`estimate_icc`]), and the price of the planned runs
//! is the mean cost of its priced runs times their number.

use bench_clickhouse::ConnectionArgs;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal};

use crate::queries::{ParamValues, Query, QueryError};
use crate::table::{Column, Format, Table};

/// What `plan` is asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanInput {
    /// The baseline's solve rate, in (0, 1).
    pub baseline_rate: f64,
    /// The difference in solve rate to detect (candidate − baseline), non-zero, with the
    /// candidate's rate in [0, 1].
    pub detect: f64,
    /// The two-sided level of the test.
    pub alpha: f64,
    /// The probability of detecting `detect`.
    pub power: f64,
    /// Runs of each task by each policy.
    pub repeats: u64,
    /// The intra-task correlation of outcomes, in [0, 1].
    pub icc: f64,
}

/// The answer; the JSON of `plan --format json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// Tasks to run, each by both policies.
    pub tasks: u64,
    /// Runs of each task by each policy.
    pub repeats: u64,
    /// Runs in all: tasks × repeats × 2 policies.
    pub runs: u64,
    /// The two-sided level.
    pub alpha: f64,
    /// The power.
    pub power: f64,
    /// The intra-task correlation assumed.
    pub icc: f64,
    /// 1 + (repeats − 1) × icc.
    pub design_effect: f64,
    /// The baseline's solve rate.
    pub baseline_rate: f64,
    /// The difference to detect.
    pub detect: f64,
    /// The price of the runs, USD; null: no price per run is known.
    pub cost_usd: Option<f64>,
}

/// A question `plan` cannot answer.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// `--from-experiment`: the experiment gives no estimate.
    #[error("--from-experiment {experiment}: {reason}")]
    Experiment {
        /// Its name.
        experiment: String,
        /// Why.
        reason: String,
    },
    /// `--from-experiment`: its runs could not be read.
    #[error("--from-experiment: {0}")]
    Read(#[from] QueryError),
    /// `--from-experiment`: the ClickHouse settings are unusable.
    #[error("--from-experiment: {0}")]
    Connection(#[from] bench_clickhouse::ConfigError),
    /// A value outside its range.
    #[error("{name} = {value}: {expected}")]
    OutOfRange {
        /// The flag.
        name: &'static str,
        /// The value given.
        value: f64,
        /// What it must be.
        expected: &'static str,
    },
}

fn check(
    name: &'static str,
    value: f64,
    ok: bool,
    expected: &'static str,
) -> Result<(), PlanError> {
    if ok && value.is_finite() {
        Ok(())
    } else {
        Err(PlanError::OutOfRange {
            name,
            value,
            expected,
        })
    }
}

/// `bench-analysis plan --baseline-rate R --detect D [...]`.
#[derive(Debug, Clone, clap::Args)]
pub struct PlanArgs {
    /// The baseline's solve rate, in (0, 1).
    #[arg(long, env = "BENCH_PLAN_BASELINE_RATE", value_name = "R")]
    pub baseline_rate: f64,
    /// The difference in solve rate to detect, candidate − baseline (0.05 = 5 points;
    /// negative for a drop).
    #[arg(
        long,
        env = "BENCH_PLAN_DETECT",
        value_name = "D",
        allow_negative_numbers = true
    )]
    pub detect: f64,
    /// The two-sided level of the test.
    #[arg(long, env = "BENCH_PLAN_ALPHA", default_value_t = 0.05)]
    pub alpha: f64,
    /// The probability of detecting the difference.
    #[arg(long, env = "BENCH_PLAN_POWER", default_value_t = 0.8)]
    pub power: f64,
    /// Runs of each task by each policy.
    #[arg(
        long,
        env = "BENCH_PLAN_REPEATS",
        value_name = "K",
        default_value_t = 1
    )]
    pub repeats: u64,
    /// The intra-task correlation of outcomes (0: a task's runs are independent; 1: a
    /// task always gives the same outcome).
    #[arg(long, env = "BENCH_PLAN_ICC", value_name = "RHO", default_value_t = DEFAULT_ICC)]
    pub icc: f64,
    /// Output format (`csv` is a one-row table).
    #[arg(long, env = "BENCH_PLAN_FORMAT", value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Estimate the intra-task correlation (instead of --icc) and the price per run from
    /// this stored experiment's counted runs; needs its tasks run at least twice by a
    /// policy.
    #[arg(long, env = "BENCH_PLAN_FROM_EXPERIMENT", value_name = "NAME")]
    pub from_experiment: Option<String>,
    /// `--from-experiment`: the ClickHouse database to read, the sink's settings.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// What a stored experiment says about the next one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The intra-task correlation of its outcomes ([`estimate_icc`]), in [0, 1].
    pub icc: f64,
    /// The mean cost of its priced runs, USD; `None` when none was priced.
    pub cost_per_run: Option<f64>,
}

/// The intra-task correlation of binary outcomes grouped as `groups` (runs, successes)
/// (here: one group per policy and task), by the one-way ANOVA estimator
/// `(MSB − MSW) / (MSB + (k0 − 1) MSW)`, `k0 = (N − Σ n_i² / N) / (a − 1)` (Fisher;
/// Donner 1986 for binary outcomes), clipped to [0, 1]. `None` without two groups or
/// without a group of two runs, or when every outcome is the same (no variance).
pub fn estimate_icc(groups: &[(u64, u64)]) -> Option<f64> {
    let groups: Vec<(f64, f64)> = groups
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|&(n, s)| (n as f64, s as f64))
        .collect();
    let a = groups.len() as f64;
    let n: f64 = groups.iter().map(|g| g.0).sum();
    if a < 2.0 || n <= a {
        return None;
    }
    let mean = groups.iter().map(|g| g.1).sum::<f64>() / n;
    let between: f64 = groups.iter().map(|(n, s)| n * (s / n - mean).powi(2)).sum();
    let within: f64 = groups.iter().map(|(n, s)| s * (1.0 - s / n)).sum();
    let (msb, msw) = (between / (a - 1.0), within / (n - a));
    let k0 = (n - groups.iter().map(|g| g.0 * g.0).sum::<f64>() / n) / (a - 1.0);
    let denominator = msb + (k0 - 1.0) * msw;
    (denominator > 0.0).then(|| ((msb - msw) / denominator).clamp(0.0, 1.0))
}

/// The [`Estimate`] of the stored experiment `experiment`, from the `paired_outcomes`
/// answer `table` (one row per task and policy config: runs, successes, priced runs and
/// their cost).
pub fn estimate(experiment: &str, table: &Table) -> Result<Estimate, PlanError> {
    let unusable = |reason: &str| PlanError::Experiment {
        experiment: experiment.to_owned(),
        reason: reason.to_owned(),
    };
    let number = |row: usize, name: &str| table.number(row, name).unwrap_or(0.0);
    // One group per (policy, task): a policy's rows of several configs add up.
    let mut groups: std::collections::BTreeMap<(&str, &str), (u64, u64)> = Default::default();
    let (mut priced, mut cost) = (0.0, 0.0);
    for row in 0..table.rows.len() {
        let key = (
            table.get(row, "policy_id").unwrap_or_default(),
            table.get(row, "task_id").unwrap_or_default(),
        );
        let group = groups.entry(key).or_default();
        group.0 += number(row, "runs") as u64;
        group.1 += number(row, "successes") as u64;
        priced += number(row, "priced_runs");
        cost += number(row, "cost_usd");
    }
    let groups: Vec<(u64, u64)> = groups.into_values().collect();
    if groups.iter().all(|(runs, _)| *runs == 0) {
        return Err(unusable("no counted run (is the name right?)"));
    }
    let icc = estimate_icc(&groups).ok_or_else(|| {
        unusable("no task was run twice by one policy, or every run had the same outcome: give --icc instead")
    })?;
    Ok(Estimate {
        icc,
        cost_per_run: (priced > 0.0).then(|| cost / priced),
    })
}

/// Reads the [`Estimate`] of `experiment` from the database of `connection`.
async fn read_estimate(
    connection: &ConnectionArgs,
    experiment: &str,
) -> Result<Estimate, PlanError> {
    if experiment.contains(',') {
        return Err(PlanError::Experiment {
            experiment: experiment.to_owned(),
            reason: "a name with ',' cannot be selected".to_owned(),
        });
    }
    let config = connection.clone().load()?;
    let mut params = ParamValues::new();
    params.insert("experiment".to_owned(), experiment.to_owned());
    let table = Query::find("paired_outcomes")?
        .run(&config.client(), &params)
        .await?;
    estimate(experiment, &table)
}

/// The intra-task correlation unless `--icc` says otherwise.
pub const DEFAULT_ICC: f64 = 0.3;

/// The answer of `args`, in its format.
pub async fn run(args: &PlanArgs) -> Result<String, PlanError> {
    let estimate = match &args.from_experiment {
        Some(name) => Some(read_estimate(&args.connection, name).await?),
        None => None,
    };
    let mut answer = plan(&PlanInput {
        baseline_rate: args.baseline_rate,
        detect: args.detect,
        alpha: args.alpha,
        power: args.power,
        repeats: args.repeats,
        icc: estimate.map_or(args.icc, |e| e.icc),
    })?;
    answer.cost_usd = estimate
        .and_then(|e| e.cost_per_run)
        .map(|cost| cost * answer.runs as f64);
    Ok(match args.format {
        Format::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&answer).unwrap_or_default()
        ),
        Format::Table | Format::Csv => {
            let cell = |v: String| Some(v);
            let number = |v: f64| cell(format!("{v}"));
            let names = [
                "tasks",
                "repeats",
                "runs",
                "alpha",
                "power",
                "icc",
                "design_effect",
                "cost_usd",
            ];
            Table {
                columns: names
                    .iter()
                    .map(|n| Column {
                        name: (*n).to_owned(),
                        ty: "Nullable(Float64)".to_owned(),
                    })
                    .collect(),
                rows: vec![vec![
                    cell(answer.tasks.to_string()),
                    cell(answer.repeats.to_string()),
                    cell(answer.runs.to_string()),
                    number(answer.alpha),
                    number(answer.power),
                    number(answer.icc),
                    number(answer.design_effect),
                    answer.cost_usd.and_then(number),
                ]],
            }
            .render(args.format)
        }
    })
}

/// The standard normal quantile of `p`.
fn z(p: f64) -> f64 {
    // Normal::new(0, 1) cannot fail: the standard deviation is positive.
    Normal::new(0.0, 1.0).map_or(f64::NAN, |n| n.inverse_cdf(p))
}

/// The plan for `input`.
pub fn plan(input: &PlanInput) -> Result<Plan, PlanError> {
    let PlanInput {
        baseline_rate: p,
        detect,
        alpha,
        power,
        repeats,
        icc,
    } = *input;
    let q = p + detect;
    check(
        "--baseline-rate",
        p,
        p > 0.0 && p < 1.0,
        "must be in (0, 1)",
    )?;
    check(
        "--detect",
        detect,
        detect != 0.0 && (0.0..=1.0).contains(&q),
        "must be non-zero, with baseline rate + detect in [0, 1]",
    )?;
    check(
        "--alpha",
        alpha,
        alpha > 0.0 && alpha < 1.0,
        "must be in (0, 1)",
    )?;
    check(
        "--power",
        power,
        power > 0.0 && power < 1.0,
        "must be in (0, 1)",
    )?;
    check(
        "--icc",
        icc,
        (0.0..=1.0).contains(&icc),
        "must be in [0, 1]",
    )?;
    check(
        "--repeats",
        repeats as f64,
        repeats >= 1,
        "must be at least 1",
    )?;
    let design_effect = 1.0 + (repeats as f64 - 1.0) * icc;
    let variance = p * (1.0 - p) + q * (1.0 - q);
    let zs = z(1.0 - alpha / 2.0) + z(power);
    let exact = zs * zs * variance * design_effect / (repeats as f64 * detect * detect);
    // A hair of tolerance, so that a value an ulp above a whole number is that number.
    let tasks = ((exact - 1e-9).ceil() as u64).max(2);
    Ok(Plan {
        tasks,
        repeats,
        runs: tasks * repeats * 2,
        alpha,
        power,
        icc,
        design_effect,
        baseline_rate: p,
        detect,
        cost_usd: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use statrs::distribution::Beta;

    fn input(p: f64, detect: f64, repeats: u64, icc: f64) -> PlanInput {
        PlanInput {
            baseline_rate: p,
            detect,
            alpha: 0.05,
            power: 0.8,
            repeats,
            icc,
        }
    }

    #[test]
    fn every_plan_flag_has_an_environment_variable() {
        use clap::Args as _;
        let plan = PlanArgs::augment_args(clap::Command::new("plan"));
        for arg in plan.get_arguments() {
            if arg.get_long().is_some_and(|l| l != "help") {
                assert!(
                    arg.get_env().is_some(),
                    "--{:?} has no BENCH_ variable",
                    arg.get_long()
                );
            }
        }
    }

    #[test]
    fn one_run_per_task_is_the_textbook_two_proportion_size() {
        // (1.959964 + 0.841621)^2 × (0.25 + 0.24) / 0.01 = 384.6
        let answer = plan(&input(0.5, 0.1, 1, 0.3)).expect("valid");
        assert_eq!(
            (answer.tasks, answer.runs, answer.cost_usd),
            (385, 770, None)
        );
        assert_eq!(answer.design_effect, 1.0);
    }

    #[test]
    fn bad_input_names_the_flag() {
        let error = plan(&input(0.95, 0.1, 1, 0.3)).expect_err("rate above 1");
        assert!(error.to_string().starts_with("--detect"), "{error}");
        let error = plan(&input(0.5, 0.1, 0, 0.3)).expect_err("no runs");
        assert!(error.to_string().starts_with("--repeats"), "{error}");
    }

    /// The power of the planned design, by simulation under the model: task rates drawn
    /// from a Beta with the plan's mean and intra-task correlation, independently for the
    /// two policies; a two-sided z-test of the mean per-task difference.
    fn simulated_power(plan: &Plan, experiments: usize, seed: u64) -> f64 {
        let beta = |mean: f64| {
            let total = 1.0 / plan.icc - 1.0;
            Beta::new(mean * total, (1.0 - mean) * total).expect("positive shapes")
        };
        let (b, c) = (
            beta(plan.baseline_rate),
            beta(plan.baseline_rate + plan.detect),
        );
        let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(seed);
        let critical = z(1.0 - plan.alpha / 2.0);
        let rate = |dist: &Beta, rng: &mut rand::rngs::ChaCha8Rng| {
            let rate = dist.inverse_cdf(rng.random::<f64>());
            (0..plan.repeats)
                .filter(|_| rng.random::<f64>() < rate)
                .count() as f64
                / plan.repeats as f64
        };
        let detected = (0..experiments)
            .filter(|_| {
                let d: Vec<f64> = (0..plan.tasks)
                    .map(|_| rate(&c, &mut rng) - rate(&b, &mut rng))
                    .collect();
                let n = d.len() as f64;
                let mean = d.iter().sum::<f64>() / n;
                let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
                (mean / (var / n).sqrt()).abs() > critical
            })
            .count();
        detected as f64 / experiments as f64
    }

    #[test]
    fn the_planned_design_reaches_its_power_within_three_points_in_simulation() {
        for (case, seed) in [(input(0.3, 0.1, 3, 0.3), 1), (input(0.6, -0.15, 2, 0.2), 2)] {
            let answer = plan(&case).expect("valid");
            let power = simulated_power(&answer, 2_000, seed);
            assert!(
                (power - case.power).abs() <= 0.03,
                "{case:?}: {} tasks reach power {power}",
                answer.tasks
            );
        }
    }
}
