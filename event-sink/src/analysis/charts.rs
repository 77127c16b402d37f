//! The report's four charts, each an SVG [`Element`] built from one query answer:
//!
//! - [`pareto`]: success rate vs average cost per policy (`pareto_frontier`), the
//!   frontier drawn as a line through the undominated policies;
//! - [`exit_status`]: one 100 % bar per policy split by exit status (`exit_status`);
//! - [`token_mix`]: one 100 % bar per policy split into uncached input, cached input,
//!   output and reasoning tokens (`leaderboard`);
//! - [`latency`]: LLM call latency histogram, one bar per model per bucket
//!   (`latency_histogram`).
//!
//! Every mark that belongs to a policy carries `data-policy`, so the page's policy
//! filter can hide it; the Pareto points also carry `data-cost`/`data-rate` so the page
//! can redraw the frontier over the policies left visible. A policy keeps its colour in
//! every chart ([`Policies`]).

use super::svg::{colour, document, line, rect, text, Element, Scale};
use super::table::Table;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 56.0;
/// Left margin of bar charts, room for policy names.
const LABEL_WIDTH: f64 = 290.0;

/// Every policy of the report in a fixed order, which fixes its colour.
#[derive(Debug, Clone, Default)]
pub struct Policies(pub Vec<String>);

impl Policies {
    /// The colour of `policy` (an unknown policy gets the next free one).
    pub fn colour(&self, policy: &str) -> &'static str {
        colour(
            self.0
                .iter()
                .position(|p| p == policy)
                .unwrap_or(self.0.len()),
        )
    }
}

/// Success rate (y) against average cost per run (x), one point per priced policy.
pub fn pareto(id: &str, answer: &Table, policies: &Policies) -> Element {
    struct Point<'a> {
        policy: &'a str,
        cost: f64,
        rate: f64,
        frontier: bool,
    }
    let points: Vec<Point> = (0..answer.rows.len())
        .filter_map(|row| {
            Some(Point {
                policy: answer.get(row, "policy_id")?,
                cost: answer.number(row, "avg_cost_usd")?,
                rate: answer.number(row, "success_rate")?,
                frontier: answer.get(row, "on_frontier") == Some("1"),
            })
        })
        .collect();
    let mut doc = document(
        id,
        WIDTH,
        HEIGHT,
        "success rate versus average cost per policy",
    )
    .attr("class", "chart pareto");
    let max_cost = points.iter().map(|p| p.cost).fold(0.0, f64::max);
    let x = Scale::nice(0.0, max_cost, (LEFT, WIDTH - RIGHT));
    let y = Scale {
        domain: (0.0, 1.0),
        range: (HEIGHT - BOTTOM, TOP),
    };
    doc = axes(
        doc,
        &x,
        &y,
        |v| format!("${v:.3}"),
        |v| format!("{:.0}%", v * 100.0),
    );
    doc = doc
        .child(text(
            (LEFT + WIDTH - RIGHT) / 2.0,
            HEIGHT - 12.0,
            "middle",
            "average cost per finished run (USD)",
        ))
        .child(text(14.0, TOP - 6.0, "start", "success rate"));
    if points.is_empty() {
        return doc.child(text(WIDTH / 2.0, HEIGHT / 2.0, "middle", "no priced runs"));
    }
    let mut frontier: Vec<&Point> = points.iter().filter(|p| p.frontier).collect();
    frontier.sort_by(|a, b| a.cost.total_cmp(&b.cost));
    let path: Vec<String> = frontier
        .iter()
        .map(|p| format!("{:.1},{:.1}", x.map(p.cost), y.map(p.rate)))
        .collect();
    doc = doc.child(
        Element::new("polyline")
            .attr("class", "frontier")
            .attr("points", path.join(" "))
            .attr("fill", "none")
            .attr("stroke", "#333")
            .attr("stroke-dasharray", "6 4")
            .attr("stroke-width", 2),
    );
    for p in &points {
        let (cx, cy) = (x.map(p.cost), y.map(p.rate));
        let tip = format!(
            "{}: success {:.1}%, ${:.4} per run{}",
            p.policy,
            p.rate * 100.0,
            p.cost,
            if p.frontier { ", on the frontier" } else { "" }
        );
        doc = doc
            .child(
                Element::new("circle")
                    .attr(
                        "class",
                        if p.frontier {
                            "point on-frontier"
                        } else {
                            "point"
                        },
                    )
                    .num("cx", cx)
                    .num("cy", cy)
                    .attr("r", 7)
                    .attr("fill", policies.colour(p.policy))
                    .attr("data-policy", p.policy)
                    .attr("data-cost", p.cost)
                    .attr("data-rate", p.rate)
                    .tooltip(&tip),
            )
            .child(
                // Labels of points in the right half go to their left, inside the plot.
                if cx > WIDTH / 2.0 {
                    text(cx - 10.0, cy - 10.0, "end", p.policy)
                } else {
                    text(cx + 10.0, cy - 10.0, "start", p.policy)
                }
                .attr("class", "point-label")
                .attr("data-policy", p.policy),
            );
    }
    doc
}

