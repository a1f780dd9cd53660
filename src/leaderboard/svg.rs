//! A tiny SVG chart writer: grouped bar charts and scatter charts with optional lines, with
//! axes, ticks, labels, a legend and a `<title>` tooltip on every mark. Pure: data in, SVG
//! text out. Charts scale to their container (viewBox, no fixed size) and use the page's
//! font; a chart with no data renders a placeholder that says how to produce some.

use std::fmt::Write;

/// Colour-blind-friendly categorical palette (Observable 10).
pub const PALETTE: [&str; 10] = [
    "#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5",
    "#9c6b4e", "#9498a0",
];
/// Highlight colour (the Pareto front) and the colour of de-emphasised marks.
pub const ACCENT: &str = "#d9480f";
pub const MUTED: &str = "#adb5bd";

const W: f64 = 720.0;
const H: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 24.0;
const BOTTOM: f64 = 64.0;

/// Escapes text for SVG/HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// About `n` round tick values covering [lo, hi] (steps of 1, 2, 2.5 or 5 × 10^k).
pub fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else if hi == 0.0 {
        (0.0, 1.0)
    } else {
        (lo - lo.abs() * 0.5, hi + hi.abs() * 0.5)
    };
    let rough = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).floor() as i64;
    let last = (hi / step).ceil() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// A tick label: as many decimals as the tick step needs (0, 50, 100 or 0.25, 0.50).
pub fn fmt_tick(v: f64, step: f64) -> String {
    let d = (0..=8usize)
        .find(|&d| {
            let x = step * 10f64.powi(d as i32);
            (x - x.round()).abs() < 1e-6 * x.abs().max(1.0)
        })
        .unwrap_or(8);
    format!("{v:.d$}")
}

fn step_of(ticks: &[f64]) -> f64 {
    if ticks.len() > 1 {
        ticks[1] - ticks[0]
    } else {
        1.0
    }
}

/// A number as a value label: fewer decimals for larger values.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.2}")
    } else {
        let digits = (-a.log10().floor()) as usize + 1;
        format!("{v:.digits$}")
    }
}

/// One bar: its height, optional ± error, and the tooltip text.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub value: f64,
    pub err: Option<f64>,
    pub tooltip: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BarSeries {
    pub name: String,
    /// One per category; `None` leaves a gap.
    pub values: Vec<Option<Bar>>,
}

