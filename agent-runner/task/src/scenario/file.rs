//! A scenario file, `scenarios/<name>.toml`: which tasks, under which run config, with
//! which policy and seed. Format: `scenarios/README.md`.

use std::collections::BTreeMap;
use std::path::Path;

use bench_schemas::RunConfig;
use serde::Deserialize;

use super::error::ScenarioError;
use crate::tool_request::ToolRequest;

/// A scenario file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Name reported in `run_start.scenario.name`.
    pub name: String,
    /// What the scenario is for.
    #[serde(default)]
    pub description: String,
    /// Seed of every run (overridden by `--seed`).
    pub seed: u64,
    /// The agent policy.
    pub policy: PolicyKind,
    /// Task ids, directories under `tasks/`.
    pub tasks: Vec<String>,
    /// The run config: every `RunConfig` field, limits included; its canonical JSON is
    /// `cfg_hash`.
    pub config: RunConfig,
    /// Action lists that replace the reference solutions (scripted policy only).
    #[serde(default)]
    pub scripted: ScriptedActions,
}

/// Which policy drives the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyKind {
    /// Replays a fixed list of actions (default: the task's `[[solution]]`).
    Scripted,
    /// A model behind an OpenAI-compatible API (`agent-runner`'s `policy::llm`).
    Llm,
}

/// `[scripted]`: what the scripted policy replays instead of the reference solution.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedActions {
    /// For every task, e.g. `[{ tool = "submit" }]` for an empty submission.
    #[serde(default)]
    pub actions: Option<Vec<ToolRequest>>,
    /// For one task; wins over `actions`.
    #[serde(default)]
    pub tasks: BTreeMap<String, Vec<ToolRequest>>,
}

impl Scenario {
    /// Parses and checks scenario text (`path` is for messages).
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario = super::error::parse_toml(path, text)?;
        let invalid = |reason: String| ScenarioError::Invalid {
            path: path.to_path_buf(),
            reason,
        };
        // `RunConfig` accepts unknown keys (the wire format must); a scenario must not, or
        // a typo silently falls back to a default.
        let table: toml::Table = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        if let Some(given) = table.get("config") {
            let known = serde_json::to_value(&scenario.config)
                .map_err(|e| invalid(format!("config: {e}")))?;
            let given = serde_json::to_value(given).map_err(|e| invalid(format!("config: {e}")))?;
            if let Some(key) = unknown_key("config", &given, &known) {
                return Err(invalid(format!("unknown key {key}")));
            }
        }
        if scenario.tasks.is_empty() {
            return Err(invalid("tasks is empty".into()));
        }
        // Null on the wire means "not stated", which only a run this runner did not
        // configure may be: a scenario states every setting it runs under.
        let config = &scenario.config;
        for (stated, key) in [
            (config.temperature.is_some(), "temperature"),
            (config.context_window.is_some(), "context_window"),
            (config.tool_timeout_ms.is_some(), "tool_timeout_ms"),
            (config.docker_image.is_some(), "docker_image"),
            (
                config.sandbox_limits.memory_mb.is_some(),
                "sandbox_limits.memory_mb",
            ),
        ] {
            if !stated {
                return Err(invalid(format!("config.{key} is required")));
            }
        }
        if config.max_iterations.is_none_or(|max| max == 0) {
            return Err(invalid("config.max_iterations must be > 0".into()));
        }
        crate::context_plan::ContextPlan::from_config(&scenario.config)
            .map_err(|e| invalid(format!("config.{e}")))?;
        let scripted = scenario
            .scripted
            .actions
            .iter()
            .flatten()
            .chain(scenario.scripted.tasks.values().flatten());
        for (i, action) in scripted.enumerate() {
            action
                .parse()
                .map_err(|e| invalid(format!("scripted action {}: {e}", i + 1)))?;
        }
        if let Some(id) = scenario
            .scripted
            .tasks
            .keys()
            .find(|id| !scenario.tasks.contains(id))
        {
            return Err(invalid(format!(
                "[scripted.tasks] names {id:?}, which is not in tasks"
            )));
        }
        Ok(scenario)
    }

    /// What the scripted policy replays on `task`, if the scenario overrides the task's
    /// reference solution.
    pub fn scripted_override(&self, task_id: &str) -> Option<&[ToolRequest]> {
        self.scripted
            .tasks
            .get(task_id)
            .or(self.scripted.actions.as_ref())
            .map(Vec::as_slice)
    }
}

/// The first key path present in `given` but not in `known` (objects compared
/// recursively; every known key a user sets is serialized back, so anything missing is
/// unknown).
fn unknown_key(at: &str, given: &serde_json::Value, known: &serde_json::Value) -> Option<String> {
    let (serde_json::Value::Object(given), serde_json::Value::Object(known)) = (given, known)
    else {
        return None;
    };
    given.iter().find_map(|(key, value)| match known.get(key) {
        None => Some(format!("{at}.{key}")),
        Some(known_value) => unknown_key(&format!("{at}.{key}"), value, known_value),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_states_every_setting_that_may_be_null_on_the_wire() {
        let text = include_str!("../../../../scenarios/smoke.toml");
        Scenario::parse(Path::new("smoke.toml"), text).expect("the shipped scenario");
        for line in [
            "strategy = ",
            "max_iterations = ",
            "temperature = ",
            "context_window = ",
            "tool_timeout_ms = ",
            "docker_image = ",
            "memory_mb = ",
        ] {
            let without: String = text
                .lines()
                .filter(|l| !l.trim_start().starts_with(line))
                .map(|l| format!("{l}\n"))
                .collect();
            assert_ne!(without, text, "smoke.toml sets {line}");
            let refused = Scenario::parse(Path::new("smoke.toml"), &without);
            assert!(
                matches!(&refused, Err(ScenarioError::Invalid { reason, .. })
                    if reason.contains(line.trim_end_matches(" = "))),
                "{line}: {refused:?}"
            );
        }
    }
}