/// Finished runs per policy as 100 % bars split by exit status.
pub fn exit_status(id: &str, answer: &Table) -> Element {
    let mut bars: Vec<Bar> = Vec::new();
    for row in 0..answer.rows.len() {
        let (Some(policy), Some(status), Some(runs)) = (
            answer.get(row, "policy_id"),
            answer.get(row, "exit_status"),
            answer.number(row, "runs"),
        ) else {
            continue;
        };
        if bars.last().is_none_or(|b| b.policy != policy) {
            bars.push(Bar {
                policy: policy.to_owned(),
                segments: Vec::new(),
            });
        }
        if let Some(bar) = bars.last_mut() {
            bar.segments.push((status.to_owned(), runs));
        }
    }
    stacked_bars(id, "exit status per policy", "runs", &bars, &EXIT_STATUSES)
}

/// The exit statuses of the contract, `submitted` (success) first.
const EXIT_STATUSES: [&str; 10] = [
    "submitted",
    "exit_cost",
    "exit_context",
    "exit_timeout",
    "exit_format",
    "exit_api",
    "exit_environment",
    "exit_forfeit",
    "exit_command",
    "exit_error",
];

/// The four token kinds of [`token_mix`], in bar order.
const TOKEN_KINDS: [&str; 4] = ["uncached input", "cached input", "output", "reasoning"];

/// LLM tokens per policy as 100 % bars: uncached input, cached input, output without
/// reasoning, reasoning (input INCLUDES cached, output INCLUDES reasoning).
pub fn token_mix(id: &str, leaderboard: &Table) -> Element {
    let bars: Vec<Bar> = (0..leaderboard.rows.len())
        .filter_map(|row| {
            let n = |name| leaderboard.number(row, name).unwrap_or(0.0);
            let (input, cached) = (n("input_tokens"), n("cached_input_tokens"));
            let (output, reasoning) = (n("output_tokens"), n("reasoning_tokens"));
            let values = [input - cached, cached, output - reasoning, reasoning];
            Some(Bar {
                policy: leaderboard.get(row, "policy_id")?.to_owned(),
                segments: TOKEN_KINDS
                    .iter()
                    .zip(values)
                    .map(|(kind, value)| ((*kind).to_owned(), value))
                    .collect(),
            })
        })
        .collect();
    stacked_bars(id, "token mix per policy", "tokens", &bars, &TOKEN_KINDS)
}

/// One horizontal bar: a policy and its (category, value) segments.
struct Bar {
    policy: String,
    segments: Vec<(String, f64)>,
}

/// Horizontal 100 % stacked bars, one per policy, segments coloured by their category's
/// index in `categories` (unknown categories after them), with a legend.
fn stacked_bars(id: &str, label: &str, unit: &str, bars: &[Bar], categories: &[&str]) -> Element {
    let row_height = 34.0;
    let legend_top = TOP + bars.len().max(1) as f64 * row_height + 16.0;
    let height = legend_top + 40.0;
    let mut doc = document(id, WIDTH, height, label).attr("class", "chart stacked");
    if bars.is_empty() {
        return doc.child(text(WIDTH / 2.0, TOP + 20.0, "middle", "no data"));
    }
    let x = Scale {
        domain: (0.0, 1.0),
        range: (LABEL_WIDTH, WIDTH - RIGHT - 60.0),
    };
    let category_colour = |name: &str| {
        colour(
            categories
                .iter()
                .position(|c| *c == name)
                .unwrap_or(categories.len()),
        )
    };
    for (i, bar) in bars.iter().enumerate() {
        let top = TOP + i as f64 * row_height;
        // Shares are computed on values scaled by the largest, so segments near
        // f64::MAX (token sums of a hostile producer) do not overflow the total to inf.
        let largest = bar
            .segments
            .iter()
            .map(|(_, v)| v.abs())
            .fold(0.0, f64::max);
        let scale = if largest > 0.0 { largest } else { 1.0 };
        let scaled_total: f64 = bar.segments.iter().map(|(_, v)| v / scale).sum();
        let total = scaled_total * scale;
        let mut group = Element::new("g")
            .attr("class", "bar")
            .attr("data-policy", &bar.policy)
            .child(text(LABEL_WIDTH - 8.0, top + 17.0, "end", &bar.policy))
            .child(text(x.range.1 + 6.0, top + 17.0, "start", &compact(total)));
        let mut start = 0.0;
        for (category, value) in &bar.segments {
            let share = if scaled_total > 0.0 {
                value / scale / scaled_total
            } else {
                0.0
            };
            group = group.child(
                rect(
                    x.map(start),
                    top,
                    x.map(start + share) - x.map(start),
                    row_height - 10.0,
                    category_colour(category),
                )
                .attr("class", "segment")
                .tooltip(&format!(
                    "{}: {category} {} {unit} ({:.1}%)",
                    bar.policy,
                    compact(*value),
                    share * 100.0
                )),
            );
            start += share;
        }
        doc = doc.child(group);
    }
    let mut seen: Vec<&str> = categories.to_vec();
    for bar in bars {
        for (category, _) in &bar.segments {
            if !seen.contains(&category.as_str()) {
                seen.push(category);
            }
        }
    }
    let used: Vec<&str> = seen
        .into_iter()
        .filter(|c| bars.iter().any(|b| b.segments.iter().any(|(s, _)| s == c)))
        .collect();
    legend(
        doc,
        legend_top,
        used.iter().map(|c| (*c, category_colour(c))),
    )
}

