//! [`LlmPolicy`]: the [`Policy`] that asks a model for each turn's actions.
//!
//! Per turn: take the observations of the last actions into the transcript, summarise if
//! the strategy says it is time, render the context (masking as configured), check it
//! fits the context window, call the model, report the call as a `deliberation`, and
//! return the parsed tool calls. How each outcome ends (or does not end) the run:
//!
//! | outcome | `deliberation.status` | the run |
//! |---|---|---|
//! | usable tool calls | `ok` | executes them |
//! | no usable tool call, or malformed arguments | `parse_failure` | goes on; the model is told; [`LlmConfig::max_format_errors`] in a row → `exit_format` |
//! | reply is not a chat completion | `parse_failure` | as above |
//! | no answer within the per-call timeout (after retries, if `retry_on_timeout`) | `timeout` | goes on: the next turn asks again; [`LlmConfig::max_provider_failures`] failed calls in a row → `exit_api` |
//! | HTTP error or unreachable provider after retries | `api_error` | `exit_api` |
//!
//! A run the provider ends (`exit_api`) files its `failure` under root `provider`, naming
//! the provider, its last error and the failed calls in a row. Every failed call is
//! logged (warn) as it happens, so a hanging provider is visible on stderr while the
//! run waits.
//! | provider says the context is too long | `api_error` | `exit_context` |
//! | estimated prompt + `max_tokens` over `context_window` | (no call) | `exit_context` |
//!
//! The cost limit is the run loop's: it sums `cost_usd` of these events and stops with
//! `exit_cost` before the next turn ([`crate::limits`]).

use std::collections::HashSet;
use std::sync::Arc;

use bench_schemas::{Action, DeliberationStatus, ExitStatus, FailureRoot, RunConfig};
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::Value;

use super::call::{set_summary, Called, Endpoint, AGENT, SUMMARIZER};
use super::context::ContextState;
use super::parse::{assign_call_ids, parse_reply, ParsedReply};
use super::prompt;
use super::transcript::{CallRecord, CallResult, Transcript, TurnRecord};
use crate::policy::{Decision, Policy, PolicyEvents, PolicyStop, Turn};
use crate::provider::{CallError, ChatClient, ChatRequest, Completion, Message, ProviderConfig};
use crate::tools::ToolRequest;
use bench_pricing::{PriceTable, Prices, Pricing};
use bench_task::ContextPlan;
use bench_task::Task;

/// Default of [`LlmConfig::max_format_errors`].
pub const DEFAULT_MAX_FORMAT_ERRORS: u32 = 3;
/// Default of [`LlmConfig::max_provider_failures`].
pub const DEFAULT_MAX_PROVIDER_FAILURES: u32 = 3;
/// Prompt bytes per token assumed by the context-window estimate (English and code run
/// 3.5–4.5; erring high keeps the estimate from stopping runs the provider would take).
const BYTES_PER_TOKEN: usize = 4;
/// Tokens of framing per message in the estimate.
const TOKENS_PER_MESSAGE: usize = 4;

/// How model-backed policies reach their provider (from the CLI and environment).
#[derive(Debug, Clone)]
pub struct LlmConfig {
    /// Endpoint, key, per-call timeout, `max_tokens`.
    pub provider: ProviderConfig,
    /// Prices of the run's model instead of the provider's listing; `None` = listing.
    pub price_overrides: Option<Prices>,
    /// Prices per model (`--prices`), before the provider's listing.
    pub price_table: Option<PriceTable>,
    /// Unparseable replies in a row that end the run with `exit_format`. Default
    /// [`DEFAULT_MAX_FORMAT_ERRORS`].
    pub max_format_errors: u32,
    /// Model calls in a row that fail (no answer within the per-call timeout, after
    /// retries) that end the run with `exit_api`. An HTTP error or an unreachable
    /// provider that outlasts the retries ends it at once. Default
    /// [`DEFAULT_MAX_PROVIDER_FAILURES`].
    pub max_provider_failures: u32,
}

/// The agent's and the summariser's endpoints, resolved on the first turn (prices need a
/// request to the provider).
#[derive(Debug)]
struct Endpoints {
    agent: Endpoint,
    summarizer: Endpoint,
}

