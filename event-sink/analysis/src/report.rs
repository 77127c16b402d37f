//! `bench-analysis report`: one self-contained HTML page (inline CSS, inline SVG, a few lines
//! of inline script, no external asset) with the shipped queries' answers as tables and
//! charts.
//!
//! # Filters
//!
//! - At generation time, `--since`/`--until`/`--policy` become the parameters of every
//!   query (runs are selected by their start time).
//! - In the page, the time-range selector switches between pre-computed windows: all
//!   runs, and the last 30 days / 7 days / 24 hours before an anchor (the queries run
//!   once per window, so every number and chart of a window is exact). The anchor is the
//!   latest run start, or the generation time if that is earlier: a run dated in the
//!   future (a wrong clock, a hostile producer) cannot move the windows past today and
//!   leave them empty, and a database of old, imported runs still shows its last
//!   month. Runs dated after the anchor are in every window.
//! - In the page, the policy checkboxes hide and show every per-policy row, column and
//!   chart mark (each carries `data-policy`: Pareto points and labels, exit-status and
//!   token-mix bars, latency rows, per-instance columns) and redraw the Pareto frontier
//!   over the policies left. Per-model and per-tool tables are not split by policy;
//!   narrow them with `--policy`.
//!
//! # What the page shows
//!
//! Success rate vs cost (log cost axis, Wilson whiskers, every placed policy in a
//! numbered legend with its n, and the policies that cannot be placed listed with the
//! reason), exit status and token mix per policy, LLM latency per policy (a heat map
//! with timeouts), the comparison against a baseline (`compare`: a forest plot of paired
//! differences with the margin, and its tables), the per-instance table (task × policy:
//! solved, cost, turns), then the query answers as tables.
//!
//! Rendering ([`render`]) is a pure function of the answers, so it is tested without a
//! server; [`generate_report`] runs the queries and renders.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use clickhouse::Client;

use crate::charts::{self, Policies};
use crate::compare::analyze::DEFAULT_MARGIN;
use crate::compare::resample::{DEFAULT_RESAMPLES, DEFAULT_SEED};
use crate::compare::{self, Comparison, Dimension, PolicyRuns, Settings};
use crate::queries::{parse_datetime, ParamValues, Query, QueryError};
use crate::svg::escape;
use crate::table::Table;

/// What `bench-analysis report` was asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReportOptions {
    /// Only runs started at or after this time (`YYYY-MM-DD[ HH:MM:SS]` UTC or RFC
    /// 3339). Default: no lower bound.
    pub since: Option<String>,
    /// Only runs started before this time. Default: no upper bound.
    pub until: Option<String>,
    /// Only this `policy_id`. Default: every policy.
    pub policy: Option<String>,
    /// The policy the comparison section compares the others with. Default: the one
    /// with the most counted runs.
    pub baseline: Option<String>,
    /// Only runs of these experiments. Default: every run.
    pub experiments: Vec<String>,
    /// Only runs of these sweeps. Default: every run.
    pub sweeps: Vec<String>,
    /// Only runs of these scenarios. Default: every scenario.
    pub scenarios: Vec<String>,
    /// The most runs the runs table of a time range lists, the latest; the page says
    /// how many it left out. `None`: [`DEFAULT_RUNS_CAP`].
    pub runs_cap: Option<usize>,
    /// The address of a `bench-analysis serve` viewer of the same database: each listed
    /// run and task links to its page there. `None`: no links.
    pub viewer_url: Option<String>,
    /// The most tasks the per-instance grid of a time range shows (the first by task
    /// id); the page says how many it left out. `None`: [`DEFAULT_TASKS_CAP`].
    pub tasks_cap: Option<usize>,
    /// The most rows a table of per-call or per-run rows shows (`pricing_audit`,
    /// `lost_events`, ...); the page says how many it left out. `None`:
    /// [`DEFAULT_ROWS_CAP`].
    pub rows_cap: Option<usize>,
}

/// How many runs the runs table of a time range lists unless told otherwise: the page
/// stays small however many runs are stored (every run has a page in the viewer).
pub const DEFAULT_RUNS_CAP: usize = 500;

/// How many tasks the per-instance grid of a time range shows unless told otherwise
/// (every task has a page in the viewer).
pub const DEFAULT_TASKS_CAP: usize = 200;

/// How many rows any other table shows unless told otherwise (`bench-analysis query`
/// prints every row).
pub const DEFAULT_ROWS_CAP: usize = 200;

/// The page's time windows: key, label, length before the latest run start (None = all).
const WINDOWS: [(&str, &str, Option<i64>); 4] = [
    ("all", "all runs", None),
    ("30d", "last 30 days", Some(30 * 86_400)),
    ("7d", "last 7 days", Some(7 * 86_400)),
    ("24h", "last 24 hours", Some(86_400)),
];

/// The queries run for every window.
pub const WINDOW_QUERIES: [&str; 11] = [
    "runs",
    "instances",
    "leaderboard",
    "pareto_frontier",
    "exit_status",
    "cost_breakdown",
    "deliberation_latency",
    "latency_histogram",
    "tool_errors",
    "pricing_audit",
    "paired_outcomes",
];

/// The answers of one time window.
#[derive(Debug, Clone, Default)]
pub struct Window {
    /// `all`, `30d`, ... (element ids and the selector's values).
    pub key: &'static str,
    /// What the selector shows.
    pub label: &'static str,
    /// Answer per query name (every one of [`WINDOW_QUERIES`]); `runs` holds the latest
    /// runs only, at most the runs cap. Empty when `same_as` is set.
    pub answers: BTreeMap<&'static str, Table>,
    /// The key of the wider window holding the same runs, whose answers and section this
    /// one shares; `None`: answered on its own.
    pub same_as: Option<&'static str>,
}

/// Everything the page shows.
#[derive(Debug, Clone, Default)]
pub struct ReportData {
    /// When the report was generated (UTC).
    pub generated_at: DateTime<Utc>,
    /// The generation-time filters.
    pub options: ReportOptions,
    /// The windows, widest first.
    pub windows: Vec<Window>,
    /// `lost_events` with its default staleness (not windowed: it is about health now).
    pub lost_events: Table,
    /// The latest decision of each experiment run until decided (of the experiments
    /// selected), as [`compare::render::decisions_table`] lists them.
    pub decisions: Table,
}

impl ReportData {
    /// The windows answered on their own (the others share one's answers).
    pub fn distinct_windows(&self) -> usize {
        self.windows.iter().filter(|w| w.same_as.is_none()).count()
    }
}

/// Runs every query the report needs and renders the page.
pub async fn generate_report(
    client: &Client,
    options: &ReportOptions,
) -> Result<String, QueryError> {
    Ok(render(&gather(client, options).await?))
}

