//! The leaderboard's tables as cells, shared by the Markdown and HTML writers so both show
//! the same columns and figures.

use super::load::{Board, Entry};
use crate::export::{format_params, format_size};
use crate::leaderboard::charts::{Kind, kind};

/// One table cell: its text and, for numeric columns, the value to sort by.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub text: String,
    pub sort: Option<f64>,
}

impl Cell {
    fn text(s: impl Into<String>) -> Cell {
        Cell {
            text: s.into(),
            sort: None,
        }
    }
    fn num(text: String, v: f64) -> Cell {
        Cell {
            text,
            sort: Some(v),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub headers: Vec<String>,
    /// Right-aligned (numeric) columns.
    pub numeric: Vec<bool>,
    pub rows: Vec<Vec<Cell>>,
}

type Optional = (&'static str, fn(&Entry) -> Option<Cell>);

fn f2(v: f64) -> String {
    format!("{v:.2}")
}

/// Columns shown only when some row has a value (or, for settings, when they vary).
const EXTRA: &[Optional] = &[
    ("KLD", |e| {
        e.model.kld_mean.map(|k| Cell::num(format!("{k:.4}"), k))
    }),
    ("bytes/s", |e| {
        e.bytes_per_s().map(|b| Cell::num(format!("{b:.1}"), b))
    }),
    ("n_parallel", |e| {
        e.serving
            .as_ref()
            .map(|s| Cell::num(s.n_parallel.to_string(), s.n_parallel as f64))
    }),
    ("aggregate t/s", |e| {
        e.serving
            .as_ref()
            .map(|s| Cell::num(f2(s.aggregate_ts), s.aggregate_ts))
    }),
];

type Setting = (&'static str, fn(&Entry) -> String);

const SETTINGS: &[Setting] = &[
    ("ngl", |e| e.test.params.n_gpu_layers.to_string()),
    ("sm", |e| e.test.params.split_mode.as_str().to_string()),
    ("mg", |e| e.test.params.main_gpu.to_string()),
    ("nkvo", |e| {
        u8::from(e.test.params.no_kv_offload).to_string()
    }),
    ("n_batch", |e| e.test.params.n_batch.to_string()),
    ("n_ubatch", |e| e.test.params.n_ubatch.to_string()),
    ("fa", |e| e.test.params.flash_attn.to_string()),
    ("type_k", |e| e.test.params.type_k.clone()),
    ("type_v", |e| e.test.params.type_v.clone()),
];

/// The detail table of some entries: model, quant, size, params, backend, threads, the
/// settings that vary, test, t/s ± sd, median, and KLD, bytes/s, serving when present.
pub fn detail(entries: &[&Entry]) -> Table {
    let settings: Vec<&Setting> = SETTINGS
        .iter()
        .filter(|(_, f)| entries.iter().any(|e| f(e) != f(entries[0])))
        .collect();
    let extra: Vec<&Optional> = EXTRA
        .iter()
        .filter(|(_, f)| entries.iter().any(|e| f(e).is_some()))
        .collect();
    let mut headers: Vec<String> = ["model", "quant", "size", "params", "backend", "threads"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    headers.extend(settings.iter().map(|s| s.0.to_string()));
    headers.extend(["test", "t/s", "median t/s"].map(String::from));
    headers.extend(extra.iter().map(|c| c.0.to_string()));
    let mut numeric = vec![false, false, true, true, false, true];
    numeric.extend(settings.iter().map(|_| true));
    numeric.extend([false, true, true]);
    numeric.extend(extra.iter().map(|_| true));
    let rows = entries
        .iter()
        .map(|e| {
            let t = &e.test;
            let mut r = vec![
                Cell::text(t.model_type.clone().unwrap_or_else(|| t.model.clone())),
                Cell::text(e.quant.clone()),
                t.model_size
                    .map(|s| Cell::num(format_size(s), s as f64))
                    .unwrap_or_else(|| Cell::text("")),
                t.model_n_params
                    .map(|s| Cell::num(format_params(s), s as f64))
                    .unwrap_or_else(|| Cell::text("")),
                Cell::text(t.backends.clone()),
                Cell::num(
                    t.params.n_threads.to_string(),
                    f64::from(t.params.n_threads),
                ),
            ];
            r.extend(settings.iter().map(|s| {
                let v = s.1(e);
                match v.parse::<f64>() {
                    Ok(x) => Cell::num(v, x),
                    Err(_) => Cell::text(v),
                }
            }));
            r.push(Cell::text(t.test.clone()));
            r.push(rate(e));
            r.push(
                t.median_ts
                    .map(|m| Cell::num(f2(m), m))
                    .unwrap_or_else(|| Cell::text("")),
            );
            r.extend(
                extra
                    .iter()
                    .map(|c| c.1(e).unwrap_or_else(|| Cell::text(""))),
            );
            r
        })
        .collect();
    Table {
        headers,
        numeric,
        rows,
    }
}

fn rate(e: &Entry) -> Cell {
    match (e.test.avg_ts, e.test.stddev_ts) {
        (Some(a), Some(s)) => Cell::num(format!("{a:.2} ± {s:.2}"), a),
        (Some(a), None) => Cell::num(f2(a), a),
        _ => Cell::text(format!(
            "failed: {}",
            e.test.error.as_deref().unwrap_or("unknown error")
        )),
    }
}

/// A ranking: for each test name (depth-0, non-serving tests; prefill first), the `top`
/// fastest measurements over all machines, models and settings.
pub fn rankings(b: &Board, top: usize) -> Vec<(String, Table)> {
    let mut names: Vec<(Kind, u32, u32, String)> = b
        .entries
        .iter()
        .filter(|e| e.serving.is_none())
        .map(|e| {
            let p = &e.test.params;
            (
                kind(e),
                p.n_depth,
                p.n_prompt + p.n_gen,
                e.test.test.clone(),
            )
        })
        .collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|(_, _, _, name)| {
            let mut es: Vec<&Entry> = b
                .entries
                .iter()
                .filter(|e| e.serving.is_none() && e.test.test == name)
                .collect();
            es.sort_by(|x, y| {
                y.test
                    .avg_ts
                    .unwrap_or(0.0)
                    .total_cmp(&x.test.avg_ts.unwrap_or(0.0))
            });
            es.truncate(top);
            let rows = es
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    vec![
                        Cell::num((i + 1).to_string(), (i + 1) as f64),
                        rate(e),
                        Cell::text(e.test.model.clone()),
                        Cell::text(e.quant.clone()),
                        Cell::num(
                            e.test.params.n_threads.to_string(),
                            f64::from(e.test.params.n_threads),
                        ),
                        Cell::text(b.machines[e.machine].hostname.clone()),
                    ]
                })
                .collect();
            (
                name,
                Table {
                    headers: ["#", "t/s", "model", "quant", "threads", "machine"]
                        .map(String::from)
                        .to_vec(),
                    numeric: vec![true, true, false, false, true, false],
                    rows,
                },
            )
        })
        .collect()
}

/// Entries grouped by machine, then model: (machine index, model name, entries).
pub fn by_machine_and_model(entries: &[Entry]) -> Vec<(usize, String, Vec<&Entry>)> {
    let mut out: Vec<(usize, String, Vec<&Entry>)> = Vec::new();
    for e in entries {
        match out.last_mut() {
            Some((m, model, v)) if *m == e.machine && *model == e.test.model => v.push(e),
            _ => out.push((e.machine, e.test.model.clone(), vec![e])),
        }
    }
    out
}
