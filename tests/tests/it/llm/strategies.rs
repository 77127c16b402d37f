//! Each context strategy prunes what it should, checked on the requests the stand-in
//! actually received, and reports every pruning as `context_decision` events; the run
//! still solves its task.
//!
//! The scripted model probes the workspace six times (`echo probe-<i>`) and then follows
//! the reference solution: ten agent turns. Summary requests (the ones without tools) are
//! answered `SUMMARY-<n>`.

use std::collections::VecDeque;

use benchstream_tests::{OpenAiServer, Reply};
use serde_json::{json, Value};

use super::{
    agent_requests, contents, fixture, models, provider, reference_replies, run, Finished, TASK,
};

const PROBES: usize = 6;
const TURNS: usize = PROBES + 4;
const PLACEHOLDER: &str = "[Older observation omitted";

fn prober() -> OpenAiServer {
    let mut actions: VecDeque<Reply> = (0..PROBES)
        .map(|i| Reply::call("bash", &json!({"command": format!("echo probe-{i}")})))
        .chain(reference_replies(TASK))
        .collect();
    let mut summaries = 0;
    OpenAiServer::start(models(), move |body| {
        if body.get("tools").is_none() {
            summaries += 1;
            return Reply::text(&format!("SUMMARY-{summaries}"));
        }
        actions
            .pop_front()
            .unwrap_or_else(|| Reply::error(500, "script exhausted"))
    })
}

async fn run_strategy(scenario: &str) -> (OpenAiServer, Finished, Vec<Value>) {
    let server = prober();
    let finished = run(fixture(scenario), provider(&server)).await;
    let result = &finished.summary.result;
    assert_eq!(result.success, Some(true), "{scenario}: {result:?}");
    let requests = agent_requests(&server);
    assert_eq!(requests.len(), TURNS);
    (server, finished, requests)
}

/// Tool messages of `request`: how many are masked, how many verbatim.
fn masked_and_verbatim(request: &Value) -> (usize, usize) {
    let tools = contents(request, "tool");
    let masked = tools
        .iter()
        .take_while(|t| t.starts_with(PLACEHOLDER))
        .count();
    assert!(
        tools[masked..].iter().all(|t| !t.starts_with(PLACEHOLDER)),
        "masked observations are the oldest ones: {tools:?}"
    );
    (masked, tools.len() - masked)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_sends_every_observation_verbatim() {
    let (_server, finished, requests) = run_strategy("raw").await;
    for (turn, request) in requests.iter().enumerate() {
        assert_eq!(masked_and_verbatim(request), (0, turn));
    }
    let last = contents(&requests[TURNS - 1], "tool").join("\n");
    for i in 0..PROBES {
        assert!(last.contains(&format!("probe-{i}")));
    }
    assert!(finished.context_decisions().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observation_masking_keeps_the_last_m_observations() {
    let (_server, finished, requests) = run_strategy("masking").await;
    for (turn, request) in requests.iter().enumerate() {
        let m = turn.min(2);
        assert_eq!(masked_and_verbatim(request), (turn - m, m), "turn {turn}");
    }
    // The model's own replies are not masked: every call is still in the history.
    assert_eq!(contents(&requests[TURNS - 1], "assistant").len(), TURNS - 1);
    let decisions = finished.context_decisions();
    assert_eq!(
        decisions.len(),
        TURNS - 1 - 2,
        "one decision per masked observation"
    );
    assert!(decisions
        .iter()
        .all(|d| !d.kept && d.pruning_algorithm == "observation_masking" && d.segment_kb > 0.0));
}

/// Turns folded into the summary before agent turn `turn` with N = 4, K = 2.
fn folded(turn: usize) -> usize {
    match turn {
        0..=3 => 0,
        _ => 2 * ((turn - 2) / 2),
    }
}

/// Checks the summaries of the `summary` and `hybrid` fixtures (N = 4, K = 2): three
/// summariser calls, each folding two turns; later requests carry the newest summary and
/// only the turns after it.
fn assert_summaries(server: &OpenAiServer, finished: &Finished, requests: &[Value]) {
    for (turn, request) in requests.iter().enumerate() {
        let done = folded(turn);
        assert_eq!(
            contents(request, "assistant").len(),
            turn - done,
            "turn {turn}: only unsummarised turns are sent"
        );
        let summaries: Vec<&str> = contents(request, "user")
            .into_iter()
            .filter(|c| c.starts_with("Summary of your first"))
            .collect();
        if done == 0 {
            assert!(summaries.is_empty());
        } else {
            assert_eq!(summaries.len(), 1, "turn {turn}");
            assert!(summaries[0].contains(&format!("SUMMARY-{}", done / 2)));
        }
    }
    let summarizer_requests: Vec<Value> = server
        .chat_requests()
        .into_iter()
        .filter(|r| r.get("tools").is_none())
        .collect();
    assert_eq!(summarizer_requests.len(), 3);
    let first = contents(&summarizer_requests[0], "user").join("\n");
    assert!(first.contains("probe-0") && first.contains("probe-1") && !first.contains("probe-2"));
    let second = contents(&summarizer_requests[1], "user").join("\n");
    assert!(second.contains("SUMMARY-1") && second.contains("probe-3"));

    let summarizer: Vec<_> = finished
        .deliberations()
        .into_iter()
        .filter(|d| d.agent == "summarizer")
        .collect();
    assert_eq!(
        summarizer
            .iter()
            .map(|d| d.summary.as_str())
            .collect::<Vec<_>>(),
        ["SUMMARY-1", "SUMMARY-2", "SUMMARY-3"]
    );
    assert!(summarizer.iter().all(|d| d.cost_usd.is_some()));
    let folds: Vec<_> = finished
        .context_decisions()
        .into_iter()
        .filter(|d| d.pruning_algorithm == "llm_summary")
        .collect();
    // Per fold: two turns, each a reply and an observation, pruned; the summary kept.
    assert_eq!(folds.iter().filter(|d| !d.kept).count(), 3 * 4);
    assert_eq!(folds.iter().filter(|d| d.kept).count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_summary_condenses_old_turns_with_a_summarizer_call() {
    let (server, finished, requests) = run_strategy("summary").await;
    assert_summaries(&server, &finished, &requests);
    for request in &requests {
        assert_eq!(
            masked_and_verbatim(request).0,
            0,
            "no masking in llm_summary"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hybrid_masks_unsummarised_turns_and_summarises_old_ones() {
    let (server, finished, requests) = run_strategy("hybrid").await;
    assert_summaries(&server, &finished, &requests);
    for (turn, request) in requests.iter().enumerate() {
        let live = turn - folded(turn);
        assert_eq!(
            masked_and_verbatim(request),
            (live.saturating_sub(1), live.min(1)),
            "turn {turn}"
        );
    }
    assert!(finished
        .context_decisions()
        .iter()
        .any(|d| d.pruning_algorithm == "observation_masking"));
}
