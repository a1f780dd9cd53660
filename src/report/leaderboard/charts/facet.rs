//! Small multiples: a series is its facets (machine, model, quantization, test, settings);
//! series go into as few panels as keep each at [`MAX_SERIES`], split by leading facets. A
//! panel names the facets its series share, a series those that differ.

use crate::config::knobs::knob;
use crate::report::count;
use crate::report::leaderboard::charts::svg::MAX_SERIES;
use crate::report::leaderboard::load::entry::{Entry, group_by};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facet {
    pub key: &'static str,
    pub value: String,
    pub text: String,
}

impl Facet {
    pub fn new(key: &'static str, value: impl Into<String>, text: impl Into<String>) -> Facet {
        Facet {
            key,
            value: value.into(),
            text: text.into(),
        }
    }

    /// The value said after a word: "ngl 99".
    /// A facet whose text is its value.
    pub fn plain(key: &'static str, value: impl Into<String>) -> Facet {
        let value = value.into();
        Facet::new(key, value.clone(), value)
    }

    fn worded(key: &'static str, value: impl std::fmt::Display, word: &str) -> Facet {
        Facet::new(key, value.to_string(), format!("{word} {value}"))
    }
}

/// The settings charts tell apart, in the order they split series.
pub fn settings(e: &Entry) -> Vec<Facet> {
    let p = &e.test.params;
    let fa = match p.flash_attn {
        -1 => "auto".to_string(),
        0 => "off".to_string(),
        1 => "on".to_string(),
        v => v.to_string(),
    };
    let kv = format!("{}/{}", p.type_k, p.type_v);
    vec![
        Facet::new(
            "threads",
            p.n_threads.to_string(),
            count(p.n_threads as usize, "thread"),
        ),
        Facet::worded("ngl", p.n_gpu_layers, "ngl"),
        Facet::worded("n_batch", p.n_batch, "n_batch"),
        Facet::worded("n_ubatch", p.n_ubatch, "n_ubatch"),
        Facet::worded("fa", fa, "fa"),
        Facet::worded("kv", kv, "KV"),
        // The knobs away from llama-bench's defaults, as one facet ("ncmoe 4, ot ...").
        Facet::plain("knobs", p.knobs.describe()),
    ]
    .into_iter()
    .chain(table_facets(p))
    .collect()
}

/// The other typed parameters ("sm row", "nkvo 1"), so that no two series read alike.
fn table_facets(p: &crate::config::TestParams) -> impl Iterator<Item = Facet> + '_ {
    crate::report::leaderboard::table::typed_params()
        .filter(|k| !WORDED.contains(&k.name))
        .map(move |k| Facet::worded(k.name, k.get(p).show(), k.header))
}

const WORDED: &[&str] = &[
    "n_threads",
    "n_gpu_layers",
    "n_batch",
    "n_ubatch",
    "flash_attn",
    "type_k",
    "type_v",
];

fn is_default(f: &Facet) -> bool {
    let from_table = !WORDED.contains(&f.key)
        && knob(f.key).is_some_and(|k| k.default_value().show() == f.value);
    from_table
        || matches!(
            (f.key, f.value.as_str()),
            ("ngl", "99")
                | ("n_batch", "2048")
                | ("n_ubatch", "512")
                | ("fa", "auto")
                | ("kv", "f16/f16")
        )
}

/// The facets' texts without those at llama-bench's defaults.
pub fn brief(facets: &[Facet]) -> String {
    let shown = |f: &&Facet| !is_default(f) && !f.text.is_empty();
    let texts: Vec<&str> = facets.iter().filter(shown).map(|f| &f.text[..]).collect();
    texts.join(" · ")
}

pub fn identity(e: &Entry, machine: &str) -> Vec<Facet> {
    vec![
        Facet::plain("machine", machine),
        Facet::plain("model", e.test.model.clone()),
        Facet::plain("quant", e.quant.clone()),
    ]
}

#[derive(Debug, Clone, PartialEq)]
pub struct Panel<T> {
    pub fixed: Vec<Facet>,
    pub series: Vec<Series<T>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series<T> {
    pub label: String,
    pub items: Vec<T>,
}

impl<T> Panel<T> {
    pub fn describe(&self, skip: &[&str]) -> String {
        let kept: Vec<Facet> = (self.fixed.iter())
            .filter(|f| !skip.contains(&f.key))
            .cloned()
            .collect();
        brief(&kept)
    }