/// A model deciding each turn, under one context strategy.
pub struct LlmPolicy {
    client: ChatClient,
    config: RunConfig,
    plan: ContextPlan,
    price_overrides: Option<Prices>,
    price_table: Option<PriceTable>,
    max_format_errors: u32,
    max_provider_failures: u32,
    seed: u64,
    /// System prompt and task message: never pruned.
    head: Vec<Message>,
    /// The task text the summariser is given.
    task_text: String,
    tools: Vec<Value>,
    /// Serialized size of `tools`, for the context estimate.
    tools_bytes: usize,
    endpoints: Option<Arc<Endpoints>>,
    transcript: Transcript,
    context: ContextState,
    /// Call ids used so far.
    call_ids: HashSet<String>,
    /// Unparseable replies in a row.
    format_errors: u32,
    /// Calls in a row the provider failed.
    provider_failures: u32,
}

impl std::fmt::Debug for LlmPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmPolicy")
            .field("model", &self.config.model)
            .field("plan", &self.plan)
            .field("turns", &self.transcript.turns.len())
            .finish_non_exhaustive()
    }
}

/// The LLM policy cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum LlmSetupError {
    #[error(transparent)]
    Client(#[from] crate::provider::ClientError),
    #[error("{0}")]
    Context(String),
}

impl LlmPolicy {
    /// A policy for `task` under `config`, calling the provider of `llm` with `seed`.
    pub fn new(
        config: &RunConfig,
        task: &Task,
        seed: u64,
        llm: &LlmConfig,
    ) -> Result<LlmPolicy, LlmSetupError> {
        let plan = ContextPlan::from_config(config).map_err(LlmSetupError::Context)?;
        let task_text = prompt::task_message(task);
        let tools = prompt::tool_definitions(&config.available_tools);
        Ok(LlmPolicy {
            client: ChatClient::new(llm.provider.clone())?,
            config: config.clone(),
            plan,
            price_overrides: llm.price_overrides,
            price_table: llm.price_table.clone(),
            max_format_errors: llm.max_format_errors.max(1),
            max_provider_failures: llm.max_provider_failures.max(1),
            seed,
            head: vec![
                Message::System {
                    content: prompt::SYSTEM_PROMPT.to_owned(),
                },
                Message::User {
                    content: task_text.clone(),
                },
            ],
            task_text,
            tools_bytes: Value::Array(tools.clone()).to_string().len(),
            tools,
            endpoints: None,
            transcript: Transcript::default(),
            context: ContextState::default(),
            call_ids: HashSet::new(),
            format_errors: 0,
            provider_failures: 0,
        })
    }

    async fn endpoints(&mut self) -> Arc<Endpoints> {
        if let Some(endpoints) = &self.endpoints {
            return endpoints.clone();
        }
        let endpoint = |model: &str, pricing| Endpoint {
            client: self.client.clone(),
            provider: self.config.provider.clone(),
            model: model.to_owned(),
            pricing,
            retry: self.config.retry_policy.clone(),
        };
        let model = &self.config.model;
        let table = self.price_table.as_ref();
        let agent_pricing =
            Pricing::resolve(self.client.models(), model, self.price_overrides, table).await;
        // Overrides price the run's model only; another summariser model is looked up.
        let summarizer = match self.plan.summary.as_ref().and_then(|s| s.model.as_deref()) {
            Some(other) if other != model => endpoint(
                other,
                Pricing::resolve(self.client.models(), other, None, table).await,
            ),
            _ => endpoint(model, agent_pricing.clone()),
        };
        let endpoints = Arc::new(Endpoints {
            agent: endpoint(model, agent_pricing),
            summarizer,
        });
        self.endpoints = Some(endpoints.clone());
        endpoints
    }

    fn request(&self, model: &str, messages: Vec<Message>, tools: Vec<Value>) -> ChatRequest {
        ChatRequest {
            model: model.to_owned(),
            messages,
            tools,
            temperature: self.config.temperature,
            max_tokens: self.client.config().max_tokens,
            seed: self.seed,
        }
    }

