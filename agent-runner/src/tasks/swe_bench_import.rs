//! `agent-runner tasks import swe-bench`: one task per SWE-bench instance, in the
//! scenarios directory, pinned like the shipped ones.
//!
//! For each instance: the tree at `base_commit` of the local clone `<repos>/owner__name`
//! becomes `tasks/<instance_id>/fixture/`, a fresh repository with that one commit
//! ([`bench_sandbox`]: no later commit, ref, reflog, pack, stash or remote); its
//! environment (`envs/<owner__name>__<version>/`) is prepared once
//! ([`super::environment`]); `task.toml` holds the problem statement and the `[swe_bench]`
//! section ([`SweBench`]), with the gold patch as the reference solution (a `git apply`
//! the scripted policy replays). A task is written beside its final place and renamed
//! into it, so a failed instance leaves no half-made task, and a re-import replaces it.
//! Then the scenario file `<scenario>.toml` lists every task imported now, and `pins.toml`
//! is recomputed. The report has one line per instance.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use bench_sandbox::{export_commit, git_dir, init_base_repo};
use serde::Serialize;

use super::environment::{self, Setup};
use super::instance::{parse_instances, Instance};
use super::{SweBenchImport, TasksError};
use bench_image::ImageRef;

use crate::error::{Error, Exit, Outcome};
use bench_task::{base_message, Pins, SweBench, ENVS_DIR, FIXTURE_DIR, TASKS_DIR, TASK_FILE};

/// Where a task is written before it is renamed into `tasks/`.
const STAGING_DIR: &str = ".importing";

/// The heredoc delimiter of the reference solution's `git apply`.
const GOLD_DELIMITER: &str = "BENCHSTREAM_GOLD_PATCH";

/// What happened to one instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineKind {
    /// Written as a task.
    Imported,
    /// Left out, not an error (an instance id seen earlier in the file).
    Skipped,
    /// Could not be imported: the import exits non-zero.
    Failed,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportLine {
    /// The instance id (or the record's position when it has none).
    pub instance: String,
    /// Imported, skipped or failed.
    pub kind: LineKind,
    /// Why (skipped, failed), or what was done (imported: the base commit, the
    /// environment).
    pub detail: String,
}

/// What `tasks import swe-bench` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// One line per instance, in file order.
    pub lines: Vec<ImportLine>,
    /// The scenario file written (`None` when nothing was imported).
    pub scenario: Option<PathBuf>,
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in &self.lines {
            let word = match line.kind {
                LineKind::Imported => "imported",
                LineKind::Skipped => "skipped",
                LineKind::Failed => "failed",
            };
            writeln!(f, "{word} {}: {}", line.instance, line.detail)?;
        }
        let count = |k: LineKind| self.lines.iter().filter(|l| l.kind == k).count();
        write!(
            f,
            "{} imported, {} skipped, {} failed",
            count(LineKind::Imported),
            count(LineKind::Skipped),
            count(LineKind::Failed)
        )?;
        match &self.scenario {
            Some(path) => writeln!(f, "; scenario {}", path.display()),
            None => writeln!(f),
        }
    }
}

/// [`Exit::Failure`] when any instance failed.
impl Outcome for ImportReport {
    fn exit(&self) -> Exit {
        if self.lines.iter().any(|l| l.kind == LineKind::Failed) {
            Exit::Failure
        } else {
            Exit::Ok
        }
    }
}

/// `task.toml` as the import writes it.
#[derive(Serialize)]
struct TaskFile<'a> {
    id: &'a str,
    language: &'static str,
    title: String,
    problem: &'a str,
    swe_bench: &'a SweBench,
    solution: Vec<BTreeMap<&'static str, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<ImageFile<'a>>,
}

/// `[image]` of an imported task (`--image`).
#[derive(Serialize)]
struct ImageFile<'a> {
    reference: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    workdir: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    activate: Option<&'a str>,
}

