//! Just enough SVG, written by hand: an element builder that escapes every attribute
//! and text, a linear and a logarithmic scale with round tick values, category colours,
//! and policy styles (a colour of a 20-colour palette, then a marker shape) that stay
//! distinct for many policies.
//!
//! Charts are built from these in `charts.rs`; nothing here knows about queries. Output
//! is plain SVG 1.1 inline in the report's HTML, so the page needs no script or font
//! to show a chart.

use std::fmt::Write as _;

/// Distinct colours for series, in order (Tableau 10, readable on white).
pub const PALETTE: &[&str] = &[
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// The `i`th palette colour, wrapping around.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Colours for policies: 20 told apart on white (Sasha Trubetskoy's "20 distinct
/// colours", most distinct first); markers get a dark outline so the light ones show.
pub const POLICY_PALETTE: &[&str] = &[
    "#4363d8", "#e6194b", "#3cb44b", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324",
    "#800000", "#469990", "#000075", "#808000", "#a9a9a9", "#ffe119", "#bfef45", "#fabed4",
    "#dcbeff", "#ffd8b1", "#aaffc3", "#fffac8",
];

/// The marker shapes of policy points; the shape changes after every full round of
/// [`POLICY_PALETTE`], so 80 policies get distinct styles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Policies 1 to 20.
    Circle,
    /// Policies 21 to 40.
    Square,
    /// Policies 41 to 60.
    Triangle,
    /// Policies 61 to 80.
    Diamond,
}

/// The colour and shape of the `i`th policy.
pub fn policy_style(i: usize) -> (&'static str, Shape) {
    let shapes = [
        Shape::Circle,
        Shape::Square,
        Shape::Triangle,
        Shape::Diamond,
    ];
    (
        POLICY_PALETTE[i % POLICY_PALETTE.len()],
        shapes[(i / POLICY_PALETTE.len()) % shapes.len()],
    )
}

/// A marker of `shape` centred on (cx, cy), about `r` in radius, outlined in dark grey.
pub fn marker(shape: Shape, cx: f64, cy: f64, r: f64, fill: &str) -> Element {
    let polygon = |points: &[(f64, f64)]| {
        let points: Vec<String> = points
            .iter()
            .map(|(dx, dy)| format!("{:.1},{:.1}", cx + dx * r, cy + dy * r))
            .collect();
        Element::new("polygon").attr("points", points.join(" "))
    };
    match shape {
        Shape::Circle => Element::new("circle")
            .num("cx", cx)
            .num("cy", cy)
            .num("r", r),
        Shape::Square => polygon(&[(-0.9, -0.9), (0.9, -0.9), (0.9, 0.9), (-0.9, 0.9)]),
        Shape::Triangle => polygon(&[(0.0, -1.2), (1.1, 0.8), (-1.1, 0.8)]),
        Shape::Diamond => polygon(&[(0.0, -1.25), (1.25, 0.0), (0.0, 1.25), (-1.25, 0.0)]),
    }
    .attr("fill", fill)
    .attr("stroke", "#333")
    .attr("stroke-width", 1)
}

/// One SVG element with attributes and children (or text).
#[derive(Debug, Clone)]
pub struct Element {
    name: &'static str,
    attrs: String,
    content: String,
}

impl Element {
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            attrs: String::new(),
            content: String::new(),
        }
    }

    /// Adds `name="value"`, escaped.
    pub fn attr(mut self, name: &str, value: impl std::fmt::Display) -> Self {
        let _ = write!(self.attrs, " {name}=\"{}\"", escape(&value.to_string()));
        self
    }

    /// Adds a number attribute, rounded to 0.1 px so the markup stays short. A
    /// non-finite value (a sum that overflowed, 0/0) is written as 0: `NaN` or `inf` in
    /// an attribute makes browsers drop the element or the whole chart.
    pub fn num(self, name: &str, value: f64) -> Self {
        let value = if value.is_finite() { value } else { 0.0 };
        self.attr(name, format_args!("{:.1}", value))
    }

    /// Adds a child element.
    pub fn child(mut self, child: Element) -> Self {
        self.content.push_str(&child.to_string());
        self
    }

    /// Adds text content, escaped.
    pub fn text(mut self, text: &str) -> Self {
        self.content.push_str(&escape(text));
        self
    }

    /// A `<title>` child: the tooltip browsers show on hover.
    pub fn tooltip(self, text: &str) -> Self {
        self.child(Element::new("title").text(text))
    }
}

