//! The tables as cells, for both writers. The rate comes right after what was measured, so
//! a narrow window shows it; a setting gets a column only where it differs within the table.

use super::charts::svg::Tags;
use super::load::entry::{Entry, is_speed, kind_rank, tags_of, ts};
use super::load::{Board, RunSummary};
use crate::config::knobs::{FieldType, Knob, Level, PARAMS, Slot};

/// A cell: its text, the value a numeric column sorts by, badges after the text.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub text: String,
    pub sort: Option<f64>,
    pub badges: Vec<String>,
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell {
            text: s.into(),
            sort: None,
            badges: vec![],
        }
    }
    pub fn num(text: String, v: f64) -> Cell {
        Cell {
            text,
            sort: Some(v),
            badges: vec![],
        }
    }
    /// The text with its badges, e.g. `SmolLM2-135M-Q8_0 [requantized]`.
    pub fn shown(&self) -> String {
        self.badges
            .iter()
            .fold(self.text.clone(), |s, b| format!("{s} [{b}]"))
    }

    /// The cell with `badges` after its text.
    pub fn badged(self, badges: &[String]) -> Cell {
        let badges = badges.to_vec();
        Cell { badges, ..self }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub headers: Vec<String>,
    pub numeric: Vec<bool>,
    pub rows: Vec<Vec<Cell>>,
    pub meta: Vec<RowMeta>,
}

impl Table {
    /// Aligned Markdown (`util::table`, the one writer), badges in brackets.
    pub fn markdown(&self) -> String {
        let n = self.headers.len();
        let rows: Vec<Vec<String>> = std::iter::once(self.headers.clone())
            .chain(self.rows.iter().map(|r| {
                (0..n)
                    .map(|c| r.get(c).map(Cell::shown).unwrap_or_default())
                    .collect()
            }))
            .collect();
        crate::util::table::aligned(&rows, &|c| !self.numeric[c])
    }

    /// A text column headed `first`, then numeric `columns`.
    pub fn labelled(
        first: &str,
        columns: &[String],
        rows: Vec<Vec<Cell>>,
        meta: Vec<RowMeta>,
    ) -> Table {
        let headers: Vec<String> = std::iter::once(first.into())
            .chain(columns.to_vec())
            .collect();
        Table {
            numeric: (0..headers.len()).map(|i| i > 0).collect(),
            headers,
            rows,
            meta,
        }
    }
}

/// A row's anchor (a hash of what it measured), filter tags, and the file its `file` cell
/// links to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowMeta {
    pub id: String,
    pub tags: Tags,
    pub file: String,
}

