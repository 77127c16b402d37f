//! The report's charts, each an SVG [`Element`] built from query answers:
//!
//! - [`pareto`]: success rate vs average cost per policy (`pareto_frontier`) on a
//!   logarithmic cost axis (a `$0` lane left of it for free policies), the frontier
//!   drawn as a line through the undominated policies; labels are placed so that they
//!   never overlap a mark or each other (the policy id, else its legend number, else
//!   none: the tooltip and the legend still name it). [`unplaced`] lists the policies
//!   the chart cannot show, and why.
//! - [`exit_status`]: one 100 % bar per policy split by exit status (`exit_status`);
//! - [`token_mix`]: one 100 % bar per policy split into uncached input, cached input,
//!   output and reasoning tokens (`leaderboard`);
//! - [`forest`]: the paired differences in solve rate against a baseline, with their
//!   intervals and the non-inferiority margin (`compare`);
//! - [`latency`]: a heat map of LLM calls per policy and latency bucket
//!   (`latency_histogram`), shaded on a log scale so one busy policy cannot swamp the
//!   rest, buckets holding timed-out calls outlined, and a column of timeouts.
//!
//! Every mark that belongs to a policy carries `data-policy`, so the page's policy
//! filter can hide it; the Pareto points also carry `data-cost`/`data-rate` and their
//! position (`data-cx`/`data-cy`) so the page can redraw the frontier over the policies
//! left visible. A policy keeps its colour and marker in every chart ([`Policies`]).
//!
//! Each chart is a short list of named steps over helpers they share: a plotting area
//! (`Plot`), its grid lines and tick labels (`y_grid`, `x_grid` with `Tick`s, e.g.
//! `cost_ticks` of a log axis), its axes and titles (`frame`, `y_title`), the empty-chart
//! message (`no_data`); the marks of one chart are functions of their own (the Pareto
//! chart's `frontier_line`, `point_labels`, `pareto_point`; the heat map's `HeatMap`
//! columns, rows and legend).

use crate::compare::stats::wilson;
use crate::compare::{Comparison, PairComparison};
use crate::svg::{
    colour, document, line, marker, policy_style, rect, text, Element, LogScale, Scale, Shape,
};
use crate::table::Table;

const WIDTH: f64 = 720.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 56.0;
/// Left margin of bar charts, room for policy names.
const LABEL_WIDTH: f64 = 290.0;
/// Width of one character of an 11 px label, a little over the average of the sans
/// fonts browsers pick, so an estimated box is never smaller than the drawn text.
const CHAR_WIDTH: f64 = 6.6;

/// Every policy of the report in a fixed order, which fixes its colour and marker.
#[derive(Debug, Clone, Default)]
pub struct Policies(pub Vec<String>);

impl Policies {
    /// The position of `policy` (an unknown policy gets the next free one).
    fn index(&self, policy: &str) -> usize {
        self.0
            .iter()
            .position(|p| p == policy)
            .unwrap_or(self.0.len())
    }

    /// The colour of `policy`.
    pub fn colour(&self, policy: &str) -> &'static str {
        policy_style(self.index(policy)).0
    }

    /// The marker shape of `policy`.
    pub fn shape(&self, policy: &str) -> Shape {
        policy_style(self.index(policy)).1
    }

    /// The number `policy` has in the legend, from 1.
    pub fn number(&self, policy: &str) -> usize {
        self.index(policy) + 1
    }

    /// A small inline SVG of the policy's marker, for legends in HTML.
    pub fn swatch(&self, policy: &str) -> Element {
        Element::new("svg")
            .attr("class", "swatch")
            .attr("viewBox", "0 0 16 16")
            .attr("width", 14)
            .attr("height", 14)
            .child(marker(
                self.shape(policy),
                8.0,
                8.0,
                5.5,
                self.colour(policy),
            ))
    }
}

/// `text` if it fits in `width` px of 11 px type, else its start and end around `…`.
fn fit(text: &str, width: f64) -> String {
    let max = (width / CHAR_WIDTH).floor() as usize;
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max || max < 5 {
        return text.to_owned();
    }
    let head = (max - 1) * 2 / 3;
    let tail = max - 1 - head;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

/// An axis-aligned box in chart pixels: left, top, right, bottom.
#[derive(Debug, Clone, Copy)]
struct Box4(f64, f64, f64, f64);

impl Box4 {
    fn overlaps(&self, other: &Box4) -> bool {
        self.0 < other.2 && other.0 < self.2 && self.1 < other.3 && other.1 < self.3
    }

    fn inside(&self, area: &Box4) -> bool {
        self.0 >= area.0 && self.2 <= area.2 && self.1 >= area.1 && self.3 <= area.3
    }
}

/// Where a label of `chars` characters next to the mark at (cx, cy) fits without
/// touching `taken` or leaving `area`: (x, baseline y, anchor, its box), first fit of
/// right, left, the four diagonals, and (only if `centred`) above and below. A long
/// label centred over a mark would sit over its neighbours too and read as theirs, so
/// names start or end at their mark; short numbers may be centred.
fn place_label(
    chars: usize,
    (cx, cy): (f64, f64),
    taken: &[Box4],
    area: &Box4,
    centred: bool,
) -> Option<(f64, f64, &'static str, Box4)> {
    let (w, h, gap) = (chars as f64 * CHAR_WIDTH, 12.0, 10.0);
    let candidates = [
        (cx + gap, cy + 4.0, "start"),
        (cx - gap, cy + 4.0, "end"),
        // Diagonals clear the mark's own box (±8 px) by a pixel.
        (cx + gap - 2.0, cy - gap - 2.0, "start"),
        (cx + gap - 2.0, cy + gap + 11.0, "start"),
        (cx - gap + 2.0, cy - gap - 2.0, "end"),
        (cx - gap + 2.0, cy + gap + 11.0, "end"),
        (cx, cy - gap - 2.0, "middle"),
        (cx, cy + gap + 11.0, "middle"),
    ];
    let usable = if centred { 8 } else { 6 };
    candidates[..usable].iter().find_map(|&(x, y, anchor)| {
        let left = match anchor {
            "start" => x,
            "end" => x - w,
            _ => x - w / 2.0,
        };
        let bounds = Box4(left - 1.0, y - h + 2.0, left + w + 1.0, y + 3.0);
        (bounds.inside(area) && !taken.iter().any(|t| t.overlaps(&bounds)))
            .then_some((x, y, anchor, bounds))
    })
}

/// One policy of the Pareto chart.
struct Point<'a> {
    /// Its policy_id.
    policy: &'a str,
    /// Average cost per finished run, USD (0 for free policies).
    cost: f64,
    /// Success rate, 0 to 1.
    rate: f64,
    /// Whether `pareto_frontier` put it on the frontier.
    frontier: bool,
}

