//! What each chart draws (quality against speed here; `quant`, `lines`, `machines`,
//! `speculative`), drawn
//! by `svg`. A chart never mixes settings silently; each section yields at least one
//! chart, a placeholder saying what to run when there is no data.

pub(crate) mod facet;
pub(crate) mod lines;
pub(crate) mod machines;
pub(crate) mod parts;
pub(crate) mod quant;
pub(crate) mod speculative;
pub(crate) mod svg;

use super::load::entry::{Entry, fastest_by, group_by, plain_d0, tags_of, ts};
use super::load::{Board, machine_names};
use crate::plan::TestKind;
use facet::Facet;
use parts::{describe, empty_scatter, or_empty, variant_label};
use svg::scatter::{Point, ScatterChart, ScatterSeries};
use svg::{ACCENT, MUTED, fmt_num};

pub const NO_PARETO: &str = "no data in these results (run a KLD quality measurement of quantized variants against their reference, which records models[].quality.kld_mean, together with tg tests, to produce it)";

/// Decode speed with its recorded 95% interval, and KLD ± 1.96 standard errors.
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
    let q = e.quality();
    let kld = q.map_or(0.0, |q| q.kld_mean);
    let half = 1.96 * q.map_or(0.0, |q| q.kld_mean_uncertainty);
    (speed, Figure::around(kld, half))
}

/// Threads, and the settings where some group differs (what sets two charts apart).
fn settings_text(e: &Entry, differing: &[&str]) -> String {
    let mut facets = facet::settings(e);
    facets.retain(|f| f.key == "threads" || differing.contains(&f.key));
    let texts: Vec<String> = facets.into_iter().map(|f| f.text).collect();
    texts.join(" · ")
}

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

/// Decode t/s against KLD, the Pareto front highlighted: per machine, reference, settings.
pub fn quality_vs_speed(b: &Board) -> Vec<ScatterChart> {
    let names = machine_names(b);
    let es: Vec<&Entry> = (b.entries.iter())
        .filter(|e| plain_d0(e, TestKind::Tg) && e.quality().is_some())
        .collect();
    let differing = differing_settings(es.iter().copied());
    let reference = |e: &Entry| e.quality().map_or(String::new(), |q| q.reference.clone());
    let mut charts = Vec::new();
    for ((m, reference, _), group) in group_by(es, |e| (e.machine, reference(e), settings_key(e))) {
        let best = fastest_by(group, |e| (e.test.model.clone(), e.quant.clone()));
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
    let title = "Quality against speed";
    or_empty(charts, empty_scatter("quality-vs-speed", title, NO_PARETO))
}

/// The points beaten on both, and the Pareto front (ties kept together) by speed.
fn front_points(best: &[&Entry], reference: &str) -> (Vec<Point>, Vec<Point>) {
    let figures: Vec<_> = best.iter().map(|e| speed_and_kld(e)).collect();
    // Ties stay on the front together.
    let front = crate::stats::ties::pareto_front(&figures);
    let point = |i: usize| {
        let (e, x, y) = (best[i], figures[i].0.value, figures[i].1.value);
        Point {
            x,
            y,
            label: Some(variant_label(e, best)),
            tooltip: format!(
                "{}, KLD {} vs {reference}{}",
                describe(e),
                fmt_num(y),
                if front[i] { " (Pareto front)" } else { "" }
            ),
            tags: tags_of(e),
        }
    };
    let (front_i, others_i): (Vec<usize>, Vec<usize>) = (0..best.len()).partition(|&i| front[i]);
    let mut front_pts: Vec<Point> = front_i.into_iter().map(point).collect();
    front_pts.sort_by(|a, b| a.x.total_cmp(&b.x));
    let others: Vec<Point> = others_i.into_iter().map(point).collect();
    (others, front_pts)
}

#[cfg(test)]
mod tests;
