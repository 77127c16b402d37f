//! Turning a model's reply into [`ToolRequest`]s.
//!
//! Native function calls are the normal path: each call's `arguments` must be a JSON
//! object (empty text counts as `{}`). Models served without function calling (some
//! Ollama or LM Studio setups) write the call as JSON in their text instead; a reply with
//! no function call is searched for the first JSON object or array of objects shaped
//! `{"tool": name, ...args}`, `{"tool"|"name": name, "arguments"|"args": {...}}`.
//!
//! Only JSON-level problems are parse failures here. Whether the arguments make sense for
//! the tool (unknown tool, missing `path`) is the tool box's call, which reports it as a
//! `user_error` tool call the model then sees.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::provider::ToolCall;
use crate::tools::ToolRequest;

/// The actions found in one reply.
#[derive(Debug, Default, PartialEq)]
pub struct ParsedReply {
    /// The usable requests, in order, each with its `call_id`.
    pub requests: Vec<ToolRequest>,
    /// Function calls whose arguments were not a JSON object: (call id, error).
    pub failures: Vec<(String, String)>,
    /// The actions came as function calls (observations go back as `tool` messages);
    /// false = written in the text (observations go back as a `user` message).
    pub native: bool,
}

/// Parses the reply of turn `turn`: its function calls if it made any (their ids must be
/// set and unique in the run, see [`assign_call_ids`]), else the JSON in its text (ids
/// `text<turn>x<i>`).
pub fn parse_reply(calls: &[ToolCall], content: Option<&str>, turn: u32) -> ParsedReply {
    if !calls.is_empty() {
        let mut reply = ParsedReply {
            native: true,
            ..ParsedReply::default()
        };
        for call in calls {
            match arguments(&call.function.arguments) {
                Ok(args) => reply.requests.push(ToolRequest {
                    call_id: Some(call.id.clone()),
                    ..ToolRequest::new(call.function.name.clone(), args)
                }),
                Err(e) => reply.failures.push((call.id.clone(), e)),
            }
        }
        return reply;
    }
    ParsedReply {
        requests: content
            .map(|text| text_actions(text, turn))
            .unwrap_or_default(),
        ..ParsedReply::default()
    }
}

/// Keeps the provider's call ids where they are usable (some providers check their
/// format) and replaces missing or repeated ones by `call<turn>x<i>`, so that every
/// observation finds its call. `seen` holds the ids of the run so far.
pub fn assign_call_ids(calls: &mut [ToolCall], turn: u32, seen: &mut HashSet<String>) {
    for (i, call) in calls.iter_mut().enumerate() {
        if call.id.is_empty() || seen.contains(&call.id) {
            call.id = format!("call{turn}x{i}");
        }
        seen.insert(call.id.clone());
    }
}

/// The `arguments` text of a function call as an object.
fn arguments(text: &str) -> Result<Map<String, Value>, String> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(args)) => Ok(args),
        Ok(other) => Err(format!("arguments must be a JSON object, got {other}")),
        Err(e) => Err(format!("arguments are not valid JSON: {e}")),
    }
}

/// Requests written as JSON in free text; the first JSON value that yields any wins.
fn text_actions(content: &str, turn: u32) -> Vec<ToolRequest> {
    let mut requests = Vec::new();
    for (start, _) in content.match_indices(['{', '[']) {
        let mut values = serde_json::Deserializer::from_str(&content[start..]).into_iter::<Value>();
        let Some(Ok(value)) = values.next() else {
            continue;
        };
        let candidates = match value {
            Value::Array(items) => items,
            one => vec![one],
        };
        requests = candidates.into_iter().filter_map(text_request).collect();
        if !requests.is_empty() {
            break;
        }
    }
    for (i, request) in requests.iter_mut().enumerate() {
        request.call_id = Some(format!("text{turn}x{i}"));
    }
    requests
}

fn text_request(value: Value) -> Option<ToolRequest> {
    let Value::Object(mut object) = value else {
        return None;
    };
    let name = match object.remove("tool").or_else(|| object.remove("name"))? {
        Value::String(name) => name,
        _ => return None,
    };
    let args = match object.remove("arguments").or_else(|| object.remove("args")) {
        Some(Value::Object(args)) => args,
        Some(Value::String(text)) => arguments(&text).ok()?,
        Some(_) => return None,
        None => object,
    };
    Some(ToolRequest::new(name, args))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::FunctionCall;

    fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.to_owned(),
            kind: "function".to_owned(),
            function: FunctionCall {
                name: name.to_owned(),
                arguments: arguments.to_owned(),
            },
        }
    }

    #[test]
    fn function_calls_become_requests_with_their_ids() {
        let reply = parse_reply(
            &[
                call("a", "view", r#"{"path": "x.py"}"#),
                call("b", "submit", ""),
            ],
            Some("looking"),
            0,
        );
        assert!(reply.native && reply.failures.is_empty());
        assert_eq!(reply.requests.len(), 2);
        assert_eq!(reply.requests[0].call_id.as_deref(), Some("a"));
        assert_eq!(reply.requests[0].args["path"], "x.py");
        assert_eq!(reply.requests[1].tool, "submit");
    }

    #[test]
    fn malformed_arguments_are_failures() {
        let reply = parse_reply(
            &[
                call("a", "bash", r#"{"command": "ls"#),
                call("b", "bash", "[1]"),
            ],
            None,
            0,
        );
        assert!(reply.requests.is_empty());
        assert_eq!(reply.failures.len(), 2);
        assert!(reply.failures[0].1.contains("not valid JSON"));
    }

    #[test]
    fn json_in_text_is_an_action() {
        let text = "I will look first.\n```json\n{\"tool\": \"view\", \"path\": \"a.py\"}\n```";
        let reply = parse_reply(&[], Some(text), 1);
        assert!(!reply.native);
        assert_eq!(reply.requests.len(), 1);
        assert_eq!(reply.requests[0].args["path"], "a.py");
        assert_eq!(reply.requests[0].call_id.as_deref(), Some("text1x0"));
        let nested = r#"Plan {not json} then [{"name": "bash", "arguments": {"command": "ls"}}, {"name": "submit", "arguments": "{}"}]"#;
        let reply = parse_reply(&[], Some(nested), 2);
        assert_eq!(
            reply
                .requests
                .iter()
                .map(|r| r.tool.as_str())
                .collect::<Vec<_>>(),
            ["bash", "submit"]
        );
    }

    #[test]
    fn text_without_actions_is_empty() {
        for text in [
            Some("I think the bug is in line 3."),
            Some(r#"{"answer": 42}"#),
            None,
        ] {
            assert_eq!(
                parse_reply(&[], text, 0),
                ParsedReply::default(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn missing_and_repeated_ids_are_replaced() {
        let mut seen = HashSet::new();
        let mut first = [call("abc", "view", "{}"), call("", "view", "{}")];
        assign_call_ids(&mut first, 0, &mut seen);
        let mut second = [call("abc", "view", "{}")];
        assign_call_ids(&mut second, 1, &mut seen);
        assert_eq!(
            [
                first[0].id.as_str(),
                first[1].id.as_str(),
                second[0].id.as_str()
            ],
            ["abc", "call0x1", "call1x0"]
        );
    }
}
