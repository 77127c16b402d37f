//! The `llm` policy end to end against the OpenAI stand-in
//! ([`benchstream_tests::OpenAiServer`]): a model "solves" a shipped task by replying with
//! the tool calls of its reference solution, while the stand-in scripts what real
//! providers do (cached and reasoning tokens, delays, 429/500, malformed replies).
//!
//! Scenarios are `scenarios/llm-local.toml` (the shipped one) and
//! `tests/fixtures/llm/*.toml`; the model listing is `tests/fixtures/llm/models.json`
//! (OpenRouter's `/api/v1/models` shape). The end-to-end test goes through NATS, the sink
//! and ClickHouse; the others read the run's `events.jsonl`, which holds the same bytes
//! the runner publishes. [`unknown`] is the end-to-end test of the unknown: a provider, an
//! `exec` agent, a SWE-agent trajectory and a Smith run that report nothing optional
//! leave every optional column NULL.

mod cost;
mod end_to_end;
mod failures;
mod identity;
mod replies;
mod strategies;
mod unknown;

use std::path::PathBuf;
use std::time::Duration;

use agent_runner::LlmConfig;
use agent_runner::Prices;
use agent_runner::ProviderConfig;
use agent_runner::RunSummary;
use bench_schemas::{BenchmarkEvent, ContextDecision, Deliberation, Payload, SubjectPrefix};
use bench_task::LoadedTask;
use bench_task::ToolRequest;
use benchstream_tests::{NatsServer, OpenAiServer, Reply};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::common::{journal_events, publish_setup, repo_path, runner_config, SinkToClickHouse};

/// The task the stand-in model solves.
pub(crate) const TASK: &str = "py-slugify-unicode";

/// `tests/fixtures/llm/<name>.toml`.
pub(crate) fn fixture(name: &str) -> PathBuf {
    repo_path(&format!("tests/fixtures/llm/{name}.toml"))
}

/// The OpenRouter-shaped model listing of the fixtures.
pub(crate) fn models() -> Value {
    let path = repo_path("tests/fixtures/llm/models.json");
    let text = std::fs::read_to_string(&path).expect("models.json");
    serde_json::from_str(&text).expect("models.json is JSON")
}

/// A listing as vLLM or Ollama serve it: the model, no prices.
pub(crate) fn unpriced_models(model: &str) -> Value {
    serde_json::json!({"object": "list", "data": [{"id": model, "object": "model", "owned_by": "vllm"}]})
}

/// The reference solution of shipped task `task`.
pub(crate) fn reference_solution(task: &str) -> Vec<ToolRequest> {
    LoadedTask::load(&repo_path(&format!("scenarios/tasks/{task}")))
        .expect("shipped task loads")
        .task
        .solution
}

/// The replies of a model that follows `task`'s reference solution, one call per turn.
pub(crate) fn reference_replies(task: &str) -> Vec<Reply> {
    reference_solution(task)
        .iter()
        .map(|step| Reply::call(&step.tool, &Value::Object(step.args.clone())))
        .collect()
}

/// Settings reaching `server`, 10 s per call, no key, prices from its listing.
pub(crate) fn provider(server: &OpenAiServer) -> LlmConfig {
    LlmConfig {
        provider: ProviderConfig {
            base_url: server.base_url(),
            api_key: None,
            timeout: Duration::from_secs(10),
            max_tokens: None,
        },
        price_overrides: None,
        price_table: None,
        max_format_errors: 3,
        max_provider_failures: 3,
    }
}

/// `provider` with override prices.
pub(crate) fn with_prices(mut llm: LlmConfig, prices: Prices) -> LlmConfig {
    llm.price_overrides = Some(prices);
    llm
}

/// A finished run and its events.
pub(crate) struct Finished {
    pub summary: RunSummary,
    pub events: Vec<BenchmarkEvent>,
}

impl Finished {
    pub(crate) fn deliberations(&self) -> Vec<&Deliberation> {
        self.events
            .iter()
            .filter_map(|e| match &e.payload {
                Payload::Deliberation(d) => Some(d),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn context_decisions(&self) -> Vec<&ContextDecision> {
        self.events
            .iter()
            .filter_map(|e| match &e.payload {
                Payload::ContextDecision(d) => Some(d),
                _ => None,
            })
            .collect()
    }
}

/// Runs the one task of `scenario` with `llm`, without publishing; returns its summary
/// and the events of its `events.jsonl`.
pub(crate) async fn run(scenario: PathBuf, llm: LlmConfig) -> Finished {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = runner_config(scenario, None, true, None, dir.path());
    config.llm = Some(llm);
    let report = agent_runner::run(config, CancellationToken::new())
        .await
        .expect("scenario runs");
    let [summary] = <[RunSummary; 1]>::try_from(report.runs).expect("one run");
    let events = journal_events(&summary);
    Finished { summary, events }
}

/// Runs the one task of `scenario` with `llm`, publishing to `nats`; returns its summary
/// once `sink` has stored every event of the run in ClickHouse.
pub(crate) async fn run_published(
    scenario: PathBuf,
    llm: LlmConfig,
    nats: &NatsServer,
    sink: &SinkToClickHouse,
) -> RunSummary {
    let dir = tempfile::tempdir().expect("tempdir");
    let setup = publish_setup(&nats.url(), &SubjectPrefix::default(), dir.path());
    let mut config = runner_config(scenario, None, true, Some(setup), dir.path());
    config.llm = Some(llm);
    let report = agent_runner::run(config, CancellationToken::new())
        .await
        .expect("scenario runs");
    assert_eq!(report.undelivered(), 0);
    let [summary] = <[RunSummary; 1]>::try_from(report.runs).expect("one run");
    sink.wait_for_run(&summary).await;
    summary
}

/// Chat requests that carry tools: the agent's, not the summariser's.
pub(crate) fn agent_requests(server: &OpenAiServer) -> Vec<Value> {
    server
        .chat_requests()
        .into_iter()
        .filter(|r| r.get("tools").is_some())
        .collect()
}

/// The `content` of each message of `request` with role `role`.
pub(crate) fn contents<'a>(request: &'a Value, role: &str) -> Vec<&'a str> {
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == role)
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect()
}