/// Runs every query the report needs: [`generate_report`] without the rendering.
///
/// A window holding the same runs as the wider one before it (no run started between
/// their starts) is not queried again: it shares that window's answers and section
/// ([`Window::same_as`]), so a study that fits in the last 24 hours costs one window.
pub async fn gather(client: &Client, options: &ReportOptions) -> Result<ReportData, QueryError> {
    let mut base = ParamValues::new();
    let given = [
        ("since", &options.since),
        ("until", &options.until),
        ("policy", &options.policy),
    ];
    for (name, value) in given {
        if let Some(value) = value {
            base.insert(name.to_owned(), value.clone());
        }
    }
    for (name, list) in [
        ("experiment", &options.experiments),
        ("sweep", &options.sweeps),
        ("scenario", &options.scenarios),
    ] {
        if !list.is_empty() {
            base.insert(name.to_owned(), list.join(","));
        }
    }
    if let Some(policy) = &options.policy {
        policy_has_runs(client, policy).await?;
    }
    let latest = latest_runs(client, &base, 1).await?;
    let latest_start = latest
        .number(0, "started_ms")
        .map(|ms| (ms / 1000.0).floor() as i64);
    let floor = match &options.since {
        Some(since) => {
            i64::from(
                parse_datetime(since).map_err(|reason| QueryError::InvalidParam {
                    name: "since".into(),
                    value: since.clone(),
                    ty: crate::queries::ParamType::DateTime,
                    reason,
                })?,
            )
        }
        None => 0,
    };
    let anchor = window_anchor(latest_start, Utc::now().timestamp());
    // Health now (not windowed), read while the windows are.
    let lost_events = async {
        Query::find("lost_events")?
            .run(client, &ParamValues::new())
            .await
    };
    let decisions = async {
        compare::decisions::latest(client, &options.experiments)
            .await
            .map_err(|source| QueryError::ClickHouse {
                query: "experiment_decisions",
                source,
            })
    };
    let (windows, lost_events, decisions) = futures::try_join!(
        windows(client, options, &base, anchor, floor),
        lost_events,
        decisions
    )?;
    Ok(ReportData {
        generated_at: Utc::now(),
        options: options.clone(),
        windows,
        lost_events,
        decisions: compare::render::decisions_table(&decisions),
    })
}

/// The answers of each time window before `anchor` (see [`gather`]), with `base`'s
/// filters; none starts before `floor`.
async fn windows(
    client: &Client,
    options: &ReportOptions,
    base: &ParamValues,
    anchor: Option<i64>,
    floor: i64,
) -> Result<Vec<Window>, QueryError> {
    let cap = options.runs_cap.unwrap_or(DEFAULT_RUNS_CAP);
    let mut windows: Vec<Window> = Vec::new();
    // The params of the last window queried.
    let mut queried: Option<(&'static str, ParamValues)> = None;
    for (key, label, length) in WINDOWS {
        let mut params = base.clone();
        if let (Some(length), Some(anchor)) = (length, anchor) {
            params.insert(
                "since".into(),
                utc(anchor.saturating_sub(length).max(floor)),
            );
        }
        if let Some((wider, wider_params)) = &queried {
            if !runs_between(client, wider_params, &params).await? {
                windows.push(Window {
                    key,
                    label,
                    same_as: Some(wider),
                    ..Window::default()
                });
                continue;
            }
        }
        // The queries of a window at once: ClickHouse answers them side by side.
        let asked = WINDOW_QUERIES.map(|name| {
            let params = &params;
            async move {
                let answer = if name == "runs" {
                    latest_runs(client, params, cap.min(u32::MAX as usize)).await?
                } else {
                    Query::find(name)?.run(client, params).await?
                };
                Ok::<_, QueryError>((name, answer))
            }
        });
        let answers = futures::future::try_join_all(asked)
            .await?
            .into_iter()
            .collect();
        windows.push(Window {
            key,
            label,
            answers,
            same_as: None,
        });
        queried = Some((key, params));
    }
    Ok(windows)
}

/// `secs` (Unix) as a `DateTime` parameter.
fn utc(secs: i64) -> String {
    DateTime::from_timestamp(secs, 0)
        .unwrap_or_default()
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

/// The latest `limit` runs `params` select (the `runs` query), newest first.
async fn latest_runs(
    client: &Client,
    params: &ParamValues,
    limit: usize,
) -> Result<Table, QueryError> {
    let mut params = params.clone();
    params.insert("limit".into(), limit.to_string());
    Query::find("runs")?.run(client, &params).await
}

/// Whether a run `wider` selects started before the start of `narrower` (the same
/// filters, a later `since`): if none did, both select the same runs.
async fn runs_between(
    client: &Client,
    wider: &ParamValues,
    narrower: &ParamValues,
) -> Result<bool, QueryError> {
    let Some(since) = narrower.get("since") else {
        // No start of its own (no run is stored): the same runs as the wider one.
        return Ok(false);
    };
    let mut gap = wider.clone();
    let until = match (
        parse_datetime(since),
        wider.get("until").map(|u| parse_datetime(u)),
    ) {
        (Ok(since), Some(Ok(until))) if until < since => until,
        (Ok(since), _) => since,
        (Err(_), _) => return Ok(true),
    };
    gap.insert("until".into(), utc(i64::from(until)));
    Ok(!latest_runs(client, &gap, 1).await?.rows.is_empty())
}

/// Refuses a `policy` with no run at any time: a misspelt policy would give an empty
/// page that looks like "no runs yet".
async fn policy_has_runs(client: &Client, policy: &str) -> Result<(), QueryError> {
    let any_time: ParamValues = [("policy".to_owned(), policy.to_owned())]
        .into_iter()
        .collect();
    if Query::find("runs")?
        .run(client, &any_time)
        .await?
        .rows
        .is_empty()
    {
        return Err(QueryError::UnknownPolicy {
            policy: policy.to_owned(),
        });
    }
    Ok(())
}

/// The end of the relative windows (unix seconds): the latest run start, but never
/// after `now` (see the module docs). `None` when there are no runs.
fn window_anchor(latest_start: Option<i64>, now: i64) -> Option<i64> {
    latest_start.map(|latest| latest.min(now))
}

/// The answer of query `name` in `window`; empty if it was not run.
fn answer<'a>(window: &'a Window, name: &str) -> &'a Table {
    static EMPTY: Table = Table {
        columns: Vec::new(),
        rows: Vec::new(),
    };
    window.answers.get(name).unwrap_or(&EMPTY)
}

/// The page for `data`.
pub fn render(data: &ReportData) -> String {
    let policies = policies(data);
    let mut page = String::new();
    page.push_str(HEAD);
    let _ = write!(
        page,
        "<header><h1>benchstream report</h1><p>Generated {} UTC. {}</p></header>",
        data.generated_at.format("%Y-%m-%d %H:%M:%S"),
        escape(&describe(&data.options))
    );
    filters(&mut page, data, &policies);
    let sections = data.windows.iter().filter(|w| w.same_as.is_none());
    for (i, window) in sections.enumerate() {
        let keys: Vec<&str> = data
            .windows
            .iter()
            .filter(|w| w.key == window.key || w.same_as == Some(window.key))
            .map(|w| w.key)
            .collect();
        window_section(&mut page, i == 0, window, &keys, &data.options, &policies);
    }
    let _ = write!(
        page,
        "<h2>Lost events (seq gaps, runs stale without run_stop)</h2>{}",
        capped_table(
            "table-lost_events",
            "lost_events",
            &data.lost_events,
            &data.options
        )
    );
    let _ = write!(
        page,
        "<h2>Experiments run until decided (the latest stored decision of each pair, \
         valid at every look)</h2>{}",
        html_table("table-experiment_decisions", &data.decisions)
    );
    page.push_str(SCRIPT);
    page.push_str("</body></html>\n");
    page
}

/// The policies of the first window's leaderboard, sorted: their numbers and colours
/// are the same in every window.
fn policies(data: &ReportData) -> Policies {
    Policies(
        data.windows
            .first()
            .map(|w| {
                let runs = answer(w, "leaderboard");
                let mut names: Vec<String> = (0..runs.rows.len())
                    .filter_map(|row| runs.get(row, "policy_id").map(str::to_owned))
                    .collect();
                names.sort();
                names
            })
            .unwrap_or_default(),
    )
}

