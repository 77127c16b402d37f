//! Context strategies: which part of the transcript the model sees each turn, and the
//! `context_decision` event of every pruning.
//!
//! - `raw`: everything.
//! - `observation_masking`: the newest M observations (tool results) verbatim, older ones
//!   replaced by a one-line placeholder ([`prompt::masked_observation`]); the model's own
//!   replies stay. Default M = [`DEFAULT_OBSERVATION_WINDOW`](bench_task::DEFAULT_OBSERVATION_WINDOW).
//! - `llm_summary`: when N turns are unsummarised, the oldest of them but the last K are
//!   condensed by a model call into one summary message (which also absorbs the previous
//!   summary); the last K turns stay verbatim. Defaults
//!   N = [`DEFAULT_SUMMARY_INTERVAL`](bench_task::DEFAULT_SUMMARY_INTERVAL),
//!   K = [`DEFAULT_SUMMARY_KEEP`](bench_task::DEFAULT_SUMMARY_KEEP); K < N is
//!   checked when the config is loaded ([`ContextPlan::from_config`]).
//! - `hybrid`: both; masking applies to the turns the summary has not absorbed.
//!
//! The system prompt and the task message are never pruned. A segment gets one
//! `context_decision` when it is pruned (masked or folded into a summary, `kept = false`),
//! and a new summary one with `kept = true`; segments that stay get none. This module
//! decides and renders; making the summariser call is the policy's job.

use std::collections::HashSet;
use std::ops::Range;

use bench_schemas::{ContextDecision, ContextStrategy, SegmentType};

use crate::provider::Message;
use bench_task::ContextPlan;

use super::prompt;
use super::transcript::Transcript;

/// Chars of each observation the summariser is shown.
const SUMMARY_OBSERVATION_CHARS: usize = 2000;

/// What has been pruned so far.
#[derive(Debug, Default)]
pub struct ContextState {
    /// The first `folded` turns of the transcript are in `summary`.
    folded: usize,
    summary: Option<String>,
    /// Call ids whose observation is masked.
    masked: HashSet<String>,
}

impl ContextState {
    /// The transcript turns due for summarising now, if any.
    pub fn summary_due(&self, plan: &ContextPlan, transcript: &Transcript) -> Option<Range<usize>> {
        let summary = plan.summary.as_ref()?;
        let len = transcript.turns.len();
        (len - self.folded >= summary.interval).then(|| self.folded..len - summary.keep)
    }

    /// The summariser's messages for folding `turns` (from [`Self::summary_due`]).
    pub fn summarizer_messages(
        &self,
        transcript: &Transcript,
        turns: Range<usize>,
        task: &str,
    ) -> Vec<Message> {
        let rendered: Vec<String> = transcript.turns[turns]
            .iter()
            .map(|t| t.as_text(SUMMARY_OBSERVATION_CHARS))
            .collect();
        vec![
            Message::System {
                content: prompt::SUMMARIZER_PROMPT.to_owned(),
            },
            Message::User {
                content: prompt::summarizer_request(
                    task,
                    self.summary.as_deref(),
                    &rendered.join("\n"),
                ),
            },
        ]
    }

    /// Replaces `turns` (and the previous summary) by `summary`; returns the decisions.
    pub fn fold(
        &mut self,
        transcript: &Transcript,
        turns: Range<usize>,
        summary: String,
    ) -> Vec<ContextDecision> {
        let algorithm = ContextStrategy::LlmSummary.as_str();
        let mut decisions = Vec::new();
        for turn in &transcript.turns[turns.clone()] {
            decisions.push(decision(
                format!("turn-{}", turn.number),
                false,
                turn.reply_bytes(),
                SegmentType::ConversationHistory,
                algorithm,
            ));
            for call in &turn.calls {
                if let Some(result) = &call.result {
                    decisions.push(decision(
                        call.id.clone(),
                        false,
                        result.text.len(),
                        result.segment,
                        algorithm,
                    ));
                }
            }
        }
        decisions.push(decision(
            format!("summary-{}", turns.end),
            true,
            summary.len(),
            SegmentType::ConversationHistory,
            algorithm,
        ));
        self.folded = turns.end;
        self.summary = Some(summary);
        decisions
    }

    /// The messages to send: `head` (system prompt, task), the summary, then the
    /// unsummarised turns with old observations masked per `plan`. Returns them with the
    /// decisions of observations masked for the first time.
    pub fn render(
        &mut self,
        plan: &ContextPlan,
        transcript: &Transcript,
        head: &[Message],
    ) -> (Vec<Message>, Vec<ContextDecision>) {
        let live = &transcript.turns[self.folded..];
        let mut decisions = Vec::new();
        if let Some(window) = plan.observation_window {
            let observed = live
                .iter()
                .rev()
                .flat_map(|t| t.calls.iter().rev())
                .filter_map(|c| c.result.as_ref().map(|r| (c, r)));
            for (call, result) in observed.skip(window) {
                if self.masked.insert(call.id.clone()) {
                    decisions.push(decision(
                        call.id.clone(),
                        false,
                        result.text.len(),
                        result.segment,
                        ContextStrategy::ObservationMasking.as_str(),
                    ));
                }
            }
        }
        let mut messages = head.to_vec();
        if let Some(summary) = &self.summary {
            messages.push(Message::User {
                content: prompt::summary_message(self.folded, summary),
            });
        }
        messages.extend(live.iter().flat_map(|t| t.messages(&self.masked)));
        (messages, decisions)
    }
}

