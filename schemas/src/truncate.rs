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
            _ => {}
        }
        let bytes = self.to_json();
        if bytes.len() > MAX_EVENT_BYTES {
            return Err(EventTooLarge { size: bytes.len() });
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