/// Grouped bars: one group per category, one bar per series.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    pub id: String,
    pub title: String,
    pub subtitle: String,
    pub y_label: String,
    pub categories: Vec<String>,
    pub series: Vec<BarSeries>,
    /// Placeholder text when there is no bar.
    pub empty: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    /// Short text drawn beside the point.
    pub label: Option<String>,
    pub tooltip: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScatterSeries {
    pub name: String,
    pub points: Vec<Point>,
    /// Join the points, in the given order, with a line.
    pub line: bool,
    /// Colour override (else the palette in series order).
    pub color: Option<String>,
    /// Drawn thicker and on top (the Pareto front).
    pub emphasis: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScatterChart {
    pub id: String,
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<ScatterSeries>,
    /// Start the axes at zero (rates) rather than at the data's minimum.
    pub x_zero: bool,
    pub y_zero: bool,
    pub empty: String,
}

/// Linear map of a domain onto a pixel range.
#[derive(Clone, Copy)]
struct Scale {
    d0: f64,
    d1: f64,
    r0: f64,
    r1: f64,
}

impl Scale {
    fn at(&self, v: f64) -> f64 {
        let span = if self.d1 > self.d0 {
            self.d1 - self.d0
        } else {
            1.0
        };
        self.r0 + (v - self.d0) / span * (self.r1 - self.r0)
    }
}

fn open(out: &mut String, id: &str, title: &str, subtitle: &str) {
    let _ = write!(
        out,
        r#"<svg class="chart" data-chart="{}" viewBox="0 0 {W} {H}" role="img" aria-label="{}"><rect class="bg" x="0" y="0" width="{W}" height="{H}" rx="10"/><text class="title" x="20" y="30">{}</text><text class="subtitle" x="20" y="50">{}</text>"#,
        escape(id),
        escape(title),
        escape(title),
        escape(subtitle)
    );
}

/// The placeholder chart: same frame, a message where the data would be.
pub fn placeholder(id: &str, title: &str, message: &str) -> String {
    let mut o = String::new();
    open(&mut o, id, title, "");
    let _ = write!(
        o,
        r#"<g class="empty"><rect x="{x}" y="80" width="{w}" height="{h}" rx="8"/><text x="{cx}" y="{cy}" text-anchor="middle">{msg}</text></g></svg>"#,
        x = LEFT,
        w = W - LEFT - RIGHT,
        h = H - 80.0 - BOTTOM,
        cx = (W + LEFT - RIGHT) / 2.0,
        cy = (H - BOTTOM + 80.0) / 2.0,
        msg = wrap_tspans(message, (W + LEFT - RIGHT) / 2.0, 78)
    );
    o
}

/// Splits a message into centred lines of at most `width` characters.
fn wrap_tspans(text: &str, x: f64, width: usize) -> String {
    let mut lines: Vec<String> = vec![String::new()];
    for word in text.split_whitespace() {
        let cur = lines.last_mut().expect("one line");
        if !cur.is_empty() && cur.len() + 1 + word.len() > width {
            lines.push(word.to_string());
        } else {
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(word);
        }
    }
    let n = lines.len() as f64;
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let dy = if i == 0 { -(n - 1.0) * 0.6 } else { 1.2 };
            format!(r#"<tspan x="{x}" dy="{dy:.1}em">{}</tspan>"#, escape(l))
        })
        .collect()
}

