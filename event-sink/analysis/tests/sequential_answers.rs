//! `plan` and `compare --sequential`'s confidence sequence against the answers of an
//! independent implementation (statsmodels' power solver; the betting confidence
//! sequence written with numpy), computed by `tests/fixtures/sequential_answers.py` into
//! `tests/fixtures/sequential_answers.json` on outcomes drawn from a fixed seed.

use bench_analysis::compare::sequential::{sequential, Bet};
use bench_analysis::plan::{plan, PlanInput};
use serde_json::Value;

/// The ends are grid points computed the same way: they agree to rounding.
const EXACT: f64 = 1e-9;

fn answers(name: &str) -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sequential_answers.json"
    );
    let text = std::fs::read_to_string(path).expect("sequential_answers.json");
    let answers: Value = serde_json::from_str(&text).expect("JSON");
    answers[name].as_array().expect("a list of cases").clone()
}

fn f(case: &Value, key: &str) -> f64 {
    case[key].as_f64().expect("a number")
}

#[test]
fn plan_matches_statsmodels_power_solver_times_the_design_effect() {
    for case in answers("plan") {
        let answer = plan(&PlanInput {
            baseline_rate: f(&case, "baseline_rate"),
            detect: f(&case, "detect"),
            alpha: f(&case, "alpha"),
            power: f(&case, "power"),
            repeats: case["repeats"].as_u64().expect("repeats"),
            icc: f(&case, "icc"),
        })
        .expect("a valid case");
        assert_eq!(
            answer.tasks,
            case["tasks"].as_u64().expect("tasks"),
            "{case}"
        );
        assert_eq!(answer.runs, case["runs"].as_u64().expect("runs"), "{case}");
        assert!((answer.design_effect - f(&case, "design_effect")).abs() < EXACT);
    }
}

#[test]
fn the_confidence_sequence_matches_the_numpy_reference() {
    let cases = answers("confidence_sequence");
    for (i, case) in cases.iter().enumerate() {
        let rounds: Vec<Vec<f64>> = case["rounds"]
            .as_array()
            .expect("rounds")
            .iter()
            .map(|r| {
                r.as_array()
                    .expect("a round")
                    .iter()
                    .map(|z| z.as_f64().expect("an outcome"))
                    .collect()
            })
            .collect();
        let bet = case["detect"].as_f64().map_or(Bet::Adaptive, Bet::Tuned);
        let answer = sequential(
            &rounds,
            f(case, "alpha"),
            case["equivalence_margin"].as_f64(),
            bet,
        );
        assert_eq!(answer.sequential_detect, bet.detect());
        assert_eq!(answer.rounds, rounds.len() as u64);
        for (actual, key) in [(answer.cs_low, "cs_low"), (answer.cs_high, "cs_high")] {
            let actual = actual.expect("an interval");
            assert!(
                (actual - f(case, key)).abs() < EXACT,
                "case {i} {key}: {actual} != {}",
                case[key]
            );
        }
        assert_eq!(
            answer.decision.name(),
            case["decision"].as_str().expect("decision"),
            "case {i}"
        );
    }
}