impl RowMeta {
    pub fn of(e: &Entry) -> RowMeta {
        RowMeta {
            id: anchor("r", &[&e.file.display().to_string(), &e.test.identity]),
            tags: tags_of(e),
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

#[derive(Clone, Copy)]
enum Col<'a> {
    Fixed(&'a Column),
    Param(&'static Knob),
}

impl Col<'_> {
    fn head(self) -> (&'static str, bool) {
        match self {
            Col::Fixed(c) => (c.0, c.1),
            Col::Param(k) => (k.header, k.field != FieldType::Str),
        }
    }

    fn cell(self, e: &Entry) -> Cell {
        match self {
            Col::Fixed(c) => (c.2)(e),
            Col::Param(k) => {
                let v = k.get(&e.test.params);
                if self.head().1 {
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

/// The cell, or an empty one.
pub fn opt(v: Option<Cell>) -> Cell {
    v.unwrap_or_else(|| Cell::text(""))
}

fn rate2(v: Option<f64>) -> Cell {
    opt(v.map(|v| Cell::num(f2(v), v)))
}

/// Figures shown when some row has one (a quantization's own are the answer table's).
const EXTRA: &[Column] = &[
    ("median t/s", true, |e| rate2(e.test.median_ts)),
    ("bytes/s", true, |e| {
        opt(e.bytes_per_s().map(|b| Cell::num(format!("{b:.1}"), b)))
    }),
    ("n_parallel", true, |e| {
        opt(e
            .serving()
            .map(|s| Cell::num(s.n_parallel.to_string(), s.n_parallel as f64)))
    }),
    ("per-request t/s", true, |e| {
        rate2(e.serving().and_then(|s| s.per_request_ts))
    }),
    ("TTFT p50 / p90 ms", true, |e| {
        opt(e.serving().map(|s| {
            let (p50, p90) = (s.ttft_ms.p50, s.ttft_ms.p90);
            Cell::num(format!("{p50:.1} / {p90:.1}"), p50)
        }))
    }),
    ("aggregate t/s", true, |e| {
        rate2(e.serving().and_then(|s| s.aggregate_ts))
    }),
    ("goodput: max req/s within the SLO", true, |e| {
        opt(e.serving().and_then(|s| {
            let g = s.goodput.as_ref()?;
            Some(match g.max_rate {
                Some(rate) => Cell::num(
                    format!("{rate:.2} ({:.2} good/s)", g.goodput.unwrap_or(0.0)),
                    rate,
                ),
                None => Cell::num(
                    format!("none (below at {:.2})", g.failed_rate.unwrap_or(0.0)),
                    0.0,
                ),
            })
        }))
    }),
];

/// Served (HTTP) tests: the transport, and the cost against the in-process twin.
const SERVED: &[Column] = &[
    ("transport", false, |e| {
        opt(e
            .serving()
            .map(|s| match (s.transport.is_in_process(), &s.server) {
                (true, _) => Cell::text("in-process"),
                (false, Some(v)) => Cell::text(format!(
                    "http ({})",
                    v.build.as_deref().unwrap_or(&v.served_model)
                )),
                (false, None) => Cell::text("http"),
            }))
    }),
    ("served / in-process (95% interval)", false, |e| {
        opt(e.serving().and_then(|s| {
            let v = s.vs_in_process.as_ref()?;
            let parts: Vec<String> = [
                ("TTFT", &v.ttft),
                ("per-request", &v.per_request_ts),
                ("aggregate", &v.aggregate_ts),
            ]
            .iter()
            .filter_map(|(name, r)| {
                let r = r.as_ref()?;
                Some(format!("{name} ×{:.2} ({:.2}–{:.2})", r.ratio, r.lo, r.hi))
            })
            .collect();
            (!parts.is_empty()).then(|| Cell::text(parts.join(" · ")))
        }))
    }),
];

const OTHER_SETTINGS: &[Column] = &[
    // The knobs away from llama-bench's defaults, as "ncmoe 4, ot ...".
    ("settings", false, |e| {
        Cell::text(e.test.params.knobs.describe())
    }),
    ("backend", false, |e| Cell::text(e.test.backends.clone())),
];

/// The typed model- and context-level parameters.
pub fn typed_params() -> impl Iterator<Item = &'static Knob> {
    PARAMS
        .iter()
        .filter(|k| k.level != Level::Test && matches!(k.slot, Slot::Field(_)))
}

/// Settings: each typed parameter under its header, then the others.
fn settings() -> impl Iterator<Item = Col<'static>> {
    typed_params().map(Col::Param).chain(fixed(OTHER_SETTINGS))
}

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

fn build(entries: &[&Entry], lead: &[Column], cols: &[Col]) -> Table {
    let all: Vec<Col> = fixed(lead).chain(cols.iter().copied()).collect();
    Table {
        headers: all.iter().map(|c| c.head().0.to_string()).collect(),
        numeric: all.iter().map(|c| c.head().1).collect(),
        rows: (entries.iter())
            .map(|e| all.iter().map(|c| c.cell(e)).collect())
            .collect(),
        meta: entries.iter().map(|e| RowMeta::of(e)).collect(),
    }
}

/// One machine and model's table: quant, t/s ± sd, test, figures present, settings varying.
pub fn detail(entries: &[&Entry]) -> Table {
    let lead: &[Column] = &[
        ("quant", false, |e| {
            Cell::text(e.quant_label()).badged(&e.badges)
        }),
        ("t/s", true, rate),
        ("test", false, |e| Cell::text(e.test.test.clone())),
    ];
    let mut cols = present(fixed(EXTRA), entries);
    if entries
        .iter()
        .any(|e| e.serving().is_some_and(|s| !s.transport.is_in_process()))
    {
        cols.extend(present(fixed(SERVED), entries));
    }
    cols.extend(varying(settings(), entries));
    build(entries, lead, &cols)
}

/// Per speed test name (prefill first), the `top` fastest over all machines and models.
pub fn rankings(b: &Board, top: usize) -> Vec<(String, Table)> {
    let names = crate::util::sorted_unique(b.entries.iter().filter(|e| is_speed(e)).map(|e| {
        let p = &e.test.params;
        let test = e.test.test.clone();
        (kind_rank(e.test.kind), p.n_depth, p.n_tokens(), test)
    }));
    (names.into_iter())
        .map(|(_, _, _, name)| {
            let mut es: Vec<&Entry> = (b.entries.iter())
                .filter(|e| is_speed(e) && e.test.test == name)
                .collect();
            es.sort_by(|x, y| ts(y).total_cmp(&ts(x)));
            es.truncate(top);
            let lead: &[Column] = &[
                ("t/s", true, rate),
                ("model", false, |e| {
                    Cell::text(e.test.model.clone()).badged(&e.badges)
                }),
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
        rows: (runs.iter())
            .map(|r| {
                let mut row = vec![
                    Cell::text(r.started_at.clone()),
                    match r.load_average {
                        Some([a, b, c]) => Cell::num(format!("{a:.2} {b:.2} {c:.2}"), a),
                        None => Cell::text("not recorded"),
                    },
                    Cell::num(r.n_tests.to_string(), r.n_tests as f64),
                    Cell::text(r.file.display().to_string()).badged(&r.badges),
                ];
                if with_command {
                    row.push(Cell::text(r.command.clone()));
                }
                row
            })
            .collect(),
        meta: (runs.iter())
            .map(|r| {
                let file = r.file.display().to_string();
                RowMeta {
                    id: anchor("f", &[&file]),
                    tags: Tags::of([("machine", &r.machine.to_string())]),
                    file,
                }
            })
            .collect(),
    }
}

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
