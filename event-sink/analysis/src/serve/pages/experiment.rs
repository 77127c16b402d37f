//! `/experiments/{name}`: progress, leaderboard, the per-task grid, the latest runs.

use maud::{html, Markup};

use super::home::{eta, rate};
use super::{computing, encode, freshness, percent, query, runs_table};
use crate::serve::data::{ExperimentPage, Freshness, Standing};

/// The experiment page's body.
pub fn render(page: &ExperimentPage) -> Markup {
    let p = &page.progress;
    let name = &p.experiment;
    html! {
        p id="progress" {
            "Done " span class="done" { (p.done) } " of "
            (p.planned_runs.map_or_else(|| "? (not stated)".to_owned(), |n| n.to_string()))
            " planned · running " span class="running" { (p.running) }
            " · infrastructure failures " (p.infrastructure_failures)
            " · success rate " (rate(p))
            " · cost so far " (format!("{:.4}", p.cost_usd)) " USD"
            " · ETA " (eta(p.eta_seconds))
        }
        p {
            @if let Some(baseline) = &page.compare_baseline {
                a id="compare-link" href={ "/compare?" (query(&[("experiment", name), ("baseline", baseline)])) } {
                    "Compare the policies of " (name) " against " (baseline)
                }
                " · "
            }
            a href={ "/compare?" (query(&[("experiment", name)])) } { "every pair" }
        }
        @if !page.decisions.is_empty() {
            h2 { "Decided (run until decided; valid at every look)" }
            table id="decisions" {
                tr { th { "baseline" } th { "candidate" } th { "decision" } th { "difference within" } th { "rounds" } th { "alpha" } th { "bets" } th { "decided at" } }
                @for d in &page.decisions {
                    tr {
                        td { (d.baseline) }
                        td { (d.candidate) }
                        td class="decision" { (d.decision) }
                        td class="num" { (signed(d.cs_low)) " .. " (signed(d.cs_high)) }
                        td class="num" { (d.rounds) }
                        td class="num" { (d.alpha) }
                        td class="bets" { (d.bets()) }
                        td { (d.decided_at()) }
                    }
                }
            }
        }
        h2 { "Leaderboard" }
        @match (&page.standing, &page.freshness) {
            (Some(standing), Some(stands)) => (standing_tables(standing, stands)),
            _ => (computing("the leaderboard and the per-task grid", "standing-freshness")),
        }
        h2 { "Latest runs" }
        (runs_table(&page.runs))
        @if page.runs_left_out > 0 {
            p class="muted" { (page.runs_left_out) " earlier runs not listed." }
        }
    }
}

/// The leaderboard and the per-task grid, with how they stand.
fn standing_tables(standing: &Standing, stands: &Freshness) -> Markup {
    html! {
        (freshness(stands, "standing-freshness"))
        table id="leaderboard" {
            tr { th { "policy" } th { "runs" } th { "tasks" } th { "solved" } th { "rate" } th { "95 % interval" } th { "excluded" } }
            @for s in &standing.leaderboard {
                tr {
                    td { (s.policy_id) }
                    td class="num" { (s.runs) }
                    td class="num" { (s.tasks) }
                    td class="num" { (s.solved) }
                    td class="num" { (percent(s.rate)) }
                    td class="num" { (percent(s.rate_ci_low)) " – " (percent(s.rate_ci_high)) }
                    td { (s.excluded.to_string()) }
                }
            }
        }
        h2 { "Per task" }
        (grid(standing))
    }
}

/// A difference with its sign, or "?" when unknown.
fn signed(value: Option<f64>) -> String {
    value.map_or_else(|| "?".to_owned(), |v| format!("{v:+.3}"))
}

/// Tasks across, policies down; each cell `solved/runs`, linked to the task's runs.
fn grid(standing: &Standing) -> Markup {
    html! {
        table id="grid" {
            tr { th { "policy \\ task" } @for task in &standing.tasks { th { a href={ "/tasks/" (encode(task)) } { (task) } } } }
            @for (summary, cells) in standing.leaderboard.iter().zip(&standing.grid) {
                tr {
                    th { (summary.policy_id) }
                    @for (task, cell) in standing.tasks.iter().zip(cells) {
                        td class="num" {
                            @if let Some(cell) = cell {
                                a href={ "/tasks/" (encode(task)) "#policy-" (encode(&summary.policy_id)) } {
                                    (cell.solved) "/" (cell.runs)
                                }
                            } @else { "–" }
                        }
                    }
                }
            }
        }
    }
}
