//! The line charts: serving (per-request against aggregate t/s) and t/s against depth. A
//! line never joins points of different models, workloads or settings.

use crate::plan::TestKind;
use crate::report::leaderboard::charts::facet::{self, Facet, Panel, split};
use crate::report::leaderboard::charts::parts::{describe, empty_scatter, or_empty};
use crate::report::leaderboard::charts::svg::scatter::{Point, ScatterChart, ScatterSeries};
use crate::report::leaderboard::charts::svg::{MAX_SERIES, fmt_num};
use crate::report::leaderboard::load::entry::{Entry, is_speed, kind_word, tags_of, ts};
use crate::report::leaderboard::load::{Board, machine_names};
use crate::report::wrapped;

pub const NO_SERVING: &str = "no data in these results (run serving tests, e.g. n_parallel = [1, 2, 4, 8], which record tests[].serving, to produce it)";
pub const NO_DEPTH: &str = "no data in these results (run a sweep with n_depth values above 0, e.g. n_depth = [0, 512, 2048], to produce it)";

/// A serving test's name without the point's own figures (`B4`, `pps`, `0.5/s`).
fn workload(name: &str) -> String {
    let kept = |w: &&str| {
        let b_n = w
            .strip_prefix('B')
            .is_some_and(|n| n.parse::<u32>().is_ok());
        !b_n && *w != "pps" && !w.ends_with("/s")
    };
    let words: Vec<&str> = name.split_whitespace().filter(kept).collect();
    words.join(" ")
}

fn scatter_of(
    id: String,
    title: String,
    subtitle: String,
    axes: (&str, &str),
    p: Panel<(Point, f64)>,
) -> ScatterChart {
    ScatterChart {
        id,
        title,
        subtitle,
        x_label: axes.0.into(),
        y_label: axes.1.into(),
        series: (p.series.into_iter())
            .map(|s| {
                let mut pts = s.items;
                pts.sort_by(|a, b| a.1.total_cmp(&b.1));
                ScatterSeries {
                    name: s.label,
                    points: pts.into_iter().map(|(p, _)| p).collect(),
                    line: true,
                    ..Default::default()
                }
            })
            .collect(),
        x_zero: true,
        y_zero: true,
        ..Default::default()
    }
}

/// Per-request against aggregate decode t/s of serving tests, points labelled by B or rate.
pub fn serving(b: &Board) -> Vec<ScatterChart> {
    let names = machine_names(b);
    let mut items: Vec<(Vec<Facet>, (Point, f64))> = Vec::new();
    for e in &b.entries {
        let Some(s) = e.serving() else { continue };
        let per_request = s.per_request_ts.unwrap_or(0.0);
        let aggregate = s.aggregate_ts.unwrap_or(0.0);
        let (label, order) = match (e.test.kind, s.arrival_rate) {
            (TestKind::Arrival, Some(r)) => (format!("{}/s", fmt_num(r)), r),
            _ => (format!("B={}", s.n_parallel), s.n_parallel as f64),
        };
        let mut f = facet::identity(e, &names[e.machine]);
        f.push(Facet::plain("workload", workload(&e.test.test)));
        let prompts = match (e.test.kind.as_str(), s.shared_prompt) {
            ("parallel", true) => "shared prompt",
            ("parallel", false) => "separate prompts",
            _ => "",
        };
        f.push(Facet::plain("prompts", prompts));
        f.extend(facet::settings(e));
        let point = Point {
            x: per_request,
            y: aggregate,
            label: Some(label),
            tooltip: format!(
                "{} {} {}: {} t/s per request, {} t/s aggregate",
                e.test.model,
                e.quant,
                e.test.test,
                fmt_num(per_request),
                fmt_num(aggregate)
            ),
            tags: tags_of(e),
        };
        items.push((f, (point, order)));
    }
    let mut charts = Vec::new();
    for p in split(items, MAX_SERIES) {
        let subtitle = format!(
            "{}points labelled by parallel sequences (B) or arrival rate",
            wrapped("", &p.describe(&[]), " · ")
        );
        charts.push(scatter_of(
            format!("serving-{}", charts.len()),
            "Per-request against aggregate decode t/s".into(),
            subtitle,
            ("decode t/s per request", "aggregate decode t/s"),
            p,
        ));
    }
    let title = "Per-request against aggregate t/s";
    or_empty(charts, empty_scatter("serving", title, NO_SERVING))
}

/// t/s against context depth, for what was measured above depth 0; prefill and decode
/// apart (their rates differ tenfold).
pub fn depth(b: &Board) -> Vec<ScatterChart> {
    let names = machine_names(b);
    let mut charts = Vec::new();
    for kind in [TestKind::Pp, TestKind::Tg, TestKind::Pg] {
        let es: Vec<&Entry> = (b.entries.iter())
            .filter(|e| is_speed(e) && e.test.kind == kind)
            .collect();
        let facets = |e: &Entry| {
            let mut f = facet::identity(e, &names[e.machine]);
            let base = e.test.test.split(" @ ").next().unwrap_or("").to_string();
            f.push(Facet::plain("test", base));
            f.extend(facet::settings(e));
            f
        };
        // Only lines that reach beyond depth 0.
        let deep: Vec<Vec<Facet>> = (es.iter().filter(|e| e.test.params.n_depth > 0))
            .map(|e| facets(e))
            .collect();
        let items: Vec<(Vec<Facet>, (Point, f64))> = (es.iter())
            .map(|e| (facets(e), *e))
            .filter(|(f, _)| deep.contains(f))
            .map(|(f, e)| {
                let d = f64::from(e.test.params.n_depth);
                let point = Point {
                    x: d,
                    y: ts(e),
                    label: None,
                    tooltip: describe(e),
                    tags: tags_of(e),
                };
                (f, (point, d))
            })
            .collect();
        let word = kind_word(kind);
        for p in split(items, MAX_SERIES) {
            let mut title = format!(
                "{}{} t/s against context depth",
                word[..1].to_uppercase(),
                &word[1..]
            );
            if let (Some(m), Some(q)) = (p.fixed("model"), p.fixed("quant")) {
                let name = if m.text.contains(&q.text) {
                    m.text.clone()
                } else {
                    format!("{} {}", m.text, q.text)
                };
                title = format!("{name}: {title}");
            }
            let subtitle = format!(
                "{}tokens already in the context before the timed test",
                wrapped("", &p.describe(&["model", "quant"]), " · ")
            );
            charts.push(scatter_of(
                format!("depth-{}", charts.len()),
                title,
                subtitle,
                (
                    "depth (tokens in context)",
                    &format!("{word} tokens per second"),
                ),
                p,
            ));
        }
    }
    let title = "t/s against context depth";
    or_empty(charts, empty_scatter("depth", title, NO_DEPTH))
}

#[cfg(test)]
mod tests {
    use super::workload;

    #[test]
    fn workloads_drop_the_points_own_figures() {
        assert_eq!(
            workload("parallel pp128+tg64 B4 pps"),
            "parallel pp128+tg64"
        );
        assert_eq!(
            workload("arrival prompts.jsonl 0.5/s slots4"),
            "arrival prompts.jsonl slots4"
        );
        assert_eq!(workload("request prompts.jsonl"), "request prompts.jsonl");
    }
}
