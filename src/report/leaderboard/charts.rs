//! The charts of the page, built from the board (pure): data selection here and in
//! `charts_lines` and `machines`, drawing in `svg_bars` and `svg_scatter`. What a chart shows
//! is chosen by the test's kind (`TestRecord.kind`). A chart never mixes settings silently:
//! bars of one chart share threads, batch sizes, flash attention and KV types (other
//! settings get their own chart, named in its subtitle), and lines are split into small
//! multiples of at most eight series. Each section yields at least one chart: a
//! placeholder that says what to run when the results hold no data for it.

use super::facet::{self, Facet};
use super::load::{Board, Entry};
use super::svg::{ACCENT, MUTED, Tags, fmt_num};
use super::svg_scatter::{Point, ScatterChart, ScatterSeries};
use crate::plan::TestKind;

pub use super::charts_lines::{depth, serving};
pub use super::charts_quant::per_quant;

/// Placeholder messages: what to run to get each chart.
pub const NO_PARETO: &str = "no data in these results (run a KLD quality measurement of quantized variants against their reference, which records models[].quality.kld_mean, together with tg tests, to produce it)";

/// llama-bench-style speed tests (pp, tg, pg), as opposed to serving and quality tests.
pub fn is_speed(e: &Entry) -> bool {
    matches!(e.test.kind, TestKind::Pp | TestKind::Tg | TestKind::Pg) && e.serving.is_none()
}

/// Speed tests of one kind at depth 0.
pub fn plain_d0(e: &Entry, kind: TestKind) -> bool {
    is_speed(e) && e.test.kind == kind && e.test.params.n_depth == 0
}

/// Sort order of kinds: prefill, decode, both, then the others.
pub fn kind_rank(k: TestKind) -> u8 {
    match k {
        TestKind::Pp => 0,
        TestKind::Tg => 1,
        TestKind::Pg => 2,
        _ => 3,
    }
}

pub fn ts(e: &Entry) -> f64 {
    e.test.avg_ts.unwrap_or(0.0)
}

/// "prefill", "decode", "prefill + decode".
pub fn kind_word(k: TestKind) -> &'static str {
    match k {
        TestKind::Pp => "prefill",
        TestKind::Tg => "decode",
        _ => "prefill + decode",
    }
}

pub fn describe(e: &Entry) -> String {
    let settings: Vec<String> = facet::settings(e).into_iter().map(|f| f.text).collect();
    format!(
        "{} {} {}: {} ± {} t/s ({})",
        e.test.model,
        e.quant,
        e.test.test,
        fmt_num(ts(e)),
        fmt_num(e.test.stddev_ts.unwrap_or(0.0)),
        settings.join(", ")
    )
}

/// Indices of the points on the Pareto front when larger x and smaller y are better: the
/// points that no other point matches or beats on both with a strict gain on one. Points
/// without intervals: the one Pareto rule, `stats::ties::pareto_front`, on exact figures.
pub fn pareto_front(points: &[(f64, f64)]) -> Vec<usize> {
    use crate::stats::ties::Figure;
    let figures: Vec<(Figure, Figure)> = points
        .iter()
        .map(|&(x, y)| (Figure::point(x), Figure::point(y)))
        .collect();
    on_front(&figures)
}

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

/// The model an entry measured, by identity: its name without the quantization suffix and
/// its architecture ("SmolLM2-135M (llama)"), never its parameter count alone (different
/// models of one size are different models).
pub fn identity(e: &Entry) -> String {
    let name = super::answer::base_name(&e.test.model, &e.quant);
    match &e.model.architecture {
        Some(a) => format!("{name} ({a})"),
        None => name,
    }
}

/// What the page's filters select an entry's marks by: the same values as its table rows'
/// (`table::RowMeta::of`).
pub fn tags_of(e: &Entry) -> Tags {
    let mut t = Tags::default();
    t.add("model", &identity(e));
    t.add("machine", &e.machine.to_string());
    t.add("backend", &e.test.backends);
    t.add("quant", &e.quant);
    t
}

/// A title for several model names: their common prefix (`tiny-Q8_0`, `tiny-Q4_K` → `tiny`),
/// or the names themselves when they share none.
pub fn common_name(names: &[String]) -> String {
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
    if !prefix.is_empty() {
        prefix.to_string()
    } else if names.len() > 2 {
        format!("{}, {} and {} more", names[0], names[1], names.len() - 2)
    } else {
        names.join(", ")
    }
}

/// A variant's label among `all` the variants of a chart: the quantization where no other
/// variant has the same one, else the model name (with the quantization when the name does
/// not say it).
pub fn variant_label(e: &Entry, all: &[&Entry]) -> String {
    let clash = all
        .iter()
        .any(|o| o.quant == e.quant && o.test.model != e.test.model);
    if !clash {
        e.quant.clone()
    } else if e.test.model.contains(&e.quant) {
        e.test.model.clone()
    } else {
        format!("{} {}", e.test.model, e.quant)
    }
}

/// Short names of the machines: host names, or full labels where host names repeat.
pub fn machine_names(b: &Board) -> Vec<String> {
    b.machines
        .iter()
        .map(|m| {
            let same = b
                .machines
                .iter()
                .filter(|o| o.hostname == m.hostname)
                .count();
            if same > 1 {
                m.label()
            } else {
                m.hostname.clone()
            }
        })
        .collect()
}

/// Groups in first-seen order.
pub fn group_by<'a, K: PartialEq>(
    es: impl Iterator<Item = &'a Entry>,
    key: impl Fn(&Entry) -> K,
) -> Vec<(K, Vec<&'a Entry>)> {
    let mut groups: Vec<(K, Vec<&Entry>)> = Vec::new();
    for e in es {
        let k = key(e);
        match groups.iter_mut().find(|(x, _)| *x == k) {
            Some((_, v)) => v.push(e),
            None => groups.push((k, vec![e])),
        }
    }
    groups
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

pub fn empty_scatter(id: &str, title: &str, msg: &str) -> ScatterChart {
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
        // The fastest decode test of each variant.
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
        let pts: Vec<(f64, f64)> = best
            .iter()
            .map(|e| (ts(e), e.model.kld_mean.unwrap_or(0.0)))
            .collect();
        // Ties (overlapping intervals) stay on the front together: a set, not a pick.
        let figures: Vec<_> = best.iter().map(|e| speed_and_kld(e)).collect();
        let front = on_front(&figures);
        let point = |i: usize| {
            let e = best[i];
            Point {
                x: pts[i].0,
                y: pts[i].1,
                label: Some(variant_label(e, &best)),
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
        let requantized = best
            .iter()
            .any(|e| e.badges.iter().any(|x| x == "requantized"));
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

#[cfg(test)]
mod tests;
