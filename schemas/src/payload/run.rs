//! Run-level events: `run_start` and `run_stop`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::config::RunConfig;
use crate::canonical::Hash256;

/// `run_start`: the run config plus what is needed to replay the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunStart {
    /// The config (flattened into `data`).
    #[serde(flatten)]
    pub config: RunConfig,
    /// The scenario file the run came from.
    pub scenario: ScenarioRef,
    /// SHA-256 of the task fixture tree.
    pub fixture_sha256: Hash256,
    /// Version of the judge / scoring rules.
    pub scoring_version: String,
    /// Version of the runner that produced the run.
    pub runner_version: String,
    /// How the processes the agent caused were isolated and which limits were enforced;
    /// absent for runs imported from elsewhere (unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxInfo>,
    /// The sweep the run belongs to; absent for a run outside any sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Box<SweepRef>>,
    /// The experiment the run belongs to and its place in it (flattened into `data`).
    #[serde(flatten)]
    pub experiment: Box<ExperimentRef>,
    /// The OCI image whose root file system the task ran on; absent for a task run on
    /// the host's system directories, and for runs imported from elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<Box<EnvironmentImage>>,
}

/// The OCI image a task ran in: as the task names it, and the manifest digest it was
/// fetched at (part of `env_hash`, never of `cfg_hash`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EnvironmentImage {
    /// The reference: `docker://REGISTRY/NAME:TAG`, `oci:DIR:TAG` or
    /// `docker-archive:FILE`.
    pub reference: String,
    /// The manifest digest, `sha256:` and 64 hex digits.
    pub digest: String,
}

/// The experiment a run belongs to: the named set of runs made to answer one question
/// (`agent-runner run --experiment`; a sweep is the experiment named after it), which
/// repeat of its task the run is, the labels given to it and how many runs its command
/// planned. A run is in exactly one experiment or none; every field is absent (null,
/// empty) when the producer stated none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExperimentRef {
    /// The experiment's name; absent for a run outside any experiment.
    #[serde(
        rename = "experiment",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub name: Option<String>,
    /// Which repeat of its task the run is, numbered from 0 (`--repeats K` runs each task
    /// K times with seeds `seed..seed+K-1`); absent when the producer did not repeat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// Labels of the run (`--tag key=value`); absent = none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    /// The runs the command that made this run planned (tasks × repeats, a sweep's runs,
    /// or for an experiment run until decided every round of both models: max repeats ×
    /// tasks × 2), for progress and ETA; absent when not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_runs: Option<u32>,
}

/// The sweep a run belongs to, and which of its jobs the run is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SweepRef {
    /// The sweep's name (`[sweep] name` of its file).
    pub name: String,
    /// The claim key of the run's job: `<sweep>.trial.<n>` for a bayes trial, the
    /// configuration × task × seed key for a grid sweep.
    pub key: String,
    /// The bayes trial the run is, numbered from 0 as claims and logs number them; null
    /// for a grid sweep, whose jobs are configurations, not trials.
    pub trial: Option<u64>,
}

/// The isolation a run's processes had: part of `env_hash`, so results from differently
/// isolated hosts are never mixed silently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxInfo {
    /// `bwrap` (bubblewrap namespaces) or `none` (plain processes on the host).
    pub kind: String,
    /// The sandbox tool's version (`bubblewrap 0.8.0`); null for `none`.
    pub version: Option<String>,
    /// Whether the processes had their own, empty network namespace.
    pub network_isolated: bool,
    /// The uid the agent's processes had inside the sandbox (`65534` in bwrap's own user
    /// namespace); null when not recorded (runs before these fields, imported runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid_inside: Option<u32>,
    /// The host uid those processes ran as: what the host's file permissions and process
    /// limits saw (the runner's uid, `0` under a root runner); null when not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid_outside: Option<u32>,
    /// Whether the processes ran in a user namespace of their own, so that capabilities
    /// they held applied to nothing of the host's; null when not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_namespace: Option<bool>,
    /// Whether every capability was dropped (`bwrap --cap-drop ALL`) and nested user
    /// namespaces were disabled (`bwrap --disable-userns`); false for plain processes;
    /// null when not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities_dropped: Option<bool>,
    /// Whether the seccomp filter (mounts, file handles, keyrings, ptrace, namespaces,
    /// terminal injection, kernel modules denied) was installed; null when not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seccomp: Option<bool>,
    /// The network the processes had; null when not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<SandboxNetwork>,
    /// What held the number of processes of one sandbox; null when not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids_limit: Option<PidsLimit>,
    /// Each limit that was enforced, with its value and the mechanism. A limit of
    /// `sandbox_limits` missing here was recorded only.
    pub enforced: Vec<EnforcedLimit>,
}

