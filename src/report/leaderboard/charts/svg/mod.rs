//! The chart layer under every chart (`bars`, `scatter`): scales and ticks, text widths
//! (so labels can be placed where they collide with nothing), title, legend, axes and the
//! placeholder of a chart without data. Data in, SVG text out.

pub(crate) mod bars;
pub(crate) mod scatter;

use std::fmt::Write;

use crate::report::group_by;

/// Colour-blind-friendly palette (Observable 10's first 8: no colour repeats in a chart).
pub const PALETTE: [&str; 8] = [
    "#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#9c6b4e",
];
pub const MAX_SERIES: usize = PALETTE.len();
pub const ACCENT: &str = "#d9480f";
pub const MUTED: &str = "#adb5bd";

/// viewBox widths on wide screens and on phones: the page shows one, so text keeps its size.
pub const W: f64 = 720.0;
pub const W_NARROW: f64 = 360.0;
pub const PAD: f64 = 20.0;

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// What the page's filters select an element by: ("model", "SmolLM2-135M (llama)"),
/// ("machine", "0"), ...; a key may hold several values (a chart of two machines).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tags(pub Vec<(&'static str, String)>);

impl Tags {
    pub fn of<const N: usize>(pairs: [(&'static str, &str); N]) -> Tags {
        let mut t = Tags::default();
        for (k, v) in pairs {
            t.add(k, v);
        }
        t
    }

    pub fn filter_attrs(&self) -> String {
        crate::report::wrapped(" data-f", &self.attrs(), "")
    }

    /// Adds a pair, unless its value is empty or the pair is there.
    pub fn add(&mut self, key: &'static str, value: &str) {
        if !value.is_empty() && !self.0.iter().any(|(k, v)| *k == key && v == value) {
            self.0.push((key, value.to_string()));
        }
    }

    pub fn union<'a>(all: impl IntoIterator<Item = &'a Tags>) -> Tags {
        let mut t = Tags::default();
        for (k, v) in all.into_iter().flat_map(|x| &x.0) {
            t.add(k, v);
        }
        t
    }

    pub fn varying(&self) -> Vec<&'static str> {
        (group_by(&self.0, |(k, _)| *k).into_iter())
            .filter_map(|(k, pairs)| (pairs.len() > 1).then_some(k))
            .collect()
    }

    /// ` data-KEY="v1&#10;v2"` per key: the script splits on the line break, which no value holds.
    pub fn attrs(&self) -> String {
        let mut o = String::new();
        for (k, pairs) in group_by(&self.0, |(k, _)| *k) {
            let vs: Vec<String> = (pairs.iter())
                .map(|(_, v)| escape(&v.replace('\n', " ")))
                .collect();
            let _ = write!(o, r#" data-{k}="{}""#, vs.join("&#10;"));
        }
        o
    }
}

/// A mark's `data-m` attributes: only the tags that vary within its chart (the card's
/// settle the others, and a page of many machines stays smaller).
pub fn mark_attrs(t: &Tags, keys: &[&str]) -> String {
    let mut mine = t.clone();
    mine.0.retain(|(k, _)| keys.contains(k));
    crate::report::wrapped(" data-m", &mine.attrs(), "")
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

pub fn tick_labels(ticks: &[f64]) -> Vec<String> {
    let step = ticks.get(1).map_or(1.0, |t| t - ticks[0]);
    ticks.iter().map(|t| fmt_tick(*t, step)).collect()
}

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

/// Width of a character in em, at least DejaVu Sans's (among the widest), so that
/// estimated boxes contain the drawn text.
fn char_em(c: char) -> f64 {
    match c {
        'M' | 'W' | 'm' | 'w' | '%' | '@' | '…' | '—' => 1.0,
        '=' | '+' | '±' | '×' | '<' | '>' | '~' => 0.84,
        'I' | 'J' | 'i' | 'j' | 'l' | '\'' | '|' => 0.3,
        'f' | 't' | 'r' | ' ' | '.' | ',' | ':' | ';' | '/' | '(' | ')' | '-' | '·' => 0.42,
        'A'..='Z' => 0.79,
        c if c.is_ascii() => 0.64,
        _ => 1.0,
    }
}

/// Estimated width of `s` drawn at `px` pixels (bold: `px` × 1.1).
pub fn text_width(s: &str, px: f64) -> f64 {
    s.chars().map(char_em).sum::<f64>() * px
}

pub fn fit(s: &str, px: f64, max_w: f64) -> String {
    if text_width(s, px) <= max_w {
        return s.to_string();
    }
    let mut t: String = s.to_string();
    while !t.is_empty() && text_width(&t, px) + text_width("…", px) > max_w {
        t.pop();
    }
    t.push('…');
    t
}

/// Lines that fit `max_w` (a longer word shortened).
pub fn wrap(text: &str, px: f64, max_w: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(cur) if text_width(&format!("{cur} {word}"), px) <= max_w => {
                cur.push(' ');
                cur.push_str(word);
            }
            _ => lines.push(fit(word, px, max_w)),
        }
    }
    lines
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    /// The box of a text drawn at baseline `y`, anchored at `x` (`start`, `middle`, `end`).
    pub fn text(s: &str, x: f64, y: f64, px: f64, anchor: &str) -> Rect {
        let w = text_width(s, px);
        let x0 = match anchor {
            "end" => x - w,
            "middle" => x - w / 2.0,
            _ => x,
        };
        Rect {
            x0,
            y0: y - 0.95 * px,
            x1: x0 + w,
            y1: y + 0.27 * px,
        }
    }

