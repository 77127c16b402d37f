//! The `scripted` policy: replays a fixed list of actions, one per turn. Deterministic, no
//! model: for smoke runs, calibration and CI. The list is the task's reference
//! `[[solution]]` unless the scenario's `[scripted]` section replaces it (e.g. with a bare
//! `submit` to check that an empty submission fails).

use bench_schemas::ExitStatus;
use futures::future::BoxFuture;
use futures::FutureExt;

use super::{Decision, Policy, PolicyEvents, PolicyStop, Turn};
use crate::tools::ToolRequest;
use bench_task::{Scenario, Task};

/// Replays actions in order.
#[derive(Debug, Clone)]
pub struct ScriptedPolicy {
    actions: Vec<ToolRequest>,
    next: usize,
    source: ScriptSource,
}

/// Where the actions came from; part of the `policy_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptSource {
    /// The task's `[[solution]]`.
    Reference,
    /// The scenario's `[scripted]` section.
    Scenario,
}

impl ScriptedPolicy {
    /// Replays `actions`.
    pub fn new(actions: Vec<ToolRequest>, source: ScriptSource) -> Self {
        ScriptedPolicy {
            actions,
            next: 0,
            source,
        }
    }

    /// The scenario's actions for `task` if it gives some, else the task's reference
    /// solution.
    pub fn for_task(scenario: &Scenario, task: &Task) -> Self {
        match scenario.scripted_override(&task.id) {
            Some(actions) => ScriptedPolicy::new(actions.to_vec(), ScriptSource::Scenario),
            None => ScriptedPolicy::new(task.solution.clone(), ScriptSource::Reference),
        }
    }
}

impl Policy for ScriptedPolicy {
    fn policy_id(&self) -> String {
        match self.source {
            ScriptSource::Reference => "scripted:reference".to_owned(),
            ScriptSource::Scenario => "scripted:scenario".to_owned(),
        }
    }

    fn decide<'a>(
        &'a mut self,
        _turn: &'a Turn<'a>,
        _events: &'a mut PolicyEvents<'_>,
    ) -> BoxFuture<'a, Result<Decision, PolicyStop>> {
        let decision = match self.actions.get(self.next) {
            Some(action) => {
                self.next += 1;
                Ok(Decision {
                    actions: vec![action.clone()],
                    planned_step: u32::try_from(self.next - 1).ok(),
                    ..Decision::default()
                })
            }
            None => Err(PolicyStop {
                status: ExitStatus::ExitForfeit,
                reason: "script exhausted without submit".to_owned(),
                root: None,
            }),
        };
        futures::future::ready(decision).boxed()
    }
}
