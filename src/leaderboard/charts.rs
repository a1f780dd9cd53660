//! The four charts of the page, built from the board (pure): data selection here, drawing in
//! `svg`. Each section yields at least one chart: a placeholder that says what to run when the
//! results hold no data for it.

use std::collections::BTreeMap;

use super::load::{Board, Entry};
use super::svg::{
    ACCENT, Bar, BarChart, BarSeries, MUTED, Point, ScatterChart, ScatterSeries, fmt_num,
};

/// Placeholder messages: what to run to get each chart.
pub const NO_QUANT: &str =
    "no data in these results (run `tpsbench run` with n_prompt and n_gen tests to produce it)";
pub const NO_PARETO: &str = "no data in these results (run a KLD quality measurement of quantized variants against their reference, which records models[].quality.kld_mean, together with tg tests, to produce it)";
pub const NO_SERVING: &str = "no data in these results (run serving tests, e.g. n_parallel = [1, 2, 4, 8], which record tests[].serving, to produce it)";
pub const NO_DEPTH: &str = "no data in these results (run a sweep with n_depth values above 0, e.g. n_depth = [0, 512, 2048], to produce it)";

/// Prefill-only, decode-only, or both in one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Prefill,
    Decode,
    Mixed,
}

pub fn kind(e: &Entry) -> Kind {
    match (e.test.params.n_prompt, e.test.params.n_gen) {
        (_, 0) => Kind::Prefill,
        (0, _) => Kind::Decode,
        _ => Kind::Mixed,
    }
}

/// Plain throughput tests (not serving runs) at depth 0.
fn plain_d0(e: &Entry) -> bool {
    e.serving.is_none() && e.test.params.n_depth == 0
}

fn ts(e: &Entry) -> f64 {
    e.test.avg_ts.unwrap_or(0.0)
}

/// The fastest entry among those given.
fn best<'a>(v: impl Iterator<Item = &'a Entry>) -> Option<&'a Entry> {
    v.max_by(|a, b| ts(a).total_cmp(&ts(b)))
}

fn describe(e: &Entry) -> String {
    format!(
        "{} {} {} t={}: {} ± {} t/s",
        e.test.model,
        e.quant,
        e.test.test,
        e.test.params.n_threads,
        fmt_num(ts(e)),
        fmt_num(e.test.stddev_ts.unwrap_or(0.0))
    )
}

/// Indices of the points on the Pareto front when larger x and smaller y are better: the
/// points that no other point matches or beats on both with a strict gain on one.
pub fn pareto_front(points: &[(f64, f64)]) -> Vec<usize> {
    (0..points.len())
        .filter(|&i| {
            let (xi, yi) = points[i];
            !points
                .iter()
                .any(|&(xj, yj)| xj >= xi && yj <= yi && (xj > xi || yj < yi))
        })
        .collect()
}

/// The model family of an entry: quantizations of one model have the same parameter count,
/// whatever their names, so they share a chart.
fn family(e: &Entry) -> String {
    match e.test.model_n_params {
        Some(n) => format!("{n} params"),
        None => e.test.model.clone(),
    }
}

/// A title for several model names: their common prefix (`tiny-Q8_0`, `tiny-Q4_K` → `tiny`),
/// or the names themselves when they share none.
fn common_name(names: &[String]) -> String {
    let first = names.first().map(String::as_str).unwrap_or("");
    let mut n = first.len();
    for other in names {
        n = n.min(
            first
                .char_indices()
                .zip(other.chars())
                .find(|((_, a), b)| a != b)
                .map_or(first.len().min(other.len()), |((i, _), _)| i),
        );
    }
    let mut prefix = &first[..n];
    // Cut a partial word (`tiny-Q` of `tiny-Q8_0` and `tiny-Q4_K`) back to a separator.
    if names.iter().any(|x| x.len() > n) {
        prefix = prefix
            .rfind(['-', '_', '.', ' '])
            .map_or("", |i| &prefix[..i]);
    }
    let prefix = prefix.trim_end_matches(['-', '_', '.', ' ']);
    if prefix.is_empty() {
        names.join(", ")
    } else {
        prefix.to_string()
    }
}

/// A variant's label: the quantization, with the model name when names differ and the name
/// does not already say the quantization.
fn variant_label(e: &Entry, many_models: bool) -> String {
    if !many_models {
        e.quant.clone()
    } else if e.test.model.contains(&e.quant) {
        e.test.model.clone()
    } else {
        format!("{} {}", e.test.model, e.quant)
    }
}