/// The policies of `answer` (`pareto_frontier`) with a usable cost and rate.
fn points(answer: &Table) -> Vec<Point<'_>> {
    (0..answer.rows.len())
        .filter_map(|row| {
            Some(Point {
                policy: answer.get(row, "policy_id")?,
                cost: answer.number(row, "avg_cost_usd").filter(|c| *c >= 0.0)?,
                rate: answer.number(row, "success_rate")?,
                frontier: answer.get(row, "on_frontier") == Some("1"),
            })
        })
        .collect()
}

/// The judged runs of `policy` in `leaderboard` and their successes (summed over its
/// rows); `None` when it has none.
pub fn judged(leaderboard: &Table, policy: &str) -> Option<(u64, u64)> {
    let (mut judged, mut successes) = (0.0, 0.0);
    for row in 0..leaderboard.rows.len() {
        if leaderboard.get(row, "policy_id") == Some(policy) {
            judged += leaderboard.number(row, "judged").unwrap_or(0.0);
            successes += leaderboard.number(row, "successes").unwrap_or(0.0);
        }
    }
    (judged > 0.0).then_some((judged as u64, successes as u64))
}

/// Success rate (y) against average cost per finished run (x, logarithmic), one point
/// per priced policy, with a whisker over the Wilson 95 % interval of its success rate
/// (from the judged runs and successes of `leaderboard`).
pub fn pareto(id: &str, answer: &Table, leaderboard: &Table, policies: &Policies) -> Element {
    const PARETO_HEIGHT: f64 = 420.0;
    let points = points(answer);
    let plot = Plot {
        left: LEFT,
        top: TOP,
        right: WIDTH - RIGHT,
        bottom: PARETO_HEIGHT - BOTTOM,
    };
    let doc = document(
        id,
        WIDTH,
        PARETO_HEIGHT,
        "success rate versus average cost per policy",
    )
    .attr("class", "chart pareto");
    let free = points.iter().any(|p| p.cost == 0.0);
    // Free policies sit in a `$0` lane left of the log axis, which has no zero.
    let axis_left = if free { LEFT + 44.0 } else { LEFT };
    let priced: Vec<f64> = points.iter().map(|p| p.cost).filter(|c| *c > 0.0).collect();
    let x = LogScale::decades(
        priced.iter().copied().fold(f64::INFINITY, f64::min),
        priced.iter().copied().fold(0.0, f64::max),
        (axis_left + 12.0, WIDTH - RIGHT - 12.0),
    );
    let y = Scale {
        domain: (0.0, 1.0),
        range: (plot.bottom, TOP),
    };
    let mut doc = y_grid(doc, &plot, &y, |tick| format!("{:.0}%", tick * 100.0));
    doc = x_grid(doc, &plot, cost_ticks(&x));
    if free {
        doc = free_lane(doc, &plot, axis_left);
    }
    doc = frame(
        doc,
        &plot,
        PARETO_HEIGHT,
        "average cost per finished run (USD, log scale)",
    )
    .child(y_title(&plot, "success rate"));
    if points.is_empty() {
        return no_data(doc, WIDTH / 2.0, PARETO_HEIGHT / 2.0, "no priced runs");
    }
    let at = |p: &Point| {
        let cx = if p.cost == 0.0 {
            LEFT + 22.0
        } else {
            x.map(p.cost)
        };
        (cx, y.map(p.rate))
    };
    doc = doc.child(frontier_line(&points, at));
    let labels = point_labels(&points, at, &plot, policies);
    for p in &points {
        doc = pareto_point(doc, p, at(p), &y, leaderboard, policies);
    }
    labels.into_iter().fold(doc, Element::child)
}

/// The plotting area of a chart with axes, in chart pixels.
#[derive(Debug, Clone, Copy)]
struct Plot {
    left: f64,
    top: f64,
    right: f64,
    bottom: f64,
}

/// A tick of an x axis: where, its label, and how its grid line and label are drawn.
struct Tick {
    /// Position in chart pixels.
    at: f64,
    label: String,
    /// Colour of its grid line.
    stroke: &'static str,
    /// CSS class of its label.
    class: &'static str,
}

