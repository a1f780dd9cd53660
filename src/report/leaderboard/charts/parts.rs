//! What the chart builders share: tooltips, names, grouping, placeholders.

use crate::report::leaderboard::charts::facet;
use crate::report::leaderboard::charts::svg::bars::BarChart;
use crate::report::leaderboard::charts::svg::fmt_num;
use crate::report::leaderboard::charts::svg::scatter::ScatterChart;
use crate::report::leaderboard::load::entry::{Entry, ts};

/// An entry in one line, for a tooltip: model, quantization, test, rate and settings.
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

/// A title for several model names: their common prefix, or the names.
pub fn common_name(names: &[String]) -> String {
    let first = names.first().map(String::as_str).unwrap_or("");
    let shared = |other: &String| {
        let mut pairs = first.char_indices().zip(other.chars());
        let differ = pairs.find(|((_, a), b)| a != b);
        differ.map_or(first.len().min(other.len()), |((i, _), _)| i)
    };
    let n = names.iter().map(shared).fold(first.len(), usize::min);
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

/// A variant's label: its quantization, or its model name where that clashes.
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

/// The charts, or the placeholder saying what to run when there are none.
pub fn or_empty<C>(charts: Vec<C>, placeholder: C) -> Vec<C> {
    match charts.is_empty() {
        true => vec![placeholder],
        false => charts,
    }
}

pub fn empty_bars(id: &str, title: &str, msg: &str) -> BarChart {
    BarChart {
        id: id.into(),
        title: title.into(),
        empty: msg.into(),
        ..Default::default()
    }
}

pub fn empty_scatter(id: &str, title: &str, msg: &str) -> ScatterChart {
    ScatterChart {
        id: id.into(),
        title: title.into(),
        empty: msg.into(),
        ..Default::default()
    }
}
