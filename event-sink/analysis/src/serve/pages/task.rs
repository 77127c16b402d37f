//! `/tasks/{task_id}`: every run of the task by policy; with `?a=&b=`, two runs side by
//! side, aligned by step, the first divergent step marked.

use maud::{html, Markup};

use super::{capped, encode, run_link, runs_table};
use crate::serve::data::run::{SideBySide, StepView};
use crate::serve::data::TaskPage;

/// Characters of a step shown before "show all".
const CAP: usize = 600;

/// The task page's body.
pub fn render(page: &TaskPage) -> Markup {
    html! {
        @if let Some(pair) = &page.side_by_side { (side_by_side(pair)) }
        form method="get" action={ "/tasks/" (encode(&page.task_id)) } {
            "Side by side: run a " input name="a" size="36";
            " run b " input name="b" size="36";
            " " button type="submit" { "show" }
        }
        @for (policy, runs) in &page.policies {
            h2 id={ "policy-" (encode(policy)) } { (policy) }
            (runs_table(runs))
        }
    }
}

fn side_by_side(pair: &SideBySide) -> Markup {
    html! {
        h2 { "Side by side" }
        p id="divergence" {
            @match pair.first_divergence {
                Some(step) => { "The runs diverge at step " strong { (step) } "." }
                None => { "The runs take the same steps." }
            }
        }
        div class="side" id="side-by-side" {
            div { "step" } div { "a: " (run_link(&pair.a)) } div { "b: " (run_link(&pair.b)) }
            @for row in &pair.steps {
                @let mark = if Some(row.step) == pair.first_divergence { "diverge first" } else if row.same { "" } else { "diverge" };
                div class=(mark) data-step=(row.step) { (row.step) }
                div class=(mark) { (step(&row.a)) }
                div class=(mark) { (step(&row.b)) }
            }
        }
    }
}

fn step(view: &Option<StepView>) -> Markup {
    html! {
        @match view {
            Some(v) => { strong { (v.step_type) } " " span class="muted" { "#" (v.seq) } (capped(&v.content, CAP)) }
            None => span class="muted" { "(no such step)" },
        }
    }
}