/// LLM calls per latency bucket, one bar per model in each bucket.
pub fn latency(id: &str, answer: &Table) -> Element {
    let mut models: Vec<&str> = Vec::new();
    for row in 0..answer.rows.len() {
        if let Some(model) = answer.get(row, "model") {
            if !models.contains(&model) {
                models.push(model);
            }
        }
    }
    let buckets = 10usize;
    let max_calls = (0..answer.rows.len())
        .filter_map(|row| answer.number(row, "calls"))
        .fold(0.0, f64::max);
    let mut doc = document(id, WIDTH, HEIGHT + 24.0, "LLM call latency distribution")
        .attr("class", "chart latency");
    let band = (WIDTH - RIGHT - LEFT) / buckets as f64;
    let x = |bucket: usize| LEFT + (bucket - 1) as f64 * band;
    let y = Scale::nice(0.0, max_calls, (HEIGHT - BOTTOM, TOP));
    doc = axes(
        doc,
        &Scale {
            domain: (0.0, 1.0),
            range: (LEFT, WIDTH - RIGHT),
        },
        &y,
        |_| String::new(),
        |v| format!("{v:.0}"),
    );
    for bucket in 1..=buckets {
        doc = doc.child(
            text(
                x(bucket) + band / 2.0,
                HEIGHT - BOTTOM + 16.0,
                "middle",
                &bucket_label(bucket),
            )
            .attr("class", "tick"),
        );
    }
    doc = doc
        .child(text(
            (LEFT + WIDTH - RIGHT) / 2.0,
            HEIGHT - BOTTOM + 36.0,
            "middle",
            "latency (bucket lower bound)",
        ))
        .child(text(14.0, TOP - 6.0, "start", "calls"));
    let width = (band - 8.0) / models.len().max(1) as f64;
    for row in 0..answer.rows.len() {
        let (Some(model), Some(bucket), Some(calls)) = (
            answer.get(row, "model"),
            answer.number(row, "bucket"),
            answer.number(row, "calls"),
        ) else {
            continue;
        };
        let index = models.iter().position(|m| *m == model).unwrap_or(0);
        let bucket = (bucket as usize).clamp(1, buckets);
        let timeouts = answer.number(row, "timeouts").unwrap_or(0.0);
        doc = doc.child(
            rect(
                x(bucket) + 4.0 + index as f64 * width,
                y.map(calls),
                width,
                y.map(0.0) - y.map(calls),
                colour(index),
            )
            .attr("class", "bar")
            .attr("data-model", model)
            .tooltip(&format!(
                "{model}, {}: {calls} calls, {timeouts} timed out",
                bucket_label(bucket)
            )),
        );
    }
    legend(
        doc,
        HEIGHT + 2.0,
        models.iter().enumerate().map(|(i, m)| (*m, colour(i))),
    )
}

/// `< 250 ms`, `250 ms`, `500 ms`, `1 s`, ... `≥ 64 s`: the lower bound of a
/// `latency_histogram` bucket.
fn bucket_label(bucket: usize) -> String {
    match bucket {
        1 => "< 250 ms".to_owned(),
        10 => "≥ 64 s".to_owned(),
        b => {
            let ms = 250u64 << (b - 2);
            if ms < 1000 {
                format!("{ms} ms")
            } else {
                format!("{} s", ms / 1000)
            }
        }
    }
}