/// The network a run's processes had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxNetwork {
    /// An empty network namespace: no network at all.
    None,
    /// A network namespace of their own reaching outside addresses through pasta, never
    /// the host's loopback.
    Pasta,
    /// The host's network, its loopback services included (plain processes).
    Host,
}

/// What held the number of processes of one sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PidsLimit {
    /// A `pids` cgroup of its own (`pids.max`), for the whole process tree.
    Cgroup,
    /// `RLIMIT_NPROC`, which counts every process of the host uid, other runs' included.
    Rlimit,
    /// Nothing: a root runner without a writable `pids` cgroup, whom `RLIMIT_NPROC` does
    /// not bind.
    None,
}

/// One enforced limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EnforcedLimit {
    /// `memory_bytes`, `cpu_seconds`, `processes`, `file_size_bytes`, `open_files`,
    /// `tmp_bytes`, `workspace_bytes`, `workspace_inodes` (the files, directories and
    /// links the run's workspace may hold), `tool_timeout_ms` or `execution_timeout_ms`.
    pub limit: String,
    /// The value, in the unit the name gives.
    pub value: u64,
    /// What enforces it: `rlimit` (set before exec, per process), `cgroup` (for the whole
    /// process tree), `tmpfs` (the size of the sandbox's `/tmp`, the size and inodes of
    /// the run's workspace) or `runner` (the runner kills the process tree).
    pub by: String,
}

/// A scenario file, pinned by its hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScenarioRef {
    /// The scenario's name (its file name without `.toml`).
    pub name: String,
    /// SHA-256 of the scenario file's bytes.
    pub sha256: Hash256,
}

