//! The `bench-analysis` command line ([`Cli`]) and its `query`, `compare`, `report`,
//! `plan` and `serve` subcommands: their flags, and turning them into a query run, a comparison or a report
//! file ([`execute`]). `main.rs` only parses, sets up logging and hands off here.
//!
//! They take only the ClickHouse connection ([`ConnectionArgs`]: `--config`'s
//! `[clickhouse]`, `BENCH_CLICKHOUSE_*`, `--clickhouse-*`), so they query the database
//! the sink writes.

use std::path::PathBuf;

use bench_cli::{LogArgs, Status};
use bench_clickhouse::{ConfigError, ConnectionArgs};
use clap::{Parser, Subcommand};

use crate::compare::analyze::DEFAULT_MARGIN;
use crate::compare::request::{Request, DEFAULT_BY};
use crate::compare::sequential::Bet;
use crate::compare::{self, resample, CompareError, Filters, Settings};
use crate::queries::{ParamValues, Query, QueryError, QUERIES};
use crate::report::{generate_report, ReportOptions};
use crate::serve::{ServeArgs, ServeError};
use crate::table::Format;

/// `bench-analysis`.
#[derive(Debug, Parser)]
#[command(
    name = "bench-analysis",
    version,
    about = "Shipped queries and the HTML report over benchstream events in ClickHouse"
)]
pub struct Cli {
    /// `--log-format`.
    #[command(flatten)]
    pub log: LogArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Each but `plan` takes only the ClickHouse connection (`--insert-timeout-ms` is
/// accepted but hidden: they insert nothing); `plan` reads nothing.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a shipped query (deploy/clickhouse/queries/; `query list` lists them).
    #[command(mut_arg("insert-timeout-ms", |arg| arg.hide(true)))]
    Query(QueryArgs),
    /// Compare policies on the tasks they share: solve rates with intervals, paired
    /// differences, exact tests, cost, the difference the data could detect.
    #[command(mut_arg("insert-timeout-ms", |arg| arg.hide(true)))]
    Compare(CompareArgs),
    /// Write a self-contained HTML report with tables and charts.
    #[command(mut_arg("insert-timeout-ms", |arg| arg.hide(true)))]
    Report(ReportArgs),
    /// How many tasks and repeats a paired comparison of two policies needs to detect a
    /// difference in solve rate (no database needed, unless --from-experiment).
    #[command(mut_arg("insert-timeout-ms", |arg| arg.hide(true)))]
    Plan(crate::plan::PlanArgs),
    /// Serve a read-only web viewer of experiments, runs, tasks and comparisons, with
    /// live updates from the events stream.
    #[command(mut_arg("insert-timeout-ms", |arg| arg.hide(true)))]
    Serve(Box<ServeArgs>),
}

/// Runs `command` on a runtime with a worker per core: `query` and `compare` print their
/// answer on stdout; `report` writes its file.
pub fn execute(command: Command) -> Result<(), CommandError> {
    let runtime = bench_cli::runtime(None).map_err(CommandError::Runtime)?;
    runtime.block_on(dispatch(command))
}

/// The subcommand of [`execute`], on its runtime.
async fn dispatch(command: Command) -> Result<(), CommandError> {
    match command {
        Command::Query(args) => print!("{}", query(args).await?),
        Command::Compare(args) => print!("{}", compare(args).await?),
        Command::Plan(args) => print!("{}", crate::plan::run(&args).await?),
        Command::Report(args) => {
            let path = report(args).await?;
            tracing::info!(path = %path.display(), "report written");
        }
        Command::Serve(args) => {
            let config = args.into_config()?;
            crate::serve::run(config, bench_cli::cancel_on_signal(Some("stopping"))).await?;
        }
    }
    Ok(())
}

/// `error`, or, when ClickHouse at `url` could not be reached (a network error somewhere
/// in its chain), [`CommandError::Unreachable`] naming the URL once.
fn reached(url: &str, error: CommandError) -> CommandError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    while let Some(e) = source {
        if let Some(network @ clickhouse::error::Error::Network(_)) =
            e.downcast_ref::<clickhouse::error::Error>()
        {
            return CommandError::Unreachable {
                url: url.to_owned(),
                cause: bench_cli::exit::Chain(network).to_string(),
            };
        }
        source = e.source();
    }
    error
}

