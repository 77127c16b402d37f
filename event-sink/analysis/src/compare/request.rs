//! A comparison asked for ([`Request`]: `compare`'s flags without the output format and
//! the connection) and its answer read from ClickHouse ([`answer`]): what
//! `bench-analysis compare` prints and the viewer's compare page shows.

use clickhouse::Client;

use super::analyze::{self, Comparison, Settings};
use super::outcomes::{parse_by, Dimension, Experiments};
use super::{check_named, decisions, load, resample, sequential, CompareError, Filters};
use crate::queries::QueryError;

/// `compare --by`'s default: one policy per `policy_id`.
pub const DEFAULT_BY: &str = "policy";

/// What to compare.
#[derive(Debug, Clone)]
pub struct Request {
    /// What a policy is: `--by`'s keys, comma-separated.
    pub by: String,
    /// The policies to compare (labels); empty = every policy with runs.
    pub policies: Vec<String>,
    /// Pool the runs of different experiments into one policy.
    pub pool_experiments: bool,
    /// Which runs.
    pub filters: Filters,
    /// Baseline, margin, seed, resamples.
    pub settings: Settings,
    /// Add the anytime-valid confidence sequences.
    pub sequential: bool,
    /// With `sequential`: the equivalence margin.
    pub equivalence_margin: Option<f64>,
    /// With `sequential`: how the sequence bets (tuned to `--detect`, or learnt).
    pub bet: sequential::Bet,
}

impl Request {
    /// Every policy of the runs `filters` select, each against `baseline` (every pair
    /// without one), every other setting at `compare`'s default.
    pub fn every_policy(filters: Filters, baseline: Option<String>) -> Request {
        Request {
            by: DEFAULT_BY.to_owned(),
            policies: Vec::new(),
            pool_experiments: false,
            filters,
            settings: Settings {
                baseline,
                margin: analyze::DEFAULT_MARGIN,
                seed: resample::DEFAULT_SEED,
                resamples: resample::DEFAULT_RESAMPLES as usize,
            },
            sequential: false,
            equivalence_margin: None,
            bet: sequential::Bet::Adaptive,
        }
    }
}

/// The comparison `request` asks for, over the runs read through `client`.
pub async fn answer(client: &Client, request: Request) -> Result<Comparison, CompareError> {
    let by = parse_by(&request.by).map_err(CompareError::BadKeys)?;
    if request.sequential && by.contains(&Dimension::Cfg) {
        return Err(CompareError::BadKeys(
            "--sequential groups runs by policy, model, strategy, experiment or tag, not by cfg"
                .to_owned(),
        ));
    }
    let experiments = if request.pool_experiments || by.contains(&Dimension::Experiment) {
        Experiments::Pooled
    } else {
        Experiments::Apart
    };
    let mut policies = load(client, &request.filters, &by, experiments).await?;
    let baseline = request.settings.baseline.as_ref();
    let wanted: Vec<&String> = request.policies.iter().chain(baseline).collect();
    check_named(&policies, &wanted, &by)?;
    if !request.policies.is_empty() {
        policies.retain(|p| request.policies.contains(&p.group) || baseline == Some(&p.group));
    }
    let mut answer = analyze::compare(&policies, &request.settings);
    if request.sequential {
        let outcomes = sequential::load_outcomes(client, &request.filters, &by, &policies).await?;
        sequential::attach(
            &mut answer,
            &outcomes,
            request.equivalence_margin,
            request.bet,
        );
        let stored = decisions::latest(client, &request.filters.experiments)
            .await
            .map_err(|source| QueryError::ClickHouse {
                query: "experiment_decisions",
                source,
            })?;
        sequential::attach_stored(&mut answer, &policies, &stored);
    }
    Ok(answer)
}
