//! The command line: the clap types of every command ([`Cli`], [`Command`]) and of `run`,
//! `scenarios` and `spool`, and their conversion into a validated [`RunnerConfig`]. The
//! flag groups several commands share are in [`flags`](crate::flags); each other command
//! declares its own in its `args` module. Nothing here runs anything.

use std::path::PathBuf;

use bench_analysis::compare::sequential::Bet;
use bench_schemas::ContextStrategy;
use clap::{Args, Parser, Subcommand};

use crate::decide::DecideConfig;
use crate::error::Error;
use crate::flags::{
    resolve_scenario, ExperimentArgs, LlmArgs, OptionalEventArgs, PublishArgs, ScenarioArgs,
};
use crate::runner::{PolicyOverrides, RunnerConfig};
use crate::sweep::args::{ClaimArgs, PastResultsArgs};
use crate::tools::DEFAULT_OUTPUT_CAP;
use bench_task::LoadOptions;

/// Runs agent benchmark scenarios and publishes their events to NATS JetStream.
#[derive(Debug, Parser)]
#[command(name = "agent-runner", version, about)]
#[command(mut_arg("log_format", |arg| arg.value_parser(bench_cli::LogFormat::terse_parser())))]
pub struct Cli {
    /// `--log-format`.
    #[command(flatten)]
    pub log: bench_cli::LogArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scenario: every task (or --tasks), judged, events published.
    Run(Box<RunArgs>),
    /// Maintain the scenarios directory.
    #[command(subcommand)]
    Scenarios(ScenariosCommand),
    /// Work with the local spool of undelivered events.
    #[command(subcommand)]
    Spool(SpoolCommand),
    /// Work through a sweep (models × strategies × hyper-parameters), shared with other
    /// workers through NATS.
    Sweep(Box<crate::sweep::SweepArgs>),
    /// Run an external agent program as one run; it reports events as JSON lines.
    Exec(Box<crate::exec::ExecArgs>),
    /// Make tasks from other benchmarks' data (`tasks import swe-bench`).
    #[command(subcommand)]
    Tasks(crate::tasks::TasksCommand),
    /// Import runs recorded by other agent frameworks.
    #[command(subcommand)]
    Import(crate::run_import::ImportCommand),
    /// Show events from the stream as they arrive, one readable line each (or --json),
    /// filtered by run, type, task and policy; --last N / --since replay stored ones
    /// first. Ends on Ctrl-C with exit 0.
    Tail(Box<crate::tail::TailArgs>),
    /// Receive OpenTelemetry traces (OTLP/HTTP, GenAI conventions) from any agent and
    /// publish them as benchmark events, until Ctrl-C.
    Otlp(Box<crate::otlp::OtlpArgs>),
}

/// `agent-runner scenarios ...`
#[derive(Debug, Subcommand)]
pub enum ScenariosCommand {
    /// Re-pin: hash every scenario file, task file and fixture into pins.toml.
    Hash(DirArgs),
    /// Check pins.toml against the files without changing it (exit 3 on a difference).
    Check(DirArgs),
}

/// `agent-runner spool ...`
#[derive(Debug, Subcommand)]
pub enum SpoolCommand {
    /// Deliver what the spool holds, then exit (4 if the broker stayed away, 6 if
    /// anything was quarantined).
    Flush(Box<PublishArgs>),
    /// List what waits in the spool and what is in its quarantine, with reasons.
    Status(StatusArgs),
}

/// `agent-runner spool status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The spool file: its first slot (every slot is listed; each slot's quarantine is
    /// `<slot>.quarantine`).
    #[arg(
        value_parser = bench_cli::paths::absolute,
        long,
        env = "BENCH_RUNNER_SPOOL",
        default_value = ".local/spool/agent-runner.spool"
    )]
    pub spool: PathBuf,
    /// Print JSON (one object per slot: `pending`, `quarantine`) instead of text.
    #[arg(long, env = "BENCH_SPOOL_STATUS_JSON")]
    pub json: bool,
}

