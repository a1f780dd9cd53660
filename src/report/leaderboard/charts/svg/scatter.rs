//! Scatter charts with optional lines (never joining two series). A point's label goes to
//! the first of eight spots around it that is free, or is left out (the tooltip has it).

use std::fmt::Write;

use crate::report::leaderboard::charts::svg::{
    Chart, MAX_SERIES, PAD, PALETTE, Rect, Scale, Tags, W, chart_head, escape, fit, mark_attrs,
    nice_ticks, placeholder, plot_frame, tick_labels, widest, x_axis,
};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub label: Option<String>,
    pub tooltip: String,
    pub tags: Tags,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScatterSeries {
    pub name: String,
    pub points: Vec<Point>,
    pub line: bool,
    pub color: Option<String>,
    /// Drawn thicker and on top, its labels placed first (the Pareto front).
    pub emphasis: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScatterChart {
    pub id: String,
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    pub y_label: String,
    /// At most [`MAX_SERIES`] are drawn.
    pub series: Vec<ScatterSeries>,
    pub x_zero: bool,
    pub y_zero: bool,
    pub empty: String,
}

const PLOT_H: f64 = 300.0;
type Spot = (f64, f64, &'static str);
const PLOT_H_NARROW: f64 = 240.0;
const LABEL_PX: f64 = 11.0;

fn bounds(v: impl Iterator<Item = f64>) -> (f64, f64) {
    v.filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        })
}

pub fn place_label(
    text: &str,
    cx: f64,
    cy: f64,
    area: &Rect,
    taken: &[Rect],
) -> Option<(f64, f64, &'static str, Rect)> {
    const SPOTS: [(f64, f64, &str); 8] = [
        (8.0, 4.0, "start"),
        (-8.0, 4.0, "end"),
        (0.0, -9.0, "middle"),
        (0.0, 18.0, "middle"),
        (6.0, -7.0, "start"),
        (-6.0, -7.0, "end"),
        (6.0, 16.0, "start"),
        (-6.0, 16.0, "end"),
    ];
    SPOTS.iter().find_map(|&(dx, dy, anchor)| {
        let (x, y) = (cx + dx, cy + dy);
        let r = Rect::text(text, x, y, LABEL_PX, anchor);
        (r.inside(area) && !taken.iter().any(|t| t.intersects(&r))).then_some((x, y, anchor, r))
    })
}

impl Chart for ScatterChart {
    fn tags(&self) -> Tags {
        Tags::union(self.points().map(|p| &p.tags))
    }

    fn render_at(&self, w: f64) -> String {
        if !self.has_data() {
            return placeholder(w, &self.id, &self.title, &self.empty);
        }
        let (mut o, y) = chart_head(w, &self.title, &self.subtitle, &self.legend_items());
        let top = y + 12.0;
        let plot_h = if w < W { PLOT_H_NARROW } else { PLOT_H };
        let bottom = top + plot_h;
        let ((x0, x1), (y0, y1)) = self.domain();
        let yt = nice_ticks(y0, y1, 5);
        let ylabels = tick_labels(&yt);
        let left = PAD + 18.0 + 8.0 + widest(&ylabels, 12.0) + 8.0;
        let y = Scale::over(&yt, bottom, top);
        o.push_str(&self.y_axis(&yt, &ylabels, y, left, w - PAD));
        let xt = nice_ticks(x0, x1, if w < W { 4 } else { 6 });
        let x = Scale::over(&xt, left, w - PAD);
        o.push_str(&x_axis(&xt, x, top, bottom, &self.x_label));
        o.push_str(&self.marks(x, y));
        plot_frame(&self.id, &self.title, w, bottom, &o)
    }
}

impl ScatterChart {
    pub fn has_data(&self) -> bool {
        self.series.iter().any(|s| !s.points.is_empty())
    }

    fn color(&self, i: usize) -> String {
        let s = &self.series[i];
        s.color.clone().unwrap_or_else(|| PALETTE[i].to_string())
    }

    fn drawn(&self) -> &[ScatterSeries] {
        &self.series[..self.series.len().min(MAX_SERIES)]
    }

    fn points(&self) -> impl Iterator<Item = &Point> {
        self.drawn().iter().flat_map(|s| s.points.iter())
    }

    fn legend_items(&self) -> Vec<(String, String)> {
        (0..self.drawn().len())
            .filter(|&i| !self.series[i].name.is_empty())
            .map(|i| (self.series[i].name.clone(), self.color(i)))
            .collect()
    }

    /// The ranges the axes must cover, (x0, x1) and (y0, y1): the data's, from zero where
    /// asked, with room around so that points and labels stay inside the axes.
    fn domain(&self) -> ((f64, f64), (f64, f64)) {
        // `room`: the share of the range added at each end (not below a zero start).
        let axis = |v: fn(&Point) -> f64, zero: bool, room: f64| {
            let (lo, hi) = bounds(self.points().map(v));
            let lo = if zero { lo.min(0.0) } else { lo };
            let pad = ((hi - lo) * room).max(1e-9);
            (if !zero || lo < 0.0 { lo - pad } else { lo }, hi + pad)
        };
        (
            axis(|p| p.x, self.x_zero, 0.06),
            axis(|p| p.y, self.y_zero, 0.08),
        )
    }