    async fn decide_turn(
        &mut self,
        turn: &Turn<'_>,
        events: &mut PolicyEvents<'_>,
    ) -> Result<Decision, PolicyStop> {
        let endpoints = self.endpoints().await;
        self.transcript.absorb(turn.history);
        if let Some(due) = self.context.summary_due(&self.plan, &self.transcript) {
            let messages =
                self.context
                    .summarizer_messages(&self.transcript, due.clone(), &self.task_text);
            let request = self.request(&endpoints.summarizer.model, messages, Vec::new());
            let called = endpoints.summarizer.call(SUMMARIZER, &request).await;
            if let Some(summary) = self.summary_of(called, events)? {
                for decision in self.context.fold(&self.transcript, due, summary) {
                    events.context_decision(decision);
                }
            }
        }
        let (messages, decisions) = self
            .context
            .render(&self.plan, &self.transcript, &self.head);
        for decision in decisions {
            events.context_decision(decision);
        }
        let prompt_bytes: usize = messages.iter().map(Message::text_len).sum();
        self.check_window(prompt_bytes, messages.len())?;
        let context_kb = Some(prompt_bytes as f64 / 1024.0);

        let request = self.request(&endpoints.agent.model, messages, self.tools.clone());
        let Called {
            mut deliberation,
            result,
        } = endpoints.agent.call(AGENT, &request).await;
        let mut completion = match result {
            Ok(completion) => completion,
            Err(error) => {
                events.deliberation(deliberation);
                self.call_failed(&error)?;
                if matches!(error, CallError::Malformed { .. }) {
                    self.format_error(&error.to_string())?;
                }
                return Ok(Decision {
                    context_kb,
                    unanswered: true,
                    ..Decision::default()
                });
            }
        };
        self.provider_failures = 0;
        assign_call_ids(&mut completion.tool_calls, turn.number, &mut self.call_ids);
        let parsed = parse_reply(
            &completion.tool_calls,
            completion.content.as_deref(),
            turn.number,
        );
        deliberation.actions = actions(&parsed.requests, completion.content.as_deref());
        set_summary(
            &mut deliberation,
            completion.content.clone().unwrap_or_else(|| {
                let described: Vec<String> =
                    parsed.requests.iter().map(ToolRequest::describe).collect();
                described.join("; ")
            }),
        );
        // `confidence` stays null: a chat completion states no confidence, and the share of
        // calls that parsed is not the model's.
        let failure = format_failure(&parsed);
        if let Some(error) = &failure {
            deliberation.status = DeliberationStatus::ParseFailure;
            deliberation.error = Some(error.clone());
        }
        events.deliberation(deliberation);
        self.transcript
            .push(turn_record(turn.number, &completion, &parsed));
        match failure {
            Some(error) => self.format_error(&error)?,
            None => self.format_errors = 0,
        }
        Ok(Decision {
            thought: completion.content,
            actions: parsed.requests,
            context_kb,
            planned_step: None,
            unanswered: false,
        })
    }

    /// Counts an unparseable reply; too many in a row end the run.
    fn format_error(&mut self, error: &str) -> Result<(), PolicyStop> {
        self.format_errors += 1;
        tracing::debug!(error, count = self.format_errors, "unparseable model reply");
        if self.format_errors >= self.max_format_errors {
            return Err(PolicyStop {
                status: ExitStatus::ExitFormat,
                reason: format!(
                    "{} unparseable model replies in a row; last: {error}",
                    self.format_errors
                ),
                root: None,
            });
        }
        Ok(())
    }

    /// Stops the run before a call whose prompt cannot fit the context window.
    fn check_window(&self, prompt_bytes: usize, messages: usize) -> Result<(), PolicyStop> {
        let estimate =
            (prompt_bytes + self.tools_bytes) / BYTES_PER_TOKEN + messages * TOKENS_PER_MESSAGE;
        let reply = self.client.config().max_tokens.unwrap_or(0) as usize;
        let window = self.config.context_window.unwrap_or(0) as usize;
        // 0 or unstated: no window to check against.
        if window > 0 && estimate + reply > window {
            return Err(PolicyStop {
                status: ExitStatus::ExitContext,
                reason: format!(
                    "context_window: about {estimate} prompt tokens + {reply} reply tokens exceed {window}"
                ),
                root: None,
            });
        }
        Ok(())
    }
}

impl LlmPolicy {
    /// Reacts to a call that got no usable answer: the exit it forces, if any. A reply
    /// that is not a chat completion is an answer (the format limit counts it); a context
    /// overflow ends the run with `exit_context`; an HTTP error or an unreachable
    /// provider after retries ends it with `exit_api`, and so do
    /// `max_provider_failures` calls in a row without an answer in time.
    fn call_failed(&mut self, error: &CallError) -> Result<(), PolicyStop> {
        // Whether retrying cannot help: the call failed for good, not for time.
        let failed_for_good = match error {
            CallError::Malformed { .. } => {
                self.provider_failures = 0;
                return Ok(());
            }
            CallError::ContextLength(_) => {
                return Err(PolicyStop {
                    status: ExitStatus::ExitContext,
                    reason: error.to_string(),
                    root: None,
                })
            }
            CallError::Status { .. } | CallError::Transport(_) => true,
            CallError::Timeout(_) => false,
        };
        self.provider_failures += 1;
        let failed = self.provider_failures;
        let provider = &self.config.provider;
        tracing::warn!(
            provider = %provider,
            model = %self.config.model,
            %error,
            failed_in_a_row = failed,
            limit = self.max_provider_failures,
            "model call failed"
        );
        let reason = if failed_for_good {
            error.to_string()
        } else if failed >= self.max_provider_failures {
            format!("{failed} model calls in a row failed; last: {error}")
        } else {
            return Ok(());
        };
        Err(PolicyStop {
            status: ExitStatus::ExitApi,
            reason,
            root: Some(FailureRoot::Provider {
                provider: provider.clone(),
                api_error: error.to_string(),
                failed_calls: failed,
            }),
        })
    }

