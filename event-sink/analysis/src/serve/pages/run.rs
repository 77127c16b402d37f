//! `/runs/{run_id}`: the whole trajectory in seq order (gaps shown as gaps), then the
//! final diff, the test outcomes (flipped first), the integrity flags and the run's
//! config and environment.

use std::collections::HashMap;

use maud::{html, Markup};
use serde_json::Value;

use super::{capped, encode, query};
use crate::serve::data::run::{flipped, Diff, RunPage};

/// Characters of a step, an output or a model answer shown before "show all".
const CAP: usize = 2000;

/// The run page's body.
pub fn render(page: &RunPage) -> Markup {
    html! {
        (summary(page))
        h2 { "Trajectory" }
        div id="trajectory" { (trajectory(page)) }
        h2 { "Final diff" }
        (diff(&page.diff))
        h2 { "Test outcomes" }
        (tests(&page.test_outcomes))
        h2 { "Integrity" }
        @match &page.integrity {
            Some(flags) => pre id="integrity" { (pretty(flags)) },
            None => p class="muted" { "No integrity flags: the run was not judged here (or has not ended)." },
        }
        h2 { "Config and environment (run_start)" }
        @match &page.run_start {
            Some(start) => pre id="run-start" { (pretty(&start["data"])) },
            None => p class="muted" { "No run_start stored." },
        }
    }
}

fn summary(page: &RunPage) -> Markup {
    let start = page.run_start.as_ref().unwrap_or(&Value::Null);
    let task = start["task_id"].as_str().unwrap_or_default();
    let experiment = start["data"]["experiment"].as_str();
    html! {
        table id="summary" {
            tr { th { "task" } td { a href={ "/tasks/" (encode(task)) } { (task) } } }
            tr { th { "policy" } td { (text(&start["policy_id"])) } }
            @if let Some(name) = experiment {
                tr { th { "experiment" } td { a href={ "/experiments/" (encode(name)) } { (name) } } }
            }
            tr { th { "state" } td id="run-state" { (state(page)) } }
            tr { th { "events" } td { (page.events.len()) @if !page.gaps.is_empty() { " (" (page.gaps.iter().map(|g| g.missing).sum::<u64>()) " missing)" } } }
            tr { th { "other runs of the task" } td { a href={ "/tasks/" (encode(task)) "?" (query(&[("a", &page.run_id)])) } { "compare side by side" } } }
        }
    }
}

fn state(page: &RunPage) -> String {
    match &page.run_stop {
        None => "running (no run_stop yet)".to_owned(),
        Some(stop) => {
            let data = &stop["data"];
            let verdict = match data["success"].as_bool() {
                Some(true) => "solved",
                Some(false) => "not solved",
                None => "unjudged",
            };
            format!(
                "finished: {} · {verdict} · cost {} USD · {} ms",
                text(&data["exit_status"]),
                text(&data["cost_usd"]),
                text(&data["wall_time_ms"])
            )
        }
    }
}

fn trajectory(page: &RunPage) -> Markup {
    let gaps: HashMap<Option<u64>, u64> =
        page.gaps.iter().map(|g| (g.after_seq, g.missing)).collect();
    html! {
        @if let Some(missing) = gaps.get(&None) { (gap(*missing, None)) }
        @for (i, event) in page.events.iter().enumerate() {
            (one_event(event))
            @let seq = event["seq"].as_u64();
            @let last_of_seq = page.events.get(i + 1).is_none_or(|next| next["seq"].as_u64() != seq);
            @if let (true, Some(missing)) = (last_of_seq, gaps.get(&seq)) { (gap(*missing, seq)) }
        }
    }
}

fn gap(missing: u64, after: Option<u64>) -> Markup {
    let from = after.map_or(0, |s| s + 1);
    html! {
        div class="gap" {
            (missing) " event(s) missing: seq " (from) "–" (from + missing - 1)
            " (lost, or not stored yet)"
        }
    }
}

