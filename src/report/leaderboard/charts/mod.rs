//! The charts of the page, built from the board (pure): what each chart draws (quality
//! against speed here; `quant`, `lines`, `machines`), drawn by `svg`. What a chart shows
//! is chosen by the test's kind (`TestRecord.kind`). A chart never mixes settings silently:
//! bars of one chart share threads, batch sizes, flash attention and KV types (other
//! settings get their own chart, named in its subtitle), and lines are split into small
//! multiples of at most eight series. Each section yields at least one chart: a
//! placeholder that says what to run when the results hold no data for it.

pub(crate) mod facet;
pub(crate) mod lines;
pub(crate) mod machines;
pub(crate) mod parts;
pub(crate) mod quant;

use super::entry::{Entry, plain_d0, tags_of, ts};
use super::load::{Board, machine_names};
use super::svg::scatter::{Point, ScatterChart, ScatterSeries};
use super::svg::{ACCENT, MUTED, fmt_num};
use crate::plan::TestKind;
use facet::Facet;
use parts::{describe, empty_scatter, group_by, variant_label};

/// Placeholder messages: what to run to get each chart.
pub const NO_PARETO: &str = "no data in these results (run a KLD quality measurement of quantized variants against their reference, which records models[].quality.kld_mean, together with tg tests, to produce it)";

/// Indices on the front of figures with intervals: ties stay on it together.
pub fn on_front(points: &[(crate::stats::ties::Figure, crate::stats::ties::Figure)]) -> Vec<usize> {
    crate::stats::ties::pareto_front(points)
        .into_iter()
        .enumerate()
        .filter_map(|(i, on)| on.then_some(i))
        .collect()
}

/// The decode speed of an entry with the 95% interval its test records (between rounds,
/// or within one launch), and its KLD ± 1.96 standard errors.
fn speed_and_kld(e: &Entry) -> (crate::stats::ties::Figure, crate::stats::ties::Figure) {
    use crate::stats::ties::Figure;
    let v = ts(e);
    let speed = match e.test.stats.as_ref().and_then(|s| s.interval) {
        Some(ci) => Figure {
            value: v,
            lo: ci.lo,
            hi: ci.hi,
        },
        None => Figure::point(v),
    };
    let kld = e.model.kld_mean.unwrap_or(0.0);
    let half = 1.96 * e.model.kld_uncertainty.unwrap_or(0.0);
    (speed, Figure::around(kld, half))
}

/// The settings texts of a group: threads always, the others where some group of the same
/// chart section differs (so that two charts of one model say what sets them apart).
fn settings_text(e: &Entry, differing: &[&str]) -> String {
    facet::settings(e)
        .into_iter()
        .filter(|f| f.key == "threads" || differing.contains(&f.key))
        .map(|f| f.text)
        .collect::<Vec<_>>()
        .join(" · ")
}

/// Settings keys whose value differs between any two of these entries.
fn differing_settings<'a>(es: impl Iterator<Item = &'a Entry>) -> Vec<&'static str> {
    let all: Vec<Vec<Facet>> = es.map(facet::settings).collect();
    let Some(first) = all.first() else {
        return vec![];
    };
    (0..first.len())
        .filter(|&j| all.iter().any(|s| s[j].value != first[j].value))
        .map(|j| first[j].key)
        .collect()
}

fn settings_key(e: &Entry) -> Vec<String> {
    facet::settings(e).into_iter().map(|f| f.value).collect()
}

/// (b) Quality against speed: x decode t/s, y KLD to the reference; the Pareto front (variants
/// not beaten on both) highlighted. One chart per machine, reference model and settings.
pub fn quality_vs_speed(b: &Board) -> Vec<ScatterChart> {
    let names = machine_names(b);
    let es: Vec<&Entry> = b
        .entries
        .iter()
        .filter(|e| plain_d0(e, TestKind::Tg) && e.model.kld_mean.is_some())
        .collect();
    let differing = differing_settings(es.iter().copied());
    let reference = |e: &Entry| {
        e.model
            .quality_reference
            .clone()
            .unwrap_or_else(|| e.test.model.clone())
    };
    let mut charts = Vec::new();
    for ((m, reference, _), group) in group_by(es.into_iter(), |e| {
        (e.machine, reference(e), settings_key(e))
    }) {
        let best = fastest_per_variant(group);
        let requantized = best
            .iter()
            .any(|e| e.badges.iter().any(|x| x == "requantized"));
        let (others, front) = front_points(&best, &reference);
        charts.push(ScatterChart {
            id: format!("quality-vs-speed-{}", charts.len()),
            title: format!("Quality against speed (KLD vs {reference})"),
            subtitle: format!(
                "{} · {} · lower KLD and more t/s are better{}",
                names[m],
                settings_text(best[0], &differing),
                if requantized {
                    " · requantized variants carry their base's error too"
                } else {
                    ""
                }
            ),
            x_label: "decode tokens per second".into(),
            y_label: "mean KLD to the reference".into(),
            series: vec![
                ScatterSeries {
                    name: "beaten on both".into(),
                    points: others,
                    line: false,
                    color: Some(MUTED.into()),
                    emphasis: false,
                },
                ScatterSeries {
                    name: "Pareto front".into(),
                    points: front,
                    line: true,
                    color: Some(ACCENT.into()),
                    emphasis: true,
                },
            ],
            x_zero: false,
            y_zero: true,
            empty: NO_PARETO.into(),
        });
    }
    if charts.is_empty() {
        charts.push(empty_scatter(
            "quality-vs-speed",
            "Quality against speed",
            NO_PARETO,
        ));
    }
    charts
}

/// The fastest decode test of each variant (model and quantization), in first-seen order.
fn fastest_per_variant(group: Vec<&Entry>) -> Vec<&Entry> {
    let mut best: Vec<&Entry> = Vec::new();
    for e in group {
        match best
            .iter_mut()
            .find(|v| v.test.model == e.test.model && v.quant == e.quant)
        {
            Some(v) if ts(e) > ts(v) => *v = e,
            Some(_) => {}
            None => best.push(e),
        }
    }
    best
}

/// The variants' points (t/s, KLD): those beaten on both, and the Pareto front by speed.
/// Ties (overlapping intervals) stay on the front together: a set, not a pick.
fn front_points(best: &[&Entry], reference: &str) -> (Vec<Point>, Vec<Point>) {
    let pts: Vec<(f64, f64)> = best
        .iter()
        .map(|e| (ts(e), e.model.kld_mean.unwrap_or(0.0)))
        .collect();
    let figures: Vec<_> = best.iter().map(|e| speed_and_kld(e)).collect();
    let front = on_front(&figures);
    let point = |i: usize| {
        let e = best[i];
        Point {
            x: pts[i].0,
            y: pts[i].1,
            label: Some(variant_label(e, best)),
            tooltip: format!(
                "{}, KLD {} vs {reference}{}",
                describe(e),
                fmt_num(pts[i].1),
                if front.contains(&i) {
                    " (Pareto front)"
                } else {
                    ""
                }
            ),
            tags: tags_of(e),
        }
    };
    let mut front_pts: Vec<Point> = front.iter().map(|&i| point(i)).collect();
    front_pts.sort_by(|a, b| a.x.total_cmp(&b.x));
    let others: Vec<Point> = (0..best.len())
        .filter(|i| !front.contains(i))
        .map(point)
        .collect();
    (others, front_pts)
}

#[cfg(test)]
mod tests;