/// Imports every instance of `config.instances`.
pub fn import_swe_bench(config: &SweBenchImport) -> Result<ImportReport, Error> {
    let instances_err = |message: String| TasksError::Instances {
        path: config.instances.clone(),
        message,
    };
    let text = fs::read_to_string(&config.instances).map_err(|e| instances_err(e.to_string()))?;
    let records = parse_instances(&text).map_err(instances_err)?;
    let tasks_dir = config.scenarios_dir.join(TASKS_DIR);
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TasksError::Write { path, source }
    };
    fs::create_dir_all(&tasks_dir).map_err(write_err(&tasks_dir))?;
    let mut lines = Vec::new();
    let mut seen = BTreeSet::new();
    let mut imported = Vec::new();
    // Environments made or refused in this import, by key.
    let mut environments: BTreeMap<String, Result<(), String>> = BTreeMap::new();
    for (i, record) in records.into_iter().enumerate() {
        let instance = match record {
            Ok(instance) => instance,
            Err(why) => {
                lines.push(ImportLine {
                    instance: format!("#{}", i + 1),
                    kind: LineKind::Failed,
                    detail: why,
                });
                continue;
            }
        };
        let id = instance.instance_id.clone();
        if !seen.insert(id.clone()) {
            lines.push(ImportLine {
                instance: id,
                kind: LineKind::Skipped,
                detail: "instance_id seen earlier in the file".into(),
            });
            continue;
        }
        let line = match import_one(config, &instance, &mut environments) {
            Ok(detail) => {
                imported.push(id.clone());
                ImportLine {
                    instance: id,
                    kind: LineKind::Imported,
                    detail,
                }
            }
            Err(why) => ImportLine {
                instance: id,
                kind: LineKind::Failed,
                detail: why,
            },
        };
        lines.push(line);
    }
    // Empty unless an instance's staging could not be removed.
    let _ = fs::remove_dir(config.scenarios_dir.join(STAGING_DIR));
    let scenario = if imported.is_empty() {
        None
    } else {
        let path = config
            .scenarios_dir
            .join(format!("{}.toml", config.scenario));
        fs::write(&path, scenario_file(config, &imported)).map_err(write_err(&path))?;
        Pins::compute(&config.scenarios_dir)?.write(&config.scenarios_dir)?;
        Some(path)
    };
    Ok(ImportReport { lines, scenario })
}

/// Imports one instance; what was done, or why it could not be.
fn import_one(
    config: &SweBenchImport,
    instance: &Instance,
    environments: &mut BTreeMap<String, Result<(), String>>,
) -> Result<String, String> {
    instance.check()?;
    let clone = config.repos.join(instance.clone_name());
    if !clone.is_dir() {
        return Err(format!(
            "no clone of {} at {}",
            instance.repo,
            clone.display()
        ));
    }
    let git_dir = git_dir(&clone).map_err(|e| e.to_string())?;
    let image = match &config.image {
        Some(image) => Some(ImageFile {
            reference: ImageRef::from_template(&image.template, &instance.instance_id)
                .map_err(|e| e.to_string())?
                .to_string(),
            workdir: image.workdir.as_deref(),
            activate: image.activate.as_deref(),
        }),
        None => None,
    };
    // An image is the environment: no virtualenv is made for its instances.
    let environment = image.is_none().then(|| instance.environment_key());
    let described = match (&image, &environment) {
        (Some(image), _) => format!("image {}", image.reference),
        (None, key) => format!("environment {}", key.as_deref().unwrap_or_default()),
    };
    let swe = SweBench {
        instance_id: instance.instance_id.clone(),
        repo: instance.repo.clone(),
        base_commit: instance.base_commit.clone(),
        version: instance.version.clone(),
        environment_setup_commit: instance.environment_setup_commit.clone(),
        environment: environment.clone(),
        test_cmd: instance
            .test_cmd
            .clone()
            .unwrap_or_else(|| config.test_cmd.clone()),
        timeout_ms: config.judge_timeout_ms,
        fail_to_pass: instance.fail_to_pass.clone(),
        pass_to_pass: instance.pass_to_pass.clone(),
        hints_text: instance.hints_text.clone(),
        patch: instance.patch.clone(),
        test_patch: instance.test_patch.clone(),
    };
    swe.check(&instance.instance_id)?;

    let tasks_dir = config.scenarios_dir.join(TASKS_DIR);
    // Beside `tasks/`, where no scenario looks, under the task's own name (a task's id is
    // its directory's name).
    let staging = config
        .scenarios_dir
        .join(STAGING_DIR)
        .join(&instance.instance_id);
    if staging.exists() {
        fs::remove_dir_all(&staging).map_err(|e| format!("{}: {e}", staging.display()))?;
    }
    let made = stage(&staging, &git_dir, instance, &swe, image);
    if let Err(why) = made {
        let _ = fs::remove_dir_all(&staging);
        return Err(why);
    }
    if let Some(key) = &environment {
        let env_state = environments
            .entry(key.clone())
            .or_insert_with(|| prepare_environment(config, instance, &git_dir, key))
            .clone();
        if let Err(why) = env_state {
            let _ = fs::remove_dir_all(&staging);
            return Err(format!("environment {key}: {why}"));
        }
    }
    let task_dir = tasks_dir.join(&instance.instance_id);
    if task_dir.exists() {
        fs::remove_dir_all(&task_dir).map_err(|e| format!("{}: {e}", task_dir.display()))?;
    }
    fs::rename(&staging, &task_dir).map_err(|e| format!("{}: {e}", task_dir.display()))?;
    Ok(format!(
        "{} at {}, {described}",
        instance.repo, instance.base_commit
    ))
}