/// Horizontal grid lines across `plot` at the ticks of `y`, labelled left of it.
fn y_grid(mut doc: Element, plot: &Plot, y: &Scale, label: impl Fn(f64) -> String) -> Element {
    for tick in y.ticks() {
        let py = y.map(tick);
        doc = doc
            .child(line(plot.left, py, plot.right, py, "#e3e3e3"))
            .child(text(plot.left - 6.0, py + 4.0, "end", &label(tick)).attr("class", "tick"));
    }
    doc
}

/// Vertical grid lines over `plot` at `ticks`, labelled under it.
fn x_grid(mut doc: Element, plot: &Plot, ticks: impl IntoIterator<Item = Tick>) -> Element {
    for tick in ticks {
        doc = doc
            .child(line(tick.at, plot.top, tick.at, plot.bottom, tick.stroke))
            .child(
                text(tick.at, plot.bottom + 16.0, "middle", &tick.label).attr("class", tick.class),
            );
    }
    doc
}

/// The ticks of a logarithmic cost axis: decades stronger than the steps between them.
fn cost_ticks(x: &LogScale) -> Vec<Tick> {
    x.ticks()
        .into_iter()
        .map(|tick| {
            let major = (tick.log10() - tick.log10().round()).abs() < 1e-9;
            Tick {
                at: x.map(tick),
                label: usd(tick),
                stroke: if major { "#d0d0d0" } else { "#efefef" },
                class: if major {
                    "tick log-tick major"
                } else {
                    "tick log-tick"
                },
            }
        })
        .collect()
}

/// The `$0` lane left of a log cost axis starting at `axis_left`, and the break mark
/// between them.
fn free_lane(doc: Element, plot: &Plot, axis_left: f64) -> Element {
    let (lane, bottom) = (plot.left + 22.0, plot.bottom);
    doc.child(text(lane, bottom + 16.0, "middle", "$0").attr("class", "tick"))
        .child(line(
            axis_left,
            bottom - 4.0,
            axis_left + 6.0,
            bottom + 4.0,
            "#555",
        ))
        .child(line(
            axis_left + 4.0,
            bottom - 4.0,
            axis_left + 10.0,
            bottom + 4.0,
            "#555",
        ))
}

/// The two axis lines of `plot` and the x axis' title near the foot of a chart `height`
/// high.
fn frame(doc: Element, plot: &Plot, height: f64, x_title: &str) -> Element {
    doc.child(line(
        plot.left,
        plot.bottom,
        plot.right,
        plot.bottom,
        "#555",
    ))
    .child(line(plot.left, plot.top, plot.left, plot.bottom, "#555"))
    .child(text(
        (plot.left + plot.right) / 2.0,
        height - 12.0,
        "middle",
        x_title,
    ))
}

/// The y axis' title, turned, left of `plot`.
fn y_title(plot: &Plot, title: &str) -> Element {
    let middle = (plot.top + plot.bottom) / 2.0;
    text(16.0, middle, "middle", title)
        .attr("transform", format_args!("rotate(-90 16 {middle:.1})"))
}

/// The message a chart shows instead of marks when it has nothing to draw.
fn no_data(doc: Element, x: f64, y: f64, message: &str) -> Element {
    doc.child(text(x, y, "middle", message))
}

/// The dashed line through the frontier's points, by cost.
fn frontier_line(points: &[Point], at: impl Fn(&Point) -> (f64, f64)) -> Element {
    let mut frontier: Vec<&Point> = points.iter().filter(|p| p.frontier).collect();
    frontier.sort_by(|a, b| a.cost.total_cmp(&b.cost));
    let path: Vec<String> = frontier
        .iter()
        .map(|p| {
            let (cx, cy) = at(p);
            format!("{cx:.1},{cy:.1}")
        })
        .collect();
    Element::new("polyline")
        .attr("class", "frontier")
        .attr("points", path.join(" "))
        .attr("fill", "none")
        .attr("stroke", "#333")
        .attr("stroke-dasharray", "6 4")
        .attr("stroke-width", 2)
}

/// The labels of the points (and leaders to the diagonal ones): a label may not cover a
/// mark or another label, so every mark's box is taken first, then frontier points are
/// labelled before the others, each with its policy id, else its legend number, else
/// nothing.
fn point_labels(
    points: &[Point],
    at: impl Fn(&Point) -> (f64, f64),
    plot: &Plot,
    policies: &Policies,
) -> Vec<Element> {
    let area = Box4(plot.left + 2.0, 2.0, plot.right, plot.bottom - 2.0);
    let mut taken: Vec<Box4> = points
        .iter()
        .map(|p| {
            let (cx, cy) = at(p);
            Box4(cx - 8.0, cy - 8.0, cx + 8.0, cy + 8.0)
        })
        .collect();
    let mut order: Vec<&Point> = points.iter().collect();
    order.sort_by_key(|p| !p.frontier);
    let mut labels = Vec::new();
    for p in order {
        let (cx, cy) = at(p);
        let number = policies.number(p.policy).to_string();
        let placed = [(p.policy, false), (number.as_str(), true)]
            .into_iter()
            .find_map(|(label, centred)| {
                place_label(label.chars().count(), (cx, cy), &taken, &area, centred)
                    .map(|(lx, ly, anchor, bounds)| (label, lx, ly, anchor, bounds))
            });
        let Some((label, lx, ly, anchor, bounds)) = placed else {
            continue;
        };
        taken.push(bounds);
        if anchor != "middle" && (ly - 4.0 - cy).abs() > 4.0 {
            // A diagonal label: a short leader ties it to its mark.
            let dx = if anchor == "start" { 5.0 } else { -5.0 };
            let dy = if ly < cy { -5.0 } else { 5.0 };
            let end_y = if ly < cy { ly + 1.0 } else { ly - 9.0 };
            labels.push(
                line(cx + dx, cy + dy, lx, end_y, "#888")
                    .attr("class", "leader")
                    .attr("data-policy", p.policy),
            );
        }
        labels.push(
            text(lx, ly, anchor, label)
                .attr("class", "point-label")
                .attr("data-policy", p.policy),
        );
    }
    labels
}

