//! The conversation so far, as the policy keeps it: per turn, what the model replied (text
//! and calls, with the ids the observations answer) and what came back for each call. The
//! run loop's history supplies the observations of executed calls; calls that could not
//! be parsed carry their error instead. Rendering a turn into chat messages, whole or with
//! masked observations, is here too; which turns to render is [`super::context`]'s call.

use std::collections::HashSet;

use bench_schemas::{ExitKind, SegmentType};

use crate::policy::Exchange;
use crate::provider::{FunctionCall, Message, ToolCall};

use super::prompt;

/// Every turn the model acted in, oldest first.
#[derive(Debug, Default)]
pub struct Transcript {
    /// The turns.
    pub turns: Vec<TurnRecord>,
    /// Exchanges of the run's history already absorbed.
    absorbed: usize,
}

/// One reply of the model and what followed.
#[derive(Debug, Clone)]
pub struct TurnRecord {
    /// The run's turn number.
    pub number: u32,
    /// The reply's text.
    pub content: Option<String>,
    /// Its calls, in order.
    pub calls: Vec<CallRecord>,
    /// The calls were function calls (answered by `tool` messages), not JSON in text.
    pub native: bool,
    /// A note for the model after the reply (format errors).
    pub feedback: Option<String>,
}

/// One call and its result.
#[derive(Debug, Clone)]
pub struct CallRecord {
    /// The call id the result answers.
    pub id: String,
    /// Tool name.
    pub tool: String,
    /// Arguments as the model wrote them.
    pub arguments: String,
    /// What came back; `None` while the call has not run.
    pub result: Option<CallResult>,
}

/// A call's observation.
#[derive(Debug, Clone)]
pub struct CallResult {
    /// The text the model sees.
    pub text: String,
    /// What kind of content it is (`context_decision.segment_type`).
    pub segment: SegmentType,
}

impl Transcript {
    /// Adds a reply.
    pub fn push(&mut self, record: TurnRecord) {
        self.turns.push(record);
    }

    /// Takes the observations of the exchanges executed since the last call.
    pub fn absorb(&mut self, history: &[Exchange]) {
        for exchange in history.iter().skip(self.absorbed) {
            let Some(id) = &exchange.request.call_id else {
                continue;
            };
            let call = self
                .turns
                .iter_mut()
                .rev()
                .flat_map(|t| t.calls.iter_mut())
                .find(|c| &c.id == id);
            if let Some(call) = call {
                call.result = Some(CallResult {
                    text: exchange.outcome.observation.clone(),
                    segment: segment_type(exchange),
                });
            }
        }
        self.absorbed = history.len();
    }
}

/// How a tool's output is classified for `context_decision`.
fn segment_type(exchange: &Exchange) -> SegmentType {
    if exchange.outcome.is_error() || exchange.outcome.exit_kind == ExitKind::Deterministic {
        return SegmentType::ErrorLogs;
    }
    match exchange.request.tool.as_str() {
        "view" => SegmentType::FileContent,
        "grep" => SegmentType::SearchResults,
        _ => SegmentType::ToolOutput,
    }
}

impl TurnRecord {
    /// The turn's messages; results of calls whose id is in `masked` are replaced by a
    /// placeholder.
    pub fn messages(&self, masked: &HashSet<String>) -> Vec<Message> {
        let result_text = |call: &CallRecord| match &call.result {
            Some(r) if masked.contains(&call.id) => {
                prompt::masked_observation(&call.tool, r.text.len())
            }
            Some(r) => r.text.clone(),
            None => "(not executed)".to_owned(),
        };
        let mut messages = vec![Message::Assistant {
            content: self.content.clone(),
            tool_calls: if self.native {
                self.calls
                    .iter()
                    .map(|c| ToolCall {
                        id: c.id.clone(),
                        kind: "function".to_owned(),
                        function: FunctionCall {
                            name: c.tool.clone(),
                            arguments: c.arguments.clone(),
                        },
                    })
                    .collect()
            } else {
                Vec::new()
            },
        }];
        if self.native {
            messages.extend(self.calls.iter().map(|c| Message::Tool {
                tool_call_id: c.id.clone(),
                content: result_text(c),
            }));
        } else if !self.calls.is_empty() {
            let results: Vec<String> = self
                .calls
                .iter()
                .map(|c| format!("Result of `{}`:\n{}", c.tool, result_text(c)))
                .collect();
            messages.push(Message::User {
                content: results.join("\n\n"),
            });
        }
        if let Some(feedback) = &self.feedback {
            messages.push(Message::User {
                content: feedback.clone(),
            });
        }
        messages
    }

    /// The turn as plain text for the summariser, each observation cut to `max_chars`.
    pub fn as_text(&self, max_chars: usize) -> String {
        let mut text = format!("## Turn {}\n", self.number);
        if let Some(content) = &self.content {
            text.push_str(&format!("Agent: {content}\n"));
        }
        for call in &self.calls {
            text.push_str(&format!("Call `{}` {}\n", call.tool, call.arguments));
            if let Some(result) = &call.result {
                let mut observation = result.text.clone();
                if bench_schemas::truncate::truncate_chars(&mut observation, max_chars) {
                    observation.push_str(" [...]");
                }
                text.push_str(&format!("Result:\n{observation}\n"));
            }
        }
        text
    }

    /// Bytes of the reply itself (text and call arguments).
    pub fn reply_bytes(&self) -> usize {
        self.content.as_deref().map_or(0, str::len)
            + self
                .calls
                .iter()
                .map(|c| c.tool.len() + c.arguments.len())
                .sum::<usize>()
    }
}
