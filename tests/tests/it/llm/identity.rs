//! A policy is every setting that changes its behaviour: runs whose model calls went to
//! another endpoint (as written, only normalised) or with another `max_tokens` carry
//! another `cfg_hash`, and their `run_start` says which setting it was.

use bench_schemas::{Hash256, Payload, RunConfig};
use benchstream_tests::{OpenAiServer, Reply};
use serde_json::json;

use super::{fixture, models, provider, run};

/// The `cfg_hash` and config of the one run of `tests/fixtures/llm/raw.toml` reaching
/// the stand-in at `base_url` with `max_tokens`.
async fn started(
    server: &OpenAiServer,
    base_url: String,
    max_tokens: Option<u32>,
) -> (Hash256, RunConfig) {
    let mut llm = provider(server);
    llm.provider.base_url = base_url;
    llm.provider.max_tokens = max_tokens;
    let finished = run(fixture("raw"), llm).await;
    let start = &finished.events[0];
    let Payload::RunStart(payload) = &start.payload else {
        panic!("first event is {}", start.event_type())
    };
    (start.cfg_hash.clone(), payload.config.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_at_another_endpoint_or_max_tokens_carry_another_cfg_hash_and_say_why() {
    let server = OpenAiServer::start(models(), |_| Reply::call("submit", &json!({})));
    let written = server.base_url();
    let port = written
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/api/v1");
    let (hash, config) = started(&server, written.clone(), None).await;
    assert_eq!(
        config.endpoint.as_deref(),
        Some(format!("http://127.0.0.1:{port}/api/v1").as_str())
    );
    assert_eq!(config.max_tokens, None);
    assert!(config.system_prompt_sha256.is_some() && config.tool_definitions_sha256.is_some());

    // Scheme and host case and a trailing `/` are the same endpoint.
    let shouted = format!("HTTP://127.0.0.1:{port}/api/v1/");
    assert_eq!(started(&server, shouted, None).await.0, hash);

    // The same server by another name, or another path, is another endpoint.
    let by_name = format!("http://localhost:{port}/api/v1");
    let (other, config) = started(&server, by_name.clone(), None).await;
    assert_ne!(other, hash);
    assert_eq!(config.endpoint, Some(by_name));

    // Another max_tokens is another policy.
    let (capped, config) = started(&server, written, Some(256)).await;
    assert_ne!(capped, hash);
    assert_eq!(config.max_tokens, Some(256));
}
