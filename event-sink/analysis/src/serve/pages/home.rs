//! `/`: every experiment and sweep, newest first, with its progress.

use maud::{html, Markup};

use super::{encode, percent, time};
use crate::serve::data::Progress;

/// The home page's body.
pub fn render(experiments: &[Progress]) -> Markup {
    html! {
        @if experiments.is_empty() {
            p { "No run of any experiment is stored yet." }
        } @else {
            table id="experiments" {
                tr {
                    th { "experiment" } th { "first run (UTC)" } th { "policies" }
                    th { "done / planned" } th { "running" } th { "infrastructure failures" }
                    th { "success rate (95 % interval, n)" } th { "cost so far (USD)" } th { "ETA" }
                }
                @for p in experiments {
                    tr data-experiment=(p.experiment) {
                        td {
                            a href={ "/experiments/" (encode(&p.experiment)) } { (p.experiment) }
                            @if let Some(sweep) = &p.sweep { " " span class="muted" { "(sweep " (sweep) ")" } }
                        }
                        td { (time(p.first_start)) }
                        td class="num" { (p.policies) }
                        td class="num done" { (p.done) " / " (p.planned_runs.map_or_else(|| "?".to_owned(), |n| n.to_string())) }
                        td class="num running" { (p.running) }
                        td class="num" { (p.infrastructure_failures) }
                        td class="num" { (rate(p)) }
                        td class="num" {
                            (format!("{:.4}", p.cost_usd))
                            @if p.unpriced_runs > 0 { " + " (p.unpriced_runs) " unpriced" }
                        }
                        td { (eta(p.eta_seconds)) }
                    }
                }
            }
        }
    }
}

/// `42.0 % (30.1–55.0 %, n = 40)`.
pub fn rate(p: &Progress) -> String {
    match p.success_ci {
        Some((low, high)) => format!(
            "{} ({:.1}–{:.1} %, n = {})",
            percent(p.success_rate),
            low * 100.0,
            high * 100.0,
            p.judged
        ),
        None => format!("– (n = {})", p.judged),
    }
}

/// `1 h 05 min`, `45 s`; `–` when unknown.
pub fn eta(seconds: Option<u64>) -> String {
    match seconds {
        None => "–".to_owned(),
        Some(s) if s >= 3600 => format!("{} h {:02} min", s / 3600, s % 3600 / 60),
        Some(s) if s >= 60 => format!("{} min {:02} s", s / 60, s % 60),
        Some(s) => format!("{s} s"),
    }
}