fn one_event(event: &Value) -> Markup {
    let kind = event["type"].as_str().unwrap_or("unknown");
    let data = &event["data"];
    html! {
        div class={ "event " (kind) } data-seq=(text(&event["seq"])) {
            span class="muted" { "#" (text(&event["seq"])) " " (text(&event["ts"])) } " "
            strong { (kind) } " "
            @match kind {
                "step" => { (text(&data["step_type"])) (capped(data["content"].as_str().unwrap_or_default(), CAP)) }
                "tool_call" => { (tool_call(data)) }
                "deliberation" => { (deliberation(data)) }
                "context_decision" => {
                    (if data["kept"].as_bool() == Some(false) { "pruned " } else { "kept " })
                    (text(&data["segment_type"])) " segment " code { (text(&data["segment_id"])) }
                    " (" (text(&data["segment_kb"])) " KiB) by " (text(&data["pruning_algorithm"]))
                }
                "failure" => { (text(&data["root_kind"])) " · " (text(&data["error_category"])) pre { (pretty(data)) } }
                "run_start" => { "policy " (text(&event["policy_id"])) " (config below)" }
                "run_stop" => { (text(&data["exit_status"])) " · success " (text(&data["success"])) }
                "test_outcome" => { code { (text(&data["test_id"])) } " after: " (text(&data["after"])) }
                _ => { pre { (pretty(data)) } }
            }
        }
    }
}

fn tool_call(data: &Value) -> Markup {
    html! {
        code { (text(&data["tool_name"])) } " exit " (text(&data["exit_kind"]))
        " · " (text(&data["latency_ms"])) " ms"
        @if let Some(message) = data["exit_message"].as_str() { (capped(message, CAP)) }
        @if let Some(files) = data["evidence_footprint"]["files_modified"].as_array().filter(|f| !f.is_empty()) {
            " · modified " @for f in files { code { (text(f)) } " " }
        }
    }
}

fn deliberation(data: &Value) -> Markup {
    html! {
        (text(&data["model"])) " · " (text(&data["status"]))
        " · tokens in " (text(&data["input_tokens"])) " out " (text(&data["output_tokens"]))
        " · cost " (text(&data["cost_usd"])) " USD · " (text(&data["latency_ms"])) " ms"
        @if let Some(error) = data["error"].as_str() { p class="error" { (error) } }
        (capped(data["raw_output"].as_str().unwrap_or_default(), CAP))
    }
}

fn diff(diff: &Diff) -> Markup {
    html! {
        @if let Some(sha) = &diff.sha256 { p class="muted" { "sha256 " code { (sha) } } }
        @if let Some(note) = &diff.note { p class="muted" { (note) } }
        @match &diff.text {
            Some(text) => pre id="diff" {
                @for line in text.lines() {
                    @let class = if line.starts_with('+') && !line.starts_with("+++") { "diff-add" }
                        else if line.starts_with('-') && !line.starts_with("---") { "diff-del" } else { "" };
                    span class=(class) { (line) } "\n"
                }
            },
            None => @if diff.sha256.is_none() { p class="muted" { "No final diff (not a SWE-bench-format task, or the run has not ended)." } },
        }
    }
}

fn tests(outcomes: &[Value]) -> Markup {
    html! {
        @if outcomes.is_empty() {
            p class="muted" { "No test outcomes." }
        } @else {
            table id="tests" {
                tr { th { "test" } th { "set" } th { "before" } th { "after" } th { "reason" } }
                @for t in outcomes {
                    @let data = &t["data"];
                    tr class=[flipped(t).then_some("flipped")] {
                        td { code { (text(&data["test_id"])) } }
                        td { (text(&data["test_set"])) }
                        td { (text(&data["before"])) }
                        td { (text(&data["after"])) }
                        td { (text(&data["reason"])) }
                    }
                }
            }
        }
    }
}

/// A JSON value as text: a string as it is, null as `–`.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "–".to_owned(),
        other => other.to_string(),
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}
