//! `compare`'s statistics against the answers of independent implementations (scipy,
//! statsmodels, exact fractions), computed by `tests/fixtures/known_answers.py` into
//! `tests/fixtures/known_answers.json`: Wilson, exact McNemar, the exact sign test, Holm,
//! pass@k / pass^k and `plan --from-experiment`'s intra-task correlation to 1e-9, the
//! paired bootstrap interval within Monte Carlo tolerance.

use bench_analysis::compare::outcomes::TaskRuns;
use bench_analysis::compare::stats::{binomial_two_sided, holm, pass_at_k, pass_hat_k, wilson};
use bench_analysis::compare::{compare, PolicyRuns, Settings};
use serde_json::Value;

/// The exact answers agree to this (beta-function binomial tails, floating sums).
const EXACT: f64 = 1e-9;

fn answers() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/known_answers.json"
    );
    let text = std::fs::read_to_string(path).expect("known_answers.json");
    serde_json::from_str(&text).expect("JSON")
}

fn cases<'a>(answers: &'a Value, name: &str) -> &'a [Value] {
    answers[name].as_array().expect("a list of cases")
}

fn u(case: &Value, key: &str) -> u64 {
    case[key].as_u64().expect("an integer")
}

fn f(case: &Value, key: &str) -> f64 {
    case[key].as_f64().expect("a number")
}

fn assert_close(actual: f64, expected: f64, tolerance: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "{what}: {actual} != {expected} (± {tolerance})"
    );
}

#[test]
fn wilson_intervals_match_statsmodels() {
    for case in cases(&answers(), "wilson") {
        let what = format!("{case}");
        let interval = wilson(u(case, "successes"), u(case, "trials")).expect("trials");
        assert_close(interval.low, f(case, "low"), EXACT, &what);
        assert_close(interval.high, f(case, "high"), EXACT, &what);
    }
}

#[test]
fn exact_mcnemar_and_sign_test_match_statsmodels_and_scipy() {
    let answers = answers();
    for name in ["mcnemar_exact", "sign_test_exact"] {
        for case in cases(&answers, name) {
            let p = binomial_two_sided(u(case, "a"), u(case, "b"));
            assert_close(p, f(case, "p_value"), EXACT, &format!("{name} {case}"));
        }
    }
}

#[test]
fn the_intra_task_correlation_matches_the_statsmodels_anova() {
    for case in cases(&answers(), "icc") {
        let groups: Vec<(u64, u64)> = case["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .map(|g| {
                let at = |i: usize| g[i].as_u64().expect("a count");
                (at(0), at(1))
            })
            .collect();
        let icc = bench_analysis::plan::estimate_icc(&groups).expect("an estimate");
        assert_close(icc, f(case, "icc"), EXACT, &format!("{case}"));
    }
}

#[test]
fn holm_matches_statsmodels() {
    for case in cases(&answers(), "holm") {
        let list = |key: &str| -> Vec<f64> {
            case[key]
                .as_array()
                .expect("list")
                .iter()
                .map(|v| v.as_f64().expect("number"))
                .collect()
        };
        for (actual, expected) in holm(&list("p_values")).into_iter().zip(list("adjusted")) {
            assert_close(actual, expected, EXACT, &format!("{case}"));
        }
    }
}

#[test]
fn pass_at_k_and_pass_hat_k_match_exact_fractions() {
    for case in cases(&answers(), "pass_at_k") {
        let (n, c, k) = (u(case, "runs"), u(case, "successes"), u(case, "k"));
        let what = format!("{case}");
        assert_close(
            pass_at_k(n, c, k).expect("k <= n"),
            f(case, "pass_at_k"),
            EXACT,
            &what,
        );
        assert_close(
            pass_hat_k(n, c, k).expect("k <= n"),
            f(case, "pass_hat_k"),
            EXACT,
            &what,
        );
    }
}

/// One run per task: `outcomes[i]` is task i's success (1.0) or failure (0.0).
fn policy(label: &str, outcomes: &[f64]) -> PolicyRuns {
    policy_of(
        label,
        outcomes.iter().map(|&solved| TaskRuns {
            runs: 1,
            successes: u64::from(solved > 0.5),
            priced_runs: 1,
            cost_usd: 0.01,
            ..TaskRuns::default()
        }),
    )
}

/// The policy `label` whose task i (`task-00i`) had the i-th of `runs`.
fn policy_of(label: &str, runs: impl Iterator<Item = TaskRuns>) -> PolicyRuns {
    PolicyRuns {
        label: label.to_owned(),
        group: label.to_owned(),
        tasks: runs
            .enumerate()
            .map(|(i, runs)| (format!("task-{i:03}"), runs))
            .collect(),
        ..PolicyRuns::default()
    }
}

