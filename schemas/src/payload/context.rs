//! `context_decision`: whether a context segment was kept or pruned.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `context_decision`: one pruning decision about one context segment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContextDecision {
    /// Identifies the segment within the run (e.g. the turn or tool output it came from).
    pub segment_id: String,
    /// Whether the segment stayed in the context (false: it was pruned or replaced).
    pub kept: bool,
    /// Size of the segment, KiB.
    pub segment_kb: f64,
    /// What the segment holds.
    pub segment_type: SegmentType,
    /// Expected value of probing the segment's impact; absent when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impact_probe_ev: Option<f64>,
    /// The algorithm that decided, e.g. `observation_masking`, `llm_summary`.
    pub pruning_algorithm: String,
    /// Confidence in the decision, 0..1 (1 for a fixed rule).
    pub confidence_score: f64,
}

/// What a context segment holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SegmentType {
    /// Contents of a file the agent read.
    FileContent,
    /// Results of a search (grep, find, code search).
    SearchResults,
    /// Earlier turns of the conversation.
    ConversationHistory,
    /// Output of a tool call.
    ToolOutput,
    /// The model's own earlier reasoning.
    ReasoningContext,
    /// Documentation the agent looked up.
    Documentation,
    /// Error messages and logs.
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