/// The filters: the time range and a checkbox per policy.
fn filters(page: &mut String, data: &ReportData, policies: &Policies) {
    page.push_str("<nav id=\"filters\"><label>Time range <select id=\"window\">");
    for window in &data.windows {
        let answered = data
            .windows
            .iter()
            .find(|w| Some(w.key) == window.same_as)
            .unwrap_or(window);
        let _ = write!(
            page,
            "<option value=\"{}\">{} ({} runs)</option>",
            window.key,
            window.label,
            run_count(answered)
        );
    }
    page.push_str("</select></label><span class=\"policies\">Policies:");
    for policy in &policies.0 {
        let _ = write!(
            page,
            "<label><input type=\"checkbox\" class=\"policy\" value=\"{0}\" checked>\
             {1}{2}. {0}</label>",
            escape(policy),
            policies.swatch(policy),
            policies.number(policy)
        );
    }
    page.push_str("</span></nav>");
}

/// One time window's section (shown when `shown`, else hidden until picked): the
/// scoring-version notice, the charts, the comparison, the per-instance table and the
/// query tables.
fn window_section(
    page: &mut String,
    shown: bool,
    window: &Window,
    keys: &[&str],
    options: &ReportOptions,
    policies: &Policies,
) {
    let key = window.key;
    let _ = write!(
        page,
        "<section class=\"window\" data-window=\"{key}\" data-windows=\"{}\"{}>",
        keys.join(" "),
        if shown { "" } else { " hidden" }
    );
    let shown_version = scoring_notice(page, window);
    let tasks = TaskSets::of(answer(window, "instances"));
    page.push_str(&tasks.notice(key));
    chart_figures(page, window, policies, &tasks);
    page.push_str(&comparison_section(key, window, options, policies));
    let _ = write!(
        page,
        "<h2>Per instance: task \u{d7} policy</h2>{}",
        instances_table(
            &format!("table-instances-{key}"),
            answer(window, "instances"),
            policies,
            shown_version.as_deref(),
            GridCap {
                tasks: options.tasks_cap.unwrap_or(DEFAULT_TASKS_CAP),
                viewer: options.viewer_url.as_deref(),
            }
        )
    );
    query_tables(page, window, options);
    runs_table(page, window, options);
    page.push_str("</section>");
}

/// Verdicts of different judging rules are never pooled silently: when `window` holds
/// several scoring versions, a notice saying so; returns the version the per-instance
/// table shows (`None`: there is one).
fn scoring_notice(page: &mut String, window: &Window) -> Option<String> {
    let versions = scoring_versions(answer(window, "leaderboard"));
    match versions.as_slice() {
        [_, .., latest] if versions.len() > 1 => {
            let _ = write!(
                page,
                "<p class=\"notice\">These runs were judged under {} scoring versions \
                 ({}): the leaderboard and the Pareto chart keep them apart (a row per \
                 policy and version); the per-instance table shows version {} only.</p>",
                versions.len(),
                escape(&versions.join(", ")),
                escape(latest)
            );
            Some(latest.clone())
        }
        _ => None,
    }
}

/// The tasks each policy ran (started a run of), from the per-instance answer: success
/// rates and costs over different task sets are not the same measure, so the page says
/// when the policies' sets differ.
struct TaskSets<'t> {
    /// Policy → its tasks.
    of: BTreeMap<&'t str, std::collections::BTreeSet<&'t str>>,
    /// Every task any policy ran.
    all: std::collections::BTreeSet<&'t str>,
}