/// The scenarios directory.
#[derive(Debug, Args)]
pub struct DirArgs {
    /// Scenarios directory (scenario files, pins.toml, tasks/).
    #[arg(long, env = "BENCH_SCENARIOS_DIR", default_value = "scenarios", value_parser = bench_cli::paths::absolute)]
    pub dir: PathBuf,
}

/// `agent-runner run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario file, or the name of one in --scenarios-dir (`smoke`).
    pub scenario: String,
    /// Only these tasks (comma-separated ids of the scenario).
    #[arg(long, env = "BENCH_RUNNER_TASKS", value_delimiter = ',')]
    pub tasks: Option<Vec<String>>,
    /// Runs executing at once.
    #[arg(long, env = "BENCH_RUNNER_CONCURRENCY", default_value_t = 1)]
    pub concurrency: usize,
    /// Seed of every run, instead of the scenario's.
    #[arg(long, env = "BENCH_RUNNER_SEED")]
    pub seed: Option<u64>,
    /// Run each task K times, with seeds seed, seed+1, ..., seed+K-1 (`run_start.repeat`
    /// 0..K-1).
    #[arg(
        long,
        env = "BENCH_RUNNER_REPEATS",
        default_value_t = 1,
        value_name = "K"
    )]
    pub repeats: u32,
    /// The model of the runs, instead of the scenario's (`llm` scenarios).
    #[arg(long, env = "BENCH_RUNNER_MODEL")]
    pub model: Option<String>,
    /// The context strategy of the runs, instead of the scenario's: raw,
    /// observation_masking, llm_summary or hybrid (the scenario must set the parameters
    /// it reads).
    #[arg(long, env = "BENCH_RUNNER_STRATEGY", value_parser = parse_strategy)]
    pub strategy: Option<ContextStrategy>,
    /// The experiment the runs belong to and their tags.
    #[command(flatten)]
    pub experiment: ExperimentArgs,
    /// Where the scenarios are and how they are loaded.
    #[command(flatten)]
    pub scenarios: ScenarioArgs,
    /// Observation bytes kept per tool call.
    #[arg(long, env = "BENCH_RUNNER_OUTPUT_CAP", default_value_t = DEFAULT_OUTPUT_CAP)]
    pub output_cap: usize,
    /// No progress bar.
    #[arg(long, env = "BENCH_RUNNER_NO_PROGRESS")]
    pub no_progress: bool,
    /// Judge the final diff of each SWE-bench-format task's run K more times, each on a
    /// fresh copy of the base, and record whether the verdict held (`run_stop.regrade`).
    #[arg(
        long,
        env = "BENCH_RUNNER_REGRADE",
        default_value_t = 0,
        value_name = "K"
    )]
    pub regrade: u32,
    /// Where the events go (publishing, spool, `events.jsonl`), or `--no-publish`.
    #[command(flatten)]
    pub events: OptionalEventArgs,
    /// The LLM provider of `llm` policies.
    #[command(flatten)]
    pub llm: LlmArgs,
    /// Run the experiment in rounds, every task once per model per round, until the
    /// anytime-valid sequential test decides which model is better (or that they are
    /// equivalent), or --max-repeats rounds ran. Needs --experiment, --models and the
    /// ClickHouse the sink writes to.
    #[arg(long, env = "BENCH_RUNNER_UNTIL_DECIDED")]
    pub until_decided: bool,
    /// --until-decided: the baseline's and the candidate's model.
    #[arg(
        long,
        env = "BENCH_RUNNER_MODELS",
        value_delimiter = ',',
        value_name = "BASELINE,CANDIDATE"
    )]
    pub models: Vec<String>,
    /// --until-decided: the error rate the decision keeps, however many rounds it looks.
    #[arg(long, env = "BENCH_RUNNER_ALPHA", default_value_t = 0.05)]
    pub alpha: f64,
    /// --until-decided: decide `equivalent` when the whole confidence sequence of the
    /// difference in solve rate lies within ±E. Default: never.
    #[arg(long, env = "BENCH_RUNNER_EQUIVALENCE_MARGIN", value_name = "E")]
    pub equivalence_margin: Option<f64>,
    /// --until-decided: tune the confidence sequence's bets to the difference in solve
    /// rate D the experiment was planned to detect (`bench-analysis plan --detect D`): it
    /// decides sooner near D. Default: bets learnt from the outcomes.
    #[arg(long, env = "BENCH_RUNNER_DETECT", value_name = "D")]
    pub detect: Option<f64>,
    /// --until-decided: rounds run at most (repeats of every task per model).
    #[arg(
        long,
        env = "BENCH_RUNNER_MAX_REPEATS",
        default_value_t = 10,
        value_name = "K"
    )]
    pub max_repeats: u32,
    /// The ClickHouse that --until-decided reads the experiment's outcomes from.
    #[command(flatten)]
    pub clickhouse: PastResultsArgs,
    /// --until-decided: where the claims of the workers sharing the experiment live.
    #[command(flatten)]
    pub claims: ClaimArgs,
}