/// Legend items laid out in rows from the left; returns the y below the legend.
fn legend(out: &mut String, items: &[(String, String)], y0: f64) -> f64 {
    let mut x = 20.0;
    let mut y = y0;
    out.push_str(r#"<g class="legend">"#);
    for (name, color) in items {
        let w = 26.0 + name.chars().count() as f64 * 6.8;
        if x + w > W - RIGHT && x > 20.0 {
            x = 20.0;
            y += 18.0;
        }
        let _ = write!(
            out,
            r#"<rect x="{x}" y="{}" width="12" height="12" rx="2" fill="{color}"/><text x="{}" y="{}">{}</text>"#,
            y - 10.0,
            x + 17.0,
            y,
            escape(name)
        );
        x += w + 10.0;
    }
    out.push_str("</g>");
    if items.is_empty() { y0 - 10.0 } else { y + 8.0 }
}

/// Horizontal grid lines and y tick labels; returns the y scale.
fn y_axis(out: &mut String, lo: f64, hi: f64, top: f64, label: &str) -> Scale {
    let ticks = nice_ticks(lo, hi, 5);
    let (t0, t1) = (ticks[0], *ticks.last().expect("ticks"));
    let s = Scale {
        d0: t0,
        d1: t1,
        r0: H - BOTTOM,
        r1: top,
    };
    let step = step_of(&ticks);
    out.push_str(r#"<g class="axis y">"#);
    for t in &ticks {
        let y = s.at(*t);
        let _ = write!(
            out,
            r#"<line class="grid" x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            W - RIGHT,
            LEFT - 8.0,
            y + 4.0,
            fmt_tick(*t, step)
        );
    }
    let my = (top + H - BOTTOM) / 2.0;
    let _ = write!(
        out,
        r#"<text class="label" transform="translate(18 {my:.1}) rotate(-90)" text-anchor="middle">{}</text></g>"#,
        escape(label)
    );
    s
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

impl BarChart {
    pub fn has_data(&self) -> bool {
        self.series
            .iter()
            .any(|s| s.values.iter().any(Option::is_some))
    }

    pub fn render(&self) -> String {
        if !self.has_data() {
            return placeholder(&self.id, &self.title, &self.empty);
        }
        let mut o = String::new();
        open(&mut o, &self.id, &self.title, &self.subtitle);
        let items: Vec<(String, String)> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.clone(), PALETTE[i % PALETTE.len()].to_string()))
            .collect();
        let top = legend(&mut o, &items, 74.0) + 16.0;
        let max = self
            .series
            .iter()
            .flat_map(|s| s.values.iter().flatten())
            .map(|b| b.value + b.err.unwrap_or(0.0))
            .fold(0.0, f64::max);
        let y = y_axis(&mut o, 0.0, max * 1.08, top, &self.y_label);
        let n = self.categories.len().max(1) as f64;
        let group = (W - LEFT - RIGHT) / n;
        let ns = self.series.len().max(1) as f64;
        let bw = (group * 0.72 / ns).min(64.0);
        let max_chars = ((group / 7.0) as usize).max(4);
        o.push_str(r#"<g class="bars">"#);
        for (c, cat) in self.categories.iter().enumerate() {
            let gx = LEFT + group * c as f64 + (group - bw * ns) / 2.0;
            for (si, s) in self.series.iter().enumerate() {
                let Some(Some(b)) = s.values.get(c) else {
                    continue;
                };
                let x = gx + bw * si as f64;
                let (y0, y1) = (y.at(0.0), y.at(b.value));
                let color = PALETTE[si % PALETTE.len()];
                let _ = write!(
                    o,
                    r#"<g class="bar"><title>{}</title><rect x="{x:.1}" y="{y1:.1}" width="{:.1}" height="{:.1}" fill="{color}" rx="2"/>"#,
                    escape(&b.tooltip),
                    (bw - 2.0).max(1.0),
                    (y0 - y1).max(0.5)
                );
                let cx = x + (bw - 2.0) / 2.0;
                let mut label_y = y1 - 5.0;
                if let Some(e) = b.err.filter(|e| *e > 0.0) {
                    let (ya, yb) = (y.at(b.value - e), y.at(b.value + e));
                    let _ = write!(
                        o,
                        r#"<path class="err" d="M{cx:.1} {ya:.1}V{yb:.1}M{:.1} {yb:.1}h8M{:.1} {ya:.1}h8"/>"#,
                        cx - 4.0,
                        cx - 4.0
                    );
                    label_y = yb - 5.0;
                }
                let _ = write!(
                    o,
                    r#"<text class="value" x="{cx:.1}" y="{label_y:.1}" text-anchor="middle">{}</text></g>"#,
                    fmt_num(b.value)
                );
            }
            let _ = write!(
                o,
                r#"<text class="cat" x="{:.1}" y="{:.1}" text-anchor="middle"><title>{}</title>{}</text>"#,
                LEFT + group * (c as f64 + 0.5),
                H - BOTTOM + 20.0,
                escape(cat),
                escape(&truncate(cat, max_chars))
            );
        }
        let _ = write!(
            o,
            r#"</g><line class="axis-line" x1="{LEFT}" x2="{}" y1="{:.1}" y2="{:.1}"/></svg>"#,
            W - RIGHT,
            H - BOTTOM,
            H - BOTTOM
        );
        o
    }
}

impl ScatterChart {
    pub fn has_data(&self) -> bool {
        self.series.iter().any(|s| !s.points.is_empty())
    }

    pub fn render(&self) -> String {
        if !self.has_data() {
            return placeholder(&self.id, &self.title, &self.empty);
        }
        let mut o = String::new();
        open(&mut o, &self.id, &self.title, &self.subtitle);
        let color = |i: usize, s: &ScatterSeries| {
            s.color
                .clone()
                .unwrap_or_else(|| PALETTE[i % PALETTE.len()].to_string())
        };
        let items: Vec<(String, String)> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.clone(), color(i, s)))
            .collect();
        let top = legend(&mut o, &items, 74.0) + 16.0;
        let pts = || self.series.iter().flat_map(|s| s.points.iter());
        let (mut x0, mut x1) = bounds(pts().map(|p| p.x));
        let (mut y0, mut y1) = bounds(pts().map(|p| p.y));
        if self.x_zero {
            x0 = x0.min(0.0);
        }
        if self.y_zero {
            y0 = y0.min(0.0);
        }
        // Room around the data so points and labels stay inside the axes.
        let (px, py) = (((x1 - x0) * 0.06).max(1e-9), ((y1 - y0) * 0.08).max(1e-9));
        if !self.x_zero || x0 < 0.0 {
            x0 -= px;
        }
        if !self.y_zero || y0 < 0.0 {
            y0 -= py;
        }
        x1 += px;
        y1 += py;
        let y = y_axis(&mut o, y0, y1, top, &self.y_label);
        let xt = nice_ticks(x0, x1, 6);
        let x = Scale {
            d0: xt[0],
            d1: *xt.last().expect("ticks"),
            r0: LEFT,
            r1: W - RIGHT,
        };
        let step = step_of(&xt);
        o.push_str(r#"<g class="axis x">"#);
        for t in &xt {
            let px = x.at(*t);
            let _ = write!(
                o,
                r#"<line class="grid" x1="{px:.1}" x2="{px:.1}" y1="{top:.1}" y2="{:.1}"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                H - BOTTOM,
                H - BOTTOM + 18.0,
                fmt_tick(*t, step)
            );
        }
        let _ = write!(
            o,
            r#"<text class="label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text></g>"#,
            (LEFT + W - RIGHT) / 2.0,
            H - 14.0,
            escape(&self.x_label)
        );
        // Emphasised series last, so they are drawn on top.
        let mut order: Vec<usize> = (0..self.series.len()).collect();
        order.sort_by_key(|&i| self.series[i].emphasis);
        for i in order {
            let s = &self.series[i];
            let c = color(i, s);
            let cls = if s.emphasis {
                "series emphasis"
            } else {
                "series"
            };
            let _ = write!(o, r#"<g class="{cls}">"#);
            if s.line && s.points.len() > 1 {
                let d: Vec<String> = s
                    .points
                    .iter()
                    .map(|p| format!("{:.1},{:.1}", x.at(p.x), y.at(p.y)))
                    .collect();
                let _ = write!(
                    o,
                    r#"<polyline points="{}" fill="none" stroke="{c}"/>"#,
                    d.join(" ")
                );
            }
            for p in &s.points {
                let (cx, cy) = (x.at(p.x), y.at(p.y));
                let _ = write!(
                    o,
                    r#"<g class="point"><title>{}</title><circle cx="{cx:.1}" cy="{cy:.1}" r="{}" fill="{c}"/>"#,
                    escape(&p.tooltip),
                    if s.emphasis { 5.5 } else { 4.5 }
                );
                if let Some(l) = &p.label {
                    // Labels left of points near the right edge, so they stay readable.
                    let (lx, anchor) = if cx > W - RIGHT - 90.0 {
                        (cx - 8.0, "end")
                    } else {
                        (cx + 8.0, "start")
                    };
                    let _ = write!(
                        o,
                        r#"<text class="plabel" x="{lx:.1}" y="{:.1}" text-anchor="{anchor}">{}</text>"#,
                        cy - 7.0,
                        escape(l)
                    );
                }
                o.push_str("</g>");
            }
            o.push_str("</g>");
        }
        let _ = write!(
            o,
            r#"<line class="axis-line" x1="{LEFT}" x2="{}" y1="{:.1}" y2="{:.1}"/></svg>"#,
            W - RIGHT,
            H - BOTTOM,
            H - BOTTOM
        );
        o
    }
}

fn bounds(v: impl Iterator<Item = f64>) -> (f64, f64) {
    v.filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        })
}

#[cfg(test)]
#[path = "svg_tests.rs"]
mod tests;
