//! One readable line per event (`agent-runner tail` without `--json`): time, type, run,
//! seq, task, policy, then the few facts of its type that say what happened. Works on
//! the raw JSON, so any producer's event prints (a field it lacks shows as `-`, and so
//! does a null one: unknown turns, tokens or cost read `-`, never 0), and bytes that are not
//! JSON print as their subject and size. No I/O.

use serde_json::Value;

/// Characters of free text (step content, reasoning) shown at most.
const TEXT_CHARS: usize = 100;

/// The line of the message on `subject` with body `payload`.
pub fn render(subject: &str, payload: &[u8]) -> String {
    // The subject is the producer's too: it may carry escapes.
    let subject = one_line(subject);
    let Ok(event) = serde_json::from_slice::<Value>(payload) else {
        return format!("{subject}: {} bytes, not JSON", payload.len());
    };
    let event_type = subject.rsplit('.').next().unwrap_or_default();
    let data = event.get("data").unwrap_or(&Value::Null);
    let at = |path: &str| show(data.pointer(path));
    let summary = match event_type {
        // The config is flattened into `data`: `model`, not `config/model`.
        "run_start" => {
            let sweep = match data.get("sweep") {
                Some(sweep) if !sweep.is_null() => format!(
                    " sweep {} trial {}",
                    show(sweep.get("name")),
                    show(sweep.get("trial"))
                ),
                _ => String::new(),
            };
            format!(
                "model {} strategy {} scenario {}{sweep}",
                at("/model"),
                at("/strategy"),
                at("/scenario/name")
            )
        }
        "run_stop" => format!(
            "{} {} score {} tests {} passed {} failed turns {} tokens {} cost {}",
            match data.get("success").and_then(Value::as_bool) {
                Some(true) => "solved",
                Some(false) => "unsolved",
                None => "-",
            },
            at("/exit_status"),
            at("/final_score"),
            at("/tests_passed"),
            at("/tests_failed"),
            at("/turns"),
            at("/total_tokens"),
            at("/cost_usd")
        ),
        "step" => format!("{}: {}", at("/step_type"), text(data.get("content"))),
        "tool_call" => format!(
            "{} {} {} ms",
            at("/tool_name"),
            at("/exit_kind"),
            at("/latency_ms")
        ),
        "deliberation" => format!(
            "{} {} {} {} ms in {} out {} tokens cost {}",
            at("/agent"),
            at("/model"),
            at("/status"),
            at("/latency_ms"),
            at("/input_tokens"),
            at("/output_tokens"),
            at("/cost_usd")
        ),
        "context_decision" => format!(
            "{} {} {} KB",
            at("/segment_type"),
            match data.get("kept").and_then(Value::as_bool) {
                Some(true) => "kept",
                Some(false) => "pruned",
                None => "-",
            },
            at("/segment_kb")
        ),
        "failure" => failure(data),
        "optimizer_update" => text(data.get("reasoning")),
        "experiment_decision" => format!(
            "{} {} vs {}: {} after {} rounds, sequence {} .. {} alpha {}, bets {}",
            at("/experiment"),
            at("/candidate"),
            at("/baseline"),
            at("/decision"),
            at("/rounds"),
            at("/cs_low"),
            at("/cs_high"),
            at("/alpha"),
            match data.get("detect") {
                Some(d) if !d.is_null() => format!("tuned to {}", show(Some(d))),
                _ => "learnt".to_owned(),
            }
        ),
        "genai_event" => format!(
            "{} span {}: {}",
            at("/name"),
            at("/span_id"),
            text(data.get("body"))
        ),
        _ => text(Some(data)),
    };
    format!(
        "{} {:<16} run {} #{} task {} policy {}  {}",
        show(event.get("ts")),
        event_type,
        show(event.get("run_id")),
        show(event.get("seq")),
        show(event.get("task_id")),
        show(event.get("policy_id")),
        summary
    )
}

/// A `failure`: its category and root kind, then the root's facts as `name value`,
/// each cut to [`TEXT_CHARS`] (`provider provider: provider stand-in; api_error HTTP
/// 503: down; failed_calls 3`).
fn failure(data: &Value) -> String {
    let root = data.get("first_failure_root").unwrap_or(&Value::Null);
    let facts: Vec<String> = root
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(name, _)| name.as_str() != "kind")
        .map(|(name, value)| format!("{name} {}", text(Some(value))))
        .collect();
    format!(
        "{} {}: {}",
        show(data.pointer("/final_error_state/error_category")),
        show(root.get("kind")),
        if facts.is_empty() {
            "-".to_owned()
        } else {
            facts.join("; ")
        }
    )
}

/// A JSON value as one short word: strings bare, `null` and absent as `-`, the rest as
/// compact JSON.
fn show(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "-".to_owned(),
        Some(Value::String(s)) => one_line(s),
        Some(other) => one_line(&other.to_string()),
    }
}

/// Free text, cut to [`TEXT_CHARS`] characters.
fn text(value: Option<&Value>) -> String {
    let full = show(value);
    match full.char_indices().nth(TEXT_CHARS) {
        Some((cut, _)) => format!("{}…", &full[..cut]),
        None => full,
    }
}