/// Writes the task into `staging`: the fixture (the base tree, one commit) and `task.toml`.
fn stage(
    staging: &Path,
    git_dir: &Path,
    instance: &Instance,
    swe: &SweBench,
    image: Option<ImageFile<'_>>,
) -> Result<(), String> {
    let fixture = staging.join(FIXTURE_DIR);
    export_commit(git_dir, &instance.base_commit, &fixture).map_err(|e| e.to_string())?;
    init_base_repo(&fixture, &base_message(swe)).map_err(|e| e.to_string())?;
    let task = TaskFile {
        id: &instance.instance_id,
        language: "python",
        title: format!("{}: {}", instance.repo, instance.instance_id),
        problem: &instance.problem_statement,
        swe_bench: swe,
        solution: gold_solution(&instance.patch),
        image,
    };
    let text = toml::to_string(&task).map_err(|e| format!("task.toml: {e}"))?;
    fs::write(staging.join(TASK_FILE), text).map_err(|e| format!("task.toml: {e}"))?;
    // Refuse now what `run` would refuse later (a symlink in the tree, a bad field).
    bench_task::LoadedTask::load(staging)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The reference solution: `git apply` of the gold patch, then `submit`; empty when the
/// instance has no gold patch or it holds the delimiter.
fn gold_solution(patch: &str) -> Vec<BTreeMap<&'static str, String>> {
    if patch.trim().is_empty() || patch.lines().any(|l| l == GOLD_DELIMITER) {
        return Vec::new();
    }
    let newline = if patch.ends_with('\n') { "" } else { "\n" };
    let apply = format!(
        "git apply --whitespace=nowarn <<'{GOLD_DELIMITER}'\n{patch}{newline}{GOLD_DELIMITER}\n"
    );
    vec![
        BTreeMap::from([("tool", "bash".to_owned()), ("command", apply)]),
        BTreeMap::from([("tool", "submit".to_owned())]),
    ]
}

/// Makes the instance's environment unless it is already there.
fn prepare_environment(
    config: &SweBenchImport,
    instance: &Instance,
    git_dir: &Path,
    key: &str,
) -> Result<(), String> {
    let env = config.scenarios_dir.join(ENVS_DIR).join(key);
    if env.join(environment::READY).is_file() {
        return Ok(());
    }
    fs::create_dir_all(config.scenarios_dir.join(ENVS_DIR)).map_err(|e| e.to_string())?;
    // A venv records its absolute path: make it where runs will find it.
    let env = std::path::absolute(&env).map_err(|e| e.to_string())?;
    let workdir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let commit = instance
        .environment_setup_commit
        .as_deref()
        .unwrap_or(&instance.base_commit);
    export_commit(git_dir, commit, workdir.path()).map_err(|e| e.to_string())?;
    let setup = Setup {
        python: config.python.clone(),
        pip_packages: instance.pip_packages.clone(),
        install: instance.install.clone().or_else(|| {
            // The import's default only for instances that name no setup of their own.
            instance
                .pip_packages
                .is_empty()
                .then(|| config.install.clone())
                .flatten()
        }),
    };
    environment::prepare(&env, &setup, workdir.path()).map(|_| ())
}

/// The scenario file listing `tasks`: the scripted policy (the gold patches; replace it
/// with `llm` or run `exec` agents), limits sized for real repositories.
fn scenario_file(config: &SweBenchImport, tasks: &[String]) -> String {
    let list: Vec<String> = tasks.iter().map(|t| format!("  \"{t}\",")).collect();
    format!(
        r#"# Written by `agent-runner tasks import swe-bench` from {instances}.
# The scripted policy replays each task's gold patch; copy this file to run a model.
name = "{name}"
description = "SWE-bench-format tasks imported from {instances}"
seed = 42
policy = "scripted"
tasks = [
{list}
]

[config]
model = "scripted"
provider = "local"
strategy = "raw"
max_iterations = 100
temperature = 0.0
context_window = 128000
pruning_threshold = 0.8
planner_depth = 0
debate_rounds = 0
available_tools = ["bash", "view", "str_replace", "write_file", "grep", "submit"]
tool_timeout_ms = 600000
execution_timeout_ms = 3600000
failing_tests_patience = 0
no_progress_timeout_ms = 0
docker_image = "local"
tools_commit = "benchstream-tools-1"

[config.retry_policy]
max_retries = 0
backoff_ms = 500
exponential_backoff = true
retry_on_flake = false
retry_on_timeout = false

[config.sandbox_limits]
memory_mb = 4096
cpu_cores = 1.0
disk_mb = 4096
network_enabled = false
execution_timeout_ms = 3600000
"#,
        instances = config
            .instances
            .display()
            .to_string()
            .replace(['"', '\\', '\n'], "_"),
        name = config.scenario,
        list = list.join("\n"),
    )
}