/// `bench-analysis query <name> [--param k=v ...] [--format table|json|csv]`.
#[derive(Debug, Clone, clap::Args)]
pub struct QueryArgs {
    /// The shipped query (a file stem of deploy/clickhouse/queries/); `list` prints
    /// them all with their parameters.
    pub name: String,
    /// A query parameter, `name=value`; repeat for several. Values are checked against
    /// the parameter's declared type (UUID, DateTime, UInt32, Float64, String).
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
    /// Output format.
    #[arg(long, env = "BENCH_QUERY_FORMAT", value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// `leaderboard` only: `cfg` gives one row per policy and run config (cfg_hash), so
    /// runs of one model:strategy under different settings are not merged. The same as
    /// `--param by=cfg`.
    #[arg(long, env = "BENCH_QUERY_BY", value_enum)]
    pub by: Option<GroupBy>,
    /// The ClickHouse database to read: the sink's connection settings.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// `bench-analysis report --out report.html [--since T] [--until T] [--policy P]`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// Where to write the HTML page.
    #[arg(long, env = "BENCH_REPORT_OUT", value_name = "FILE", value_parser = bench_cli::paths::absolute)]
    pub out: PathBuf,
    /// Only runs started at or after this time: `YYYY-MM-DD[ HH:MM:SS]` (UTC) or RFC 3339.
    #[arg(long, env = "BENCH_REPORT_SINCE")]
    pub since: Option<String>,
    /// Only runs started before this time (same forms as --since).
    #[arg(long, env = "BENCH_REPORT_UNTIL")]
    pub until: Option<String>,
    /// Only this policy_id; one no stored run has is an error (exit 2).
    #[arg(long, env = "BENCH_REPORT_POLICY")]
    pub policy: Option<String>,
    /// Which runs: their experiment, sweep and scenario.
    #[command(flatten)]
    pub runs: RunFilterArgs,
    /// The policy_id the comparison section compares the others with (default: the one
    /// with the most counted runs).
    #[arg(long, value_name = "P")]
    pub baseline: Option<String>,
    /// The most runs the runs table of a time range lists (the latest); the page says how
    /// many it left out.
    #[arg(long, env = "BENCH_REPORT_RUNS_CAP", value_name = "N", default_value_t = crate::report::DEFAULT_RUNS_CAP)]
    pub runs_cap: usize,
    /// The most tasks the per-instance grid of a time range shows (the first by task id);
    /// the page says how many it left out.
    #[arg(long, env = "BENCH_REPORT_TASKS_CAP", value_name = "N", default_value_t = crate::report::DEFAULT_TASKS_CAP)]
    pub tasks_cap: usize,
    /// The most rows any other table shows (the first); the page says how many it left
    /// out and which `query` prints them all.
    #[arg(long, env = "BENCH_REPORT_ROWS_CAP", value_name = "N", default_value_t = crate::report::DEFAULT_ROWS_CAP)]
    pub rows_cap: usize,
    /// Address of a `bench-analysis serve` viewer of the same database (e.g.
    /// http://127.0.0.1:8321): each listed run and task links to its page there.
    #[arg(long, env = "BENCH_REPORT_VIEWER_URL", value_name = "URL")]
    pub viewer_url: Option<String>,
    /// The ClickHouse database to read: the sink's connection settings.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// Which runs `compare` and `report` read, besides the time range: repeatable, each
/// keeping the runs of any value given.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunFilterArgs {
    /// Only runs of this experiment (`run_start.experiment`); repeat for several.
    #[arg(
        long = "experiment",
        value_name = "NAME",
        env = "BENCH_ANALYSIS_EXPERIMENT",
        value_delimiter = ','
    )]
    pub experiments: Vec<String>,
    /// Only runs of this sweep (`run_start.sweep.name`); repeat for several.
    #[arg(
        long = "sweep",
        value_name = "NAME",
        env = "BENCH_ANALYSIS_SWEEP",
        value_delimiter = ','
    )]
    pub sweeps: Vec<String>,
    /// Only runs of this scenario (its name); repeat for several.
    #[arg(
        long = "scenario",
        value_name = "NAME",
        env = "BENCH_ANALYSIS_SCENARIO",
        value_delimiter = ','
    )]
    pub scenarios: Vec<String>,
}