/// Control characters (newlines, escapes) as spaces: a line stays one line and cannot
/// drive the terminal.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_stop_says_how_the_run_ended() {
        let event = serde_json::json!({
            "ts": "2026-01-02T03:04:05.678Z", "run_id": "r1", "seq": 9, "task_id": "t",
            "policy_id": "p", "type": "run_stop",
            "data": {"success": true, "exit_status": "submitted", "final_score": 1.0,
                     "tests_passed": 3, "tests_failed": 0, "turns": 4, "total_tokens": 10,
                     "cost_usd": null}
        });
        let line = render("bench.events.r1.run_stop", event.to_string().as_bytes());
        assert_eq!(
            line,
            "2026-01-02T03:04:05.678Z run_stop         run r1 #9 task t policy p  \
             solved submitted score 1.0 tests 3 passed 0 failed turns 4 tokens 10 cost -"
        );
    }

    #[test]
    fn a_run_start_shows_its_model_strategy_and_sweep() {
        let start = |sweep: Value| {
            let event = serde_json::json!({
                "ts": "t", "run_id": "r1", "seq": 0, "task_id": "t", "policy_id": "p",
                "type": "run_start",
                "data": {"model": "m", "strategy": "raw", "scenario": {"name": "s"},
                         "sweep": sweep}
            });
            render("bench.events.r1.run_start", event.to_string().as_bytes())
        };
        assert!(
            start(Value::Null).ends_with("  model m strategy raw scenario s"),
            "{}",
            start(Value::Null)
        );
        let trial = start(serde_json::json!({"name": "w", "key": "w.trial.0", "trial": 0}));
        assert!(
            trial.ends_with("  model m strategy raw scenario s sweep w trial 0"),
            "{trial}"
        );
    }

    #[test]
    fn a_run_whose_turns_nobody_counted_shows_them_unknown_not_zero() {
        let event = serde_json::json!({
            "data": {"success": false, "exit_status": "exit_error", "turns": null,
                     "total_tokens": null, "cost_usd": null}
        });
        let line = render("bench.events.r1.run_stop", event.to_string().as_bytes());
        assert!(line.contains(" turns - tokens - cost -"), "{line}");
    }

    #[test]
    fn a_call_with_unknown_tokens_shows_them_unknown_not_zero() {
        let event = serde_json::json!({
            "ts": "t", "run_id": "r1", "seq": 4, "task_id": "t", "policy_id": "p",
            "data": {"agent": "agent", "model": "m", "status": "timeout", "latency_ms": 30000,
                     "input_tokens": null, "output_tokens": null, "cost_usd": null}
        });
        let line = render("bench.events.r1.deliberation", event.to_string().as_bytes());
        assert!(
            line.ends_with("agent m timeout 30000 ms in - out - tokens cost -"),
            "{line}"
        );
    }

    #[test]
    fn a_decision_says_which_pair_how_it_was_decided_how_it_bet_and_an_unknown_sequence_as_unknown()
    {
        let payload = serde_json::json!({
            "ts": "2026-11-28T10:00:00Z",
            "run_id": "r",
            "seq": 0,
            "task_id": "experiment:ab",
            "policy_id": "decision",
            "data": {
                "experiment": "ab", "baseline": "m-a", "candidate": "m-b",
                "decision": "candidate_better", "cs_low": 0.05, "cs_high": null,
                "rounds": 3, "alpha": 0.05, "detect": null
            }
        });
        let line = render(
            "bench.events.experiment_decision",
            payload.to_string().as_bytes(),
        );
        assert!(
            line.ends_with(
                "ab m-b vs m-a: candidate_better after 3 rounds, sequence 0.05 .. - alpha 0.05, bets learnt"
            ),
            "{line}"
        );
        let mut tuned = payload.clone();
        tuned["data"]["detect"] = serde_json::json!(0.1);
        let line = render(
            "bench.events.experiment_decision",
            tuned.to_string().as_bytes(),
        );
        assert!(line.ends_with("alpha 0.05, bets tuned to 0.1"), "{line}");
    }

    #[test]
    fn hostile_text_stays_on_one_line() {
        let content = format!("a\nb\u{1b}[31m{}", "x".repeat(300));
        let event = serde_json::json!({"data": {"step_type": "act", "content": content}});
        let line = render("bench.events.r.step", event.to_string().as_bytes());
        assert!(!line.contains('\n') && !line.contains('\u{1b}'), "{line}");
        assert!(line.ends_with('…'), "{line}");
        assert_eq!(
            render("bench.events.r.step", b"\xff\xfe"),
            "bench.events.r.step: 2 bytes, not JSON"
        );
        assert_eq!(
            render("bench.events.r.st\u{1b}[2Jep", b"\xff"),
            "bench.events.r.st [2Jep: 1 bytes, not JSON"
        );
        let line = render("bench.events.r.\u{1b}[2J", b"{}");
        assert!(!line.contains('\u{1b}'), "{line}");
    }

    #[test]
    fn a_failure_names_its_category_root_and_facts_not_raw_json() {
        let event = serde_json::json!({
            "ts": "t", "run_id": "r1", "seq": 3, "task_id": "t", "policy_id": "p",
            "data": {"first_failure_root": {"kind": "provider", "provider": "stand-in",
                     "api_error": "provider answered HTTP 503: down", "failed_calls": 3},
                     "final_error_state": {"error_category": "provider"}}
        });
        let line = render("bench.events.r1.failure", event.to_string().as_bytes());
        assert!(
            line.ends_with(
                "provider provider: api_error provider answered HTTP 503: down; \
                 failed_calls 3; provider stand-in"
            ),
            "{line}"
        );
        assert!(!line.contains('{'), "{line}");
    }
}
