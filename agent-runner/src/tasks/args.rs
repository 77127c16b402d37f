//! `agent-runner tasks ...`: the flags, and their conversion into a validated
//! [`SweBenchImport`]. Nothing here runs anything.

use std::path::PathBuf;

use bench_sandbox::SandboxMode;
use clap::{Args, Subcommand};

use super::validate::ValidateConfig;
use crate::error::Error;
use crate::flags::{resolve_scenario, EventArgs};
use crate::task_image::ImageCacheArgs;
use bench_task::{LoadOptions, DEFAULT_TEST_CMD};

/// `agent-runner tasks ...`
#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    /// Make tasks from another benchmark's data.
    #[command(subcommand)]
    Import(ImportSource),
    /// Check the SWE-bench-format tasks of a scenario with their gold patches (K times):
    /// broken tasks are written down and left out of runs, flaky tests recorded.
    Validate(Box<ValidateArgs>),
}

/// `agent-runner tasks validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Scenario file, or the name of one in --scenarios-dir.
    pub scenario: String,
    /// Judge each state (the base, the gold patch) this many times; outcomes that differ
    /// between repetitions mark a test flaky.
    #[arg(long, env = "BENCH_VALIDATE_REPEAT", default_value_t = 1)]
    pub repeat: u32,
    /// Only these tasks (comma-separated ids of the scenario).
    #[arg(long, env = "BENCH_RUNNER_TASKS", value_delimiter = ',')]
    pub tasks: Option<Vec<String>>,
    /// Where scenario names are looked up.
    #[arg(long, env = "BENCH_SCENARIOS_DIR", default_value = "scenarios", value_parser = bench_cli::paths::absolute)]
    pub scenarios_dir: PathBuf,
    /// Validate even if a scenario, task or fixture differs from pins.toml.
    #[arg(long, env = "BENCH_RUNNER_ALLOW_UNPINNED")]
    pub allow_unpinned: bool,
    /// Run the judge's commands as plain processes, without the sandbox.
    #[arg(long, env = "BENCH_RUNNER_UNSANDBOXED")]
    pub unsandboxed: bool,
    /// Where the images of tasks with an `[image]` are cached.
    #[command(flatten)]
    pub images: ImageCacheArgs,
    /// Where each task's validation is published as a `task_validation` event, for
    /// ClickHouse and `compare`: only with `--nats-url` (or `BENCH_NATS_URL`); without
    /// it nothing is published and the report says so.
    #[command(flatten)]
    pub events: EventArgs,
}

/// A `tasks` command, validated.
#[derive(Debug, Clone)]
pub enum TasksConfig {
    /// `tasks import swe-bench` (boxed: the image template makes it large too).
    Import(Box<SweBenchImport>),
    /// `tasks validate` (boxed: the publishing setup makes it the large one).
    Validate(Box<ValidateConfig>),
}

/// `agent-runner tasks import ...`
#[derive(Debug, Subcommand)]
pub enum ImportSource {
    /// SWE-bench-format instances (JSON lines or a JSON array) with local clones of their
    /// repositories: one task per instance, its fixture the tree at `base_commit` without
    /// any later history, judged by SWE-bench's rules.
    SweBench(Box<SweBenchImportArgs>),
}

/// `agent-runner tasks import swe-bench`.
#[derive(Debug, Args)]
pub struct SweBenchImportArgs {
    /// The instances: a JSON array or JSON lines of SWE-bench records.
    #[arg(long, env = "BENCH_SWE_INSTANCES", value_parser = bench_cli::paths::absolute)]
    pub instances: PathBuf,
    /// Directory of local clones, one per repository, named `owner__name`. Nothing is
    /// downloaded.
    #[arg(long, env = "BENCH_SWE_REPOS", value_parser = bench_cli::paths::absolute)]
    pub repos: PathBuf,
    /// Scenarios directory the tasks (`tasks/<instance_id>/`), environments (`envs/`) and
    /// the scenario file go to; its `pins.toml` is rewritten.
    #[arg(long, env = "BENCH_SCENARIOS_DIR", default_value = "scenarios", value_parser = bench_cli::paths::absolute)]
    pub scenarios_dir: PathBuf,
    /// Name of the scenario file written (`<name>.toml`), listing the imported tasks.
    #[arg(long, env = "BENCH_SWE_SCENARIO")]
    pub scenario: String,
    /// Environment setup (`bash -c`, network allowed, once per repository and version)
    /// for instances that name none (`install`, `pip_packages`).
    #[arg(long, env = "BENCH_SWE_INSTALL")]
    pub install: Option<String>,
    /// Test command for instances that name none (`test_cmd`): a pytest invocation.
    #[arg(long, env = "BENCH_SWE_TEST_CMD", default_value = DEFAULT_TEST_CMD)]
    pub test_cmd: String,
    /// The Python the environments are made with: the one the agent sandbox runs.
    #[arg(long, env = "BENCH_SWE_PYTHON", default_value = "/usr/bin/python3")]
    pub python: PathBuf,
    /// Time limit of one judging (all the instance's tests), ms.
    #[arg(long, env = "BENCH_SWE_JUDGE_TIMEOUT_MS", default_value_t = 1_800_000)]
    pub judge_timeout_ms: u64,
    /// Each task's environment is this OCI image instead of a virtualenv:
    /// `docker://REGISTRY/NAME:TAG`, `oci:DIR:TAG` or `docker-archive:FILE`, with
    /// `{instance_id}` and `{image_id}` (SWE-bench's image name form) filled per instance;
    /// e.g. `docker://docker.io/swebench/sweb.eval.x86_64.{image_id}:latest`.
    #[arg(long, env = "BENCH_SWE_IMAGE", value_name = "TEMPLATE")]
    pub image: Option<String>,
    /// Where the repository goes in the image [default: the image's WorkingDir, else
    /// /testbed].
    #[arg(long, env = "BENCH_SWE_IMAGE_WORKDIR", requires = "image")]
    pub image_workdir: Option<String>,
    /// An environment prefix in the image whose bin/ goes first on PATH, as activating it
    /// would (SWE-bench's images: /opt/miniconda3/envs/testbed).
    #[arg(long, env = "BENCH_SWE_IMAGE_ACTIVATE", requires = "image")]
    pub image_activate: Option<String>,
}

