//! What the model is told: the system prompt, the task message, the tool definitions
//! (JSON Schema of each tool's arguments, matching [`bench_task::ToolCommand`]), and the
//! fixed texts of the context strategies and the summariser. Every word the runner adds to
//! a prompt lives here, so prompts can be read and changed in one place.

use serde_json::{json, Value};

use bench_task::Task;
use bench_task::TOOL_NAMES;

/// The agent's standing instructions.
pub const SYSTEM_PROMPT: &str = "\
You are a careful software engineer fixing a bug in a small project. You work in the \
project's root directory through the tools you are given; paths are relative to that \
root. Read the relevant code, make the smallest correct change, run the tests, and call \
`submit` when the fix is complete. Every reply must call at least one tool.";

/// What the model is told after a reply the runner could not turn into an action.
pub const FORMAT_FEEDBACK: &str = "\
Your last reply did not contain a usable tool call. Reply with one or more tool calls \
(function calling), or, if you cannot, with a JSON object such as \
{\"tool\": \"view\", \"path\": \"README.md\"}.";

/// Instructions of the summariser model.
pub const SUMMARIZER_PROMPT: &str = "\
You condense the working history of a software engineering agent so that it can \
continue its task with less context. Keep every fact it still needs: the files and \
functions it inspected and what they contain, the changes it made (with exact paths), \
commands it ran and their results (test failures verbatim where short), what it \
concluded, and what it planned next. Drop repetition and output that no longer matters. \
Reply with the summary only, as plain text.";

/// The observation text an observation-masked tool result is replaced by.
pub fn masked_observation(tool: &str, bytes: usize) -> String {
    format!("[Older observation omitted to save context: {bytes} bytes of `{tool}` output. Run the tool again if you need it.]")
}

/// The user message that carries the summary of folded turns.
pub fn summary_message(turns: usize, summary: &str) -> String {
    format!("Summary of your first {turns} turns on this task (older messages were condensed):\n\n{summary}")
}

/// The summariser's request: the task, the previous summary if any, and the turns to
/// fold, rendered as text.
pub fn summarizer_request(task: &str, previous: Option<&str>, turns: &str) -> String {
    let previous = previous
        .map(|p| format!("Summary of the turns before these:\n{p}\n\n"))
        .unwrap_or_default();
    format!("The agent's task:\n{task}\n\n{previous}Turns to condense:\n{turns}")
}

/// The user message stating the task.
pub fn task_message(task: &Task) -> String {
    format!(
        "Fix this issue in the {:?} project in your working directory.\n\n# {}\n\n{}",
        task.language, task.title, task.problem
    )
}

/// The function definitions of the tools in `available` (and `submit`, always), in
/// documentation order.
pub fn tool_definitions(available: &[String]) -> Vec<Value> {
    TOOL_NAMES
        .iter()
        .filter(|name| **name == "submit" || available.iter().any(|a| a == *name))
        .map(|name| {
            let (description, properties, required) = tool_schema(name);
            json!({
                "type": "function",
                "function": {
                    "name": name,
                    "description": description,
                    "parameters": {
                        "type": "object",
                        "properties": properties,
                        "required": required,
                        "additionalProperties": false
                    }
                }
            })
        })
        .collect()
}

fn tool_schema(name: &str) -> (&'static str, Value, Vec<&'static str>) {
    let text = |description: &str| json!({"type": "string", "description": description});
    let line =
        |description: &str| json!({"type": "integer", "minimum": 1, "description": description});
    match name {
        "bash" => (
            "Run a shell command in the project root; returns its exit status and output.",
            json!({"command": text("Shell text, run with bash -c.")}),
            vec!["command"],
        ),
        "view" => (
            "Show a file with line numbers (optionally a line range), or list a directory.",
            json!({
                "path": text("File or directory, relative to the project root."),
                "start_line": line("First line to show (1-based)."),
                "end_line": line("Last line to show (inclusive).")
            }),
            vec!["path"],
        ),
        "str_replace" => (
            "Replace the one occurrence of `old` in a file by `new`; fails if `old` occurs zero or several times.",
            json!({
                "path": text("File to edit."),
                "old": text("Exact text to replace, including whitespace."),
                "new": text("Replacement text.")
            }),
            vec!["path", "old", "new"],
        ),
        "write_file" => (
            "Create or overwrite a file with the given content.",
            json!({"path": text("File to write."), "content": text("The whole new content.")}),
            vec!["path", "content"],
        ),
        "grep" => (
            "Search file contents with a regular expression; returns matching lines with file and line number.",
            json!({
                "pattern": text("Regular expression (Rust regex syntax)."),
                "path": text("Directory or file to search; default the project root.")
            }),
            vec!["pattern"],
        ),
        _ => (
            "Hand in the work for judging. Ends the task; call it only when the fix is complete.",
            json!({}),
            vec![],
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_follow_available_tools_and_always_offer_submit() {
        let defs = tool_definitions(&["view".to_owned(), "bash".to_owned()]);
        let names: Vec<&str> = defs
            .iter()
            .filter_map(|d| d["function"]["name"].as_str())
            .collect();
        assert_eq!(names, ["bash", "view", "submit"]);
        assert_eq!(
            defs[1]["function"]["parameters"]["required"],
            json!(["path"])
        );
    }
}