/// One policy's point at (cx, cy), with the whisker of its Wilson interval (from its
/// judged runs in `leaderboard`) and a tooltip with its figures.
fn pareto_point(
    mut doc: Element,
    p: &Point,
    (cx, cy): (f64, f64),
    y: &Scale,
    leaderboard: &Table,
    policies: &Policies,
) -> Element {
    let counts = judged(leaderboard, p.policy);
    let interval = counts.and_then(|(n, solved)| wilson(solved, n));
    if let Some(interval) = interval {
        doc = doc.child(
            line(
                cx,
                y.map(interval.low),
                cx,
                y.map(interval.high),
                policies.colour(p.policy),
            )
            .attr("class", "whisker")
            .attr("stroke-opacity", 0.6)
            .attr("data-policy", p.policy),
        );
    }
    let tip = format!(
        "{} {}: success {:.1}%{}{}, {} per finished run{}",
        policies.number(p.policy),
        p.policy,
        p.rate * 100.0,
        counts.map_or(String::new(), |(n, _)| format!(" of n={n} judged")),
        interval.map_or(String::new(), |i| format!(
            " (95 % {:.0}\u{2013}{:.0}%)",
            i.low * 100.0,
            i.high * 100.0
        )),
        usd(p.cost),
        if p.frontier { ", on the frontier" } else { "" }
    );
    doc.child(
        marker(
            policies.shape(p.policy),
            cx,
            cy,
            6.5,
            policies.colour(p.policy),
        )
        .attr(
            "class",
            if p.frontier {
                "point on-frontier"
            } else {
                "point"
            },
        )
        .attr("data-policy", p.policy)
        .attr("data-cost", p.cost)
        .attr("data-rate", p.rate)
        .attr("data-cx", format_args!("{cx:.1}"))
        .attr("data-cy", format_args!("{cy:.1}"))
        .tooltip(&tip),
    )
}

/// The policies of `leaderboard` that [`pareto`] cannot place, each with the reason:
/// no finished run, no finished run with a known cost, or none judged (saying how many
/// of those could not get their agent sandbox).
pub fn unplaced(pareto_frontier: &Table, leaderboard: &Table) -> Vec<(String, String)> {
    let placed: Vec<&str> = points(pareto_frontier).iter().map(|p| p.policy).collect();
    let mut out: Vec<(String, String)> = Vec::new();
    for row in 0..leaderboard.rows.len() {
        let Some(policy) = leaderboard.get(row, "policy_id") else {
            continue;
        };
        if placed.contains(&policy) || out.iter().any(|(p, _)| p == policy) {
            continue;
        }
        let count = |name| leaderboard.number(row, name).unwrap_or(0.0);
        let (runs, finished) = (count("runs"), count("finished"));
        let reason = if finished == 0.0 {
            format!("no finished run yet ({runs} started): no success rate")
        } else if count("priced_runs") == 0.0 {
            format!(
                "cost unknown: none of its {finished} finished runs has a price \
                 (see \u{201c}Calls with an unknown price\u{201d})"
            )
        } else if count("judged") == 0.0 {
            // Infrastructure failures (no sandbox, no provider answer) are no results:
            // say so apart from unjudged ones.
            let infra_failures = count("infra_failures");
            if infra_failures > 0.0 {
                format!(
                    "success unknown: none of its {finished} finished runs was judged \
                     ({infra_failures} infrastructure failures: no results)"
                )
            } else {
                format!("success unknown: none of its {finished} finished runs was judged")
            }
        } else {
            "no usable cost or success rate in pareto_frontier".to_owned()
        };
        out.push((policy.to_owned(), reason));
    }
    out
}