    pub fn intersects(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    pub fn inside(&self, o: &Rect) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }
}

#[derive(Clone, Copy)]
pub struct Scale {
    pub d0: f64,
    pub d1: f64,
    pub r0: f64,
    pub r1: f64,
}

impl Scale {
    /// From the first tick to the last, drawn from `r0` to `r1`.
    pub fn over(ticks: &[f64], r0: f64, r1: f64) -> Scale {
        let (d0, d1) = (ticks[0], *ticks.last().expect("ticks"));
        Scale { d0, d1, r0, r1 }
    }

    pub fn at(&self, v: f64) -> f64 {
        let span = Some(self.d1 - self.d0).filter(|s| *s > 0.0).unwrap_or(1.0);
        self.r0 + (v - self.d0) / span * (self.r1 - self.r0)
    }
}

pub fn frame(id: &str, title: &str, w: f64, h: f64, body: &str) -> String {
    format!(
        r#"<svg class="chart" data-chart="{}" viewBox="0 0 {w} {h:.0}" role="img" aria-label="{}"><rect class="bg" x="0" y="0" width="{w}" height="{h:.0}" rx="10"/>{body}</svg>"#,
        escape(id),
        escape(title),
    )
}

/// Title (shortened to one line) and subtitle (wrapped); returns the SVG and the y below.
pub fn header(w: f64, title: &str, subtitle: &str) -> (String, f64) {
    let mut o = String::new();
    let mut lines = wrap(title, 16.0 * 1.1, w - 2.0 * PAD);
    if lines.len() > 2 {
        let rest = lines[1..].join(" ");
        lines.truncate(1);
        lines.push(fit(&rest, 16.0 * 1.1, w - 2.0 * PAD));
    }
    let mut y = 10.0;
    let _ = write!(o, r#"<text class="title"><title>{}</title>"#, escape(title));
    for line in &lines {
        y += 20.0;
        let _ = write!(o, r#"<tspan x="{PAD}" y="{y}">{}</tspan>"#, escape(line));
    }
    o.push_str("</text>");
    for line in wrap(subtitle, 12.0, w - 2.0 * PAD) {
        y += 18.0;
        let l = escape(&line);
        let _ = write!(o, r#"<text class="subtitle" x="{PAD}" y="{y}">{l}</text>"#);
    }
    (o, y + 12.0)
}

/// The `<svg>` of a plot ending at `bottom`, with room for the x axis below.
pub fn plot_frame(id: &str, title: &str, w: f64, bottom: f64, body: &str) -> String {
    frame(id, title, w, bottom + 54.0, body)
}

pub fn widest<S: AsRef<str>>(texts: impl IntoIterator<Item = S>, px: f64) -> f64 {
    let width = |t: S| text_width(t.as_ref(), px);
    texts.into_iter().map(width).fold(0.0, f64::max)
}

/// Title block and legend, its items laid out in rows from the left; returns the SVG and the
/// y below.
pub fn chart_head(
    w: f64,
    title: &str,
    subtitle: &str,
    items: &[(String, String)],
) -> (String, f64) {
    let (mut o, y0) = header(w, title, subtitle);
    if items.is_empty() {
        return (o, y0);
    }
    o.push_str(r#"<g class="legend">"#);
    let (mut x, mut y) = (PAD, y0 + 14.0);
    for (name, color) in items {
        let name = fit(name, 12.0, w - 2.0 * PAD - 20.0);
        let iw = 18.0 + text_width(&name, 12.0);
        if x + iw > w - PAD && x > PAD {
            x = PAD;
            y += 20.0;
        }
        let _ = write!(
            o,
            r#"<rect x="{x}" y="{}" width="12" height="12" rx="2" fill="{color}"/><text x="{}" y="{y}">{}</text>"#,
            y - 10.0,
            x + 17.0,
            escape(&name)
        );
        x += iw + 16.0;
    }
    o.push_str("</g>");
    (o, y + 10.0)
}

/// Grid lines and x tick labels (every other dropped until they do not touch), axis title.
pub fn x_axis(ticks: &[f64], x: Scale, top: f64, bottom: f64, label: &str) -> String {
    let labels = tick_labels(ticks);
    let label_w = widest(&labels, 12.0);
    let gap = (x.at(ticks.get(1).copied().unwrap_or(1.0)) - x.at(ticks[0])).abs();
    let every = (1..=ticks.len().max(1))
        .find(|k| gap * *k as f64 >= label_w + 10.0)
        .unwrap_or(ticks.len().max(1));
    let mut o = String::from(r#"<g class="axis x">"#);
    for (i, (t, l)) in ticks.iter().zip(&labels).enumerate() {
        let px = x.at(*t);
        let _ = write!(
            o,
            r#"<line class="grid" x1="{px:.1}" x2="{px:.1}" y1="{top:.1}" y2="{bottom:.1}"/>"#
        );
        if i % every == 0 {
            let _ = write!(
                o,
                r#"<text x="{px:.1}" y="{:.1}" text-anchor="middle">{l}</text>"#,
                bottom + 18.0
            );
        }
    }
    let _ = write!(
        o,
        r#"<text class="label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><line class="axis-line" x1="{:.1}" x2="{:.1}" y1="{bottom:.1}" y2="{bottom:.1}"/></g>"#,
        (x.r0 + x.r1) / 2.0,
        bottom + 40.0,
        escape(label),
        x.r0,
        x.r1
    );
    o
}

pub fn placeholder(w: f64, id: &str, title: &str, message: &str) -> String {
    let (mut body, top) = header(w, title, "");
    let lines = wrap(message, 14.0, w - 2.0 * PAD - 20.0);
    let h = (lines.len() as f64 * 20.0 + 60.0).max(160.0);
    let _ = write!(
        body,
        r#"<g class="empty"><rect x="{PAD}" y="{top}" width="{}" height="{h}" rx="8"/><text x="{}" y="{:.1}" text-anchor="middle">"#,
        w - 2.0 * PAD,
        w / 2.0,
        top + h / 2.0 - (lines.len() as f64 - 1.0) * 10.0 + 5.0,
    );
    for (i, l) in lines.iter().enumerate() {
        let (x, dy, l) = (w / 2.0, if i == 0 { 0.0 } else { 20.0 }, escape(l));
        let _ = write!(body, r#"<tspan x="{x}" dy="{dy}">{l}</tspan>"#);
    }
    body.push_str("</text></g>");
    frame(id, title, w, top + h + PAD, &body)
}

/// A chart as the page shows it: drawn at a width, tagged with all it draws.
pub trait Chart {
    fn tags(&self) -> Tags;
    fn render_at(&self, w: f64) -> String;
}

/// Each chart in a card, drawn wide and narrow (CSS shows the one that fits), tagged with
/// all it draws so that a filter hides the cards that draw none of what it selects.
pub fn cards<C: Chart>(charts: &[C]) -> String {
    let card = |c: &C| {
        format!(
            r#"<div class="card chart-card"{}><div class="wide">{}</div><div class="narrow">{}</div></div>"#,
            c.tags().filter_attrs(),
            c.render_at(W),
            c.render_at(W_NARROW)
        )
    };
    charts.iter().map(card).collect()
}

#[cfg(test)]
mod tests;
