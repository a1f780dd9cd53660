//! The machine × quantization grid per model and test, every cell on one scale so that
//! fifty machines compare at a glance; each machine at its fastest setting.

use std::collections::BTreeMap;

use super::answer::common_test;
use super::charts::svg::{Tags, fmt_num};
use super::load::entry::{Entry, identity, is_speed, kind_word, ts};
use super::load::{Board, machine_names};
use super::table::{Cell, RowMeta, Table, anchor, opt};
use crate::plan::TestKind;

#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub model: String,
    pub kind: TestKind,
    pub test: String,
    /// The columns, largest file first, and their headers ("Q4_K_M (mostly Q5_0)").
    pub quants: Vec<String>,
    pub labels: Vec<String>,
    /// Per machine, fastest first: a cell per quantization.
    pub rows: Vec<(usize, Vec<Option<GridCell>>)>,
    pub max: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GridCell {
    pub value: f64,
    pub sd: Option<f64>,
    pub detail: String,
}

pub fn grids(b: &Board) -> Vec<Grid> {
    let mut by_model: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
    for e in &b.entries {
        if is_speed(e) && e.test.params.n_depth == 0 {
            by_model.entry(identity(e)).or_default().push(e);
        }
    }
    let mut out = Vec::new();
    for (model, es) in by_model {
        for kind in [TestKind::Tg, TestKind::Pp] {
            let Some(test) = common_test(&es, kind) else {
                continue;
            };
            let cells: Vec<&Entry> = (es.iter().copied())
                .filter(|e| e.test.kind == kind && e.test.test == test)
                .collect();
            out.push(grid(&model, kind, &test, &cells));
        }
    }
    out
}

fn grid(model: &str, kind: TestKind, test: &str, es: &[&Entry]) -> Grid {
    let mut cols: Vec<(u64, String, String)> = Vec::new();
    for e in es {
        if !cols.iter().any(|c| c.1 == e.quant) {
            cols.push((
                e.test.model_size.unwrap_or(0),
                e.quant.clone(),
                e.quant_label(),
            ));
        }
    }
    cols.sort_by(|x, y| y.0.cmp(&x.0).then_with(|| x.1.cmp(&y.1)));
    let machines = crate::util::sorted_unique(es.iter().map(|e| e.machine));
    let best = |m: usize, q: &str| {
        (es.iter().copied())
            .filter(|e| e.machine == m && e.quant == q)
            .max_by(|a, b| ts(a).total_cmp(&ts(b)))
    };
    let mut rows: Vec<(usize, Vec<Option<GridCell>>)> = (machines.iter())
        .map(|&m| {
            let cells = (cols.iter())
                .map(|(_, q, _)| {
                    best(m, q).map(|e| GridCell {
                        value: ts(e),
                        sd: e.test.stddev_ts,
                        detail: format!(
                            "{} {} at {} threads, {} backend ({})",
                            e.test.model,
                            e.test.test,
                            e.test.params.n_threads,
                            e.test.backends,
                            e.file.display()
                        ),
                    })
                })
                .collect();
            (m, cells)
        })
        .collect();
    let fastest = |r: &(usize, Vec<Option<GridCell>>)| {
        r.1.iter().flatten().map(|c| c.value).fold(0.0, f64::max)
    };
    rows.sort_by(|x, y| fastest(y).total_cmp(&fastest(x)).then(x.0.cmp(&y.0)));
    Grid {
        model: model.to_string(),
        kind,
        test: test.to_string(),
        quants: cols.iter().map(|c| c.1.clone()).collect(),
        labels: cols.into_iter().map(|c| c.2).collect(),
        max: rows.iter().map(fastest).fold(0.0, f64::max),
        rows,
    }
}

impl Grid {
    /// "SmolLM2-135M (llama): decode tg128 t/s".
    pub fn title(&self) -> String {
        format!("{}: {} {} t/s", self.model, kind_word(self.kind), self.test)
    }

    pub fn table(&self, b: &Board) -> Table {
        let names = machine_names(b);
        let rows = (self.rows.iter())
            .map(|(m, cells)| {
                let mut row = vec![Cell::text(names[*m].clone())];
                let num = |c: &GridCell| Cell::num(fmt_num(c.value), c.value);
                row.extend(cells.iter().map(|c| opt(c.as_ref().map(num))));
                row
            })
            .collect();
        let meta = (self.rows.iter())
            .map(|(m, _)| RowMeta {
                id: anchor("g", &[&b.machines[*m].key, &self.model, &self.test]),
                tags: Tags::of([
                    ("model", &self.model),
                    ("machine", &m.to_string()),
                    ("backend", &b.machines[*m].backend),
                ]),
                file: String::new(),
            })
            .collect();
        Table::labelled("machine", &self.labels, rows, meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::leaderboard::testdata::{file, model, run, test};
    use crate::report::leaderboard::{Exclude, load::board};

    const T: &str = "2026-01-01T10:00:00Z";

    fn machine(host: &str, tg: &[(&str, f64)]) -> (std::path::PathBuf, crate::record::RunRecord) {
        let models = tg
            .iter()
            .map(|(q, _)| model(&format!("SmolLM2-135M-{q}"), q))
            .collect();
        let tests = tg
            .iter()
            .map(|(q, v)| test(&format!("SmolLM2-135M-{q}"), 0, 128, 0, 2, *v, T))
            .collect();
        file(&format!("{host}.json"), run(host, T, models, tests), |_| {})
    }

    #[test]
    fn machines_are_rows_quantizations_columns_on_one_scale() {
        let b = board(
            vec![
                machine("slow", &[("Q8_0", 20.0), ("Q4_0", 30.0)]),
                machine("fast", &[("Q8_0", 200.0), ("Q4_0", 310.0)]),
                machine("half", &[("Q4_0", 150.0)]),
            ],
            &Exclude::default(),
        );
        let g = grids(&b);
        assert_eq!(g.len(), 1, "decode only: no prefill was measured");
        let g = &g[0];
        assert_eq!(g.model, "SmolLM2-135M (llama)");
        assert_eq!(g.test, "tg128");
        assert_eq!(g.max, 310.0);
        let hosts: Vec<&str> = g
            .rows
            .iter()
            .map(|(m, _)| b.machines[*m].hostname.as_str())
            .collect();
        assert_eq!(hosts, ["fast", "half", "slow"]);
        let t = g.table(&b);
        assert_eq!(t.rows[1][0].text, "half");
        assert!(
            t.rows[1].iter().any(|c| c.text.is_empty()),
            "half has no Q8_0"
        );
        assert_eq!(t.meta.len(), 3);
        assert_ne!(t.meta[0].id, t.meta[1].id);
    }
}