/// `bench-analysis compare [--policy P ...] [--baseline P] [--by KEYS] [--format F] ...`.
#[derive(Debug, Clone, clap::Args)]
pub struct CompareArgs {
    /// A policy to compare (a value of the --by keys); repeat for several. Default:
    /// every policy with runs.
    #[arg(long = "policy", value_name = "P")]
    pub policies: Vec<String>,
    /// Compare every other policy with this one; without it, every pair.
    #[arg(long, value_name = "P")]
    pub baseline: Option<String>,
    /// What a policy is: config keys, comma-separated, from policy (policy_id), cfg
    /// (the config, labelled by the settings that differ), model, strategy, experiment,
    /// tag:NAME (a tag's value); e.g. `model,strategy`.
    #[arg(long, value_name = "KEYS", default_value = DEFAULT_BY)]
    pub by: String,
    /// Pool the runs of different experiments into one policy (the output names the
    /// experiments pooled); without it, a policy seen in several experiments is one
    /// policy per experiment.
    #[arg(long, env = "BENCH_ANALYSIS_POOL_EXPERIMENTS")]
    pub pool_experiments: bool,
    /// Only runs started at or after this time: `YYYY-MM-DD[ HH:MM:SS]` (UTC) or RFC 3339.
    #[arg(long)]
    pub since: Option<String>,
    /// Only runs started before this time (same forms as --since).
    #[arg(long)]
    pub until: Option<String>,
    /// Which runs: their experiment, sweep and scenario.
    #[command(flatten)]
    pub runs: RunFilterArgs,
    /// Only this task_id; repeat for several.
    #[arg(long = "task", value_name = "TASK_ID")]
    pub tasks: Vec<String>,
    /// Non-inferiority margin, in solve rate: the candidate is non-inferior when the
    /// lower bound of the difference's interval is above -MARGIN.
    #[arg(long, default_value_t = DEFAULT_MARGIN, value_parser = parse_margin)]
    pub margin: f64,
    /// Seed of the bootstrap's generator: the same seed, data and flags give the same
    /// answer.
    #[arg(long, default_value_t = resample::DEFAULT_SEED)]
    pub seed: u64,
    /// Bootstrap resamples per interval.
    #[arg(long, default_value_t = resample::DEFAULT_RESAMPLES, value_parser = clap::value_parser!(u32).range(100..))]
    pub resamples: u32,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Add to each pair an anytime-valid 95 % confidence sequence for the paired
    /// difference (a task's k-th runs form round k) and its decision, valid however
    /// often you look; the fixed-sample results stay, valid for a single look only.
    #[arg(long, env = "BENCH_COMPARE_SEQUENTIAL")]
    pub sequential: bool,
    /// With --sequential: decide `equivalent` when the whole sequence lies within
    /// ±E (a difference in solve rate). Not the non-inferiority --margin.
    #[arg(long, env = "BENCH_COMPARE_EQUIVALENCE_MARGIN", value_name = "E", value_parser = parse_margin, requires = "sequential")]
    pub equivalence_margin: Option<f64>,
    /// With --sequential: tune the sequence's bets to the difference in solve rate D the
    /// experiment was planned to detect (`plan --detect D`): it decides sooner near D.
    /// Without it the bets are learnt from the data.
    #[arg(long, env = "BENCH_COMPARE_DETECT", value_name = "D", value_parser = parse_detect, requires = "sequential")]
    pub detect: Option<f64>,
    /// The ClickHouse database to read: the sink's connection settings.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

impl CompareArgs {
    /// The comparison these flags ask for.
    pub fn into_request(self) -> Request {
        Request {
            by: self.by,
            policies: self.policies,
            pool_experiments: self.pool_experiments,
            filters: Filters {
                since: self.since,
                until: self.until,
                scenarios: self.runs.scenarios,
                experiments: self.runs.experiments,
                sweeps: self.runs.sweeps,
                tasks: self.tasks,
            },
            settings: Settings {
                baseline: self.baseline,
                margin: self.margin,
                seed: self.seed,
                resamples: self.resamples as usize,
            },
            sequential: self.sequential,
            equivalence_margin: self.equivalence_margin,
            bet: self.detect.map_or(Bet::Adaptive, Bet::Tuned),
        }
    }

