//! `event-sink report`: one self-contained HTML page (inline CSS, inline SVG, a few lines
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
//! - In the page, the policy checkboxes hide and show every per-policy row and chart
//!   mark (each carries `data-policy`) and redraw the Pareto frontier over the policies
//!   left. Per-model and per-tool views are not split by policy; narrow them with
//!   `--policy`.
//!
//! Rendering ([`render`]) is a pure function of the answers, so it is tested without a
//! server; [`generate_report`] runs the queries and renders.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use clickhouse::Client;

use super::charts::{self, Policies};
use super::queries::{parse_datetime, ParamValues, Query, QueryError};
use super::svg::escape;
use super::table::Table;

/// What `event-sink report` was asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReportOptions {
    /// Only runs started at or after this time (`YYYY-MM-DD[ HH:MM:SS]` UTC or RFC
    /// 3339). Default: no lower bound.
    pub since: Option<String>,
    /// Only runs started before this time. Default: no upper bound.
    pub until: Option<String>,
    /// Only this `policy_id`. Default: every policy.
    pub policy: Option<String>,
}

/// The page's time windows: key, label, length before the latest run start (None = all).
const WINDOWS: [(&str, &str, Option<i64>); 4] = [
    ("all", "all runs", None),
    ("30d", "last 30 days", Some(30 * 86_400)),
    ("7d", "last 7 days", Some(7 * 86_400)),
    ("24h", "last 24 hours", Some(86_400)),
];

/// The queries run for every window.
const WINDOW_QUERIES: [&str; 9] = [
    "runs",
    "leaderboard",
    "pareto_frontier",
    "exit_status",
    "cost_breakdown",
    "deliberation_latency",
    "latency_histogram",
    "tool_errors",
    "pricing_audit",
];

/// The answers of one time window.
#[derive(Debug, Clone, Default)]
pub struct Window {
    /// `all`, `30d`, ... (element ids and the selector's values).
    pub key: &'static str,
    /// What the selector shows.
    pub label: &'static str,
    /// Answer per query name (every one of [`WINDOW_QUERIES`]).
    pub answers: BTreeMap<&'static str, Table>,
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
}

/// Runs every query the report needs and renders the page.
pub async fn generate_report(
    client: &Client,
    options: &ReportOptions,
) -> Result<String, QueryError> {
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
    let runs = Query::find("runs")?.run(client, &base).await?;
    let latest_start = (0..runs.rows.len())
        .filter_map(|row| runs.number(row, "started_ms"))
        .fold(None, |max: Option<f64>, ms| {
            Some(max.map_or(ms, |m| m.max(ms)))
        })
        .map(|ms| (ms / 1000.0).floor() as i64);
    let floor = match &options.since {
        Some(since) => {
            i64::from(
                parse_datetime(since).map_err(|reason| QueryError::InvalidParam {
                    name: "since".into(),
                    value: since.clone(),
                    ty: super::queries::ParamType::DateTime,
                    reason,
                })?,
            )
        }
        None => 0,
    };
    let anchor = window_anchor(latest_start, Utc::now().timestamp());
    let mut windows = Vec::new();
    for (key, label, length) in WINDOWS {
        let mut params = base.clone();
        if let (Some(length), Some(anchor)) = (length, anchor) {
            let since = anchor.saturating_sub(length).max(floor);
            let since = DateTime::from_timestamp(since, 0).unwrap_or_default();
            params.insert(
                "since".into(),
                since.format("%Y-%m-%d %H:%M:%S").to_string(),
            );
        }
        let mut answers = BTreeMap::new();
        for name in WINDOW_QUERIES {
            answers.insert(name, Query::find(name)?.run(client, &params).await?);
        }
        windows.push(Window {
            key,
            label,
            answers,
        });
    }
    let lost_events = Query::find("lost_events")?
        .run(client, &ParamValues::new())
        .await?;
    Ok(render(&ReportData {
        generated_at: Utc::now(),
        options: options.clone(),
        windows,
        lost_events,
    }))
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
    let policies = Policies(
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
    );

    let mut page = String::new();
    page.push_str(HEAD);
    let _ = write!(
        page,
        "<header><h1>benchstream report</h1><p>Generated {} UTC. {}</p></header>",
        data.generated_at.format("%Y-%m-%d %H:%M:%S"),
        escape(&describe(&data.options))
    );

    // Filters.
    page.push_str("<nav id=\"filters\"><label>Time range <select id=\"window\">");
    for window in &data.windows {
        let _ = write!(
            page,
            "<option value=\"{}\">{} ({} runs)</option>",
            window.key,
            window.label,
            answer(window, "runs").rows.len()
        );
    }
    page.push_str("</select></label><span class=\"policies\">Policies:");
    for policy in &policies.0 {
        let _ = write!(
            page,
            "<label><input type=\"checkbox\" class=\"policy\" value=\"{0}\" checked>\
             <i style=\"background:{1}\"></i>{0}</label>",
            escape(policy),
            policies.colour(policy)
        );
    }
    page.push_str("</span></nav>");

    for (i, window) in data.windows.iter().enumerate() {
        let key = window.key;
        let _ = write!(
            page,
            "<section class=\"window\" data-window=\"{key}\"{}>",
            if i == 0 { "" } else { " hidden" }
        );
        let figures = [
            (
                "Success rate vs cost (dashed: Pareto frontier)",
                charts::pareto(
                    &format!("chart-pareto-{key}"),
                    answer(window, "pareto_frontier"),
                    &policies,
                ),
            ),
            (
                "Exit status per policy",
                charts::exit_status(
                    &format!("chart-exit-status-{key}"),
                    answer(window, "exit_status"),
                ),
            ),
            (
                "Token mix per policy",
                charts::token_mix(
                    &format!("chart-token-mix-{key}"),
                    answer(window, "leaderboard"),
                ),
            ),
            (
                "LLM call latency distribution",
                charts::latency(
                    &format!("chart-latency-{key}"),
                    answer(window, "latency_histogram"),
                ),
            ),
        ];
        page.push_str("<div class=\"charts\">");
        for (caption, svg) in figures {
            let _ = write!(
                page,
                "<figure>{svg}<figcaption>{caption}</figcaption></figure>"
            );
        }
        page.push_str("</div>");
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
            ("runs", "Runs"),
        ] {
            let _ = write!(
                page,
                "<h2>{title}</h2>{}",
                html_table(&format!("table-{name}-{key}"), answer(window, name))
            );
        }
        page.push_str("</section>");
    }
    let _ = write!(
        page,
        "<h2>Lost events (seq gaps, runs stale without run_stop)</h2>{}",
        html_table("table-lost_events", &data.lost_events)
    );
    page.push_str(SCRIPT);
    page.push_str("</body></html>\n");
    page
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
    if parts.is_empty() {
        "All stored runs.".to_owned()
    } else {
        format!("Only {}.", parts.join(", "))
    }
}

