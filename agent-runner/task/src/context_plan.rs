//! A run's context strategy with its parameters resolved and checked ([`ContextPlan`]):
//! what the `llm` policy prunes by, and the check scenario and sweep files get when they
//! are loaded, so a bad `strategy_params` is refused before anything runs.
//!
//! This module depends on nothing else in the crate; the strategies themselves live in
//! agent-runner's `policy::llm::context`.

use bench_schemas::{ContextStrategy, RunConfig};

/// Default M of `observation_masking` and `hybrid`.
pub const DEFAULT_OBSERVATION_WINDOW: u32 = 10;
/// Default N of `llm_summary` and `hybrid`.
pub const DEFAULT_SUMMARY_INTERVAL: u32 = 21;
/// Default K of `llm_summary` and `hybrid`.
pub const DEFAULT_SUMMARY_KEEP: u32 = 10;

/// A run's strategy with its parameters resolved and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextPlan {
    /// The strategy (`policy_id` suffix).
    pub strategy: ContextStrategy,
    /// M: observations kept verbatim; `None` = no masking.
    pub observation_window: Option<usize>,
    /// Summarisation; `None` = never.
    pub summary: Option<SummaryPlan>,
}

/// When and how much to summarise.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryPlan {
    /// N: summarise when this many turns are unsummarised.
    pub interval: usize,
    /// K: turns kept verbatim after a summary (K < N).
    pub keep: usize,
    /// Summariser model; `None` = the agent's.
    pub model: Option<String>,
}

impl ContextPlan {
    /// The plan of `config`, or why its parameters are unusable.
    pub fn from_config(config: &RunConfig) -> Result<ContextPlan, String> {
        let params = &config.strategy_params;
        let strategy = config
            .strategy
            .ok_or_else(|| "strategy is not stated".to_owned())?;
        let summary = if strategy.summarises() {
            let interval = params.summary_interval.unwrap_or(DEFAULT_SUMMARY_INTERVAL);
            let keep = params.summary_keep.unwrap_or(DEFAULT_SUMMARY_KEEP);
            if keep >= interval {
                return Err(format!(
                    "strategy_params.summary_keep (K = {keep}) must be less than summary_interval (N = {interval})"
                ));
            }
            Some(SummaryPlan {
                interval: interval as usize,
                keep: keep as usize,
                model: params.summarizer_model.clone(),
            })
        } else {
            None
        };
        Ok(ContextPlan {
            strategy,
            observation_window: strategy.masks().then(|| {
                params
                    .observation_window
                    .unwrap_or(DEFAULT_OBSERVATION_WINDOW) as usize
            }),
            summary,
        })
    }
}