impl RunArgs {
    /// The validated config of `--until-decided`.
    pub fn into_decide_config(mut self) -> Result<DecideConfig, Error> {
        let config = |message: &str| Error::Config(format!("--until-decided: {message}"));
        let models = std::mem::take(&mut self.models);
        let [baseline, candidate] = <[String; 2]>::try_from(models)
            .map_err(|_| config("--models takes two models, BASELINE,CANDIDATE"))?;
        if baseline == candidate || baseline.trim().is_empty() || candidate.trim().is_empty() {
            return Err(config("--models takes two different, non-blank models"));
        }
        if self.model.is_some() || self.repeats != 1 {
            return Err(config(
                "the models come from --models and the repeats from the rounds: drop --model and --repeats",
            ));
        }
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            return Err(config(&format!(
                "--alpha must be in (0, 1), got {}",
                self.alpha
            )));
        }
        if let Some(e) = self.equivalence_margin.filter(|e| !(*e > 0.0 && *e < 1.0)) {
            return Err(config(&format!(
                "--equivalence-margin must be in (0, 1), got {e}"
            )));
        }
        if let Some(d) = self.detect.filter(|d| !(*d > 0.0 && *d < 1.0)) {
            return Err(config(&format!("--detect must be in (0, 1), got {d}")));
        }
        if self.max_repeats == 0 {
            return Err(config("--max-repeats must be at least 1"));
        }
        let (alpha, equivalence_margin, max_repeats) =
            (self.alpha, self.equivalence_margin, self.max_repeats);
        let bet = self.detect.map_or(Bet::Adaptive, Bet::Tuned);
        let clickhouse = self
            .clickhouse
            .resolve()?
            .ok_or_else(|| config("needs --clickhouse-url, where the sink stores the runs"))?;
        let claims = self.claims.settings()?;
        self.until_decided = false;
        let run = self.into_config()?;
        if run.publish.is_none() {
            return Err(config("the runs must be published (drop --no-publish)"));
        }
        match run.experiment.name.as_deref() {
            None => return Err(config("needs --experiment")),
            Some(name) if name.contains(',') => {
                return Err(config("the experiment's name must not contain ','"))
            }
            Some(_) => {}
        }
        Ok(DecideConfig {
            run,
            baseline,
            candidate,
            alpha,
            equivalence_margin,
            bet,
            max_repeats,
            clickhouse,
            claims,
        })
    }

    /// The validated runner config.
    pub fn into_config(self) -> Result<RunnerConfig, Error> {
        if self.until_decided || !self.models.is_empty() {
            return Err(Error::Config(
                "--until-decided and --models go together (an experiment run until decided)".into(),
            ));
        }
        if self.concurrency == 0 {
            return Err(Error::Config("--concurrency must be at least 1".into()));
        }
        if self.repeats == 0 {
            return Err(Error::Config("--repeats must be at least 1".into()));
        }
        let (host, publish) = self.events.into_setup()?;
        let sandbox = self.scenarios.sandbox_mode();
        Ok(RunnerConfig {
            scenario: resolve_scenario(&self.scenario, &self.scenarios.scenarios_dir),
            load: LoadOptions {
                tasks: self.tasks,
                allow_unpinned: self.scenarios.allow_unpinned,
            },
            concurrency: self.concurrency,
            seed: self.seed,
            out_dir: Some(self.scenarios.out),
            host,
            output_cap: self.output_cap,
            publish,
            progress: !self.no_progress,
            llm: self.llm.into_config()?,
            sandbox,
            regrade: self.regrade,
            repeats: self.repeats,
            first_repeat: 0,
            overrides: PolicyOverrides {
                model: self.model,
                strategy: self.strategy,
            },
            experiment: self.experiment.into_experiment()?,
            images: self.scenarios.images,
        })
    }
}