    /// `compare --format FORMAT` of the database `connection` reaches: every policy, every
    /// other flag at its default.
    pub fn every_policy(connection: ConnectionArgs, format: Format) -> CompareArgs {
        CompareArgs {
            policies: Vec::new(),
            baseline: None,
            by: DEFAULT_BY.to_owned(),
            pool_experiments: false,
            since: None,
            until: None,
            runs: RunFilterArgs::default(),
            tasks: Vec::new(),
            margin: DEFAULT_MARGIN,
            seed: resample::DEFAULT_SEED,
            resamples: resample::DEFAULT_RESAMPLES,
            format,
            sequential: false,
            equivalence_margin: None,
            detect: None,
            connection,
        }
    }
}

/// What `--by` splits the leaderboard by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupBy {
    /// One row per policy (the default).
    Policy,
    /// One row per policy and run config (cfg_hash).
    Cfg,
}

impl GroupBy {
    /// The value of the query's `by` parameter.
    fn param(self) -> &'static str {
        match self {
            GroupBy::Policy => "policy",
            GroupBy::Cfg => "cfg",
        }
    }
}

/// Why a subcommand failed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The tokio runtime could not be built.
    #[error("cannot start the runtime")]
    Runtime(#[source] std::io::Error),
    /// The ClickHouse connection settings are unusable.
    #[error("invalid settings: {0}")]
    Config(#[from] ConfigError),
    /// The query is unknown, its parameters bad, or ClickHouse failed it.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The comparison could not be made.
    #[error(transparent)]
    Compare(#[from] CompareError),
    /// `plan` was asked something it cannot answer.
    #[error(transparent)]
    Plan(#[from] crate::plan::PlanError),
    /// The viewer could not start or stopped serving.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// ClickHouse could not be reached: its URL, and why (the client's chain of causes,
    /// each once).
    #[error("cannot reach ClickHouse at {url}: {cause}")]
    Unreachable {
        /// The URL tried.
        url: String,
        /// Why.
        cause: String,
    },
    /// The report could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The `--out` file.
        path: PathBuf,
        /// Why the write failed.
        #[source]
        source: std::io::Error,
    },
}

impl CommandError {
    /// The exit status: [`Status::Usage`] when the command line itself is wrong
    /// (settings, query name, parameters), else [`Status::Failure`].
    pub fn status(&self) -> Status {
        let usage = matches!(
            self,
            CommandError::Config(_)
                | CommandError::Query(
                    QueryError::UnknownQuery { .. }
                        | QueryError::UnknownParam { .. }
                        | QueryError::MissingParam { .. }
                        | QueryError::InvalidParam { .. }
                        | QueryError::UnknownPolicy { .. }
                )
                | CommandError::Compare(
                    CompareError::UnknownPolicy { .. }
                        | CompareError::WithComma(..)
                        | CompareError::BadKeys(_)
                        | CompareError::Query(QueryError::InvalidParam { .. })
                )
                | CommandError::Plan(
                    crate::plan::PlanError::OutOfRange { .. }
                        | crate::plan::PlanError::Experiment { .. }
                        | crate::plan::PlanError::Connection(_)
                )
                | CommandError::Serve(ServeError::Settings(_) | ServeError::ClickHouse(_))
        );
        if usage {
            Status::Usage
        } else {
            Status::Failure
        }
    }
}

/// Runs `args` and returns what to print.
pub async fn query(args: QueryArgs) -> Result<String, CommandError> {
    if args.name == "list" {
        return Ok(catalog());
    }
    let query = Query::find(&args.name)?;
    let by = args.by.map(|by| ("by".to_owned(), by.param().to_owned()));
    // A query without a `by` parameter refuses `--by` as it refuses `--param by=...`.
    let values: ParamValues = args.params.into_iter().chain(by).collect();
    query.render(&values)?; // Bad parameters are reported before connecting.
    let config = args.connection.load()?;
    let answer = query.run(&config.client(), &values).await;
    Ok(answer
        .map_err(|e| reached(&config.url, e.into()))?
        .render(args.format))
}

/// Runs `args` and returns what to print.
pub async fn compare(args: CompareArgs) -> Result<String, CommandError> {
    let config = args.connection.clone().load()?;
    let format = args.format;
    let answer = compare::request::answer(&config.client(), args.into_request())
        .await
        .map_err(|e| reached(&config.url, e.into()))?;
    Ok(compare::render::render(&answer, format))
}

/// Writes the report of `args`; returns the path written.
pub async fn report(args: ReportArgs) -> Result<PathBuf, CommandError> {
    let config = args.connection.load()?;
    let options = ReportOptions {
        since: args.since,
        until: args.until,
        policy: args.policy,
        baseline: args.baseline,
        experiments: args.runs.experiments,
        sweeps: args.runs.sweeps,
        scenarios: args.runs.scenarios,
        runs_cap: Some(args.runs_cap),
        tasks_cap: Some(args.tasks_cap),
        rows_cap: Some(args.rows_cap),
        viewer_url: args.viewer_url,
    };
    let page = generate_report(&config.client(), &options)
        .await
        .map_err(|e| reached(&config.url, e.into()))?;
    std::fs::write(&args.out, page).map_err(|source| CommandError::Write {
        path: args.out.clone(),
        source,
    })?;
    Ok(args.out)
}

/// Width `query list` wraps its text to.
const CATALOG_WIDTH: usize = 88;

/// The shipped queries with their whole descriptions and parameters, wrapped.
pub fn catalog() -> String {
    let mut out = String::new();
    for query in QUERIES {
        out.push_str(query.name);
        out.push('\n');
        wrap(&mut out, &query.description(), "    ", "    ");
        for param in query.params().unwrap_or_default() {
            let default = param
                .default
                .map_or("required".to_owned(), |d| format!("default '{d}'"));
            out.push_str(&format!(
                "    --param {}=<{}>  ({default})\n",
                param.name, param.ty
            ));
            wrap(&mut out, param.help, "        ", "        ");
        }
    }
    out
}

/// Appends `text` as lines of at most [`CATALOG_WIDTH`] characters (a longer word
/// stands alone), the first indented by `first`, the others by `rest`.
fn wrap(out: &mut String, text: &str, first: &str, rest: &str) {
    let mut line = first.to_owned();
    let mut empty = true;
    for word in text.split_whitespace() {
        let width = line.chars().count() + 1 + word.chars().count();
        if !empty && width > CATALOG_WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_owned();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    if !empty {
        out.push_str(&line);
        out.push('\n');
    }
}

fn parse_margin(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(m) if (0.0..1.0).contains(&m) => Ok(m),
        Ok(m) => Err(format!("{m} is not in 0..1 (a difference in solve rate)")),
        Err(e) => Err(e.to_string()),
    }
}

fn parse_detect(text: &str) -> Result<f64, String> {
    let d = parse_margin(text)?;
    if d > 0.0 {
        Ok(d)
    } else {
        Err("0 is no difference to detect".to_owned())
    }
}

fn parse_param(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.trim().to_owned(), v.to_owned()))
        .ok_or_else(|| format!("expected NAME=VALUE, got {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn the_catalog_holds_every_description_whole_and_wrapped() {
        let listing = catalog();
        assert!(listing.lines().all(|l| l.chars().count() <= CATALOG_WIDTH));
        let joined = listing.split_whitespace().collect::<Vec<_>>().join(" ");
        for query in QUERIES {
            assert!(
                joined.contains(&query.description()),
                "{}: description cut",
                query.name
            );
        }
    }
}
