//! Size limits of the wire format, and the producer-side truncation that keeps events
//! inside them. Truncation happens at a char boundary and sets the matching `*_truncated`
//! flag, so a consumer always knows the text is a head.

use crate::envelope::BenchmarkEvent;
use crate::payload::Payload;

/// An event is at most 1 MiB of JSON.
pub const MAX_EVENT_BYTES: usize = 1 << 20;
/// `deliberation.raw_output` keeps this many chars.
pub const RAW_OUTPUT_MAX_CHARS: usize = 4096;
/// `deliberation.summary` keeps this many chars.
pub const SUMMARY_MAX_CHARS: usize = 300;
/// `deliberation.actions[].reason` keeps this many chars.
pub const ACTION_REASON_MAX_CHARS: usize = 200;
/// `step.content` keeps this many chars.
pub const STEP_CONTENT_MAX_CHARS: usize = 16 * 1024;
/// `genai_event.body` and `genai_event.attributes` keep this many chars each.
pub const GENAI_CONTENT_MAX_CHARS: usize = 64 * 1024;
/// `tool_call.exit_message` keeps this many chars.
pub const EXIT_MESSAGE_MAX_CHARS: usize = 4096;
/// `run_stop.final_diff` keeps this many chars.
pub const FINAL_DIFF_MAX_CHARS: usize = 256 * 1024;

/// Cuts `s` to at most `max_chars` chars at a char boundary. Returns whether it cut.
pub fn truncate_chars(s: &mut String, max_chars: usize) -> bool {
    match s.char_indices().nth(max_chars) {
        Some((byte_idx, _)) => {
            s.truncate(byte_idx);
            true
        }
        None => false,
    }
}

/// The event is still over [`MAX_EVENT_BYTES`] after truncating its text fields (e.g. a
/// huge list of files); it cannot be sent as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event is {size} bytes after truncation, over the {MAX_EVENT_BYTES} byte limit")]
pub struct EventTooLarge {
    /// Serialized size after truncation.
    pub size: usize,
}

impl BenchmarkEvent {
    /// Truncates long text fields to their limits (setting `*_truncated` flags) and checks
    /// the serialized size. Returns the wire bytes on success.
    pub fn enforce_limits(&mut self) -> Result<Vec<u8>, EventTooLarge> {
        match &mut self.payload {
            Payload::Step(step) => {
                step.content_truncated |= truncate_chars(&mut step.content, STEP_CONTENT_MAX_CHARS);
            }
            Payload::Deliberation(d) => {
                d.raw_output_truncated |= truncate_chars(&mut d.raw_output, RAW_OUTPUT_MAX_CHARS);
                d.summary_truncated |= truncate_chars(&mut d.summary, SUMMARY_MAX_CHARS);
                for action in &mut d.actions {
                    truncate_chars(&mut action.reason, ACTION_REASON_MAX_CHARS);
                }
            }
            Payload::ToolCall(t) => {
                if let Some(msg) = &mut t.exit_message {
                    truncate_chars(msg, EXIT_MESSAGE_MAX_CHARS);
                }
            }
            Payload::GenaiEvent(e) => {
                let body = truncate_chars(&mut e.body, GENAI_CONTENT_MAX_CHARS);
                let attributes = truncate_chars(&mut e.attributes, GENAI_CONTENT_MAX_CHARS);
                e.content_truncated |= body || attributes;
            }
            Payload::RunStop(stop) => {
                if let Some(diff) = &mut stop.final_diff {
                    stop.final_diff_truncated |= truncate_chars(diff, FINAL_DIFF_MAX_CHARS);
                }
            }
            _ => {}
        }
        let mut bytes = self.to_json();
        if bytes.len() > MAX_EVENT_BYTES {
            // A diff that escapes to more than the limit leaves the run's result whole:
            // it is left out (`final.diff` beside the run's events keeps it).
            if let Payload::RunStop(stop) = &mut self.payload {
                if stop.final_diff.take().is_some() {
                    stop.final_diff_truncated = true;
                    bytes = self.to_json();
                }
            }
        }
        if bytes.len() > MAX_EVENT_BYTES {
            return Err(EventTooLarge { size: bytes.len() });
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A `run_stop` whose final diff is `diff`.
    fn run_stop_with_diff(diff: &str) -> BenchmarkEvent {
        let hash = "0".repeat(64);
        serde_json::from_value(json!({
            "schema_version": 1, "event_id": "00000000-0000-4000-8000-000000000001",
            "run_id": "00000000-0000-4000-8000-000000000002", "task_id": "t", "seq": 9,
            "ts": "2026-01-01T00:00:00Z", "policy_id": "m:raw", "cfg_hash": hash,
            "env_hash": hash, "host": "h", "type": "run_stop",
            "data": {
                "success": true, "final_score": 1.0, "total_tokens": null,
                "stability_variance": null, "failing_tests": [], "tests_passed": 1,
                "tests_failed": 0, "early_stopped": false, "early_stop_reason": null,
                "exit_status": "submitted", "cost_usd": null, "turns": 1,
                "diff_sha256": hash, "final_diff": diff
            }
        }))
        .expect("a run_stop")
    }

    fn diff_of(event: &BenchmarkEvent) -> (Option<&str>, bool) {
        match &event.payload {
            Payload::RunStop(stop) => (stop.final_diff.as_deref(), stop.final_diff_truncated),
            other => panic!("not a run_stop: {other:?}"),
        }
    }

    #[test]
    fn a_final_diff_over_its_limit_keeps_its_head_and_says_so() {
        let mut small = run_stop_with_diff("+a\n");
        small.enforce_limits().expect("within limits");
        assert_eq!(diff_of(&small), (Some("+a\n"), false));
        let long = "é".repeat(FINAL_DIFF_MAX_CHARS + 10);
        let mut event = run_stop_with_diff(&long);
        let bytes = event.enforce_limits().expect("within limits once cut");
        let (diff, truncated) = diff_of(&event);
        assert!(truncated);
        assert_eq!(diff.map(|d| d.chars().count()), Some(FINAL_DIFF_MAX_CHARS));
        assert!(bytes.len() <= MAX_EVENT_BYTES);
    }

    #[test]
    fn a_final_diff_that_escapes_past_the_event_limit_is_left_out_and_the_result_still_sent() {
        // Each control char is six bytes of JSON (`\u0001`): 262,144 of them are 1.5 MiB.
        let mut event = run_stop_with_diff(&"\u{1}".repeat(FINAL_DIFF_MAX_CHARS));
        let bytes = event.enforce_limits().expect("sent without the diff");
        assert_eq!(diff_of(&event), (None, true));
        let sent: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        assert_eq!(sent["data"]["final_diff_truncated"], true);
        assert_eq!(sent["data"]["success"], true);
        assert!(sent["data"].get("final_diff").is_none());
    }

    #[test]
    fn cuts_at_char_boundary() {
        let mut s = "aé😀b".to_owned();
        assert!(truncate_chars(&mut s, 3));
        assert_eq!(s, "aé😀");
        let mut short = "ab".to_owned();
        assert!(!truncate_chars(&mut short, 2));
        assert_eq!(short, "ab");
    }
}
