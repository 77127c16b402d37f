//! What a policy asks for: a tool name plus JSON arguments ([`ToolRequest`], the shape of
//! an LLM tool call and of a `[[solution]]` entry), and the typed command it must parse
//! into ([`ToolCommand`]). Parsing is separate so that a malformed request from a model
//! becomes a `user_error` tool call, not a crash.

use bench_schemas::Canonical;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One tool call as a policy proposes it.
///
/// In TOML: `{ tool = "view", path = "slugify.py" }`; every key but `tool` is an argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRequest {
    /// Id the policy uses to match the observation to its call (an LLM's
    /// `tool_call_id`); not part of the arguments or their hash.
    #[serde(skip)]
    pub call_id: Option<String>,
    /// Tool name: `bash`, `view`, `str_replace`, `write_file`, `grep`, `submit`.
    pub tool: String,
    /// The arguments, as JSON.
    #[serde(flatten)]
    pub args: Map<String, Value>,
}

/// A request whose arguments made sense.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "tool", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolCommand {
    /// Run shell text in the scratch directory.
    Bash {
        /// The shell text.
        command: String,
    },
    /// Show a file (numbered lines, optionally a 1-based inclusive range) or list a
    /// directory.
    View {
        /// The file or directory, relative to the scratch root.
        path: String,
        /// First line shown (1-based); default the first.
        #[serde(default)]
        start_line: Option<u64>,
        /// Last line shown (inclusive); default the last.
        #[serde(default)]
        end_line: Option<u64>,
    },
    /// Replace the one occurrence of `old` in a file by `new`.
    StrReplace {
        /// The file, relative to the scratch root.
        path: String,
        /// The text replaced, which must occur once.
        old: String,
        /// The text put in its place.
        new: String,
    },
    /// Create or overwrite a file.
    WriteFile {
        /// The file, relative to the scratch root.
        path: String,
        /// Its whole new content.
        content: String,
    },
    /// Search file contents with a regular expression, under `path` (default the root).
    Grep {
        /// The regular expression.
        pattern: String,
        /// The file or directory searched, relative to the scratch root.
        #[serde(default)]
        path: Option<String>,
    },
    /// Hand the work in for judging; ends the run.
    Submit {},
}

/// The tool names, in the order tools are documented.
pub const TOOL_NAMES: [&str; 6] = [
    "bash",
    "view",
    "str_replace",
    "write_file",
    "grep",
    "submit",
];

impl ToolRequest {
    /// A request with no call id.
    pub fn new(tool: impl Into<String>, args: Map<String, Value>) -> Self {
        ToolRequest {
            call_id: None,
            tool: tool.into(),
            args,
        }
    }

    /// Parses the arguments for the named tool.
    pub fn parse(&self) -> Result<ToolCommand, String> {
        let mut object = self.args.clone();
        object.insert("tool".to_owned(), Value::String(self.tool.clone()));
        serde_json::from_value(Value::Object(object))
            .map_err(|e| format!("bad arguments for tool {:?}: {e}", self.tool))
    }

    /// `tool_args_hash`: SHA-256 of the canonical JSON of the arguments.
    pub fn args_hash(&self) -> bench_schemas::Hash256 {
        self.args.canonical_hash()
    }

    /// A one-line description for `step` events: the tool and its main argument.
    pub fn describe(&self) -> String {
        let main = ["command", "path", "pattern"]
            .iter()
            .find_map(|k| self.args.get(*k).and_then(Value::as_str));
        match main {
            Some(arg) => format!("{}: {arg}", self.tool),
            None => self.tool.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(toml_text: &str) -> ToolRequest {
        toml::from_str(toml_text).expect("valid request")
    }

    #[test]
    fn parses_every_tool() {
        let cases = [
            ("tool = \"bash\"\ncommand = \"ls\"", "bash"),
            ("tool = \"view\"\npath = \"a\"\nstart_line = 2", "view"),
            (
                "tool = \"str_replace\"\npath = \"a\"\nold = \"x\"\nnew = \"y\"",
                "str_replace",
            ),
            (
                "tool = \"write_file\"\npath = \"a\"\ncontent = \"\"",
                "write_file",
            ),
            ("tool = \"grep\"\npattern = \"fn \"", "grep"),
            ("tool = \"submit\"", "submit"),
        ];
        for (text, name) in cases {
            let req = request(text);
            assert_eq!(req.tool, name);
            req.parse().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn bad_arguments_are_reported() {
        assert!(request("tool = \"view\"").parse().is_err());
        assert!(request("tool = \"bash\"\ncommand = \"ls\"\nextra = 1")
            .parse()
            .is_err());
        assert!(request("tool = \"rm\"\npath = \"a\"").parse().is_err());
    }

    #[test]
    fn args_hash_ignores_key_order() {
        let a = request("tool = \"view\"\npath = \"a\"\nstart_line = 2");
        let b = request("tool = \"view\"\nstart_line = 2\npath = \"a\"");
        assert_eq!(a.args_hash(), b.args_hash());
    }
}