    /// Reports a summariser call; returns the summary, `None` if there is none to use
    /// this turn (the context then stays unpruned until the next try).
    fn summary_of(
        &mut self,
        called: Called,
        events: &mut PolicyEvents<'_>,
    ) -> Result<Option<String>, PolicyStop> {
        let Called {
            mut deliberation,
            result,
        } = called;
        let summary = match result {
            Ok(Completion {
                content: Some(text),
                ..
            }) if !text.trim().is_empty() => Some(text),
            Ok(_) => {
                deliberation.status = DeliberationStatus::ParseFailure;
                deliberation.error = Some("the summariser's reply has no text".to_owned());
                None
            }
            Err(error) => {
                if let Err(stop) = self.call_failed(&error) {
                    events.deliberation(deliberation);
                    return Err(stop);
                }
                None
            }
        };
        if deliberation.status == DeliberationStatus::Ok {
            self.provider_failures = 0;
        }
        match &summary {
            Some(text) => set_summary(&mut deliberation, text.clone()),
            None => {
                tracing::warn!(error = ?deliberation.error, "no summary this turn; context left unpruned")
            }
        }
        events.deliberation(deliberation);
        Ok(summary)
    }
}

impl Policy for LlmPolicy {
    fn policy_id(&self) -> String {
        format!("{}:{}", self.config.model, self.plan.strategy.as_str())
    }

    fn decide<'a>(
        &'a mut self,
        turn: &'a Turn<'a>,
        events: &'a mut PolicyEvents<'_>,
    ) -> BoxFuture<'a, Result<Decision, PolicyStop>> {
        self.decide_turn(turn, events).boxed()
    }
}

/// Why a reply counts as unparseable, if it does.
fn format_failure(parsed: &ParsedReply) -> Option<String> {
    if let Some((id, error)) = parsed.failures.first() {
        return Some(format!("call {id}: {error}"));
    }
    parsed
        .requests
        .is_empty()
        .then(|| "the reply has no tool call".to_owned())
}

/// `deliberation.actions` of the parsed requests.
fn actions(requests: &[ToolRequest], content: Option<&str>) -> Vec<Action> {
    requests
        .iter()
        .enumerate()
        .map(|(i, request)| Action {
            action_type: request.tool.clone(),
            target: ["path", "command", "pattern"]
                .iter()
                .find_map(|k| request.args.get(*k).and_then(Value::as_str))
                .unwrap_or_default()
                .to_owned(),
            priority: i as u32,
            // Truncated to its limit when the event is recorded.
            reason: content.unwrap_or_default().to_owned(),
        })
        .collect()
}

/// The transcript entry of a reply: its calls, with the parse error as the result of
/// each call that will not run, and a note to the model when nothing was usable.
fn turn_record(number: u32, completion: &Completion, parsed: &ParsedReply) -> TurnRecord {
    let failed = |id: &str| {
        parsed
            .failures
            .iter()
            .find(|(f, _)| f == id)
            .map(|(_, e)| CallResult {
                text: format!("error: {e}"),
                segment: bench_schemas::SegmentType::ErrorLogs,
            })
    };
    let calls = if parsed.native {
        completion
            .tool_calls
            .iter()
            .map(|c| CallRecord {
                id: c.id.clone(),
                tool: c.function.name.clone(),
                arguments: c.function.arguments.clone(),
                result: failed(&c.id),
            })
            .collect()
    } else {
        parsed
            .requests
            .iter()
            .map(|r| CallRecord {
                id: r.call_id.clone().unwrap_or_default(),
                tool: r.tool.clone(),
                arguments: Value::Object(r.args.clone()).to_string(),
                result: None,
            })
            .collect()
    };
    TurnRecord {
        number,
        content: completion.content.clone(),
        calls,
        native: parsed.native,
        feedback: parsed
            .requests
            .is_empty()
            .then(|| prompt::FORMAT_FEEDBACK.to_owned()),
    }
}
