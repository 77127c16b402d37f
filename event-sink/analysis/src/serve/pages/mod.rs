//! The HTML of each page. maud escapes every value it writes, so a hostile string from
//! an event stays text; the pages carry no inline script or style (the
//! Content-Security-Policy forbids both), only the embedded `live.js` and `style.css`.

pub mod compare;
pub mod experiment;
pub mod home;
pub mod run;
pub mod task;

use maud::{html, Markup, DOCTYPE};

use super::data::Freshness;

/// A page's title and the live events it follows.
#[derive(Debug, Clone)]
pub struct Head {
    title: String,
    /// `/api/live`'s query for this page (empty: every event); `None`: not live.
    live: Option<String>,
}

impl Head {
    /// A page titled `title` following the events `/api/live?{live}` sends.
    pub fn new(title: &str, live: &str) -> Head {
        Head {
            title: title.to_owned(),
            live: Some(live.to_owned()),
        }
    }

    /// The same page, not live (an error page, the compare page).
    pub fn without_live(self) -> Head {
        Head { live: None, ..self }
    }
}

/// The frame of every page: `body` under the navigation, the live state beside it
/// (`live_off`: why live updates are off).
pub fn layout(head: &Head, live_off: Option<&str>, body: Markup) -> Markup {
    let live_note = match (live_off, &head.live) {
        (Some(why), _) => format!("live updates off: {why}"),
        (None, Some(_)) => "live updates: connecting".to_owned(),
        (None, None) => String::new(),
    };
    let follow = head.live.as_deref().filter(|_| live_off.is_none());
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (head.title) " · bench-analysis" }
                link rel="stylesheet" href="/assets/style.css";
                script src="/assets/live.js" defer {}
            }
            body data-live=[follow] {
                header {
                    a href="/" { "Experiments" }
                    a href="/compare" { "Compare" }
                    span id="live-status" { (live_note) }
                }
                main {
                    h1 { (head.title) }
                    (body)
                }
            }
        }
    }
}

/// How a kept answer stands (`id`: the element's): when it was computed and over which
/// runs; when stale, that it is being updated and how many runs since. `data-stale`
/// tells the script to fetch the page again until it is not.
pub fn freshness(f: &Freshness, id: &str) -> Markup {
    let over = format!(
        "over {} finished runs of {} started",
        f.runs_finished, f.runs_started
    );
    let at = time(f.computed_at);
    html! {
        @if f.stale {
            p id=(id) class="freshness stale" data-stale="true" {
                "Updating: " (since(f)) " since this was computed (" (at) " UTC, " (over)
                "); the new answer replaces it when ready."
            }
        } @else {
            p id=(id) class="freshness muted" data-stale="false" {
                "Computed " (at) " UTC " (over) "."
            }
        }
    }
}

/// In place of an answer computed for the first time that took longer than a page waits
/// (`id`: the element's, as [`freshness`]'s): `data-stale` has the script fetch the page
/// again until the answer is there.
pub fn computing(what: &str, id: &str) -> Markup {
    html! {
        p id=(id) class="freshness stale" data-stale="true" data-computing="true" {
            "Computing " (what) " for the first time: this page shows it when ready."
        }
    }
}

/// `2 runs finished and 3 started`, or why else a kept answer is stale.
fn since(f: &Freshness) -> String {
    let runs = |n: u64| {
        if n == 1 {
            "1 run".to_owned()
        } else {
            format!("{n} runs")
        }
    };
    match (f.runs_finished_since, f.runs_started_since) {
        (0, 0) => "the runs' events changed or it grew old".to_owned(),
        (done, 0) => format!("{} finished", runs(done)),
        (0, started) => format!("{} started", runs(started)),
        (done, started) => format!("{} finished and {started} started", runs(done)),
    }
}

/// The body of an error page.
pub fn error(message: &str) -> Markup {
    html! { p class="error" { (message) } }
}

/// `text` percent-encoded for a URL path segment or query value (all but unreserved
/// characters).
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `k=v&...`, each encoded.
pub fn query(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Unix seconds as `YYYY-MM-DD HH:MM:SS` UTC.
pub fn time(secs: u64) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map_or_else(
            || secs.to_string(),
            |t| t.format("%Y-%m-%d %H:%M:%S").to_string(),
        )
}

/// A rate as a percentage with one decimal; `–` when unknown.
pub fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "–".to_owned(), |r| format!("{:.1} %", r * 100.0))
}

/// A link to a run's page, by its id.
pub fn run_link(run_id: &str) -> Markup {
    html! { a href={ "/runs/" (encode(run_id)) } { code { (run_id.get(..8).unwrap_or(run_id)) } } }
}

/// A run's state as lists show it: running, or its exit status and verdict.
pub fn run_state(row: &super::db::RunRow) -> String {
    if row.stopped == 0 {
        return "running".to_owned();
    }
    let verdict = match row.success {
        Some(1) => "solved",
        Some(_) => "not solved",
        None => "unjudged",
    };
    format!("{} · {verdict}", row.exit_status)
}

/// Shows `text`, at most `cap` characters of it at first and the whole of it behind a
/// "show all" (no script needed).
pub fn capped(text: &str, cap: usize) -> Markup {
    let chars = text.chars().count();
    if chars <= cap {
        return html! { pre { (text) } };
    }
    let head: String = text.chars().take(cap).collect();
    html! {
        pre { (head) "…" }
        details {
            summary { "show all (" (chars) " characters)" }
            pre { (text) }
        }
    }
}

/// A list of runs: state, task, policy, start, cost, each linked.
pub fn runs_table(runs: &[super::db::RunRow]) -> Markup {
    html! {
        table class="runs" {
            tr { th { "run" } th { "task" } th { "policy" } th { "started (UTC)" } th { "state" } th { "cost (USD)" } }
            @for row in runs {
                tr data-run=(row.run_id) {
                    td { (run_link(&row.run_id)) }
                    td { a href={ "/tasks/" (encode(&row.task_id)) } { (row.task_id) } }
                    td { (row.policy_id) }
                    td { (time(row.started)) }
                    td class="state" { (run_state(row)) }
                    td class="num" { (row.cost_usd.map_or_else(|| "–".to_owned(), |c| format!("{c:.4}"))) }
                }
            }
        }
    }
}