/// An answer as an HTML table; rows of a policy carry `data-policy` for the filter.
fn html_table(id: &str, table: &Table) -> String {
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
            let _ = write!(
                out,
                "<td{class}>{}</td>",
                cell.as_deref().map_or("NULL".to_owned(), escape)
            );
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
nav i { display: inline-block; width: 10px; height: 10px; margin: 0 4px; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 16px;
  margin-top: 16px; }
figure { margin: 0; border: 1px solid #e3e3e3; border-radius: 6px; padding: 8px; }
figcaption { font-weight: 600; text-align: center; }
svg.chart { width: 100%; height: auto; font-size: 12px; }
svg .tick, svg .legend { fill: #444; font-size: 11px; }
svg circle.point { stroke: #fff; stroke-width: 2; }
svg circle.on-frontier { stroke: #222; stroke-width: 2.5; }
h2 { font-size: 16px; margin: 24px 0 6px; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border-bottom: 1px solid #e6e6e6; padding: 3px 8px; text-align: left; white-space: nowrap; }
th { background: #fafafa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
p.empty { color: #777; }
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
    var pts = Array.prototype.slice.call(svg.querySelectorAll('circle[data-cost]'))
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
      return p.getAttribute('cx') + ',' + p.getAttribute('cy');
    }).join(' '));
  }
  function apply() {
    document.querySelectorAll('section.window').forEach(function (s) {
      s.hidden = s.dataset.window !== select.value;
    });
    var off = boxes.filter(function (b) { return !b.checked; }).map(function (b) { return b.value; });
    document.querySelectorAll('[data-policy]').forEach(function (e) {
      e.style.display = off.indexOf(e.dataset.policy) >= 0 ? 'none' : '';
    });
    document.querySelectorAll('svg.pareto').forEach(frontier);
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

    #[test]
    fn page_is_self_contained_and_escapes_data() {
        let leaderboard =
            Table::from_tsv_with_names_and_types("policy_id\truns\nString\tUInt64\n<script>x\t3\n")
                .expect("parses");
        let window = Window {
            key: "all",
            label: "all runs",
            answers: [("leaderboard", leaderboard)].into_iter().collect(),
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
        ] {
            assert!(page.contains(&format!("id=\"{id}\"")), "{id} missing");
        }
        assert!(!page.contains("http://") || !page.contains("src=\"http"));
        assert!(!page.contains("<link"), "no external stylesheet");
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