impl<'t> TaskSets<'t> {
    fn of(instances: &'t Table) -> TaskSets<'t> {
        let mut sets = TaskSets {
            of: BTreeMap::new(),
            all: Default::default(),
        };
        for row in 0..instances.rows.len() {
            if let (Some(task), Some(policy)) = (
                instances.get(row, "task_id"),
                instances.get(row, "policy_id"),
            ) {
                sets.of.entry(policy).or_default().insert(task);
                sets.all.insert(task);
            }
        }
        sets
    }

    /// Whether some policy ran another task set than another.
    fn differ(&self) -> bool {
        self.of.values().any(|tasks| tasks.len() != self.all.len())
    }

    /// The tasks every policy ran.
    fn shared(&self) -> usize {
        self.all
            .iter()
            .filter(|task| self.of.values().all(|tasks| tasks.contains(*task)))
            .count()
    }

    /// `policy`'s mark when the sets differ and it did not run every task:
    /// `ran k of n tasks`.
    fn mark(&self, policy: &str) -> Option<String> {
        let ran = self.of.get(policy)?.len();
        (self.differ() && ran < self.all.len())
            .then(|| format!("ran {ran} of {} tasks", self.all.len()))
    }

    /// The notice of window `key` when the sets differ (each policy's count, the shared
    /// count); empty when they do not.
    fn notice(&self, key: &str) -> String {
        if !self.differ() {
            return String::new();
        }
        let counts: Vec<String> = self
            .of
            .iter()
            .map(|(policy, tasks)| format!("{} {}", escape(policy), tasks.len()))
            .collect();
        format!(
            "<p class=\"notice\" id=\"task-sets-{key}\">The policies ran different task sets \
             (tasks of {} in all: {}; {} run by every policy). Their success rates and costs \
             in the chart and the tables are over each policy's own tasks, so they do not \
             measure the same work; the chart's legend marks the policies that did not run \
             every task. The comparison below is made on the tasks each pair shares, counted \
             in its tasks column.</p>",
            self.all.len(),
            counts.join(", "),
            self.shared()
        )
    }
}

/// The charts of `window`: the Pareto chart with its legend, exit status, token mix and
/// call latency.
fn chart_figures(page: &mut String, window: &Window, policies: &Policies, tasks: &TaskSets) {
    let key = window.key;
    let pareto_id = format!("chart-pareto-{key}");
    let _ = write!(
        page,
        "<div class=\"charts\"><figure class=\"wide\"><figcaption>Success rate vs \
         cost (dashed: Pareto frontier)</figcaption><div class=\"pareto-card\">{}{}</div>\
         </figure>",
        charts::pareto(
            &pareto_id,
            answer(window, "pareto_frontier"),
            answer(window, "leaderboard"),
            policies
        ),
        pareto_legend(
            &pareto_id,
            answer(window, "pareto_frontier"),
            answer(window, "leaderboard"),
            policies,
            tasks
        )
    );
    let figures = [
        (
            "Exit status per policy",
            charts::exit_status(
                &format!("chart-exit-status-{key}"),
                answer(window, "exit_status"),
            ),
            "",
        ),
        (
            "Token mix per policy",
            charts::token_mix(
                &format!("chart-token-mix-{key}"),
                answer(window, "leaderboard"),
            ),
            "",
        ),
        (
            "LLM call latency per policy",
            charts::latency(
                &format!("chart-latency-{key}"),
                answer(window, "latency_histogram"),
                policies,
            ),
            " class=\"wide\"",
        ),
    ];
    for (caption, svg, class) in figures {
        let _ = write!(
            page,
            "<figure{class}><figcaption>{caption}</figcaption>{svg}</figure>"
        );
    }
    page.push_str("</div>");
}

/// The runs `window` selects: the runs of its per-instance answer (each run is of one
/// task, policy and scoring version).
fn run_count(window: &Window) -> u64 {
    let instances = answer(window, "instances");
    (0..instances.rows.len())
        .filter_map(|row| instances.number(row, "runs"))
        .sum::<f64>() as u64
}

/// The answers of `window`'s queries, one table each.
fn query_tables(page: &mut String, window: &Window, options: &ReportOptions) {
    for (name, title) in [
        ("leaderboard", "Leaderboard"),
        (
            "cost_breakdown",
            "Cost breakdown (agent / summariser / retries)",
        ),
        ("exit_status", "Exit status"),
        (
            "deliberation_latency",
            "LLM call latency and timeouts per model",
        ),
        ("tool_errors", "Tool error rates"),
        ("pricing_audit", "Calls with an unknown price"),
    ] {
        let _ = write!(
            page,
            "<h2>{title}</h2>{}",
            capped_table(
                &format!("table-{name}-{}", window.key),
                name,
                answer(window, name),
                options
            )
        );
    }
}

/// [`html_table`] of at most the rows cap of query `name`'s answer, with a line saying
/// how many rows were left out and the command that prints them all.
fn capped_table(id: &str, name: &str, table: &Table, options: &ReportOptions) -> String {
    let cap = options.rows_cap.unwrap_or(DEFAULT_ROWS_CAP);
    if table.rows.len() <= cap {
        return html_table(id, table);
    }
    let shown = Table {
        columns: table.columns.clone(),
        rows: table.rows[..cap].to_vec(),
    };
    format!(
        "<p class=\"rows-cap\" id=\"{id}-cap\">The first {cap} of {} rows; {} left out \
         (<code>--rows-cap</code> raises the cap; <code>bench-analysis query {name}</code> \
         prints every row).</p>{}",
        table.rows.len(),
        table.rows.len() - cap,
        html_table(id, &shown)
    )
}

/// The latest runs of `window`, at most the cap, each linked to its page in the viewer
/// when its address is given; how many were left out.
fn runs_table(page: &mut String, window: &Window, options: &ReportOptions) {
    let runs = answer(window, "runs");
    let cap = options.runs_cap.unwrap_or(DEFAULT_RUNS_CAP);
    let shown = Table {
        columns: runs.columns.clone(),
        rows: runs.rows.iter().take(cap).cloned().collect(),
    };
    let all = run_count(window).max(runs.rows.len() as u64);
    let left_out = all - shown.rows.len() as u64;
    let _ = write!(
        page,
        "<h2>Runs</h2><p class=\"runs-cap\">The latest {} of {} runs{}.</p>{}",
        shown.rows.len(),
        all,
        if left_out > 0 {
            format!(
                "; {left_out} earlier runs left out (at most {cap} are listed: \
                 <code>--runs-cap</code> raises the cap, and every run has its page in the \
                 viewer, <code>bench-analysis serve</code>)"
            )
        } else {
            String::new()
        },
        linked_table(
            &format!("table-runs-{}", window.key),
            &shown,
            options.viewer_url.as_deref()
        )
    );
}

/// The Pareto chart's legend (every placed policy: its marker, number, success rate and
/// cost, and `ran k of n tasks` when it did not run every task others ran; hovering it
/// highlights the point) and the list of policies the chart cannot place, with the
/// reason.
fn pareto_legend(
    chart_id: &str,
    pareto_frontier: &Table,
    leaderboard: &Table,
    policies: &Policies,
    tasks: &TaskSets,
) -> String {
    let mut out =
        format!("<div class=\"pareto-side\"><ol class=\"legend\" data-chart=\"{chart_id}\">");
    let mut rows: Vec<usize> = (0..pareto_frontier.rows.len()).collect();
    rows.sort_by_key(|&row| {
        policies.number(pareto_frontier.get(row, "policy_id").unwrap_or_default())
    });
    for row in rows {
        let Some(policy) = pareto_frontier.get(row, "policy_id") else {
            continue;
        };
        let cell = |name| pareto_frontier.get(row, name).unwrap_or("NULL");
        let n =
            charts::judged(leaderboard, policy).map_or(String::new(), |(n, _)| format!(" (n={n})"));
        let rate = pareto_frontier
            .number(row, "success_rate")
            .map_or("NULL".to_owned(), |r| format!("{:.0}%{n}", r * 100.0));
        let partial = tasks.mark(policy).map_or(String::new(), |mark| {
            format!(" <span class=\"partial-tasks\">\u{b7} {mark}</span>")
        });
        let _ = write!(
            out,
            "<li data-policy=\"{0}\"{1}><b>{2}</b>{3}<span class=\"name\">{0}</span> \
             <span class=\"figures\">{rate} \u{b7} ${4}{5}</span>{partial}</li>",
            escape(policy),
            if cell("on_frontier") == "1" {
                " class=\"on-frontier\""
            } else {
                ""
            },
            policies.number(policy),
            policies.swatch(policy),
            escape(cell("avg_cost_usd")),
            if cell("on_frontier") == "1" {
                " \u{b7} frontier"
            } else {
                ""
            },
        );
    }
    out.push_str("</ol>");
    let missing = charts::unplaced(pareto_frontier, leaderboard);
    if !missing.is_empty() {
        let _ = write!(
            out,
            "<div class=\"unplaced\" id=\"{chart_id}-unplaced\"><b>Not placed ({}):</b><ul>",
            missing.len()
        );
        for (policy, reason) in &missing {
            let _ = write!(
                out,
                "<li data-policy=\"{0}\">{1}<span class=\"name\">{0}</span>: {2}</li>",
                escape(policy),
                policies.swatch(policy),
                escape(reason)
            );
        }
        out.push_str("</ul></div>");
    }
    out.push_str("</div>");
    out
}

/// The per-instance table: one row per task, one column per policy (in the policies'
/// order), each cell solved or not over the judged runs (`2/3` when runs disagree,
/// `unjudged` when none was judged), average cost and turns.
/// The scoring versions (`scoring_version`) of `leaderboard`'s rows, oldest first
/// (numerically where they are numbers); rows without one are left out.
fn scoring_versions(leaderboard: &Table) -> Vec<String> {
    let mut versions: Vec<String> = (0..leaderboard.rows.len())
        .filter_map(|row| leaderboard.get(row, "scoring_version"))
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .collect();
    versions.sort_by(|a, b| {
        (a.parse::<u64>().ok(), a.as_str()).cmp(&(b.parse::<u64>().ok(), b.as_str()))
    });
    versions.dedup();
    versions
}

/// How much of the per-instance grid to show, and where the rest is.
#[derive(Debug, Clone, Copy, Default)]
struct GridCap<'o> {
    /// The most tasks shown (the first by task id).
    tasks: usize,
    /// The viewer's address: each task links to its page there.
    viewer: Option<&'o str>,
}