#[test]
fn the_paired_bootstrap_interval_matches_scipy_within_monte_carlo_error() {
    let answers = answers();
    let case = &answers["paired_bootstrap"];
    let outcomes = |key: &str| -> Vec<f64> {
        case[key]
            .as_array()
            .expect("list")
            .iter()
            .map(|v| v.as_f64().expect("number"))
            .collect()
    };
    let settings = Settings {
        baseline: Some("base".into()),
        margin: 0.05,
        seed: 1,
        resamples: 10_000,
    };
    let answer = compare(
        &[
            policy("base", &outcomes("baseline")),
            policy("cand", &outcomes("candidate")),
        ],
        &settings,
    );
    let pair = &answer.comparisons[0];
    let tolerance = f(case, "tolerance");
    assert_close(
        pair.difference.expect("tasks"),
        f(case, "difference"),
        EXACT,
        "difference",
    );
    assert_close(
        pair.ci_low.expect("ci"),
        f(case, "ci_low"),
        tolerance,
        "ci_low",
    );
    assert_close(
        pair.ci_high.expect("ci"),
        f(case, "ci_high"),
        tolerance,
        "ci_high",
    );
    assert_eq!(pair.method, Some("mcnemar-exact"));
    // Equal costs everywhere: the cost difference is exactly 0, interval too.
    assert_eq!(pair.cost_difference, Some(0.0));
}

/// `solved[i]` of `repeats` runs of task i solved.
fn repeated(label: &str, solved: &[u64], repeats: u64) -> PolicyRuns {
    policy_of(
        label,
        solved.iter().map(|&successes| TaskRuns {
            runs: repeats,
            successes,
            ..TaskRuns::default()
        }),
    )
}

/// Two models x 8 tasks x 3 repeats: the rates with task-clustered errors, pass^3 with its
/// interval over tasks, the clustered paired difference and the exact sign test, as
/// statsmodels (OLS with cluster-robust covariance) and scipy give them.
#[test]
fn an_experiment_with_repeats_matches_statsmodels_clustered_errors_and_scipy() {
    let answers = answers();
    let case = &answers["experiment"];
    let design = &case["experiment"];
    let solved = |key: &str| -> Vec<u64> {
        design[key]
            .as_array()
            .expect("list")
            .iter()
            .map(|v| v.as_u64().expect("count"))
            .collect()
    };
    let k = u(design, "repeats");
    let settings = Settings {
        baseline: Some("base".into()),
        margin: 0.05,
        seed: 1,
        resamples: 1_000,
    };
    let answer = compare(
        &[
            repeated("base", &solved("baseline"), k),
            repeated("cand", &solved("candidate"), k),
        ],
        &settings,
    );
    let z = 1.959_963_984_540_054;
    for (summary, side) in answer.policies.iter().zip(["baseline", "candidate"]) {
        let expected = &case[side];
        assert_close(
            summary.rate.expect("runs"),
            f(expected, "rate"),
            EXACT,
            side,
        );
        let se = summary.rate_se_clustered.expect("clustered");
        assert_close(se, f(expected, "se"), EXACT, side);
        let high = summary.rate_ci_clustered_high.expect("interval");
        assert_close(high, (f(expected, "rate") + z * se).min(1.0), EXACT, side);
        let repeats = summary.repeats.as_ref().expect("repeats");
        let at_k = repeats.pass_at_k.iter().find(|p| p.k == k).expect("k = 3");
        assert_close(at_k.pass_hat_k, f(expected, "pass_hat_k"), EXACT, side);
        let hat_se = f(expected, "pass_hat_k_se");
        assert_close(
            at_k.pass_hat_k_ci_low,
            (f(expected, "pass_hat_k") - z * hat_se).max(0.0),
            EXACT,
            side,
        );
        assert_close(
            at_k.pass_hat_k_ci_high,
            (f(expected, "pass_hat_k") + z * hat_se).min(1.0),
            EXACT,
            side,
        );
    }
    let (base, cand) = (&answer.policies[0], &answer.policies[1]);
    assert_eq!(
        (base.tasks_solved_once, base.tasks_solved_every_repeat),
        (7, 5)
    );
    assert_eq!(
        (cand.tasks_solved_once, cand.tasks_solved_every_repeat),
        (5, 2)
    );
    let pair = &answer.comparisons[0];
    assert_close(
        pair.difference.expect("tasks"),
        f(case, "difference"),
        EXACT,
        "difference",
    );
    assert_close(
        pair.difference_se_clustered.expect("clustered"),
        f(case, "difference_se"),
        EXACT,
        "difference se",
    );
    assert_eq!(pair.method, Some("sign-test-exact"));
    assert_close(
        pair.p_value.expect("tested"),
        f(case, "sign_test_p"),
        EXACT,
        "sign test",
    );
    let reading = pair.reading.as_deref().expect("a reading");
    assert!(
        reading.starts_with("p = 0.062: if the two policies were equally good")
            && reading.contains("detectable difference")
            && reading.contains("80 % of the time"),
        "{reading}"
    );
}