/// A context strategy by its wire name (`--strategy`).
fn parse_strategy(name: &str) -> Result<ContextStrategy, String> {
    serde_json::from_value(serde_json::Value::String(name.to_owned())).map_err(|_| {
        format!("{name:?} is not a strategy: raw, observation_masking, llm_summary or hybrid")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::ExecConfig;
    use bench_task::LoadedScenario;

    /// `agent-runner run` with `flags` after the scenario, parsed.
    fn run_args(flags: &[&str]) -> RunArgs {
        let cli = Cli::try_parse_from(["agent-runner", "run", "llm-local"].iter().chain(flags))
            .expect("valid flags");
        let Command::Run(args) = cli.command else {
            panic!("not run")
        };
        *args
    }

    #[test]
    fn until_decided_needs_two_models_an_experiment_clickhouse_and_publishing() {
        let good = [
            "--until-decided",
            "--models",
            "m-a,m-b",
            "--experiment",
            "ab",
            "--clickhouse-url",
            "http://127.0.0.1:8123",
            "--alpha",
            "0.1",
            "--equivalence-margin",
            "0.05",
            "--max-repeats",
            "4",
            "--detect",
            "0.1",
            "--sweep-bucket",
            "CLAIMS",
            "--claim-lease-ms",
            "2000",
        ];
        let config = run_args(&good).into_decide_config().expect("valid");
        // The claims of the workers sharing the experiment: the sweeps' flags.
        assert_eq!(
            (config.claims.bucket.as_str(), config.claims.replicas),
            ("CLAIMS", 1)
        );
        assert_eq!(
            config.claims.lease,
            Some(std::time::Duration::from_millis(2000))
        );
        assert_eq!(
            (config.baseline.as_str(), config.candidate.as_str()),
            ("m-a", "m-b")
        );
        assert_eq!(
            (config.alpha, config.equivalence_margin, config.max_repeats),
            (0.1, Some(0.05), 4)
        );
        assert_eq!(config.bet, Bet::Tuned(0.1));
        assert!(config.run.publish.is_some());
        let without = |flag: &str| -> Vec<&str> {
            let at = good.iter().position(|f| *f == flag).expect("a flag");
            good.iter()
                .enumerate()
                .filter(|(i, _)| *i != at && *i != at + 1)
                .map(|(_, f)| *f)
                .collect()
        };
        for (change, error) in [
            (&["--models", "m-a"][..], "--models takes two models"),
            (&["--models", "m-a,m-a"], "two different"),
            (&["--model", "m-c"], "drop --model and --repeats"),
            (&["--repeats", "3"], "drop --model and --repeats"),
            (&["--alpha", "1"], "--alpha must be in (0, 1)"),
            (
                &["--equivalence-margin", "0"],
                "--equivalence-margin must be in (0, 1)",
            ),
            (&["--max-repeats", "0"], "--max-repeats must be at least 1"),
            (&["--detect", "1.5"], "--detect must be in (0, 1)"),
            (&["--no-publish"], "must be published"),
            (
                &["--claim-lease-ms", "0"],
                "--claim-lease-ms must be at least 1",
            ),
            (
                &["--sweep-bucket-replicas", "0"],
                "--sweep-bucket-replicas must be at least 1",
            ),
        ] {
            // A flag given twice is refused (or, for --models, added to): replace it.
            let base = if good.contains(&change[0]) {
                without(change[0])
            } else {
                good.to_vec()
            };
            let flags: Vec<&str> = base.into_iter().chain(change.iter().copied()).collect();
            let err = run_args(&flags)
                .into_decide_config()
                .expect_err("refused")
                .to_string();
            assert!(err.contains(error), "{change:?}: {err}");
        }
        for (flag, error) in [
            ("--experiment", "needs --experiment"),
            ("--clickhouse-url", "needs --clickhouse-url"),
        ] {
            let err = run_args(&without(flag))
                .into_decide_config()
                .expect_err("refused")
                .to_string();
            assert!(err.contains(error), "{flag}: {err}");
        }
        // Outside --until-decided, --models is refused rather than ignored.
        let err = run_args(&["--models", "m-a,m-b"])
            .into_config()
            .expect_err("refused")
            .to_string();
        assert!(err.contains("go together"), "{err}");
    }

    #[test]
    fn run_flags_become_a_config() {
        let cli = Cli::try_parse_from([
            "agent-runner",
            "run",
            "smoke",
            "--tasks",
            "a,b",
            "--concurrency",
            "2",
            "--seed",
            "7",
            "--nats-url",
            "nats://127.0.0.1:4999",
            "--subject-prefix",
            "team.bench",
            "--host",
            "w1",
        ])
        .expect("valid flags");
        let Command::Run(args) = cli.command else {
            panic!("not run")
        };
        let config = args.into_config().expect("valid config");
        // The default scenarios directory, resolved where the command started.
        let cwd = std::env::current_dir().expect("current directory");
        assert_eq!(config.scenario, cwd.join("scenarios/smoke.toml"));
        assert_eq!(config.load.tasks, Some(vec!["a".into(), "b".into()]));
        assert_eq!((config.concurrency, config.seed), (2, Some(7)));
        let publish = config.publish.expect("publishing");
        assert_eq!(publish.nats.url, "nats://127.0.0.1:4999");
        assert_eq!(publish.publish.prefix.as_str(), "team.bench");
    }

    /// The parsed `run` command of `flags` (after `agent-runner run smoke --no-publish`).
    fn run_config(flags: &[&str]) -> Result<RunnerConfig, Error> {
        let base = ["agent-runner", "run", "smoke", "--no-publish"];
        let cli = Cli::try_parse_from(base.iter().chain(flags)).expect("flags parse");
        let Command::Run(args) = cli.command else {
            panic!("not run")
        };
        args.into_config()
    }

    #[test]
    fn experiment_repeats_tags_and_policy_become_the_runner_config() {
        let config = run_config(&[
            "--experiment",
            "a-vs-b",
            "--repeats",
            "3",
            "--tag",
            "arm=b,owner=ci",
            "--tag",
            "note=x=y",
            "--model",
            "model-b",
            "--strategy",
            "observation_masking",
        ])
        .expect("valid");
        assert_eq!(config.experiment.name.as_deref(), Some("a-vs-b"));
        assert_eq!(config.repeats, 3);
        let tags: Vec<(&str, &str)> = config
            .experiment
            .tags
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(tags, [("arm", "b"), ("note", "x=y"), ("owner", "ci")]);
        assert_eq!(config.overrides.model.as_deref(), Some("model-b"));
        assert_eq!(
            config.overrides.strategy,
            Some(ContextStrategy::ObservationMasking)
        );
        let plain = run_config(&[]).expect("valid");
        assert_eq!((plain.repeats, plain.experiment.name), (1, None));
    }

    #[test]
    fn bad_experiment_flags_are_refused_with_the_flag_named() {
        for (flags, message) in [
            (&["--repeats", "0"][..], "--repeats must be at least 1"),
            (&["--experiment", " "], "--experiment must not be blank"),
            (&["--tag", "arm"], "--tag \"arm\": expected key=value"),
            (&["--tag", "=b"], "--tag \"=b\": the key is blank"),
            (
                &["--tag", "arm=a", "--tag", "arm=b"],
                "--tag arm: given twice",
            ),
        ] {
            let err = run_config(flags).expect_err("refused");
            assert_eq!(err.to_string(), format!("invalid configuration: {message}"));
        }
        let strategy = Cli::try_parse_from(["agent-runner", "run", "smoke", "--strategy", "x"]);
        assert!(strategy.is_err(), "an unknown strategy is a usage error");
    }

    /// Every flag of every subcommand can be set from the environment (`BENCH_*`), as
    /// the README promises.
    #[test]
    fn every_flag_has_an_environment_variable() {
        fn missing(command: &clap::Command, path: &str, out: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let builtin = matches!(arg.get_id().as_str(), "help" | "version");
                if arg.get_long().is_some() && !builtin && arg.get_env().is_none() {
                    out.push(format!("{path} --{}", arg.get_long().unwrap_or_default()));
                }
            }
            for sub in command.get_subcommands() {
                missing(sub, &format!("{path} {}", sub.get_name()), out);
            }
        }
        let mut out = Vec::new();
        missing(
            &<Cli as clap::CommandFactory>::command(),
            "agent-runner",
            &mut out,
        );
        assert!(out.is_empty(), "flags without a BENCH_* variable: {out:#?}");
    }

    /// The shared event flags: `--no-publish` skips (and does not check) the publishing
    /// flags; `sweep` always publishes, so it has no `--no-publish`.
    #[test]
    fn event_flags_are_shared_and_no_publish_is_optional() {
        let cli = Cli::try_parse_from([
            "agent-runner",
            "import",
            "swe-agent",
            "trajs",
            "--host",
            "w2",
            "--no-publish",
            "--publish-window",
            "0",
        ])
        .expect("valid flags");
        let Command::Import(command) = cli.command else {
            panic!("not import")
        };
        let config = command.into_config().expect("publishing flags not checked");
        assert_eq!(config.host, "w2");
        assert!(config.publish.is_none());

        let published = ["agent-runner", "run", "smoke", "--publish-window", "0"];
        let Command::Run(args) = Cli::try_parse_from(published).expect("flags").command else {
            panic!("not run")
        };
        let err = args.into_config().expect_err("a window of 0");
        assert_eq!(
            err.to_string(),
            "invalid configuration: --publish-window must be at least 1"
        );

        let sweep = Cli::try_parse_from(["agent-runner", "sweep", "s.toml", "--no-publish"]);
        assert!(sweep.is_err(), "sweep has no --no-publish");
    }

    /// The configs of `exec` with `args` after the scenarios directory of the repo.
    fn exec_configs(args: &[&str]) -> Vec<ExecConfig> {
        let scenarios = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios");
        let cli = Cli::try_parse_from(
            [
                "agent-runner",
                "exec",
                "--scenarios-dir",
                scenarios,
                "--no-publish",
            ]
            .iter()
            .chain(args),
        )
        .expect("valid flags");
        let Command::Exec(args) = cli.command else {
            panic!("not exec")
        };
        args.into_configs().expect("valid config")
    }

    #[test]
    fn exec_without_scenario_and_task_runs_every_smoke_task() {
        let runs = exec_configs(&["--", "python3", "my_agent.py"]);
        let smoke =
            LoadedScenario::load(&runs[0].scenario, &LoadOptions::default()).expect("smoke loads");
        assert!(runs[0].scenario.ends_with("scenarios/smoke.toml"));
        let tasks: Vec<&str> = runs.iter().map(|r| r.task.as_str()).collect();
        assert_eq!(tasks, smoke.scenario.tasks);
        assert_eq!(tasks.len(), 8);
    }

    #[test]
    fn exec_task_picks_the_runs() {
        let runs = exec_configs(&["--task", "sh-ci-exit-status,py-slugify-unicode", "--", "a"]);
        let tasks: Vec<&str> = runs.iter().map(|r| r.task.as_str()).collect();
        assert_eq!(tasks, ["sh-ci-exit-status", "py-slugify-unicode"]);
    }

    #[test]
    fn bad_prefix_is_a_usage_error() {
        let parsed =
            Cli::try_parse_from(["agent-runner", "run", "smoke", "--subject-prefix", "a.*"]);
        assert!(parsed.is_err());
    }
}