/// `--image` of `tasks import swe-bench`: the template and where the repository goes.
#[derive(Debug, Clone)]
pub struct ImportImage {
    /// The reference template.
    pub template: String,
    /// `workdir` of each task's `[image]`.
    pub workdir: Option<String>,
    /// `activate` of each task's `[image]`.
    pub activate: Option<String>,
}

/// Everything `tasks import swe-bench` needs, validated.
#[derive(Debug, Clone)]
pub struct SweBenchImport {
    /// The instances file.
    pub instances: PathBuf,
    /// The clones' directory.
    pub repos: PathBuf,
    /// The scenarios directory written to.
    pub scenarios_dir: PathBuf,
    /// The scenario's name.
    pub scenario: String,
    /// The default environment setup command.
    pub install: Option<String>,
    /// The default test command.
    pub test_cmd: String,
    /// The environments' interpreter.
    pub python: PathBuf,
    /// Per-judging time limit, ms.
    pub judge_timeout_ms: u64,
    /// Each task's image, instead of a virtualenv.
    pub image: Option<ImportImage>,
}

impl TasksCommand {
    /// The validated config.
    pub fn into_config(self) -> Result<TasksConfig, Error> {
        match self {
            TasksCommand::Import(ImportSource::SweBench(args)) => {
                args.into_config().map(|c| TasksConfig::Import(Box::new(c)))
            }
            TasksCommand::Validate(args) => {
                if args.repeat == 0 {
                    return Err(Error::Config("--repeat must be at least 1".into()));
                }
                // A validation is a local result first; publishing it is asked for by
                // naming a broker, never by a default address.
                let broker_named = args.events.publish.nats.url.is_some();
                let (host, publish) = args.events.into_setup()?;
                Ok(TasksConfig::Validate(Box::new(ValidateConfig {
                    scenario: resolve_scenario(&args.scenario, &args.scenarios_dir),
                    load: LoadOptions {
                        tasks: args.tasks,
                        allow_unpinned: args.allow_unpinned,
                    },
                    repeat: args.repeat,
                    sandbox: if args.unsandboxed {
                        SandboxMode::Off
                    } else {
                        SandboxMode::Required
                    },
                    host,
                    publish: broker_named.then_some(publish),
                    images: args.images,
                })))
            }
        }
    }
}

impl SweBenchImportArgs {
    fn into_config(self) -> Result<SweBenchImport, Error> {
        let args = self;
        let name_ok = !args.scenario.is_empty()
            && args
                .scenario
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && !args.scenario.starts_with('.');
        if !name_ok {
            return Err(Error::Config(format!(
                "--scenario {:?}: letters, digits, . - _ only",
                args.scenario
            )));
        }
        if args.test_cmd.split_whitespace().next().is_none() {
            return Err(Error::Config("--test-cmd is empty".into()));
        }
        if args.judge_timeout_ms == 0 {
            return Err(Error::Config("--judge-timeout-ms must be > 0".into()));
        }
        if let Some(template) = &args.image {
            // A template that cannot name an image is refused before anything is written.
            bench_image::ImageRef::from_template(template, "owner__repo-1")
                .map_err(|e| Error::Config(format!("--image: {e}")))?;
        }
        Ok(SweBenchImport {
            instances: args.instances,
            repos: args.repos,
            scenarios_dir: args.scenarios_dir,
            scenario: args.scenario,
            install: args.install,
            test_cmd: args.test_cmd,
            python: args.python,
            judge_timeout_ms: args.judge_timeout_ms,
            image: args.image.map(|template| ImportImage {
                template,
                workdir: args.image_workdir,
                activate: args.image_activate,
            }),
        })
    }
}