impl std::fmt::Display for Element {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.content.is_empty() {
            write!(f, "<{}{}/>", self.name, self.attrs)
        } else {
            write!(f, "<{0}{1}>{2}</{0}>", self.name, self.attrs, self.content)
        }
    }
}

/// An `<svg>` root of `width` x `height` user units that scales to its container.
pub fn document(id: &str, width: f64, height: f64, label: &str) -> Element {
    Element::new("svg")
        .attr("xmlns", "http://www.w3.org/2000/svg")
        .attr("id", id)
        .attr("viewBox", format_args!("0 0 {width} {height}"))
        .attr("role", "img")
        .attr("aria-label", label)
}

/// `<text>` at (x, y) with an anchor (`start`, `middle`, `end`).
pub fn text(x: f64, y: f64, anchor: &str, content: &str) -> Element {
    Element::new("text")
        .num("x", x)
        .num("y", y)
        .attr("text-anchor", anchor)
        .text(content)
}

/// `<line>` from (x1, y1) to (x2, y2) with a stroke colour.
pub fn line(x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str) -> Element {
    Element::new("line")
        .num("x1", x1)
        .num("y1", y1)
        .num("x2", x2)
        .num("y2", y2)
        .attr("stroke", stroke)
}

/// `<rect>` with a fill colour.
pub fn rect(x: f64, y: f64, width: f64, height: f64, fill: &str) -> Element {
    Element::new("rect")
        .num("x", x)
        .num("y", y)
        .num("width", width.max(0.0))
        .num("height", height.max(0.0))
        .attr("fill", fill)
}

/// Maps a data interval linearly onto a pixel interval.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub domain: (f64, f64),
    pub range: (f64, f64),
}

impl Scale {
    /// A scale over `[lo, hi]` widened to round tick values (an empty or inverted domain
    /// becomes `[lo, lo + 1]`).
    pub fn nice(lo: f64, hi: f64, range: (f64, f64)) -> Self {
        // Bounded well inside f64, so the widened domain and its ticks stay finite.
        let bound = |v: f64| {
            if v.is_nan() {
                0.0
            } else {
                v.clamp(-1e300, 1e300)
            }
        };
        let (lo, hi) = (bound(lo), bound(hi));
        let hi = if hi > lo { hi } else { lo + 1.0 };
        let step = tick_step(lo, hi);
        Self {
            domain: ((lo / step).floor() * step, (hi / step).ceil() * step),
            range,
        }
    }

    /// The pixel position of `value`.
    pub fn map(&self, value: f64) -> f64 {
        let (d0, d1) = self.domain;
        let (r0, r1) = self.range;
        r0 + (value - d0) / (d1 - d0) * (r1 - r0)
    }

    /// About five round values across the domain.
    pub fn ticks(&self) -> Vec<f64> {
        let (lo, hi) = self.domain;
        let step = tick_step(lo, hi);
        let first = (lo / step).ceil() as i64;
        let last = (hi / step).floor() as i64;
        (first..=last).map(|i| i as f64 * step).collect()
    }
}

/// Maps positive values onto a pixel interval by their logarithm, over whole decades.
#[derive(Debug, Clone, Copy)]
pub struct LogScale {
    /// Powers of ten: the lowest and highest value of the axis.
    pub domain: (f64, f64),
    /// The pixels `domain` maps onto.
    pub range: (f64, f64),
}

impl LogScale {
    /// The decades around `[lo, hi]` (both > 0; at least one decade). Values outside
    /// f64's normal range are clamped, so the ticks stay finite.
    pub fn decades(lo: f64, hi: f64, range: (f64, f64)) -> Self {
        let exponent = |v: f64| {
            if v.is_finite() && v > 0.0 {
                v.log10().clamp(-300.0, 300.0)
            } else {
                0.0
            }
        };
        let low = exponent(lo).floor();
        let high = exponent(hi).ceil().max(low + 1.0);
        Self {
            domain: (10f64.powf(low), 10f64.powf(high)),
            range,
        }
    }