/// `run_stop`: the result of the run.
///
/// A fact nobody established is null, never a made-up 0 or `false`: a run stopped
/// before its judge ran (shutdown, a sandbox that could not be set up) has null test
/// counts and score, an imported run nobody judged and a run that could not get its
/// sandbox (no result) have null `success`, and a run whose
/// model usage is unknown has null `total_tokens` and `cost_usd`; a run whose turns
/// nobody counted (an `exec` agent's) has null `turns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunStop {
    /// Whether the run solved the task: it submitted and the judge accepted the
    /// submission. False when it ended without a submission (it did not solve the task
    /// within its run); null when a submission was never judged (e.g. an imported
    /// trajectory nobody judged), and for an infrastructure failure, which is no result
    /// and counts in no success rate: the sandbox could not be set up (`exit_environment`,
    /// whatever the agent did), or the provider failed (`exit_api`), even after answering
    /// earlier calls.
    pub success: Option<bool>,
    /// Score in 0..1 (fraction of judge tests passing); null when no judge ran.
    pub final_score: Option<f64>,
    /// Wall time of the run, ms; null (or absent) when nobody measured it: an imported
    /// trajectory, which records the time of each command but not of the whole run.
    #[serde(default)]
    pub wall_time_ms: Option<u64>,
    /// Input + output tokens of every model call of the run; null when unknown: some
    /// call's tokens are unknown (a call that got no answer, or no usage in it), the agent
    /// reported no call at all (an `exec` agent that sends no `deliberation`), or an
    /// imported trajectory records none.
    pub total_tokens: Option<u64>,
    /// Tool errors: tool calls whose `exit_kind` is not `ok` (a command exiting
    /// non-zero is one, `deterministic`). Each one also has a `failure` event of the
    /// same step, and the `tool_errors` query counts the same calls. Null (or absent) when
    /// nobody counted them: the producer does not see how its tool calls ended (a run
    /// received as a trace whose tool spans state no status counts those it saw fail).
    #[serde(default)]
    pub tool_errors: Option<u32>,
    /// Variance of the score across judge repetitions; null unless the judge was
    /// repeated (`agent-runner run --regrade K` on a SWE-bench-format task: see
    /// `regrade`; otherwise this runner judges once and sends null).
    pub stability_variance: Option<f64>,
    /// Judge tests that fail at the end (empty when no judge ran).
    pub failing_tests: Vec<String>,
    /// Judge tests passing; null when no judge ran.
    pub tests_passed: Option<u32>,
    /// Judge tests failing; null when no judge ran.
    pub tests_failed: Option<u32>,
    /// Number of files that differ from the fixture at the end. Null (or absent) when
    /// nobody compared them: a producer without the task's files (a run received as a
    /// trace), an `exec` agent's run stopped before the comparison.
    #[serde(default)]
    pub files_modified: Option<u32>,
    /// Whether the run stopped before submitting.
    pub early_stopped: bool,
    /// Why it stopped early (`max_iterations`, `shutdown`, the provider's error, ...).
    pub early_stop_reason: Option<String>,
    /// How the run ended.
    pub exit_status: ExitStatus,
    /// The run's model spend, USD: the exact sum of its calls' costs, converted to a
    /// number once. Null when it is unknown: some call's cost is unknown (no price, or a
    /// failed call whose tokens were never reported), or the agent reported no call at
    /// all (an `exec` agent that sends no `deliberation`).
    pub cost_usd: Option<f64>,
    /// Model calls of the run (a call with retries counts once). Null (or absent) when
    /// nobody counted them: an `exec` agent that reports no `deliberation`, an imported
    /// trajectory that records no call count.
    #[serde(default)]
    pub api_calls: Option<u32>,
    /// Agent turns taken: turns whose model call got no completion do not count (the
    /// agent did not act), so a run the provider never answered took 0. Null (or absent)
    /// when nobody counted them: an `exec` agent's run (the runner sees the agent's events,
    /// not its turns; what the agent says it took is in `claim`).
    pub turns: Option<u32>,
    /// What the agent said about its own run (`agent-runner exec`: the `run_stop` line it
    /// sent), kept as a claim: it never becomes `success`, `final_score`, the test counts
    /// or the totals above, which are the judge's and the runner's. Absent when the agent
    /// sent none (and for every other producer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<RunClaim>,
    /// SHA-256 of the run's final diff: `git diff --binary` of what the agent left against
    /// the task's base, taken before the judge touched anything (the way SWE-bench keeps
    /// predictions), stored as `final.diff` beside the run's `events.jsonl`. Absent when
    /// the task has no base repository (only SWE-bench-format tasks have one) or the diff
    /// could not be taken; the SHA-256 of no bytes when the agent changed nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_sha256: Option<Hash256>,
    /// The final diff itself, the bytes `diff_sha256` hashes, so that a reader without
    /// the runner's files (the viewer on another host, SQL on `run_stops.final_diff`)
    /// reads what was submitted: at most 262,144 chars (`FINAL_DIFF_MAX_CHARS`), cut at a
    /// char boundary with `final_diff_truncated` set. Absent when
    /// `diff_sha256` is, when the diff is not UTF-8 text (a file in another encoding), and
    /// when the event would be over its size limit with it (`final_diff_truncated` set);
    /// `final.diff` beside the run's events always has the whole diff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_diff: Option<String>,
    /// `final_diff` is the head of the diff only, or was left out for the event's size.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub final_diff_truncated: bool,
    /// What the runner noticed about how a run of a SWE-bench-format task got its
    /// result, for reading rates with and without such runs. Absent for other tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<RunIntegrity>,
    /// The final diff judged again (`agent-runner run --regrade K`, SWE-bench-format
    /// tasks): whether the verdict held. `stability_variance` is then the variance of the
    /// scores of all the judgings. Absent when the run was not regraded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regrade: Option<Regrade>,
    /// What the submission scored (fraction of judge tests passing) when the provider
    /// ended the run (`exit_api`): the workspace's diff judged as any submission is, for
    /// information only. Such a run is no result: its `success`, `final_score` and test
    /// counts stay null. Absent for every other run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cutoff_score: Option<f64>,
}

/// Re-judgings of a run's final diff, each on a fresh copy of the base with the diff
/// applied (`run_stop.regrade`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Regrade {
    /// Judgings of the final diff: the run's own verdict and the K again.
    pub judgings: u32,
    /// How many of them resolved the task (every judged test passing).
    pub resolved: u32,
    /// Whether every judging gave the same score (so the same verdict).
    pub stable: bool,
}