    pub fn fixed(&self, key: &str) -> Option<&Facet> {
        self.fixed.iter().find(|f| f.key == key)
    }
}

type Keyed<T> = (Vec<Facet>, Vec<T>);

/// Series into groups of at most `max`: split by the facet at `level` (recursively), small
/// neighbouring groups packed back together.
fn panels_of<T>(series: Vec<Keyed<T>>, level: usize, max: usize, out: &mut Vec<Vec<Keyed<T>>>) {
    let n_facets = series.first().map_or(0, |s| s.0.len());
    if series.is_empty() {
        return;
    }
    if series.len() <= max {
        out.push(series);
        return;
    }
    if level >= n_facets {
        let mut rest = series;
        while !rest.is_empty() {
            let tail = rest.split_off(rest.len().min(max));
            out.push(rest);
            rest = tail;
        }
        return;
    }
    let groups = group_by(series, |s| s.0[level].value.clone());
    let mut pending: Vec<Keyed<T>> = Vec::new();
    for (_, g) in groups {
        if g.len() > max {
            if !pending.is_empty() {
                out.push(std::mem::take(&mut pending));
            }
            panels_of(g, level + 1, max, out);
        } else {
            if pending.len() + g.len() > max {
                out.push(std::mem::take(&mut pending));
            }
            pending.extend(g);
        }
    }
    if !pending.is_empty() {
        out.push(pending);
    }
}

/// Items into series (equal facets), series into panels of at most `max`, first seen first.
pub fn split<T>(items: Vec<(Vec<Facet>, T)>, max: usize) -> Vec<Panel<T>> {
    let max = max.clamp(1, MAX_SERIES);
    let series = (group_by(items, |(f, _)| f.clone()).into_iter())
        .map(|(f, items)| (f, items.into_iter().map(|(_, t)| t).collect()))
        .collect();
    let mut groups: Vec<Vec<Keyed<T>>> = Vec::new();
    panels_of(series, 0, max, &mut groups);
    (groups.into_iter())
        .map(|members| {
            let first = members[0].0.clone();
            let varies: Vec<bool> = (0..first.len())
                .map(|j| members.iter().any(|(f, _)| f[j].value != first[j].value))
                .collect();
            let fixed = (first.iter().zip(&varies))
                .filter(|(_, v)| !**v)
                .map(|(f, _)| f.clone())
                .collect();
            let series = (members.into_iter())
                .map(|(f, items)| Series {
                    label: (f.iter().zip(&varies))
                        .filter(|(x, v)| **v && !x.text.is_empty())
                        .map(|(x, _)| x.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" · "),
                    items,
                })
                .collect();
            Panel { fixed, series }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(vals: &[(&'static str, &str)]) -> Vec<Facet> {
        vals.iter()
            .map(|(k, v)| Facet::new(k, *v, format!("{k} {v}")))
            .collect()
    }

    #[test]
    fn typed_parameters_without_words_of_their_own_come_from_the_table_and_hide_at_defaults() {
        let mut p = crate::config::TestParams::default();
        let at_default: Vec<Facet> = table_facets(&p).collect();
        let keys: Vec<&str> = at_default.iter().map(|f| f.key).collect();
        assert_eq!(keys, ["split_mode", "main_gpu", "no_kv_offload"]);
        assert!(at_default.iter().all(is_default), "{at_default:?}");
        assert_eq!(brief(&at_default), "");
        p.no_kv_offload = true;
        let changed: Vec<Facet> = table_facets(&p).collect();
        assert_ne!(changed, at_default);
        assert_eq!(brief(&changed), "nkvo 1");
    }

    #[test]
    fn few_series_share_one_panel_labelled_by_what_differs() {
        let items = vec![
            (f(&[("m", "a"), ("t", "1")]), 1),
            (f(&[("m", "a"), ("t", "2")]), 2),
            (f(&[("m", "a"), ("t", "1")]), 3),
        ];
        let p = split(items, 8);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].describe(&[]), "m a");
        let labels: Vec<_> = p[0].series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["t 1", "t 2"]);
        assert_eq!(p[0].series[0].items, vec![1, 3], "equal facets: one series");
    }

    #[test]
    fn many_series_split_by_the_leading_facets_into_panels_of_at_most_max() {
        let mut items = Vec::new();
        for m in ["a", "b"] {
            for t in ["1", "2", "3"] {
                for fa in ["on", "off"] {
                    items.push((f(&[("m", m), ("t", t), ("fa", fa)]), 0));
                }
            }
        }
        let p = split(items, 4);
        // By m: 6 series each (too many); then by t: 2 each, packed two groups a panel.
        let sizes: Vec<usize> = p.iter().map(|x| x.series.len()).collect();
        assert_eq!(sizes, [4, 2, 4, 2]);
        assert_eq!(p[0].describe(&[]), "m a");
        assert_eq!(p[0].series[1].label, "t 1 · fa off");
        assert_eq!(p[1].describe(&[]), "m a · t 3");
        assert_eq!(p[1].series[1].label, "fa off");
        let p = split(
            (0..20).map(|i| (f(&[("x", &i.to_string())]), i)).collect(),
            99,
        );
        let sizes: Vec<usize> = p.iter().map(|x| x.series.len()).collect();
        assert_eq!(
            sizes,
            [8, 8, 4],
            "never more than {MAX_SERIES} series in a panel"
        );
    }
}
