//! Prefill and decode t/s per quantization: a row per variant of one model, a bar per test
//! and settings (different settings are different series), on one axis per model and kind
//! on every machine.

use crate::plan::TestKind;
use crate::report::leaderboard::charts::facet::{self, Facet, Panel, split};
use crate::report::leaderboard::charts::parts::{
    common_name, describe, empty_bars, or_empty, variant_label,
};
use crate::report::leaderboard::charts::svg::bars::{
    Bar, BarChart, BarSeries, Category, SharedScale,
};
use crate::report::leaderboard::charts::svg::{MAX_SERIES, fmt_num};
use crate::report::leaderboard::load::entry::{
    Entry, group_by, identity, kind_word, plain_d0, tags_of, ts,
};
use crate::report::leaderboard::load::{Board, machine_names};
use crate::report::wrapped;

pub const NO_QUANT: &str =
    "no data in these results (run `tpsbench run` with n_prompt and n_gen tests to produce it)";

fn series_facets(e: &Entry) -> Vec<Facet> {
    let mut f = vec![Facet::plain("test", e.test.test.clone())];
    f.extend(facet::settings(e));
    f
}

pub fn per_quant(b: &Board) -> Vec<BarChart> {
    let names = machine_names(b);
    let mut charts = Vec::new();
    for kind in [TestKind::Pp, TestKind::Tg] {
        let es = b.entries.iter().filter(|e| plain_d0(e, kind));
        let scales = shared_scales(b, kind);
        for ((m, model), group) in group_by(es, |e| (e.machine, identity(e))) {
            let max = scales.iter().find(|s| s.0 == model).map_or(0.0, |s| s.1);
            let items: Vec<(Vec<Facet>, &Entry)> =
                group.iter().map(|e| (series_facets(e), *e)).collect();
            let panels = split(items, MAX_SERIES);
            let n_panels = panels.len();
            for p in panels {
                let mut c = panel_chart(&p, kind, &names[m], n_panels > 1);
                c.id = format!("tps-per-quant-{}", charts.len());
                c.scale = Some(SharedScale {
                    group: format!("{model} {}", kind_word(kind)),
                    max,
                });
                charts.push(c);
            }
        }
    }
    let title = "t/s per quantization";
    or_empty(charts, empty_bars("tps-per-quant", title, NO_QUANT))
}

/// (identity, longest bar with its whisker), so that two machines' charts compare by length.
fn shared_scales(b: &Board, kind: TestKind) -> Vec<(String, f64)> {
    let longest = |es: Vec<&Entry>| {
        es.iter()
            .map(|e| ts(e) + e.test.stddev_ts.unwrap_or(0.0))
            .fold(0.0, f64::max)
    };
    let es = b.entries.iter().filter(|e| plain_d0(e, kind));
    (group_by(es, |e| identity(e)).into_iter())
        .map(|(id, es)| (id, longest(es)))
        .collect()
}

fn panel_chart(p: &Panel<&Entry>, kind: TestKind, machine: &str, more: bool) -> BarChart {
    let all: Vec<&Entry> = (p.series.iter())
        .flat_map(|s| s.items.iter().copied())
        .collect();
    let models = crate::util::sorted_unique(all.iter().map(|e| e.test.model.clone()));
    let variants = variants(&all);
    let series = (p.series.iter())
        .map(|s| BarSeries {
            name: s.label.clone(),
            values: variants.iter().map(|v| bar(&s.items, v)).collect(),
        })
        .collect();
    let word = kind_word(kind);
    BarChart {
        title: format!("{}: {word} t/s per quantization", common_name(&models)),
        subtitle: format!(
            "{machine}{} · depth 0 · mean, whiskers ± 1 sd{}",
            wrapped(" · ", &facet::brief(&p.fixed), ""),
            if more {
                " · other settings in the next chart"
            } else {
                ""
            }
        ),
        x_label: format!("{word} tokens per second"),
        categories: (variants.iter())
            .map(|v| Category {
                label: variant_label(v, &variants),
                badges: v.badges.clone(),
            })
            .collect(),
        series,
        empty: NO_QUANT.into(),
        ..Default::default()
    }
}

/// The variants, largest file first.
fn variants<'a>(all: &[&'a Entry]) -> Vec<&'a Entry> {
    let mut variants: Vec<&Entry> = Vec::new();
    for e in all {
        if !variants.iter().any(|v| same_variant(v, e)) {
            variants.push(e);
        }
    }
    variants.sort_by(|x, y| {
        y.test
            .model_size
            .cmp(&x.test.model_size)
            .then_with(|| x.quant.cmp(&y.quant))
            .then_with(|| x.test.model.cmp(&y.test.model))
    });
    variants
}

fn same_variant(a: &Entry, b: &Entry) -> bool {
    a.quant == b.quant && a.test.model == b.test.model
}

fn bar(items: &[&Entry], v: &Entry) -> Option<Bar> {
    let e = items.iter().find(|e| same_variant(e, v))?;
    Some(Bar {
        value: ts(e),
        err: e.test.stddev_ts,
        label: fmt_num(ts(e)),
        tooltip: describe(e),
        tags: tags_of(e),
    })
}