/// Integrity flags of a judged run (`run_stop.integrity`). Each is a fact the runner
/// established or null; none changes the verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunIntegrity {
    /// Files the judge keeps pristine (those `test_patch` touches, pytest's own) that the
    /// agent had changed, created or deleted, as `"<path> (modified|deleted|created)"`;
    /// restored before the tests ran. Empty when it changed none.
    pub test_files_edited: Vec<String>,
    /// The agent's commands that read the repository's history or git internals (`git
    /// log`, `show`, `reflog`, `fsck`, `rev-list`, `cat-file`, `ls-tree`, `for-each-ref`,
    /// `blame`, `describe`, or a path under `.git/objects`, `.git/refs`, `.git/logs`,
    /// `.git/packed-refs`). Its repository holds the base alone, so this is the attempt,
    /// not a leak. Null when the runner did not see the commands (an `exec` agent's).
    pub history_commands: Option<u32>,
    /// The agent's commands that tried the network while the run had none (`curl`,
    /// `wget`, `pip install`/`download`, `git clone`/`fetch`/`pull`, `apt-get install`,
    /// `npm install`, `ssh`). Null when the network was on or the runner did not see the
    /// commands.
    pub network_commands: Option<u32>,
    /// Similarity of the final diff to the gold patch, 0..1: the Dice coefficient of
    /// their changed lines (`+`/`-` lines, whitespace at the ends ignored, as multisets);
    /// 1 is the gold patch's changes exactly. Null when there was no final diff or no gold
    /// patch.
    pub gold_similarity: Option<f64>,
    /// Changed paths of the workspace left out of the submitted diff, as `"<path> (<why>)"`:
    /// a file over the per-file cap, with more than one hard link, a special file, one past
    /// the submission's cap, an unreadable one. Nothing left out reaches the verdict.
    #[serde(default)]
    pub diff_excluded: Vec<String>,
    /// Whether the judge's verdict on the workspace as the agent left it (a cross-check)
    /// differs from the verdict on the submitted diff, which is the run's. Null when the
    /// workspace was not judged.
    #[serde(default)]
    pub workspace_verdict_differs: Option<bool>,
    /// Modules the submitted diff adds with the name of a standard-library module or of an
    /// installed distribution, as `"<module> (<path>)"` (the judge's pytest never imports
    /// them in its place). Null when the judge cannot tell (tasks not judged by pytest).
    #[serde(default)]
    pub shadows_module: Option<Vec<String>>,
    /// Lines of an `exec` agent refused because their type is not an agent event
    /// (`task_validation`, `test_outcome`, `run_start`, `optimizer_update`, ...): never
    /// published. Null for a native run, which has no such channel.
    #[serde(default)]
    pub forged_events: Option<u32>,
}

/// An agent's own account of its run, beside the runner's (`run_stop.claim`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunClaim {
    /// The `success` the agent declared.
    pub success: Option<bool>,
    /// The `final_score` the agent declared.
    pub final_score: Option<f64>,
    /// The `tests_passed` the agent declared.
    pub tests_passed: Option<u32>,
    /// The `tests_failed` the agent declared.
    pub tests_failed: Option<u32>,
    /// The `total_tokens` the agent declared.
    pub total_tokens: Option<u64>,
    /// The `cost_usd` the agent declared, USD.
    pub cost_usd: Option<f64>,
    /// The `api_calls` the agent declared (null: it did not say).
    #[serde(default)]
    pub api_calls: Option<u32>,
    /// The `turns` the agent declared (null: it did not say).
    pub turns: Option<u32>,
    /// The `run_stop` fields whose declared value disagrees with the runner's (both
    /// known and different), in alphabetical order, of `api_calls`, `cost_usd`,
    /// `final_score`, `success`, `tests_failed`, `tests_passed`, `total_tokens`. Empty when
    /// all agree.
    pub discrepancies: Vec<String>,
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExitStatus {
    /// The agent submitted its change (the judge says whether it is right).
    Submitted,
    /// The run's cost passed `cost_limit_usd`.
    ExitCost,
    /// The history no longer fit the model's context window.
    ExitContext,
    /// A time limit passed: `execution_timeout_ms`, or `no_progress_timeout_ms` without a
    /// file change.
    ExitTimeout,
    /// The model's replies could not be read, too many times in a row.
    ExitFormat,
    /// The model provider kept failing.
    ExitApi,
    /// The sandbox or the task environment failed (a bwrap failure, a namespace or
    /// process limit, a cgroup that could not be made): the run is no result, its
    /// `success` and `final_score` are null.
    ExitEnvironment,
    /// The agent gave up, or ran out of turns (`max_iterations`) or of patience
    /// (`failing_tests_patience`).
    ExitForfeit,
    /// The agent ended the run with its exit command without submitting (imported
    /// trajectories).
    ExitCommand,
    /// An unexpected error, or the runner shutting down mid-run.
    ExitError,
}

impl ExitStatus {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            ExitStatus::Submitted => "submitted",
            ExitStatus::ExitCost => "exit_cost",
            ExitStatus::ExitContext => "exit_context",
            ExitStatus::ExitTimeout => "exit_timeout",
            ExitStatus::ExitFormat => "exit_format",
            ExitStatus::ExitApi => "exit_api",
            ExitStatus::ExitEnvironment => "exit_environment",
            ExitStatus::ExitForfeit => "exit_forfeit",
            ExitStatus::ExitCommand => "exit_command",
            ExitStatus::ExitError => "exit_error",
        }
    }
}
