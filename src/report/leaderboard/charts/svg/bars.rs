//! Horizontal grouped bar charts: a row group per category, a bar per series. Rows grow
//! downwards, so long labels and many categories never collide.

use std::fmt::Write;

use crate::report::leaderboard::charts::svg::{
    Chart, MAX_SERIES, PAD, PALETTE, Scale, Tags, chart_head, escape, fit, mark_attrs, nice_ticks,
    placeholder, plot_frame, text_width, widest, x_axis,
};

#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub value: f64,
    pub err: Option<f64>,
    pub label: String,
    pub tooltip: String,
    pub tags: Tags,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BarSeries {
    pub name: String,
    pub values: Vec<Option<Bar>>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Category {
    pub label: String,
    pub badges: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct BarChart {
    pub id: String,
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    pub categories: Vec<Category>,
    /// At most [`MAX_SERIES`] are drawn.
    pub series: Vec<BarSeries>,
    pub empty: String,
    /// A scale shared with other charts, so that their bars compare by length.
    pub scale: Option<SharedScale>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SharedScale {
    pub group: String,
    pub max: f64,
}

impl SharedScale {
    /// The group's maximum rounded up, whatever a chart's width.
    pub fn end(&self) -> f64 {
        *nice_ticks(0.0, self.max, 5).last().expect("ticks")
    }
}

const LABEL_PX: f64 = 12.0;
const VALUE_PX: f64 = 11.0;
const BADGE_PX: f64 = 10.0;

fn badge_width(b: &str) -> f64 {
    text_width(b, BADGE_PX) + 10.0
}

impl Chart for BarChart {
    fn tags(&self) -> Tags {
        Tags::union(self.bars().map(|b| &b.tags))
    }

    fn render_at(&self, w: f64) -> String {
        if !self.has_data() {
            return placeholder(w, &self.id, &self.title, &self.empty);
        }
        let (mut o, y) = chart_head(w, &self.title, &self.subtitle, &self.legend_items());
        let top = y + 10.0;
        let label_col = self.label_column(w);
        let left = PAD + label_col + 10.0;
        let right = w - PAD - widest(self.bars().map(|b| &b.label), VALUE_PX) - 8.0;
        let (ticks, d1) = self.value_ticks(left, right);
        let x = Scale::over(&[0.0, d1], left, right);
        let rows = self.rows();
        let bottom = top + rows.heights.iter().sum::<f64>();
        o.push_str(&x_axis(&ticks, x, top, bottom, &self.x_label));
        o.push_str(&self.bar_rows(&rows, x, top, label_col));
        self.mark_scale(plot_frame(&self.id, &self.title, w, bottom, &o), d1)
    }
}

impl BarChart {
    pub fn has_data(&self) -> bool {
        self.series
            .iter()
            .any(|s| s.values.iter().any(Option::is_some))
    }

    fn series(&self) -> &[BarSeries] {
        &self.series[..self.series.len().min(MAX_SERIES)]
    }

    fn bars(&self) -> impl Iterator<Item = &Bar> {
        self.series().iter().flat_map(|s| s.values.iter().flatten())
    }

    /// A legend item per series, none when there is only one.
    fn legend_items(&self) -> Vec<(String, String)> {
        let series = self.series();
        (series.iter().enumerate())
            .filter(|_| series.len() > 1)
            .map(|(i, s)| (s.name.clone(), PALETTE[i].to_string()))
            .collect()
    }

    /// The label column: as wide as the widest label and its badges, at most 40 %.
    fn label_column(&self, w: f64) -> f64 {
        (self.categories.iter())
            .map(|c| text_width(&c.label, LABEL_PX) + badges_width(c) + 6.0)
            .fold(40.0, f64::max)
            .min(w * 0.4)
    }

    /// The value axis's ticks and its end, for bars drawn from `left` to `right`: the
    /// shared scale's end, or the chart's own round figure above its longest bar.
    fn value_ticks(&self, left: f64, right: f64) -> (Vec<f64>, f64) {
        let reach = |b: &Bar| b.value + b.err.unwrap_or(0.0);
        let max = self.bars().map(reach).fold(0.0, f64::max);
        let n_ticks = (((right - left) / 80.0) as usize).clamp(2, 8);
        let shared = self.scale.as_ref().map(|s| s.end().max(max));
        let mut ticks = nice_ticks(0.0, shared.unwrap_or(max), n_ticks);
        let end = shared.unwrap_or_else(|| *ticks.last().expect("ticks"));
        ticks.retain(|t| *t <= end * (1.0 + 1e-9));
        (ticks, end)
    }

    /// The row groups' layout. Each row holds only the bars it has, so a variant measured
    /// with one setting of five gets one bar, next to its label.
    fn rows(&self) -> Rows {
        let series = self.series();
        let bh = if series.len() > 1 { 16.0 } else { 20.0 };
        let present: Vec<Vec<usize>> = (0..self.categories.len())
            .map(|c| {
                (0..series.len())
                    .filter(|&si| matches!(series[si].values.get(c), Some(Some(_))))
                    .collect()
            })
            .collect();
        let heights = (present.iter())
            .map(|p| bh * p.len().max(1) as f64 + 12.0)
            .collect();
        Rows {
            bh,
            present,
            heights,
        }
    }

    /// The row groups from `top` down: each category's label and badges, then its bars.
    fn bar_rows(&self, rows: &Rows, x: Scale, top: f64, label_col: f64) -> String {
        let series = self.series();
        let varying = self.tags().varying();
        let mut o = String::from(r#"<g class="bars">"#);
        let mut gy = top + 6.0;
        for (c, cat) in self.categories.iter().enumerate() {
            let row_y = gy;
            gy += rows.heights[c];
            let cy = row_y + rows.bh * rows.present[c].len().max(1) as f64 / 2.0;
            o.push_str(&category_label(cat, x.r0, label_col, cy));
            for (slot, &si) in rows.present[c].iter().enumerate() {
                let Some(Some(b)) = series[si].values.get(c) else {
                    continue;
                };
                let y0 = row_y + rows.bh * slot as f64;
                o.push_str(&bar(b, PALETTE[si], x, y0, rows.bh, &varying));
            }
        }
        o.push_str("</g>");
        o
    }

    /// The shared scale's group and axis end on the `<svg>`, for the browser test to compare.
    fn mark_scale(&self, svg: String, end: f64) -> String {
        let Some(shared) = &self.scale else {
            return svg;
        };
        let group = escape(&shared.group);
        let marked =
            format!(r#"<svg class="chart" data-scale-group="{group}" data-scale="{end}" "#);
        svg.replacen(r#"<svg class="chart" "#, &marked, 1)
    }
}

/// A bar's height, the series present in each category (by index), each group's height.
struct Rows {
    bh: f64,
    present: Vec<Vec<usize>>,
    heights: Vec<f64>,
}

fn badges_width(c: &Category) -> f64 {
    c.badges.iter().map(|b| badge_width(b) + 4.0).sum::<f64>()
}

/// A category's label, right-aligned before the bars at `left` and shortened to fit the
/// label column, and its badges before it; `cy` is the row group's middle.
fn category_label(cat: &Category, left: f64, label_col: f64, cy: f64) -> String {
    let mut o = String::new();
    let room = label_col - badges_width(cat) - 6.0;
    let label = fit(&cat.label, LABEL_PX, room);
    let _ = write!(
        o,
        r#"<text class="cat" x="{:.1}" y="{:.1}" text-anchor="end"><title>{}</title>{}</text>"#,
        left - 10.0,
        cy + 4.0,
        escape(&cat.label),
        escape(&label)
    );
    let mut bx = left - 10.0 - text_width(&label, LABEL_PX) - 6.0;
    for b in &cat.badges {
        let w = badge_width(b);
        bx -= w;
        let _ = write!(
            o,
            r#"<g class="badge badge-{cls}"><rect x="{bx:.1}" y="{:.1}" width="{w:.1}" height="14" rx="7"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text></g>"#,
            cy - 7.0,
            bx + w / 2.0,
            cy + 3.5,
            escape(b),
            cls = escape(b)
        );
        bx -= 4.0;
    }
    o
}

/// One bar `bh` high at `y0`: its rectangle, its ± whisker if any, and its value after both.
fn bar(b: &Bar, color: &str, x: Scale, y0: f64, bh: f64, varying: &[&str]) -> String {
    let mut o = String::new();
    let left = x.r0;
    let x1 = x.at(b.value);
    let _ = write!(
        o,
        r#"<g class="bar"{}><title>{}</title><rect x="{left:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}" rx="2"/>"#,
        mark_attrs(&b.tags, varying),
        escape(&b.tooltip),
        y0 + 1.0,
        (x1 - left).max(0.5),
        bh - 2.0,
        color
    );
    let mid = y0 + bh / 2.0;
    let mut end = x1;
    if let Some(e) = b.err.filter(|e| *e > 0.0) {
        let (xa, xb) = (x.at((b.value - e).max(0.0)), x.at(b.value + e));
        let _ = write!(
            o,
            r#"<path class="err" d="M{xa:.1} {mid:.1}H{xb:.1}M{xa:.1} {:.1}v6M{xb:.1} {:.1}v6"/>"#,
            mid - 3.0,
            mid - 3.0
        );
        end = xb;
    }
    let _ = write!(
        o,
        r#"<text class="value" x="{:.1}" y="{:.1}">{}</text></g>"#,
        end + 5.0,
        mid + 4.0,
        escape(&b.label)
    );
    o
}

#[cfg(test)]
impl BarChart {
    /// At the page's full width (the unit tests; the page renders at its facet's width).
    pub fn render(&self) -> String {
        self.render_at(crate::report::leaderboard::charts::svg::W)
    }
}