    /// The pixel position of `value` (> 0).
    pub fn map(&self, value: f64) -> f64 {
        let (d0, d1) = (self.domain.0.log10(), self.domain.1.log10());
        let (r0, r1) = self.range;
        r0 + (value.log10() - d0) / (d1 - d0) * (r1 - r0)
    }

    /// Every power of ten of the domain and, over at most three decades, 2 and 5 times
    /// each.
    pub fn ticks(&self) -> Vec<f64> {
        let (low, high) = (
            self.domain.0.log10().round() as i32,
            self.domain.1.log10().round() as i32,
        );
        let steps: &[f64] = if high - low <= 3 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        let mut ticks = Vec::new();
        for exponent in low..=high {
            for step in steps {
                let tick = step * 10f64.powi(exponent);
                if tick <= self.domain.1 * (1.0 + 1e-9) {
                    ticks.push(tick);
                }
            }
        }
        ticks
    }
}

/// 1, 2 or 5 times a power of ten, giving about five steps over `[lo, hi]`.
fn tick_step(lo: f64, hi: f64) -> f64 {
    let raw = (hi - lo) / 5.0;
    let power = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|step| *step >= raw)
        .unwrap_or(10.0 * power)
}

/// Escapes text for XML attribute values and content.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_escape_attributes_and_text() {
        let el = rect(1.0, 2.04, 3.0, -1.0, "red")
            .attr("data-policy", "a\"<b>&")
            .tooltip("x < y");
        assert_eq!(
            el.to_string(),
            "<rect x=\"1.0\" y=\"2.0\" width=\"3.0\" height=\"0.0\" fill=\"red\" \
             data-policy=\"a&quot;&lt;b&gt;&amp;\"><title>x &lt; y</title></rect>"
        );
        assert_eq!(Element::new("g").to_string(), "<g/>");
    }

    #[test]
    fn scales_have_round_ticks() {
        let scale = Scale::nice(0.0, 0.0495, (0.0, 100.0));
        assert_eq!(scale.domain, (0.0, 0.05));
        assert_eq!(scale.ticks().len(), 6);
        assert!((scale.map(0.025) - 50.0).abs() < 1e-9);
        let empty = Scale::nice(3.0, 3.0, (0.0, 1.0));
        assert!(empty.domain.1 > empty.domain.0);
    }

    #[test]
    fn log_scales_span_whole_decades_with_round_ticks() {
        let scale = LogScale::decades(0.0004, 0.034, (0.0, 300.0));
        assert_eq!(scale.domain, (1e-4, 0.1));
        assert!((scale.map(1e-3) - 100.0).abs() < 1e-9);
        assert!((scale.map(1e-2) - 200.0).abs() < 1e-9);
        let ticks = scale.ticks();
        assert_eq!(ticks.len(), 10, "{ticks:?}");
        assert!((ticks[1] - 2e-4).abs() < 1e-12);
        let one = LogScale::decades(0.5, 0.5, (0.0, 1.0));
        assert_eq!(one.domain, (0.1, 1.0));
        let wide = LogScale::decades(1e-6, 10.0, (0.0, 1.0));
        assert_eq!(wide.ticks().len(), 8, "decades only");
        assert!(LogScale::decades(f64::NAN, f64::INFINITY, (0.0, 1.0))
            .ticks()
            .iter()
            .all(|t| t.is_finite()));
    }

    #[test]
    fn twenty_policies_get_twenty_colours_then_new_shapes() {
        let styles: Vec<_> = (0..40).map(policy_style).collect();
        for (i, a) in styles.iter().enumerate() {
            for b in &styles[i + 1..] {
                assert_ne!(a, b);
            }
        }
        let colours: std::collections::BTreeSet<_> = styles[..20].iter().map(|s| s.0).collect();
        assert_eq!(colours.len(), 20);
    }
}
