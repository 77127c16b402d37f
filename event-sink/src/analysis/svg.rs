//! Just enough SVG, written by hand: an element builder that escapes every attribute
//! and text, a linear scale with round tick values, and a colour palette.
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
}
