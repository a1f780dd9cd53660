//! Acceptance by draft position, per speculative answer: a row per setting, a bar per
//! position on one 0–100% scale (eight positions a chart, deeper ones continued).

use super::svg::MAX_SERIES;
use super::svg::bars::{Bar, BarChart, BarSeries, Category, SharedScale};
use crate::report::speculative::SpecAnswer;

/// The charts of answer `n`; none when no setting drafted.
pub fn acceptance(a: &SpecAnswer, n: usize) -> Vec<BarChart> {
    let rows: Vec<_> = a.positions.iter().filter(|(_, r)| !r.is_empty()).collect();
    let deepest = rows.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
    let bar = |name: &str, j: usize, v: f64| Bar {
        value: v,
        err: None,
        label: format!("{v:.0}%"),
        tooltip: format!("{name}: {v:.0}% accepted at draft position {}", j + 1),
        tags: Default::default(),
    };
    let series = |j: usize| BarSeries {
        name: format!("position {}", j + 1),
        values: (rows.iter())
            .map(|(name, r)| r.get(j).map(|v| bar(name, j, *v)))
            .collect(),
    };
    let title = format!("Acceptance by draft position: {} on {}", a.model, a.host);
    (0..deepest)
        .step_by(MAX_SERIES)
        .map(|first| BarChart {
            id: format!("acceptance-{n}-{first}"),
            title: format!("{title}{}", if first > 0 { " (continued)" } else { "" }),
            subtitle: "the share of drafted tokens accepted at each draft position".into(),
            x_label: "% of drafted tokens accepted".into(),
            categories: (rows.iter())
                .map(|(name, _)| Category {
                    label: name.clone(),
                    ..Default::default()
                })
                .collect(),
            series: (first..deepest.min(first + MAX_SERIES))
                .map(series)
                .collect(),
            scale: Some(SharedScale {
                group: "acceptance".into(),
                max: 100.0,
            }),
            ..Default::default()
        })
        .collect()
}
