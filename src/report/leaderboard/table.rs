//! The leaderboard's tables as cells, shared by the Markdown and HTML writers so both show
//! the same columns and figures. The rate comes right after what was measured, so a narrow
//! window still shows it; the settings follow, each only when it differs within the table
//! (so that no two rows look alike while measuring different things).

use super::entry::{Entry, identity, is_speed, kind_rank};
use super::load::{Board, RunSummary};
use crate::config::knobs::{FieldType, Knob, Level, PARAMS, Slot};

/// One table cell: its text, for numeric columns the value to sort by, and badges drawn
/// after the text (`synthetic`, `requantized`).
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub text: String,
    pub sort: Option<f64>,
    pub badges: Vec<String>,
}

impl Cell {
    fn text(s: impl Into<String>) -> Cell {
        Cell {
            text: s.into(),
            sort: None,
            badges: vec![],
        }
    }
    fn num(text: String, v: f64) -> Cell {
        Cell {
            text,
            sort: Some(v),
            badges: vec![],
        }
    }
    fn model(e: &Entry) -> Cell {
        Cell {
            badges: e.badges.clone(),
            ..Cell::text(e.test.model.clone())
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub headers: Vec<String>,
    /// Right-aligned (numeric) columns.
    pub numeric: Vec<bool>,
    pub rows: Vec<Vec<Cell>>,
    /// Per row (or empty): its permalink and what the page's filters match it by.
    pub meta: Vec<RowMeta>,
}

/// What the page knows of a row beyond its cells: an anchor that stays the same when more
/// results are added (a hash of what the row measured, not its position), and the model,
/// machine, backend and quantization the filters select by (empty: not filtered by it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowMeta {
    pub id: String,
    pub model: String,
    /// Index into `Board::machines`, as text.
    pub machine: String,
    pub backend: String,
    pub quant: String,
    /// The result file the row comes from (relative to the input directory): the page
    /// links its `file` cell there.
    pub file: String,
}

impl RowMeta {
    /// The row of one measurement: anchored by its file and test identity.
    pub fn of(e: &Entry) -> RowMeta {
        RowMeta {
            id: anchor("r", &[&e.file.display().to_string(), &e.test.identity]),
            model: identity(e),
            machine: e.machine.to_string(),
            backend: e.test.backends.clone(),
            quant: e.quant.clone(),
            file: e.file.display().to_string(),
        }
    }
}

/// A short, stable HTML id: `prefix-` and 12 hex digits of the SHA-256 of the parts.
pub fn anchor(prefix: &str, parts: &[&str]) -> String {
    let h = crate::util::hash::sha256_hex(parts.join("\u{1f}"));
    format!("{prefix}-{}", &h[..12])
}

fn f2(v: f64) -> String {
    format!("{v:.2}")
}

type Column = (&'static str, bool, fn(&Entry) -> Cell);

/// A column of a table: one of the fixed ones, or a parameter of `config::knobs`' table.
#[derive(Clone, Copy)]
enum Col<'a> {
    Fixed(&'a Column),
    Param(&'static Knob),
}

impl Col<'_> {
    fn header(self) -> &'static str {
        match self {
            Col::Fixed(c) => c.0,
            Col::Param(k) => k.header,
        }
    }

    /// Right-aligned: a parameter is, unless llama-bench writes it as a string (booleans
    /// show as 0/1).
    fn numeric(self) -> bool {
        match self {
            Col::Fixed(c) => c.1,
            Col::Param(k) => k.field != FieldType::Str,
        }
    }

    fn cell(self, e: &Entry) -> Cell {
        match self {
            Col::Fixed(c) => (c.2)(e),
            Col::Param(k) => {
                let v = k.get(&e.test.params);
                if self.numeric() {
                    Cell::num(v.show(), v.as_i64() as f64)
                } else {
                    Cell::text(v.show())
                }
            }
        }
    }
}

fn fixed(cols: &[Column]) -> impl Iterator<Item = Col<'_>> {
    cols.iter().map(Col::Fixed)
}

fn opt(v: Option<Cell>) -> Cell {
    v.unwrap_or_else(|| Cell::text(""))
}