/// (a) Prefill and decode t/s per quantization: one chart per machine and model family.
pub fn per_quant(b: &Board) -> Vec<BarChart> {
    let mut groups: BTreeMap<(usize, String), Vec<&Entry>> = BTreeMap::new();
    for e in b
        .entries
        .iter()
        .filter(|e| plain_d0(e) && kind(e) != Kind::Mixed)
    {
        groups.entry((e.machine, family(e))).or_default().push(e);
    }
    let mut charts = Vec::new();
    for ((m, _), es) in groups {
        let mut names: Vec<String> = es.iter().map(|e| e.test.model.clone()).collect();
        names.sort();
        names.dedup();
        let many = names.len() > 1;
        let mut variants: Vec<(String, String, String)> = es
            .iter()
            .map(|e| {
                (
                    e.quant.clone(),
                    e.test.model.clone(),
                    variant_label(e, many),
                )
            })
            .collect();
        variants.sort();
        variants.dedup();
        let series = [
            (Kind::Prefill, "prefill (pp)"),
            (Kind::Decode, "decode (tg)"),
        ]
        .iter()
        .map(|(k, name)| BarSeries {
            name: name.to_string(),
            values: variants
                .iter()
                .map(|(q, model, _)| {
                    let pick = es
                        .iter()
                        .copied()
                        .filter(|e| &e.quant == q && &e.test.model == model && kind(e) == *k);
                    let n = pick.clone().count();
                    best(pick).map(|e| Bar {
                        value: ts(e),
                        err: e.test.stddev_ts,
                        tooltip: format!("{} (best of {n})", describe(e)),
                    })
                })
                .collect(),
        })
        .collect();
        charts.push(BarChart {
            id: format!("tps-per-quant-{}", charts.len()),
            title: format!("{}: t/s per quantization", common_name(&names)),
            subtitle: format!(
                "{}: fastest test of each kind at depth 0, whiskers ± 1 sd",
                b.machines[m].label()
            ),
            y_label: "tokens per second".into(),
            categories: variants.into_iter().map(|v| v.2).collect(),
            series,
            empty: NO_QUANT.into(),
        });
    }
    if charts.is_empty() {
        charts.push(BarChart {
            id: "tps-per-quant".into(),
            title: "t/s per quantization".into(),
            subtitle: String::new(),
            y_label: String::new(),
            categories: vec![],
            series: vec![],
            empty: NO_QUANT.into(),
        });
    }
    charts
}

fn empty_scatter(id: &str, title: &str, msg: &str) -> ScatterChart {
    ScatterChart {
        id: id.into(),
        title: title.into(),
        subtitle: String::new(),
        x_label: String::new(),
        y_label: String::new(),
        series: vec![],
        x_zero: true,
        y_zero: true,
        empty: msg.into(),
    }
}