    /// Horizontal grid lines at the ticks `yt` (labelled `ylabels`), and the axis title.
    fn y_axis(&self, yt: &[f64], ylabels: &[String], y: Scale, left: f64, right: f64) -> String {
        let (top, bottom) = (y.r1, y.r0);
        let mut o = String::from(r#"<g class="axis y">"#);
        for (t, l) in yt.iter().zip(ylabels) {
            let py = y.at(*t);
            let _ = write!(
                o,
                r#"<line class="grid" x1="{left:.1}" x2="{right}" y1="{py:.1}" y2="{py:.1}"/><text x="{:.1}" y="{:.1}" text-anchor="end">{l}</text>"#,
                left - 8.0,
                py + 4.0
            );
        }
        let _ = write!(
            o,
            r#"<text class="label" transform="translate({} {:.1}) rotate(-90)" text-anchor="middle">{}</text></g>"#,
            PAD + 12.0,
            (top + bottom) / 2.0,
            escape(&fit(&self.y_label, 12.0, bottom - top))
        );
        o
    }

    /// The series' lines, points and labels. Emphasised series last, so they are drawn on
    /// top; their labels are placed first.
    fn marks(&self, x: Scale, y: Scale) -> String {
        let mut order: Vec<usize> = (0..self.drawn().len()).collect();
        order.sort_by_key(|&i| self.series[i].emphasis);
        let spots = self.place_labels(&order, x, y);
        let varying = self.tags().varying();
        (order.into_iter())
            .map(|i| self.series_marks(i, x, y, &spots[i], &varying))
            .collect()
    }

    /// Spots of the labels, per drawn series and point, placed in reverse `order` (the
    /// emphasised series first) where they touch no point and no label placed before.
    fn place_labels(&self, order: &[usize], x: Scale, y: Scale) -> Vec<Vec<Option<Spot>>> {
        let mut taken: Vec<Rect> = self
            .points()
            .map(|p| {
                let (cx, cy) = (x.at(p.x), y.at(p.y));
                Rect {
                    x0: cx - 6.0,
                    y0: cy - 6.0,
                    x1: cx + 6.0,
                    y1: cy + 6.0,
                }
            })
            .collect();
        let area = Rect {
            x0: x.r0 + 2.0,
            y0: y.r1 + 2.0,
            x1: x.r1 - 2.0,
            y1: y.r0 - 2.0,
        };
        let mut spots: Vec<Vec<Option<Spot>>> = (self.drawn().iter())
            .map(|s| vec![None; s.points.len()])
            .collect();
        for &i in order.iter().rev() {
            for (k, p) in self.series[i].points.iter().enumerate() {
                let Some(l) = p.label.as_deref() else {
                    continue;
                };
                if let Some((lx, ly, a, r)) = place_label(l, x.at(p.x), y.at(p.y), &area, &taken) {
                    taken.push(r);
                    spots[i][k] = Some((lx, ly, a));
                }
            }
        }
        spots
    }

    /// Series `i`: its line, if asked for, then each point, labelled where it has a spot.
    fn series_marks(
        &self,
        i: usize,
        x: Scale,
        y: Scale,
        spots: &[Option<Spot>],
        varying: &[&str],
    ) -> String {
        let s = &self.series[i];
        let c = self.color(i);
        let cls = if s.emphasis {
            "series emphasis"
        } else {
            "series"
        };
        let mut o = format!(r#"<g class="{cls}">"#);
        if s.line && s.points.len() > 1 {
            let d: Vec<String> = (s.points.iter())
                .map(|p| format!("{:.1},{:.1}", x.at(p.x), y.at(p.y)))
                .collect();
            let d = d.join(" ");
            let _ = write!(o, r#"<polyline points="{d}" fill="none" stroke="{c}"/>"#);
        }
        for (p, spot) in s.points.iter().zip(spots) {
            let _ = write!(
                o,
                r#"<g class="point"{}><title>{}</title><circle cx="{:.1}" cy="{:.1}" r="{}" fill="{c}"/>"#,
                mark_attrs(&p.tags, varying),
                escape(&p.tooltip),
                x.at(p.x),
                y.at(p.y),
                if s.emphasis { 5.5 } else { 4.5 }
            );
            if let (Some(l), Some((lx, ly, anchor))) = (&p.label, spot) {
                let _ = write!(
                    o,
                    r#"<text class="plabel" x="{lx:.1}" y="{ly:.1}" text-anchor="{anchor}">{}</text>"#,
                    escape(l)
                );
            }
            o.push_str("</g>");
        }
        o.push_str("</g>");
        o
    }
}

#[cfg(test)]
impl ScatterChart {
    /// At the page's full width (the unit tests; the page renders at its facet's width).
    pub fn render(&self) -> String {
        self.render_at(crate::report::leaderboard::charts::svg::W)
    }
}
