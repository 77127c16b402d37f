//! `/compare?experiment=&baseline=`: `compare`'s answer, its two tables and its notes.

use maud::{html, Markup};

use super::{computing, freshness};
use crate::compare::render::{pair_table, policy_table};
use crate::serve::data::Compared;
use crate::table::Table;

/// The compare page's body; `compared` is `None` while its first computation takes
/// longer than the page waits.
pub fn render(
    compared: Option<&Compared>,
    experiment: &Option<String>,
    baseline: &Option<String>,
) -> Markup {
    html! {
        form method="get" action="/compare" {
            label { "experiment " input name="experiment" value=[experiment.as_deref()]; }
            " "
            label { "baseline " input name="baseline" value=[baseline.as_deref()]; }
            " " button type="submit" { "compare" }
        }
        @match compared {
            Some(compared) => (answer(compared)),
            None => (computing("the comparison", "compare-freshness")),
        }
    }
}

/// `compare`'s answer, with how it stands.
fn answer(compared: &Compared) -> Markup {
    let comparison = &compared.answer.value;
    html! {
        (freshness(&compared.freshness, "compare-freshness"))
        h2 { "Policies" }
        (table(&policy_table(&comparison.policies), "compare-policies"))
        h2 { "Pairs" }
        (table(&pair_table(&comparison.comparisons), "compare-pairs"))
        @for note in &comparison.notes { p class="muted" { "note: " (note) } }
        @for pair in &comparison.comparisons {
            @if let Some(reading) = &pair.reading {
                p { (pair.baseline) " vs " (pair.candidate) ": " (reading) }
            }
        }
    }
}

/// A [`Table`] as HTML, empty cells as `–`.
fn table(table: &Table, id: &str) -> Markup {
    html! {
        table id=(id) {
            tr { @for c in &table.columns { th { (c.name) } } }
            @for row in &table.rows {
                tr { @for cell in row { td { (cell.as_deref().unwrap_or("–")) } } }
            }
        }
    }
}
