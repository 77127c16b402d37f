//! `context_decision`: whether a context segment was kept or pruned.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `context_decision`: one pruning decision about one context segment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContextDecision {
    pub segment_id: String,
    pub kept: bool,
    pub segment_kb: f64,
    pub segment_type: SegmentType,
    /// Expected value of probing the segment's impact, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impact_probe_ev: Option<f64>,
    /// e.g. `observation_masking`, `llm_summary`.
    pub pruning_algorithm: String,
    pub confidence_score: f64,
}

/// What a context segment holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SegmentType {
    FileContent,
    SearchResults,
    ConversationHistory,
    ToolOutput,
    ReasoningContext,
    Documentation,
    ErrorLogs,
}

impl SegmentType {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            SegmentType::FileContent => "file_content",
            SegmentType::SearchResults => "search_results",
            SegmentType::ConversationHistory => "conversation_history",
            SegmentType::ToolOutput => "tool_output",
            SegmentType::ReasoningContext => "reasoning_context",
            SegmentType::Documentation => "documentation",
            SegmentType::ErrorLogs => "error_logs",
        }
    }
}