fn decision(
    segment_id: String,
    kept: bool,
    bytes: usize,
    segment_type: SegmentType,
    algorithm: &str,
) -> ContextDecision {
    ContextDecision {
        segment_id,
        kept,
        segment_kb: bytes as f64 / 1024.0,
        segment_type,
        impact_probe_ev: None,
        pruning_algorithm: algorithm.to_owned(),
        // A rule decided, not a model: no uncertainty to report.
        confidence_score: 1.0,
    }
}

#[cfg(test)]
mod tests {
    use bench_schemas::{RunConfig, StrategyParams};

    use super::super::transcript::{CallRecord, CallResult, TurnRecord};
    use super::*;

    fn config(strategy: ContextStrategy, params: StrategyParams) -> RunConfig {
        let mut config: RunConfig = toml::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scenarios/llm-local.toml"
        )))
        .map(|s: toml::Table| {
            s["config"]
                .clone()
                .try_into()
                .expect("llm-local.toml has a valid config")
        })
        .expect("llm-local.toml parses");
        config.strategy = Some(strategy);
        config.strategy_params = params;
        config
    }

    fn transcript(turns: u32) -> Transcript {
        let mut t = Transcript::default();
        for number in 0..turns {
            t.push(TurnRecord {
                number,
                content: None,
                calls: vec![CallRecord {
                    id: format!("c{number}"),
                    tool: "bash".to_owned(),
                    arguments: "{}".to_owned(),
                    result: Some(CallResult {
                        text: format!("output {number}"),
                        segment: SegmentType::ToolOutput,
                    }),
                }],
                native: true,
                feedback: None,
            });
        }
        t
    }

    #[test]
    fn defaults_and_k_below_n() {
        let plan =
            ContextPlan::from_config(&config(ContextStrategy::Hybrid, StrategyParams::default()))
                .expect("valid");
        assert_eq!(plan.observation_window, Some(10));
        assert_eq!(
            plan.summary.as_ref().map(|s| (s.interval, s.keep)),
            Some((21, 10))
        );
        let raw =
            ContextPlan::from_config(&config(ContextStrategy::Raw, StrategyParams::default()))
                .expect("valid");
        assert_eq!((raw.observation_window, raw.summary), (None, None));
        let bad = StrategyParams {
            summary_interval: Some(5),
            summary_keep: Some(5),
            ..StrategyParams::default()
        };
        assert!(ContextPlan::from_config(&config(ContextStrategy::LlmSummary, bad)).is_err());
    }

    #[test]
    fn masking_keeps_the_newest_observations_and_reports_each_once() {
        let params = StrategyParams {
            observation_window: Some(2),
            ..StrategyParams::default()
        };
        let plan = ContextPlan::from_config(&config(ContextStrategy::ObservationMasking, params))
            .expect("valid");
        let mut state = ContextState::default();
        let (messages, decisions) = state.render(&plan, &transcript(4), &[]);
        let tool_texts: Vec<&str> = messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool { content, .. } => Some(content.as_str()),
                _ => None,
            })
            .collect();
        assert!(tool_texts[0].starts_with("[Older observation omitted"));
        assert!(tool_texts[1].starts_with("[Older observation omitted"));
        assert_eq!(&tool_texts[2..], ["output 2", "output 3"]);
        let ids: Vec<&str> = decisions.iter().map(|d| d.segment_id.as_str()).collect();
        assert_eq!(ids, ["c1", "c0"]);
        assert!(decisions.iter().all(|d| !d.kept));
        let (_, again) = state.render(&plan, &transcript(4), &[]);
        assert!(again.is_empty());
    }

    #[test]
    fn summary_folds_all_but_the_last_k_turns() {
        let params = StrategyParams {
            summary_interval: Some(4),
            summary_keep: Some(1),
            ..StrategyParams::default()
        };
        let plan =
            ContextPlan::from_config(&config(ContextStrategy::LlmSummary, params)).expect("valid");
        let mut state = ContextState::default();
        assert_eq!(state.summary_due(&plan, &transcript(3)), None);
        let t = transcript(4);
        let due = state.summary_due(&plan, &t).expect("due at N turns");
        assert_eq!(due, 0..3);
        let request = state.summarizer_messages(&t, due.clone(), "fix it");
        assert!(
            matches!(&request[1], Message::User { content } if content.contains("output 2") && !content.contains("output 3"))
        );
        let decisions = state.fold(&t, due, "did things".to_owned());
        assert_eq!(decisions.len(), 3 * 2 + 1);
        assert!(decisions.last().is_some_and(|d| d.kept));
        let (messages, _) = state.render(&plan, &t, &[]);
        assert!(
            matches!(&messages[0], Message::User { content } if content.contains("did things"))
        );
        assert_eq!(messages.len(), 1 + 2);
        // Next summary once N turns are unsummarised again.
        assert_eq!(state.summary_due(&plan, &transcript(6)), None);
        assert_eq!(state.summary_due(&plan, &transcript(7)), Some(3..6));
    }
}