/// `$0.0012`, `$0.05`, `$3`: a cost with its significant digits, no trailing zeros.
fn usd(value: f64) -> String {
    if value == 0.0 {
        return "$0".to_owned();
    }
    let decimals = (2 - value.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let text = format!("{value:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("${text}")
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
/// reasoning, reasoning (input INCLUDES cached, output INCLUDES reasoning), over the
/// leaderboard's runs whose tokens are known. A policy with no such run (NULL sums) has
/// no bar, never an empty one.
pub fn token_mix(id: &str, leaderboard: &Table) -> Element {
    let mut bars: Vec<Bar> = (0..leaderboard.rows.len())
        .filter_map(|row| {
            leaderboard.get(row, "input_tokens")?;
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
    // The order of the exit-status bars beside it: by policy id.
    bars.sort_by(|a, b| a.policy.cmp(&b.policy));
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
        return no_data(doc, WIDTH / 2.0, TOP + 20.0, "no data");
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
        // The plain sum when it is finite, so 6 runs read `6`, not `5.999999999`.
        let plain: f64 = bar.segments.iter().map(|(_, v)| v).sum();
        let total = if plain.is_finite() {
            plain
        } else {
            scaled_total * scale
        };
        let mut group = Element::new("g")
            .attr("class", "bar")
            .attr("data-policy", &bar.policy)
            .child(
                text(
                    LABEL_WIDTH - 8.0,
                    top + 17.0,
                    "end",
                    &fit(&bar.policy, LABEL_WIDTH - 12.0),
                )
                .attr("class", "bar-label")
                .tooltip(&bar.policy),
            )
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

/// LLM calls per policy (rows) and latency bucket (columns) as a heat map, plus a
/// column of timed-out calls.
pub fn latency(id: &str, answer: &Table, policies: &Policies) -> Element {
    let rows = latency_rows(answer, policies);
    let header = TOP + 24.0;
    let legend_top = header + rows.len().max(1) as f64 * HeatMap::ROW + 14.0;
    let doc = document(
        id,
        HeatMap::WIDTH,
        legend_top + 30.0,
        "LLM calls per policy and latency bucket",
    )
    .attr("class", "chart latency");
    let map = HeatMap {
        header,
        most: rows
            .iter()
            .flat_map(|row| row.calls.iter().copied())
            .fold(1.0, f64::max),
    };
    let mut doc = map.columns(doc);
    if rows.is_empty() {
        return no_data(doc, HeatMap::WIDTH / 2.0, header + 20.0, "no LLM calls");
    }
    for (r, row) in rows.iter().enumerate() {
        doc = doc.child(map.row(header + r as f64 * HeatMap::ROW, row, policies));
    }
    map.legend(doc, legend_top)
}

/// Latency buckets of `latency_histogram`.
const BUCKETS: usize = 10;

/// One policy's LLM calls, per latency bucket.
struct LatencyRow<'a> {
    policy: &'a str,
    calls: [f64; BUCKETS],
    /// Those of `calls` that timed out.
    timeouts: [f64; BUCKETS],
}

/// The calls of `answer` (`latency_histogram`) per policy, in the policies' order.
fn latency_rows<'a>(answer: &'a Table, policies: &Policies) -> Vec<LatencyRow<'a>> {
    let mut rows: Vec<LatencyRow<'a>> = Vec::new();
    for row in 0..answer.rows.len() {
        let (Some(policy), Some(bucket), Some(calls)) = (
            answer.get(row, "policy_id"),
            answer.number(row, "bucket"),
            answer.number(row, "calls"),
        ) else {
            continue;
        };
        let i = (bucket as usize).clamp(1, BUCKETS) - 1;
        let index = match rows.iter().position(|r| r.policy == policy) {
            Some(index) => index,
            None => {
                rows.push(LatencyRow {
                    policy,
                    calls: [0.0; BUCKETS],
                    timeouts: [0.0; BUCKETS],
                });
                rows.len() - 1
            }
        };
        rows[index].calls[i] += calls;
        rows[index].timeouts[i] += answer.number(row, "timeouts").unwrap_or(0.0);
    }
    rows.sort_by_key(|row| policies.number(row.policy));
    rows
}

/// The latency heat map's layout and shading.
struct HeatMap {
    /// Top of the first row, under the column heads.
    header: f64,
    /// The largest count of one cell (at least 1).
    most: f64,
}

impl HeatMap {
    const ROW: f64 = 24.0;
    const WIDTH: f64 = 1000.0;
    /// Room for the policy names left of the cells.
    const NAMES: f64 = 380.0;
    const CELL: f64 = 54.0;
    const FILL: &'static str = "#2c5d9e";

    /// Left edge of bucket column `i`.
    fn column(i: usize) -> f64 {
        Self::NAMES + i as f64 * Self::CELL
    }

    /// Left edge of the column of timed-out calls.
    fn timeouts_x() -> f64 {
        Self::column(BUCKETS) + 8.0
    }

    /// The shade of a cell of `calls`, 0 to 1: by log(1 + calls), so a bucket of 1 call
    /// stays visible beside one of 10 000.
    fn shade(&self, calls: f64) -> f64 {
        (calls.ln_1p() / self.most.ln_1p()).clamp(0.0, 1.0)
    }

    /// The fill opacity of a cell of `shade`: never quite transparent.
    fn opacity(shade: f64) -> f64 {
        0.08 + 0.92 * shade
    }

    /// The column heads: each bucket's lower bound, and the timeouts column.
    fn columns(&self, mut doc: Element) -> Element {
        for i in 0..BUCKETS {
            doc = doc.child(
                text(
                    Self::column(i) + Self::CELL / 2.0,
                    self.header - 8.0,
                    "middle",
                    &bucket_label(i + 1),
                )
                .attr("class", "tick"),
            );
        }
        doc.child(text(
            Self::column(0),
            TOP - 4.0,
            "start",
            "latency of the call (bucket lower bound)",
        ))
        .child(
            text(
                Self::timeouts_x() + 4.0,
                self.header - 8.0,
                "start",
                "timed out",
            )
            .attr("class", "tick"),
        )
    }

    /// One policy's row at `top`: its marker and name, a cell per bucket with calls
    /// (outlined when some timed out), and its timed-out calls.
    fn row(&self, top: f64, row: &LatencyRow, policies: &Policies) -> Element {
        let policy = row.policy;
        let middle = top + Self::ROW / 2.0;
        let total: f64 = row.calls.iter().sum();
        let timed_out: f64 = row.timeouts.iter().sum();
        let mut group = Element::new("g")
            .attr("class", "latency-row")
            .attr("data-policy", policy)
            .child(marker(
                policies.shape(policy),
                10.0,
                middle,
                5.0,
                policies.colour(policy),
            ))
            .child(
                text(
                    22.0,
                    middle + 4.0,
                    "start",
                    &fit(policy, Self::NAMES - 30.0),
                )
                .attr("class", "bar-label")
                .tooltip(&format!("{policy}: {total} LLM calls")),
            );
        for i in 0..BUCKETS {
            let (calls, timeouts) = (row.calls[i], row.timeouts[i]);
            if calls == 0.0 {
                continue;
            }
            let shade = self.shade(calls);
            let mut cell = rect(
                Self::column(i) + 1.0,
                top + 1.0,
                Self::CELL - 2.0,
                Self::ROW - 2.0,
                Self::FILL,
            )
            .attr("fill-opacity", format_args!("{:.2}", Self::opacity(shade)));
            cell = if timeouts > 0.0 {
                cell.attr("class", "cell has-timeouts")
                    .attr("stroke", "#d62728")
                    .attr("stroke-width", 2)
            } else {
                cell.attr("class", "cell")
            };
            group = group
                .child(cell.tooltip(&format!(
                    "{policy}, {}: {calls} calls, {timeouts} timed out",
                    bucket_label(i + 1),
                )))
                .child(
                    text(
                        Self::column(i) + Self::CELL / 2.0,
                        middle + 4.0,
                        "middle",
                        &compact(calls),
                    )
                    .attr("fill", if shade > 0.55 { "#fff" } else { "#222" })
                    .attr("class", "count"),
                );
        }
        let share = if total > 0.0 { timed_out / total } else { 0.0 };
        group.child(
            text(
                Self::timeouts_x() + 4.0,
                middle + 4.0,
                "start",
                &if timed_out > 0.0 {
                    format!("{} ({:.0}%)", compact(timed_out), share * 100.0)
                } else {
                    "0".to_owned()
                },
            )
            .attr("class", if timed_out > 0.0 { "timeouts" } else { "tick" }),
        )
    }

    /// The shading scale (powers of ten up to the largest cell) and the outline's
    /// meaning, at `top`.
    fn legend(&self, mut doc: Element, top: f64) -> Element {
        let scale: Vec<(f64, String)> = [1.0, 10.0, 100.0, 1000.0, 10_000.0]
            .into_iter()
            .filter(|v| *v <= self.most)
            .map(|v| (v, compact(v)))
            .collect();
        doc = doc
            .child(text(22.0, top + 12.0, "start", "calls (log shade):").attr("class", "legend"));
        for (i, (value, label)) in scale.iter().enumerate() {
            let x = 150.0 + i as f64 * 56.0;
            doc = doc
                .child(rect(x, top, 18.0, 16.0, Self::FILL).attr(
                    "fill-opacity",
                    format_args!("{:.2}", Self::opacity(self.shade(*value))),
                ))
                .child(text(x + 22.0, top + 12.0, "start", label).attr("class", "legend"));
        }
        let note = 150.0 + scale.len() as f64 * 56.0 + 16.0;
        doc.child(
            rect(note, top, 18.0, 16.0, "#fff")
                .attr("stroke", "#d62728")
                .attr("stroke-width", 2),
        )
        .child(
            text(
                note + 24.0,
                top + 12.0,
                "start",
                "bucket holds timed-out calls",
            )
            .attr("class", "legend"),
        )
    }
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

/// The paired differences in solve rate of every candidate against the baseline
/// (`compare`): one row per comparison, its point at the difference, a whisker over its
/// paired bootstrap 95 % interval, a solid line at 0 and a dashed one at −margin (a
/// whisker ending right of it: non-inferior). Each row names the candidate with its
/// paired tasks (n) and prints the difference, interval and Holm-adjusted p-value.
pub fn forest(id: &str, comparison: &Comparison, policies: &Policies) -> Element {
    const ROW: f64 = 30.0;
    const PLOT_LEFT: f64 = LABEL_WIDTH + 10.0;
    const PLOT_RIGHT: f64 = WIDTH - 175.0;
    let rows: Vec<&PairComparison> = comparison.comparisons.iter().collect();
    let height = TOP + ROW * rows.len().max(1) as f64 + BOTTOM;
    let bottom = height - BOTTOM;
    let mut doc = document(
        id,
        WIDTH,
        height,
        "paired difference in solve rate against the baseline, with 95 % intervals",
    )
    .attr("class", "chart forest");
    let margin = -comparison.margin;
    let ends = rows
        .iter()
        .flat_map(|c| [c.ci_low, c.ci_high, c.difference])
        .flatten()
        .chain([0.0, margin]);
    let (lo, hi) = ends.fold((0.0_f64, 0.0_f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let x = Scale::nice(lo.max(-1.0), hi.min(1.0), (PLOT_LEFT, PLOT_RIGHT));
    let plot = Plot {
        left: PLOT_LEFT,
        top: TOP,
        right: PLOT_RIGHT,
        bottom,
    };
    let ticks = x.ticks().into_iter().map(|tick| Tick {
        at: x.map(tick),
        label: format!("{:+.0}", tick * 100.0),
        stroke: "#eee",
        class: "tick",
    });
    doc = x_grid(doc, &plot, ticks)
        .child(line(x.map(0.0), TOP - 6.0, x.map(0.0), bottom, "#555"))
        .child(
            line(x.map(margin), TOP - 6.0, x.map(margin), bottom, "#b22")
                .attr("class", "margin")
                .attr("stroke-dasharray", "5 4"),
        )
        .child(text(x.map(margin), TOP - 8.0, "middle", "\u{2212}margin").attr("class", "tick"))
        .child(line(PLOT_LEFT, bottom, PLOT_RIGHT, bottom, "#555"))
        .child(text(
            (PLOT_LEFT + PLOT_RIGHT) / 2.0,
            height - 12.0,
            "middle",
            "candidate \u{2212} baseline, points of solve rate (paired, 95 % interval)",
        ));
    if rows.is_empty() {
        return no_data(
            doc,
            WIDTH / 2.0,
            TOP + ROW / 2.0,
            "no pair of policies with shared tasks",
        );
    }
    for (i, c) in rows.iter().enumerate() {
        let cy = TOP + ROW * (i as f64 + 0.5);
        let name = format!("{} (n={})", c.candidate, c.tasks);
        doc = doc.child(
            text(LABEL_WIDTH, cy + 4.0, "end", &fit(&name, LABEL_WIDTH - 8.0))
                .attr("class", "tick")
                .attr("data-policy", &c.candidate)
                .tooltip(&name),
        );
        let (Some(d), Some(low), Some(high)) = (c.difference, c.ci_low, c.ci_high) else {
            doc = doc.child(
                text(PLOT_LEFT + 4.0, cy + 4.0, "start", "no shared task")
                    .attr("class", "tick")
                    .attr("data-policy", &c.candidate),
            );
            continue;
        };
        let p = c
            .p_adjusted
            .map_or("p ?".to_owned(), |p| format!("p {p:.2}"));
        let figures = format!(
            "{:+.0} [{:+.0}, {:+.0}] {p}",
            d * 100.0,
            low * 100.0,
            high * 100.0
        );
        let tip = format!(
            "{} vs {}: {figures} (Holm), {} paired tasks, {}",
            c.candidate,
            c.baseline,
            c.tasks,
            c.method.unwrap_or("no test")
        );
        let colour = policies.colour(&c.candidate);
        doc = doc
            .child(
                line(x.map(low), cy, x.map(high), cy, colour)
                    .attr("class", "whisker")
                    .attr("stroke-width", 2)
                    .attr("data-policy", &c.candidate),
            )
            .child(
                marker(policies.shape(&c.candidate), x.map(d), cy, 5.5, colour)
                    .attr("class", "point")
                    .attr("data-policy", &c.candidate)
                    .tooltip(&tip),
            )
            .child(
                text(PLOT_RIGHT + 8.0, cy + 4.0, "start", &figures)
                    .attr("class", "tick")
                    .attr("data-policy", &c.candidate),
            );
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        Table::from_tsv_with_names_and_types(text).expect("test table parses")
    }

    #[test]
    fn the_forest_plot_draws_each_comparison_with_its_interval_and_the_margin() {
        use crate::compare::outcomes::{group, Dimension};
        use crate::compare::{compare, Settings};
        // Two tasks each, one run: the candidate solves what the baseline does not.
        let outcomes = table(
            "task_id\tpolicy_id\truns\tsuccesses\tpriced_runs\tcost_usd\tturn_runs\tturns\t\
             token_runs\ttokens\tflagged_runs\tintegrity_unknown_runs\tclean_runs\t\
             clean_successes\tbroken_task\tunfinished\tlost_events\tinfrastructure\tunjudged\n\
             String\tString\tUInt64\tUInt64\tUInt64\tNullable(Float64)\tUInt64\t\
             Nullable(Float64)\tUInt64\tNullable(Float64)\tUInt64\tUInt64\tUInt64\tUInt64\t\
             UInt64\tUInt64\tUInt64\tUInt64\tUInt64\n\
             t1\tbase\t1\t1\t1\t0.1\t0\t\\N\t0\t\\N\t0\t1\t0\t0\t0\t0\t0\t0\t0\n\
             t2\tbase\t1\t0\t1\t0.1\t0\t\\N\t0\t\\N\t0\t1\t0\t0\t0\t0\t0\t0\t0\n\
             t1\tcand\t1\t1\t1\t0.2\t0\t\\N\t0\t\\N\t0\t1\t0\t0\t0\t0\t0\t0\t0\n\
             t2\tcand\t1\t1\t1\t0.2\t0\t\\N\t0\t\\N\t0\t1\t0\t0\t0\t0\t0\t0\t0\n",
        );
        let policies =
            group(&outcomes, &[Dimension::Policy], Default::default()).expect("rows read");
        let answer = compare(
            &policies,
            &Settings {
                baseline: Some("base".into()),
                margin: 0.05,
                seed: 1,
                resamples: 1_000,
            },
        );
        assert_eq!(answer.comparisons[0].difference, Some(0.5));
        let names = Policies(vec!["base".into(), "cand".into()]);
        let svg = forest("f", &answer, &names).to_string();
        assert_eq!(svg.matches("class=\"whisker\"").count(), 1);
        assert_eq!(svg.matches("class=\"margin\"").count(), 1);
        assert!(svg.contains("cand (n=2)"), "{svg}");
        assert!(svg.contains("+50 ["), "{svg}");
    }

    #[test]
    fn pareto_draws_every_point_and_the_frontier_through_undominated_ones() {
        let answer = table(
            "policy_id\tsuccess_rate\tavg_cost_usd\ton_frontier\n\
             String\tFloat64\tFloat64\tUInt8\n\
             a\t0.5\t0.01\t1\nb\t0.2\t0.03\t0\nc\t0.9\t0.05\t1\n",
        );
        let policies = Policies(vec!["a".into(), "b".into(), "c".into()]);
        let svg = pareto("chart-pareto", &answer, &Table::default(), &policies).to_string();
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
    fn pareto_labels_never_overlap_and_costs_sit_on_a_log_axis() {
        let mut rows = String::from(
            "policy_id\tsuccess_rate\tavg_cost_usd\ton_frontier\n\
             String\tFloat64\tFloat64\tUInt8\n",
        );
        let names: Vec<String> = (0..16)
            .map(|i| {
                format!("openrouter/some-vendor/a-rather-long-model-name-{i}:observation_masking")
            })
            .collect();
        for (i, name) in names.iter().enumerate() {
            // Clustered: every point within a few pixels of the next.
            rows.push_str(&format!(
                "{name}\t{}\t{}\t0\n",
                0.5 + i as f64 * 0.01,
                0.01 + i as f64 * 0.0002
            ));
        }
        rows.push_str("free\t1\t0\t1\n");
        let policies = Policies(names.iter().cloned().chain(["free".to_owned()]).collect());
        let svg = pareto("p", &table(&rows), &Table::default(), &policies).to_string();
        let boxes: Vec<Box4> = svg
            .split("<text ")
            .skip(1)
            .filter(|t| t.contains("class=\"point-label\""))
            .map(|t| {
                let attr = |name: &str| -> f64 {
                    t.split(&format!("{name}=\""))
                        .nth(1)
                        .and_then(|rest| rest.split('"').next())
                        .and_then(|v| v.parse().ok())
                        .expect("coordinate")
                };
                let content = t
                    .split('>')
                    .nth(1)
                    .and_then(|c| c.split('<').next())
                    .unwrap_or("");
                let w = content.chars().count() as f64 * CHAR_WIDTH;
                let left = match t
                    .split("text-anchor=\"")
                    .nth(1)
                    .and_then(|r| r.split('"').next())
                {
                    Some("start") => attr("x"),
                    Some("end") => attr("x") - w,
                    _ => attr("x") - w / 2.0,
                };
                Box4(left, attr("y") - 10.0, left + w, attr("y") + 2.0)
            })
            .collect();
        assert!(boxes.len() >= 3, "some labels placed: {svg}");
        for (i, a) in boxes.iter().enumerate() {
            for b in &boxes[i + 1..] {
                assert!(!a.overlaps(b), "labels overlap: {a:?} {b:?}");
            }
        }
        assert!(svg.contains(">$0.01</text>"), "log tick at a decade: {svg}");
        assert!(svg.contains(">$0.02</text>"), "and at 2 times it");
        assert!(svg.contains(">$0</text>"), "the free lane");
        assert_eq!(usd(0.0012), "$0.0012");
        assert_eq!(usd(3.0), "$3");
    }

    #[test]
    fn unplaced_policies_are_listed_with_the_reason() {
        let frontier = table(
            "policy_id\tsuccess_rate\tavg_cost_usd\ton_frontier\n\
             String\tFloat64\tFloat64\tUInt8\na\t0.5\t0.01\t1\n",
        );
        let leaderboard = table(
            "policy_id\truns\tfinished\tpriced_runs\nString\tUInt64\tUInt64\tUInt64\n\
             a\t2\t2\t2\nunpriced\t3\t3\t0\nrunning\t2\t0\t0\n",
        );
        let list = unplaced(&frontier, &leaderboard);
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].0, "unpriced");
        assert!(list[0].1.starts_with("cost unknown"), "{list:?}");
        assert!(list[1].1.starts_with("no finished run"), "{list:?}");
        let leaderboard = table(
            "policy_id\truns\tfinished\tjudged\tpriced_runs\n\
             String\tUInt64\tUInt64\tUInt64\tUInt64\nunjudged\t1\t1\t0\t1\n",
        );
        let list = unplaced(&frontier, &leaderboard);
        assert_eq!(list.len(), 1);
        assert!(list[0].1.starts_with("success unknown"), "{list:?}");
        let leaderboard = table(
            "policy_id\truns\tfinished\tjudged\tinfra_failures\tpriced_runs\n\
             String\tUInt64\tUInt64\tUInt64\tUInt64\tUInt64\nstarved\t2\t2\t0\t2\t2\n",
        );
        let list = unplaced(&frontier, &leaderboard);
        assert!(list[0].1.contains("2 infrastructure failures"), "{list:?}");
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
    fn a_policy_whose_tokens_are_unknown_gets_no_bar() {
        let leaderboard = table(
            "policy_id\tinput_tokens\tcached_input_tokens\toutput_tokens\treasoning_tokens\n\
             String\tNullable(Float64)\tNullable(Float64)\tNullable(Float64)\tNullable(Float64)\n\
             known\t100\t0\t100\t0\n\
             unknown\t\\N\t\\N\t\\N\t\\N\n",
        );
        let svg = token_mix("chart-token-mix", &leaderboard).to_string();
        assert_eq!(svg.matches("class=\"bar\"").count(), 1, "{svg}");
        assert!(svg.contains("data-policy=\"known\""), "{svg}");
        assert!(!svg.contains("data-policy=\"unknown\""), "{svg}");
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
            table("policy_id\tbucket\tcalls\nString\tUInt8\tFloat64\np\t1\tinf\np\t2\t1e308\n");
        let svg = super::latency("chart-latency", &latency, &Policies::default())
            .to_string()
            .to_lowercase();
        assert!(!svg.contains("nan") && !svg.contains("inf"), "{svg}");
    }
}