/// Figures shown only when some row has one. (KLD, size and bits per weight are a
/// quantization's, not a test's: the answer table shows them once per quantization.)
const EXTRA: &[Column] = &[
    ("median t/s", true, |e| {
        opt(e.test.median_ts.map(|m| Cell::num(f2(m), m)))
    }),
    ("bytes/s", true, |e| {
        opt(e.bytes_per_s().map(|b| Cell::num(format!("{b:.1}"), b)))
    }),
    ("n_parallel", true, |e| {
        opt(e
            .serving
            .as_ref()
            .map(|s| Cell::num(s.n_parallel.to_string(), s.n_parallel as f64)))
    }),
    ("per-request t/s", true, |e| {
        opt(e
            .serving
            .as_ref()
            .map(|s| Cell::num(f2(s.per_request_ts), s.per_request_ts)))
    }),
    ("TTFT p50 / p90 ms", true, |e| {
        opt(e.serving.as_ref().and_then(|s| {
            let (p50, p90) = (s.ttft_p50_ms?, s.ttft_p90_ms?);
            Some(Cell::num(format!("{p50:.1} / {p90:.1}"), p50))
        }))
    }),
    ("aggregate t/s", true, |e| {
        opt(e
            .serving
            .as_ref()
            .map(|s| Cell::num(f2(s.aggregate_ts), s.aggregate_ts)))
    }),
    ("goodput: max req/s within the SLO", true, |e| {
        opt(e.serving.as_ref().and_then(|s| {
            Some(match s.goodput? {
                (Some(rate), good, _) => Cell::num(
                    format!("{rate:.2} ({:.2} good/s)", good.unwrap_or(0.0)),
                    rate,
                ),
                (None, _, failed) => {
                    Cell::num(format!("none (below at {:.2})", failed.unwrap_or(0.0)), 0.0)
                }
            })
        }))
    }),
];

/// Served (HTTP) tests: how they reached the model and what serving cost against the
/// in-process test of the same parameters. Shown when some row was served.
const SERVED: &[Column] = &[
    ("transport", false, |e| {
        opt(e.serving.as_ref().map(|s| match (&s.transport, &s.server) {
            (Some(t), Some(server)) => Cell::text(format!("{t} ({server})")),
            (Some(t), None) => Cell::text(t.clone()),
            (None, _) => Cell::text("in-process"),
        }))
    }),
    ("served / in-process (95% interval)", false, |e| {
        opt(e.serving.as_ref().and_then(|s| {
            let parts: Vec<String> = ["TTFT", "per-request", "aggregate"]
                .iter()
                .zip(&s.vs_in_process)
                .filter_map(|(name, r)| {
                    let (x, lo, hi) = (*r)?;
                    Some(format!("{name} ×{x:.2} ({lo:.2}–{hi:.2})"))
                })
                .collect();
            (!parts.is_empty()).then(|| Cell::text(parts.join(" · ")))
        }))
    }),
];

/// The settings after the parameters' own columns.
const OTHER_SETTINGS: &[Column] = &[
    // The knob table's parameters held in its map, those that differ from llama-bench's
    // defaults (n_cpu_moe, tensor_buft_overrides, devices, fit_target, ...), as "ncmoe 4,
    // ot ...".
    ("settings", false, |e| {
        Cell::text(e.test.params.knobs.describe())
    }),
    ("backend", false, |e| Cell::text(e.test.backends.clone())),
];

/// Settings, shown only when they differ between rows of the table: each typed model-level
/// and context-level parameter of the table (the original axes) under its header, in the
/// table's order, then the others.
fn settings() -> impl Iterator<Item = Col<'static>> {
    PARAMS
        .iter()
        .filter(|k| k.level != Level::Test && matches!(k.slot, Slot::Field(_)))
        .map(Col::Param)
        .chain(fixed(OTHER_SETTINGS))
}

/// The columns of `cols` whose cell text differs between the entries.
fn varying<'a>(cols: impl Iterator<Item = Col<'a>>, entries: &[&Entry]) -> Vec<Col<'a>> {
    let Some(first) = entries.first() else {
        return vec![];
    };
    cols.filter(|c| entries.iter().any(|e| c.cell(e).text != c.cell(first).text))
        .collect()
}

fn present<'a>(cols: impl Iterator<Item = Col<'a>>, entries: &[&Entry]) -> Vec<Col<'a>> {
    cols.filter(|c| entries.iter().any(|e| !c.cell(e).text.is_empty()))
        .collect()
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