/// (b) Quality against speed: x decode t/s, y KLD to the reference; the Pareto front (variants
/// not beaten on both) highlighted. One chart per machine and reference model.
pub fn quality_vs_speed(b: &Board) -> Vec<ScatterChart> {
    // (machine, reference) → variant (model, quant) → fastest decode entry with a KLD.
    type Variants<'a> = BTreeMap<(String, String), &'a Entry>;
    let mut groups: BTreeMap<(usize, String), Variants> = BTreeMap::new();
    for e in b
        .entries
        .iter()
        .filter(|e| plain_d0(e) && kind(e) == Kind::Decode)
    {
        if e.model.kld_mean.is_none() {
            continue;
        }
        let reference = e
            .model
            .quality_reference
            .clone()
            .unwrap_or_else(|| e.test.model.clone());
        let slot = groups
            .entry((e.machine, reference))
            .or_default()
            .entry((e.test.model.clone(), e.quant.clone()))
            .or_insert(e);
        if ts(e) > ts(slot) {
            *slot = e;
        }
    }
    let mut charts = Vec::new();
    for ((m, reference), variants) in groups {
        let es: Vec<&Entry> = variants.into_values().collect();
        let many_models = es.iter().any(|e| e.test.model != es[0].test.model);
        let pts: Vec<(f64, f64)> = es
            .iter()
            .map(|e| (ts(e), e.model.kld_mean.unwrap_or(0.0)))
            .collect();
        let front = pareto_front(&pts);
        let point = |i: usize| {
            let e = es[i];
            Point {
                x: pts[i].0,
                y: pts[i].1,
                label: Some(variant_label(e, many_models)),
                tooltip: format!(
                    "{} {}: {} {} t/s, KLD {} vs {reference}{}",
                    e.test.model,
                    e.quant,
                    e.test.test,
                    fmt_num(pts[i].0),
                    fmt_num(pts[i].1),
                    if front.contains(&i) {
                        " (Pareto front)"
                    } else {
                        ""
                    }
                ),
            }
        };
        let mut front_pts: Vec<Point> = front.iter().map(|&i| point(i)).collect();
        front_pts.sort_by(|a, b| a.x.total_cmp(&b.x));
        let others: Vec<Point> = (0..es.len())
            .filter(|i| !front.contains(i))
            .map(point)
            .collect();
        charts.push(ScatterChart {
            id: format!("quality-vs-speed-{}", charts.len()),
            title: format!("Quality against speed (KLD vs {reference})"),
            subtitle: format!(
                "{}: lower KLD and more t/s are better",
                b.machines[m].label()
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
                    points: front_pts,
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

/// (c) Per-request against aggregate decode t/s of serving tests, one line per model and
/// quantization, points labelled by n_parallel. One chart per machine.
pub fn serving(b: &Board) -> Vec<ScatterChart> {
    let mut groups: BTreeMap<usize, BTreeMap<String, Vec<&Entry>>> = BTreeMap::new();
    for e in &b.entries {
        if let Some(s) = &e.serving {
            let name = format!("{} {} {}", e.test.model, e.quant, s.mode);
            groups
                .entry(e.machine)
                .or_default()
                .entry(name.trim().to_string())
                .or_default()
                .push(e);
        }
    }
    let mut charts = Vec::new();
    for (m, lines) in groups {
        let series = lines
            .into_iter()
            .map(|(name, mut es)| {
                es.sort_by_key(|e| e.serving.as_ref().map(|s| s.n_parallel));
                ScatterSeries {
                    name,
                    points: es
                        .iter()
                        .filter_map(|e| {
                            let s = e.serving.as_ref()?;
                            Some(Point {
                                x: s.per_request_ts,
                                y: s.aggregate_ts,
                                label: Some(format!("n={}", s.n_parallel)),
                                tooltip: format!(
                                    "{} {} {}, {} parallel: {} t/s per request, {} t/s aggregate",
                                    e.test.model,
                                    e.quant,
                                    e.test.test,
                                    s.n_parallel,
                                    fmt_num(s.per_request_ts),
                                    fmt_num(s.aggregate_ts)
                                ),
                            })
                        })
                        .collect(),
                    line: true,
                    color: None,
                    emphasis: false,
                }
            })
            .collect();
        charts.push(ScatterChart {
            id: format!("serving-{}", charts.len()),
            title: "Per-request against aggregate decode t/s".into(),
            subtitle: format!(
                "{}: points labelled by parallel requests",
                b.machines[m].label()
            ),
            x_label: "decode t/s per request".into(),
            y_label: "aggregate decode t/s".into(),
            series,
            x_zero: true,
            y_zero: true,
            empty: NO_SERVING.into(),
        });
    }
    if charts.is_empty() {
        charts.push(empty_scatter(
            "serving",
            "Per-request against aggregate t/s",
            NO_SERVING,
        ));
    }
    charts
}

/// (d) t/s against context depth: one line per model, quantization, test and settings that
/// was measured at some depth above 0 (its depth-0 point included). One chart per machine and
/// kind (prefill, decode), since their rates differ by an order of magnitude.
pub fn depth(b: &Board) -> Vec<ScatterChart> {
    type Key = (usize, Kind);
    let mut groups: BTreeMap<Key, BTreeMap<String, Vec<&Entry>>> = BTreeMap::new();
    for e in b.entries.iter().filter(|e| e.serving.is_none()) {
        let p = &e.test.params;
        let base = e.test.test.split(" @ ").next().unwrap_or("").to_string();
        let mut name = format!("{} {} {base} t={}", e.test.model, e.quant, p.n_threads);
        if (p.n_batch, p.n_ubatch, p.flash_attn) != (2048, 512, -1) {
            name.push_str(&format!(
                " b={} ub={} fa={}",
                p.n_batch, p.n_ubatch, p.flash_attn
            ));
        }
        if (p.type_k.as_str(), p.type_v.as_str()) != ("f16", "f16") {
            name.push_str(&format!(" kv={}/{}", p.type_k, p.type_v));
        }
        groups
            .entry((e.machine, kind(e)))
            .or_default()
            .entry(name)
            .or_default()
            .push(e);
    }
    let mut charts = Vec::new();
    for ((m, k), lines) in groups {
        let series: Vec<ScatterSeries> = lines
            .into_iter()
            .filter(|(_, es)| es.iter().any(|e| e.test.params.n_depth > 0))
            .map(|(name, mut es)| {
                es.sort_by_key(|e| e.test.params.n_depth);
                ScatterSeries {
                    name,
                    points: es
                        .iter()
                        .map(|e| Point {
                            x: f64::from(e.test.params.n_depth),
                            y: ts(e),
                            label: None,
                            tooltip: describe(e),
                        })
                        .collect(),
                    line: true,
                    color: None,
                    emphasis: false,
                }
            })
            .collect();
        if series.is_empty() {
            continue;
        }
        let what = match k {
            Kind::Prefill => "Prefill",
            Kind::Decode => "Decode",
            Kind::Mixed => "Prefill + decode",
        };
        charts.push(ScatterChart {
            id: format!("depth-{}", charts.len()),
            title: format!("{what} t/s against context depth"),
            subtitle: format!(
                "{}: tokens already in the context before the timed test",
                b.machines[m].label()
            ),
            x_label: "depth (tokens in context)".into(),
            y_label: "tokens per second".into(),
            series,
            x_zero: true,
            y_zero: true,
            empty: NO_DEPTH.into(),
        });
    }
    if charts.is_empty() {
        charts.push(empty_scatter(
            "depth",
            "t/s against context depth",
            NO_DEPTH,
        ));
    }
    charts
}

#[cfg(test)]
#[path = "charts_tests.rs"]
mod tests;