/// `instances` as a task × policy grid; `version`: only the rows of that scoring version
/// (when the window holds several). Only the first `cap.tasks` tasks get a row, and a
/// line says how many were left out and how to see them; the totals count every task.
fn instances_table(
    id: &str,
    instances: &Table,
    policies: &Policies,
    version: Option<&str>,
    cap: GridCap,
) -> String {
    if instances.rows.is_empty() {
        return format!("<p class=\"empty\" id=\"{id}\">none</p>");
    }
    let (tasks, columns) = instance_axes(instances, policies);
    let mut cells: HashMap<(&str, &str), usize> = HashMap::new();
    for row in 0..instances.rows.len() {
        if let (Some(task), Some(policy)) = (
            instances.get(row, "task_id"),
            instances.get(row, "policy_id"),
        ) {
            if version.is_none_or(|v| instances.get(row, "scoring_version") == Some(v)) {
                cells.entry((task, policy)).or_insert(row);
            }
        }
    }
    let mut out = grid_cap_line(id, &tasks, cap);
    let _ = write!(
        out,
        "<div class=\"scroll\"><table id=\"{id}\" class=\"instances\"><thead><tr><th>task</th>"
    );
    for policy in &columns {
        let _ = write!(
            out,
            "<th data-policy=\"{0}\" title=\"{0}\">{1}<span>{0}</span></th>",
            escape(policy),
            policies.swatch(policy)
        );
    }
    out.push_str("</tr></thead><tbody>");
    // Per policy: tasks with a solving run, tasks with a judged run, tasks every judged
    // run of which solved it; over every task, shown or not.
    let mut totals = vec![(0u32, 0u32, 0u32); columns.len()];
    let mut row_html = String::new();
    for (n, task) in tasks.iter().enumerate() {
        let shown = n < cap.tasks;
        row_html.clear();
        match cap.viewer {
            Some(viewer) => {
                let href = format!(
                    "{}/tasks/{}",
                    viewer.trim_end_matches('/'),
                    percent_encode(task)
                );
                let _ = write!(
                    row_html,
                    "<tr><th><a href=\"{}\">{}</a></th>",
                    escape(&href),
                    escape(task)
                );
            }
            None => {
                let _ = write!(row_html, "<tr><th>{}</th>", escape(task));
            }
        }
        for (column, policy) in columns.iter().enumerate() {
            let Some(&row) = cells.get(&(*task, *policy)) else {
                let _ = write!(
                    row_html,
                    "<td data-policy=\"{}\" class=\"not-run\">not run</td>",
                    escape(policy)
                );
                continue;
            };
            instance_cell(
                &mut row_html,
                instances,
                row,
                task,
                policy,
                &mut totals[column],
            );
        }
        if shown {
            out.push_str(&row_html);
            out.push_str("</tr>");
        }
    }
    // A task is solved at least once when any of its judged runs solved it, and in every
    // repeat when all of them did: with repeats the two differ, and neither is a rate.
    out.push_str("</tbody><tfoot>");
    for (label, pick) in [
        (
            "tasks solved at least once",
            (|t: &(u32, u32, u32)| t.0) as fn(&(u32, u32, u32)) -> u32,
        ),
        ("tasks solved in every repeat", |t| t.2),
    ] {
        let _ = write!(out, "<tr><th>{label}</th>");
        for (policy, total) in columns.iter().zip(&totals) {
            let _ = write!(
                out,
                "<td data-policy=\"{}\">{} / {}</td>",
                escape(policy),
                pick(total),
                total.1
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</tfoot></table></div>");
    out
}

/// The line above a per-instance grid that does not show every task: how many it shows
/// of how many, which are left out, and how to see them. Empty when every task is shown.
fn grid_cap_line(id: &str, tasks: &[&str], cap: GridCap) -> String {
    if tasks.len() <= cap.tasks {
        return String::new();
    }
    let where_else = match cap.viewer {
        Some(viewer) => format!(
            "each task's runs are on its page in the viewer ({}/tasks/&lt;task_id&gt;; \
             the tasks listed link there)",
            escape(viewer.trim_end_matches('/'))
        ),
        None => "each task's runs are on its page in the viewer (<code>bench-analysis \
                 serve</code>, <code>/tasks/&lt;task_id&gt;</code>; give the report \
                 <code>--viewer-url</code> to link them)"
            .to_owned(),
    };
    let all = tasks.len();
    let shown = match cap.tasks {
        0 => format!("None of the {all} tasks is shown"),
        n => format!(
            "The first {n} of {all} tasks by task id ({} to {last}); the {} after {last} \
             are left out",
            escape(tasks[0]),
            all - n,
            last = escape(tasks[n - 1]),
        ),
    };
    format!(
        "<p class=\"grid-cap\" id=\"{id}-cap\">{shown}. The totals below count all {all}. \
         <code>--tasks-cap {all}</code> shows every task; {where_else}.</p>"
    )
}

/// `text` with every byte but unreserved ones percent-encoded, for a URL path segment.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The per-instance table's rows (tasks, in the order of the answer) and columns
/// (policies, by their number).
fn instance_axes<'t>(instances: &'t Table, policies: &Policies) -> (Vec<&'t str>, Vec<&'t str>) {
    let mut tasks: Vec<&str> = Vec::new();
    let mut columns: Vec<&str> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for row in 0..instances.rows.len() {
        if let Some(task) = instances.get(row, "task_id") {
            if seen.insert(task) {
                tasks.push(task);
            }
        }
        if let Some(policy) = instances.get(row, "policy_id") {
            if !columns.contains(&policy) {
                columns.push(policy);
            }
        }
    }
    columns.sort_by_key(|p| policies.number(p));
    (tasks, columns)
}

/// The cell of `policy` on `task`, from row `row` of `instances`; counts the task in the
/// column's `(solved, judged)` totals.
fn instance_cell(
    out: &mut String,
    instances: &Table,
    row: usize,
    task: &str,
    policy: &str,
    totals: &mut (u32, u32, u32),
) {
    let count = |name| instances.number(row, name).unwrap_or(0.0);
    let (runs, finished) = (count("runs"), count("finished"));
    let (judged, solved) = (count("judged"), count("solved"));
    // Runs nobody judged are neither solved nor unsolved: the mark is over the
    // judged ones.
    let (class, mark) = if finished == 0.0 {
        ("unfinished", "running".to_owned())
    } else if judged == 0.0 {
        ("unjudged", "unjudged".to_owned())
    } else if solved == judged {
        ("solved", "\u{2713}".to_owned())
    } else if solved == 0.0 {
        ("unsolved", "\u{2717}".to_owned())
    } else {
        ("partly", format!("{solved}/{judged}"))
    };
    if judged > 0.0 {
        totals.1 += 1;
        if solved > 0.0 {
            totals.0 += 1;
        }
        if solved == judged {
            totals.2 += 1;
        }
    }
    let cost = instances
        .number(row, "avg_cost_usd")
        .map_or("cost unknown".to_owned(), |c| format!("${c}"));
    let turns = instances
        .number(row, "avg_turns")
        .map_or(String::new(), |t| format!(" \u{b7} {t} turns"));
    let _ = write!(
        out,
        "<td data-policy=\"{0}\" class=\"{class}\" title=\"{0} on {1}: {solved} of \
         {judged} judged runs solved ({finished} finished, {runs} started)\"><b>{mark}</b> \
         <small>{cost}{turns}</small></td>",
        escape(policy),
        escape(task),
    );
}

/// The generation-time filters in words.
fn describe(options: &ReportOptions) -> String {
    let mut parts = Vec::new();
    if let Some(since) = &options.since {
        parts.push(format!("runs started from {since}"));
    }
    if let Some(until) = &options.until {
        parts.push(format!("runs started before {until}"));
    }
    if let Some(policy) = &options.policy {
        parts.push(format!("policy {policy}"));
    }
    let baseline = options.baseline.as_ref().map_or(String::new(), |b| {
        format!(" Baseline of the comparison: {b}.")
    });
    if parts.is_empty() {
        format!("All stored runs.{baseline}")
    } else {
        format!("Only {}.{baseline}", parts.join(", "))
    }
}

/// The comparison of `window`'s policies against the baseline: the one named, else the
/// policy with the most counted runs (the first by name among equals).
fn window_comparison(
    window: &Window,
    baseline: Option<&str>,
) -> Result<Comparison, compare::outcomes::RowError> {
    let policies = compare::group(
        answer(window, "paired_outcomes"),
        &[Dimension::Policy],
        compare::Experiments::Apart,
    )?;
    let counted = |p: &PolicyRuns| p.tasks.values().map(|t| t.runs).sum::<u64>();
    let baseline = baseline
        .filter(|b| policies.iter().any(|p| p.group == *b))
        .map(str::to_owned)
        .or_else(|| {
            policies
                .iter()
                .rev()
                .max_by_key(|p| counted(p))
                .map(|p| p.group.clone())
        });
    let settings = Settings {
        baseline,
        margin: DEFAULT_MARGIN,
        seed: DEFAULT_SEED,
        resamples: DEFAULT_RESAMPLES as usize,
    };
    Ok(compare::compare(&policies, &settings))
}

/// The comparison section of a window: the forest plot, then the per-policy and
/// per-pair tables of `compare`.
fn comparison_section(
    key: &str,
    window: &Window,
    options: &ReportOptions,
    policies: &Policies,
) -> String {
    let comparison = match window_comparison(window, options.baseline.as_deref()) {
        Ok(comparison) => comparison,
        Err(e) => return format!("<p class=\"empty\">{}</p>", escape(&e.to_string())),
    };
    let baseline = comparison
        .comparisons
        .first()
        .map_or("none".to_owned(), |c| c.baseline.clone());
    // What to know first (policies that ran different task sets), and how to read each
    // p-value beside its detectable difference and tasks needed.
    let notes: String = comparison
        .notes
        .iter()
        .map(|n| format!("<p class=\"note\">{}</p>", escape(n)))
        .chain(comparison.comparisons.iter().filter_map(|c| {
            let reading = c.reading.as_deref()?;
            Some(format!(
                "<p class=\"note\" data-policy=\"{}\">{} vs {}: {}</p>",
                escape(&c.candidate),
                escape(&c.baseline),
                escape(&c.candidate),
                escape(reading)
            ))
        }))
        .collect();
    format!(
        "<h2>Comparison against {} (paired, on shared tasks)</h2>{notes}\
         <figure class=\"wide\"><figcaption>Difference in solve rate against the baseline, \
         95 % paired bootstrap intervals, dashed: \u{2212}{:.0} points non-inferiority \
         margin</figcaption>{}</figure>{}{}",
        escape(&baseline),
        comparison.margin * 100.0,
        charts::forest(&format!("chart-forest-{key}"), &comparison, policies),
        html_table(
            &format!("table-compare-policies-{key}"),
            &compare::render::policy_table(&comparison.policies)
        ),
        html_table(
            &format!("table-compare-pairs-{key}"),
            &compare::render::pair_table(&comparison.comparisons)
        ),
    )
}

/// An answer as an HTML table; rows of a policy carry `data-policy` for the filter.
fn html_table(id: &str, table: &Table) -> String {
    linked_table(id, table, None)
}

/// [`html_table`], each `run_id` linked to the run's page of the viewer at `viewer`.
fn linked_table(id: &str, table: &Table, viewer: Option<&str>) -> String {
    if table.rows.is_empty() {
        return format!("<p class=\"empty\" id=\"{id}\">none</p>");
    }
    let policy = table.column("policy_id");
    let mut out = format!("<div class=\"scroll\"><table id=\"{id}\"><thead><tr>");
    for column in &table.columns {
        let _ = write!(out, "<th>{}</th>", escape(&column.name));
    }
    out.push_str("</tr></thead><tbody>");
    for row in &table.rows {
        match policy.and_then(|i| row[i].as_deref()) {
            Some(p) => {
                let _ = write!(out, "<tr data-policy=\"{}\">", escape(p));
            }
            None => out.push_str("<tr>"),
        }
        for (column, cell) in table.columns.iter().zip(row) {
            let class = if column.ty.contains("Int") || column.ty.contains("Float") {
                " class=\"num\""
            } else {
                ""
            };
            let text = cell.as_deref().map_or("NULL".to_owned(), escape);
            match (viewer, cell) {
                (Some(viewer), Some(run)) if column.name == "run_id" => {
                    let href = format!("{}/runs/{run}", viewer.trim_end_matches('/'));
                    let _ = write!(out, "<td><a href=\"{}\">{text}</a></td>", escape(&href));
                }
                _ => {
                    let _ = write!(out, "<td{class}>{text}</td>");
                }
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    out
}

const HEAD: &str = r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>benchstream report</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 24px 48px; color: #222; }
header h1 { margin: 16px 0 4px; font-size: 22px; }
header p { margin: 0 0 12px; color: #555; }
nav#filters { position: sticky; top: 0; background: #f6f6f6; padding: 8px 12px;
  border: 1px solid #ddd; border-radius: 6px; display: flex; flex-wrap: wrap; gap: 16px;
  align-items: center; z-index: 1; }
nav .policies label { margin-left: 12px; white-space: nowrap; }
svg.swatch { vertical-align: -2px; margin: 0 4px 0 2px; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 16px;
  margin-top: 16px; align-items: start; }
figure { margin: 0; border: 1px solid #e3e3e3; border-radius: 6px; padding: 8px; }
figure.wide { grid-column: 1 / -1; }
figcaption { font-weight: 600; text-align: center; }
svg.chart { width: 100%; height: auto; font-size: 12px; }
svg.chart.forest { max-width: 900px; display: block; }
svg .tick, svg .legend { fill: #444; font-size: 11px; }
svg .point-label, svg .bar-label { font-size: 11px; fill: #222; }
svg .on-frontier { stroke: #000; stroke-width: 2.5; }
svg .hl { stroke: #000; stroke-width: 3; }
svg .count { font-size: 11px; }
svg .timeouts { fill: #d62728; font-size: 11px; font-weight: 600; }
.pareto-card { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }
.pareto-card svg.chart { flex: 3 1 560px; width: auto; min-width: 0; }
.pareto-side { flex: 2 1 360px; font-size: 12px; }
.pareto-side ol { list-style: none; margin: 4px 0; padding: 0; }
.pareto-side li { padding: 2px 4px; border-radius: 4px; overflow-wrap: anywhere; }
.pareto-side li:hover { background: #eef3fb; }
.pareto-side li b { display: inline-block; min-width: 1.6em; text-align: right; }
.pareto-side li.on-frontier .figures { font-weight: 600; }
.pareto-side .figures { color: #555; white-space: nowrap; }
.unplaced { margin-top: 8px; padding: 6px 8px; background: #fff8e6; border: 1px solid #f0d48a;
  border-radius: 4px; }
.unplaced ul { margin: 4px 0 0; padding-left: 18px; }
.unplaced .name, .pareto-side .name { font-family: ui-monospace, monospace; }
table.instances { width: 100%; table-layout: fixed; }
table.instances th, table.instances td { white-space: normal; overflow-wrap: anywhere; }
table.instances thead th:first-child { width: 16%; }
table.instances th[data-policy] { vertical-align: bottom; font-weight: 500; font-size: 11px; }
table.instances tbody th, table.instances tfoot th { text-align: left; position: sticky; left: 0;
  background: #fafafa; }
table.instances td { text-align: center; }
table.instances td b { font-size: 14px; }
table.instances td small { display: block; color: #555; }
td.solved { background: #e3f4e1; } td.solved b { color: #1e7b1e; }
td.unsolved { background: #fbe5e5; } td.unsolved b { color: #b22222; }
td.partly { background: #fff3cd; }
td.not-run, td.unfinished, td.unjudged { color: #888; }
h2 { font-size: 16px; margin: 24px 0 6px; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border-bottom: 1px solid #e6e6e6; padding: 3px 8px; text-align: left; white-space: nowrap; }
th { background: #fafafa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
p.empty { color: #777; }
p.notice { background: #fff4d6; border-left: 4px solid #e0a800; padding: 6px 10px; }
.partial-tasks { color: #b35900; }
div.scroll { overflow-x: auto; }
</style></head><body>
"#;

/// Window switching, policy hiding, and the frontier redrawn over visible policies
/// (same rule as `pareto_frontier.sql`).
const SCRIPT: &str = r#"<script>
(function () {
  var select = document.getElementById('window');
  var boxes = Array.prototype.slice.call(document.querySelectorAll('input.policy'));
  function frontier(svg) {
    var pts = Array.prototype.slice.call(svg.querySelectorAll('[data-cost]'))
      .filter(function (c) { return c.style.display !== 'none'; });
    var on = pts.filter(function (p) {
      var c = +p.dataset.cost, r = +p.dataset.rate;
      return !pts.some(function (q) {
        var qc = +q.dataset.cost, qr = +q.dataset.rate;
        return qc <= c && qr >= r && (qc < c || qr > r);
      });
    });
    pts.forEach(function (p) { p.classList.toggle('on-frontier', on.indexOf(p) >= 0); });
    on.sort(function (a, b) { return a.dataset.cost - b.dataset.cost; });
    var line = svg.querySelector('.frontier');
    if (line) line.setAttribute('points', on.map(function (p) {
      return p.dataset.cx + ',' + p.dataset.cy;
    }).join(' '));
  }
  // Hovering a legend entry outlines its policy's point.
  document.querySelectorAll('ol.legend li').forEach(function (li) {
    var svg = document.getElementById(li.parentNode.dataset.chart);
    function mark(on) {
      svg.querySelectorAll('.point').forEach(function (p) {
        if (p.dataset.policy === li.dataset.policy) p.classList.toggle('hl', on);
      });
    }
    li.addEventListener('mouseenter', function () { mark(true); });
    li.addEventListener('mouseleave', function () { mark(false); });
  });
  function apply() {
    document.querySelectorAll('section.window').forEach(function (s) {
      s.hidden = s.dataset.windows.split(' ').indexOf(select.value) < 0;
    });
    var off = boxes.filter(function (b) { return !b.checked; }).map(function (b) { return b.value; });
    document.querySelectorAll('[data-policy]').forEach(function (e) {
      e.style.display = off.indexOf(e.dataset.policy) >= 0 ? 'none' : '';
    });
    // A task none of the shown policies ran is no row of the per-instance table.
    document.querySelectorAll('table.instances tbody tr').forEach(function (tr) {
      tr.style.display = Array.prototype.some.call(tr.querySelectorAll('td'), function (td) {
        return td.style.display !== 'none' && !td.classList.contains('not-run');
      }) ? '' : 'none';
    });
    document.querySelectorAll('svg.pareto').forEach(frontier);
    document.querySelectorAll('.unplaced').forEach(function (box) {
      box.hidden = !Array.prototype.some.call(box.querySelectorAll('li'),
        function (li) { return li.style.display !== 'none'; });
    });
  }
  select.addEventListener('change', apply);
  boxes.forEach(function (b) { b.addEventListener('change', apply); });
  apply();
})();
</script>
"#;

#[cfg(test)]
mod tests {
    use super::*;

    const UNCAPPED: GridCap = GridCap {
        tasks: usize::MAX,
        viewer: None,
    };

    #[test]
    fn instances_mark_the_judged_runs_and_leave_unjudged_ones_unknown() {
        let instances = Table::from_tsv_with_names_and_types(
            "task_id\tpolicy_id\truns\tfinished\tjudged\tsolved\n\
             String\tString\tUInt64\tUInt64\tUInt64\tUInt64\n\
             t1\tp\t1\t1\t0\t0\nt2\tp\t2\t2\t1\t1\n",
        )
        .expect("parses");
        let html = instances_table("i", &instances, &Policies::default(), None, UNCAPPED);
        assert!(html.contains("class=\"unjudged\""), "{html}");
        assert!(
            html.contains("0 of 0 judged runs solved (1 finished, 1 started)"),
            "{html}"
        );
        assert!(html.contains("<b>\u{2713}</b>"), "{html}");
        assert!(
            !html.contains("\u{2717}"),
            "an unjudged run is not unsolved: {html}"
        );
        // Tasks solved, out of the tasks with a judged run.
        assert!(html.contains(">1 / 1</td>"), "{html}");
    }

    /// A per-instance answer: `policy` ran each of `tasks`, one judged, solved run.
    fn ran(rows: &[(&str, &[&str])]) -> Table {
        let mut tsv = "task_id\tpolicy_id\truns\tfinished\tjudged\tsolved\n\
                       String\tString\tUInt64\tUInt64\tUInt64\tUInt64\n"
            .to_owned();
        for (policy, tasks) in rows {
            for task in *tasks {
                tsv.push_str(&format!("{task}\t{policy}\t1\t1\t1\t1\n"));
            }
        }
        Table::from_tsv_with_names_and_types(&tsv).expect("parses")
    }

    #[test]
    fn policies_that_ran_different_task_sets_are_marked_in_the_chart_and_told() {
        let frontier = Table::from_tsv_with_names_and_types(
            "policy_id\tsuccess_rate\tavg_cost_usd\ton_frontier\n\
             String\tFloat64\tFloat64\tUInt8\n\
             all\t1\t0.01\t1\npart\t1\t0.001\t1\n",
        )
        .expect("parses");
        let leaderboard = Table::from_tsv_with_names_and_types(
            "policy_id\tjudged\tsuccesses\nString\tUInt64\tUInt64\nall\t3\t3\npart\t2\t2\n",
        )
        .expect("parses");
        let policies = Policies(vec!["all".to_owned(), "part".to_owned()]);

        let instances = ran(&[("all", &["t1", "t2", "t3"]), ("part", &["t1", "t2"])]);
        let tasks = TaskSets::of(&instances);
        let notice = tasks.notice("all");
        assert!(
            notice.contains(
                "different task sets (tasks of 3 in all: all 3, part 2; 2 run by every policy)"
            ),
            "{notice}"
        );
        let legend = pareto_legend("c", &frontier, &leaderboard, &policies, &tasks);
        let item = |policy: &str| {
            let start = legend
                .find(&format!("<li data-policy=\"{policy}\""))
                .expect("an item");
            legend[start..]
                .split("</li>")
                .next()
                .unwrap_or_default()
                .to_owned()
        };
        assert!(item("part").contains("ran 2 of 3 tasks"), "{legend}");
        assert!(!item("all").contains("tasks</span>"), "{legend}");

        // The same tasks: nothing to tell, nothing marked.
        let instances = ran(&[("all", &["t1", "t2"]), ("part", &["t1", "t2"])]);
        let tasks = TaskSets::of(&instances);
        assert_eq!(tasks.notice("all"), "");
        let legend = pareto_legend("c", &frontier, &leaderboard, &policies, &tasks);
        assert!(!legend.contains("partial-tasks"), "{legend}");
    }

    #[test]
    fn tasks_solved_at_least_once_and_in_every_repeat_are_told_apart() {
        // Three repeats: t1 solved in all, t2 in one of three, t3 in none.
        let instances = Table::from_tsv_with_names_and_types(
            "task_id\tpolicy_id\truns\tfinished\tjudged\tsolved\n\
             String\tString\tUInt64\tUInt64\tUInt64\tUInt64\n\
             t1\tp\t3\t3\t3\t3\nt2\tp\t3\t3\t3\t1\nt3\tp\t3\t3\t3\t0\n",
        )
        .expect("parses");
        let html = instances_table("i", &instances, &Policies::default(), None, UNCAPPED);
        assert!(
            html.contains(
                "<tr><th>tasks solved at least once</th><td data-policy=\"p\">2 / 3</td>"
            ),
            "{html}"
        );
        assert!(
            html.contains(
                "<tr><th>tasks solved in every repeat</th><td data-policy=\"p\">1 / 3</td>"
            ),
            "{html}"
        );
    }

    #[test]
    fn the_grid_shows_the_first_tasks_up_to_the_cap_says_so_and_counts_every_task() {
        let instances = ran(&[("p", &["t 3", "t1", "t2"])]);
        let cap = GridCap {
            tasks: 2,
            viewer: Some("http://viewer:8321/"),
        };
        let html = instances_table("i", &instances, &Policies::default(), None, cap);
        assert!(
            html.contains(
                "The first 2 of 3 tasks by task id (t 3 to t1); the 1 after t1 are left out. \
                 The totals below count all 3. <code>--tasks-cap 3</code> shows every task"
            ),
            "{html}"
        );
        assert!(
            html.contains("<th><a href=\"http://viewer:8321/tasks/t%203\">t 3</a></th>"),
            "{html}"
        );
        assert!(!html.contains(">t2</a>"), "t2 is left out: {html}");
        let none = instances_table(
            "i",
            &instances,
            &Policies::default(),
            None,
            GridCap {
                tasks: 0,
                viewer: None,
            },
        );
        assert!(
            none.contains("None of the 3 tasks is shown. The totals below count all 3."),
            "a cap of 0 names no task as shown: {none}"
        );
        assert!(
            html.contains(">3 / 3</td>"),
            "totals over every task: {html}"
        );
        let all = instances_table("i", &instances, &Policies::default(), None, UNCAPPED);
        assert!(
            !all.contains("grid-cap") && all.contains("<th>t2</th>"),
            "{all}"
        );
    }

    #[test]
    fn a_long_table_shows_the_first_rows_up_to_the_cap_and_names_the_query_of_the_rest() {
        let audit = Table::from_tsv_with_names_and_types(
            "run_id\tseq\nString\tUInt64\nr1\t1\nr1\t2\nr2\t1\n",
        )
        .expect("parses");
        let options = ReportOptions {
            rows_cap: Some(2),
            ..ReportOptions::default()
        };
        let html = capped_table("t", "pricing_audit", &audit, &options);
        assert!(
            html.contains("The first 2 of 3 rows; 1 left out")
                && html.contains("<code>bench-analysis query pricing_audit</code>"),
            "{html}"
        );
        assert!(!html.contains(">r2<"), "{html}");
        assert!(
            !capped_table("t", "pricing_audit", &audit, &ReportOptions::default())
                .contains("rows-cap")
        );
    }

    #[test]
    fn verdicts_of_two_scoring_versions_are_said_apart_and_not_pooled() {
        let leaderboard = Table::from_tsv_with_names_and_types(
            "policy_id\tscoring_version\truns\nString\tNullable(String)\tUInt64\n\
             p\t1\t3\np\t10\t2\np\t2\t1\n",
        )
        .expect("parses");
        assert_eq!(scoring_versions(&leaderboard), ["1", "2", "10"]);
        let instances = Table::from_tsv_with_names_and_types(
            "task_id\tpolicy_id\tscoring_version\truns\tfinished\tjudged\tsolved\n\
             String\tString\tNullable(String)\tUInt64\tUInt64\tUInt64\tUInt64\n\
             t1\tp\t1\t1\t1\t1\t1\nt1\tp\t10\t1\t1\t1\t0\n",
        )
        .expect("parses");
        let window = Window {
            key: "all",
            label: "all runs",
            answers: [("leaderboard", leaderboard), ("instances", instances)]
                .into_iter()
                .collect(),
            same_as: None,
        };
        let page = render(&ReportData {
            windows: vec![window],
            ..ReportData::default()
        });
        assert!(
            page.contains("judged under 3 scoring versions (1, 2, 10)"),
            "{page}"
        );
        // The version-1 run solved t1, the version-10 one did not: only the latter shows.
        assert!(page.contains("0 of 1 judged runs solved"), "{page}");
        assert!(!page.contains("1 of 1 judged runs solved"), "{page}");
    }

    #[test]
    fn page_is_self_contained_and_escapes_data() {
        let leaderboard =
            Table::from_tsv_with_names_and_types("policy_id\truns\nString\tUInt64\n<script>x\t3\n")
                .expect("parses");
        let window = Window {
            key: "all",
            label: "all runs",
            answers: [("leaderboard", leaderboard)].into_iter().collect(),
            same_as: None,
        };
        let page = render(&ReportData {
            windows: vec![window],
            ..ReportData::default()
        });
        assert!(!page.contains("<script>x"), "data must be escaped");
        assert!(page.contains("&lt;script&gt;x"));
        for id in [
            "chart-pareto-all",
            "chart-exit-status-all",
            "chart-token-mix-all",
            "chart-latency-all",
            "chart-forest-all",
        ] {
            assert!(page.contains(&format!("id=\"{id}\"")), "{id} missing");
        }
        assert!(!page.contains("http://") || !page.contains("src=\"http"));
        assert!(!page.contains("<link"), "no external stylesheet");
    }

    #[test]
    fn the_runs_table_lists_the_latest_runs_up_to_the_cap_linked_to_the_viewer() {
        let runs = Table::from_tsv_with_names_and_types(
            "run_id\tpolicy_id\nUUID\tString\nr3\tp\nr2\tp\nr1\tp\n",
        )
        .expect("parses");
        let window = Window {
            key: "all",
            label: "all runs",
            answers: [("runs", runs)].into_iter().collect(),
            same_as: None,
        };
        let options = ReportOptions {
            runs_cap: Some(2),
            viewer_url: Some("http://viewer:8321/".into()),
            ..ReportOptions::default()
        };
        let page = render(&ReportData {
            windows: vec![window],
            options,
            ..ReportData::default()
        });
        assert!(page
            .contains("The latest 2 of 3 runs; 1 earlier runs left out (at most 2 are listed: "));
        assert!(page.contains("<a href=\"http://viewer:8321/runs/r3\">r3</a>"));
        assert!(
            page.contains("/runs/r2") && !page.contains(">r1<"),
            "only the latest two"
        );
    }

    #[test]
    fn a_run_from_the_future_does_not_move_the_windows() {
        let now = 1_795_000_000; // 2026-11
        let in_2105 = 4_260_000_000;
        assert_eq!(window_anchor(Some(in_2105), now), Some(now));
        let last_year = now - 365 * 86_400;
        assert_eq!(window_anchor(Some(last_year), now), Some(last_year));
        assert_eq!(window_anchor(None, now), None);
    }
}