/// Grid lines, tick labels and the axis lines of a chart with both scales.
fn axes(
    mut doc: Element,
    x: &Scale,
    y: &Scale,
    x_label: impl Fn(f64) -> String,
    y_label: impl Fn(f64) -> String,
) -> Element {
    let (bottom, top) = y.range;
    let (left, right) = x.range;
    for tick in y.ticks() {
        let py = y.map(tick);
        doc = doc
            .child(line(left, py, right, py, "#e3e3e3"))
            .child(text(left - 6.0, py + 4.0, "end", &y_label(tick)).attr("class", "tick"));
    }
    for tick in x.ticks() {
        let label = x_label(tick);
        if label.is_empty() {
            continue;
        }
        let px = x.map(tick);
        doc = doc
            .child(line(px, top, px, bottom, "#e3e3e3"))
            .child(text(px, bottom + 16.0, "middle", &label).attr("class", "tick"));
    }
    doc.child(line(left, bottom, right, bottom, "#555"))
        .child(line(left, top, left, bottom, "#555"))
}

/// A one-line legend of coloured squares starting at (LEFT, `top`).
fn legend<'a>(
    mut doc: Element,
    top: f64,
    entries: impl Iterator<Item = (&'a str, &'static str)>,
) -> Element {
    let mut x = LEFT;
    for (name, fill) in entries {
        doc = doc
            .child(rect(x, top, 12.0, 12.0, fill))
            .child(text(x + 16.0, top + 10.5, "start", name).attr("class", "legend"));
        x += 28.0 + name.chars().count() as f64 * 7.0;
    }
    doc
}

/// 1234567 → `1.2M`, for labels; beyond f64 (an overflowed sum) `overflow`.
fn compact(value: f64) -> String {
    match value.abs() {
        v if !v.is_finite() => "overflow".into(),
        v if v >= 1e15 => format!("{value:.2e}"),
        v if v >= 1e6 => format!("{:.1}M", value / 1e6),
        v if v >= 1e4 => format!("{:.0}k", value / 1e3),
        v if v >= 1e3 => format!("{:.1}k", value / 1e3),
        _ => format!("{value}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        Table::from_tsv_with_names_and_types(text).expect("test table parses")
    }

    #[test]
    fn pareto_draws_every_point_and_the_frontier_through_undominated_ones() {
        let answer = table(
            "policy_id\tsuccess_rate\tavg_cost_usd\ton_frontier\n\
             String\tFloat64\tFloat64\tUInt8\n\
             a\t0.5\t0.01\t1\nb\t0.2\t0.03\t0\nc\t0.9\t0.05\t1\n",
        );
        let policies = Policies(vec!["a".into(), "b".into(), "c".into()]);
        let svg = pareto("chart-pareto", &answer, &policies).to_string();
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("data-policy=\"b\""));
        let frontier = svg
            .split("class=\"frontier\" points=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("frontier line");
        assert_eq!(frontier.split(' ').count(), 2, "{frontier}");
    }

    #[test]
    fn stacked_bars_split_each_policy_into_shares() {
        let answer = table(
            "policy_id\texit_status\truns\nString\tString\tUInt64\n\
             a\tsubmitted\t3\na\texit_cost\t1\nb\texit_weird\t2\n",
        );
        let svg = exit_status("chart-exit", &answer).to_string();
        assert_eq!(svg.matches("class=\"segment\"").count(), 3);
        assert!(svg.contains("submitted 3 runs (75.0%)"));
        assert!(
            svg.contains(">exit_weird</text>"),
            "legend has unknown statuses"
        );
        assert_eq!(bucket_label(2), "250 ms");
        assert_eq!(bucket_label(5), "2 s");
        assert_eq!(compact(40500.0), "40k");
    }

    #[test]
    fn huge_and_non_finite_values_never_reach_the_svg() {
        let leaderboard = table(
            "policy_id\tinput_tokens\tcached_input_tokens\toutput_tokens\treasoning_tokens\n\
             String\tFloat64\tFloat64\tFloat64\tFloat64\n\
             a\t1.7e308\t0\t1.7e308\t0\n\
             b\tinf\tnan\t-inf\t5\n",
        );
        let svg = token_mix("chart-token-mix", &leaderboard).to_string();
        let lower = svg.to_lowercase();
        assert!(!lower.contains("nan") && !lower.contains("inf"), "{svg}");
        assert!(svg.contains("(50.0%)"), "{svg}");
        let latency =
            table("model\tbucket\tcalls\nString\tUInt8\tFloat64\nm\t1\tinf\nm\t2\t1e308\n");
        let svg = super::latency("chart-latency", &latency)
            .to_string()
            .to_lowercase();
        assert!(!svg.contains("nan") && !svg.contains("inf"), "{svg}");
    }
}