/// Builds a table from leading columns, then `cols`.
fn build(entries: &[&Entry], lead: &[Column], cols: &[Col]) -> Table {
    let all: Vec<Col> = fixed(lead).chain(cols.iter().copied()).collect();
    Table {
        headers: all.iter().map(|c| c.header().to_string()).collect(),
        numeric: all.iter().map(|c| c.numeric()).collect(),
        rows: entries
            .iter()
            .map(|e| all.iter().map(|c| c.cell(e)).collect())
            .collect(),
        meta: entries.iter().map(|e| RowMeta::of(e)).collect(),
    }
}

/// The detail table of some entries (one machine and model): quant, test, t/s ± sd, the
/// optional figures and the settings that vary. Size and bits per weight are the answer
/// table's (one row per quantization), not repeated on every test here.
pub fn detail(entries: &[&Entry]) -> Table {
    let lead: &[Column] = &[
        ("quant", false, |e| Cell {
            badges: e.badges.clone(),
            ..Cell::text(e.quant_label())
        }),
        ("t/s", true, rate),
        ("test", false, |e| Cell::text(e.test.test.clone())),
    ];
    let mut cols = present(fixed(EXTRA), entries);
    if entries
        .iter()
        .any(|e| e.serving.as_ref().is_some_and(|s| s.transport.is_some()))
    {
        cols.extend(present(fixed(SERVED), entries));
    }
    cols.extend(varying(settings(), entries));
    build(entries, lead, &cols)
}

/// A ranking: for each speed test name (prefill first), the `top` fastest measurements over
/// all machines, models and settings, with the settings that differ among them.
pub fn rankings(b: &Board, top: usize) -> Vec<(String, Table)> {
    let mut names: Vec<(u8, u32, u64, String)> = b
        .entries
        .iter()
        .filter(|e| is_speed(e))
        .map(|e| {
            let p = &e.test.params;
            (
                kind_rank(e.test.kind),
                p.n_depth,
                p.n_tokens(),
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
                .filter(|e| is_speed(e) && e.test.test == name)
                .collect();
            es.sort_by(|x, y| {
                y.test
                    .avg_ts
                    .unwrap_or(0.0)
                    .total_cmp(&x.test.avg_ts.unwrap_or(0.0))
            });
            es.truncate(top);
            let lead: &[Column] = &[
                ("t/s", true, rate),
                ("model", false, Cell::model),
                ("quant", false, |e| Cell::text(e.quant_label())),
            ];
            let cols = varying(settings(), &es);
            let mut t = build(&es, lead, &cols);
            // The same measurement's row in its machine's table has the plain id.
            for m in &mut t.meta {
                m.id = m.id.replacen("r-", "rank-", 1);
            }
            t.headers.insert(0, "#".into());
            t.headers.push("machine".into());
            t.numeric.insert(0, true);
            t.numeric.push(false);
            for (i, (row, e)) in t.rows.iter_mut().zip(&es).enumerate() {
                row.insert(0, Cell::num((i + 1).to_string(), (i + 1) as f64));
                row.push(Cell::text(b.machines[e.machine].hostname.clone()));
            }
            (name, t)
        })
        .collect()
}

/// The runs of one machine: start, load average, tests, file (relative to the input, with
/// the run's plausibility badges) and, where `with_command`, the command.
pub fn runs(runs: &[&RunSummary], with_command: bool) -> Table {
    let mut headers = vec!["started", "load (1, 5, 15 min)", "tests", "file"];
    let mut numeric = vec![false, true, true, false];
    if with_command {
        headers.push("command");
        numeric.push(false);
    }
    Table {
        headers: headers.into_iter().map(String::from).collect(),
        numeric,
        rows: runs
            .iter()
            .map(|r| {
                let mut row = vec![
                    Cell::text(r.started_at.clone()),
                    match r.load_average {
                        Some([a, b, c]) => Cell::num(format!("{a:.2} {b:.2} {c:.2}"), a),
                        None => Cell::text("not recorded"),
                    },
                    Cell::num(r.n_tests.to_string(), r.n_tests as f64),
                    Cell {
                        badges: r.badges.clone(),
                        ..Cell::text(r.file.display().to_string())
                    },
                ];
                if with_command {
                    row.push(Cell::text(r.command.clone()));
                }
                row
            })
            .collect(),
        meta: runs
            .iter()
            .map(|r| {
                let file = r.file.display().to_string();
                RowMeta {
                    id: anchor("f", &[&file]),
                    machine: r.machine.to_string(),
                    file,
                    ..RowMeta::default()
                }
            })
            .collect(),
    }
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
