//! The machines view, LocalScore-style: the same model, quantization and test on every
//! machine, as a share of the fastest; each machine at its fastest setting.

use crate::plan::TestKind;
use crate::report::leaderboard::charts::parts::{describe, empty_bars, or_empty};
use crate::report::leaderboard::charts::svg::bars::{Bar, BarChart, BarSeries, Category};
use crate::report::leaderboard::charts::svg::{MAX_SERIES, fmt_num};
use crate::report::leaderboard::load::entry::{
    Entry, fastest_by, group_by, is_speed, kind_rank, tags_of, ts,
};
use crate::report::leaderboard::load::{Board, machine_names};

pub const NO_MACHINES: &str = "no data in these results (run the same model and test on two or more machines, e.g. scripts/make-results on each, and build the board from all their result files, to produce it)";

fn best_per_machine(b: &Board) -> Vec<&Entry> {
    let es = b.entries.iter().filter(|e| {
        is_speed(e)
            && matches!(e.test.kind, TestKind::Pp | TestKind::Tg)
            && e.test.params.n_depth == 0
    });
    fastest_by(es, |e| {
        (
            e.machine,
            e.test.model.clone(),
            e.quant.clone(),
            e.test.test.clone(),
        )
    })
}

/// A chart per model and quantization measured on two or more machines.
pub fn machines(b: &Board) -> Vec<BarChart> {
    let names = machine_names(b);
    let by_model = group_by(best_per_machine(b), |e| {
        (e.test.model.clone(), e.quant.clone())
    });
    let mut charts = Vec::new();
    for ((model, quant), es) in by_model {
        let tests = shared_tests(&es);
        if tests.is_empty() {
            continue;
        }
        let rows = fastest_first(&es, &tests);
        let title = format!("{model} {quant}: machines against the fastest");
        for (part, chunk) in tests.chunks(MAX_SERIES).enumerate() {
            let mut c = chart(&es, chunk, &rows, &names);
            c.id = format!("machines-{}", charts.len());
            c.title = format!("{title}{}", if part > 0 { " (continued)" } else { "" });
            charts.push(c);
        }
    }
    let title = "Machines against the fastest";
    or_empty(charts, empty_bars("machines", title, NO_MACHINES))
}

fn shared_tests(es: &[&Entry]) -> Vec<(u8, u64, String)> {
    let mut tests = crate::util::sorted_unique(es.iter().map(|e| {
        (
            kind_rank(e.test.kind),
            e.test.params.n_tokens(),
            e.test.test.clone(),
        )
    }));
    tests.retain(|t| es.iter().filter(|e| e.test.test == t.2).count() > 1);
    tests
}

fn share<'a>(es: &[&'a Entry], m: usize, test: &str) -> Option<(f64, &'a Entry)> {
    let fastest = (es.iter().filter(|e| e.test.test == test))
        .map(|e| ts(e))
        .fold(0.0, f64::max);
    let e = es.iter().find(|e| e.machine == m && e.test.test == test)?;
    (fastest > 0.0).then(|| (100.0 * ts(e) / fastest, *e))
}

fn fastest_first(es: &[&Entry], tests: &[(u8, u64, String)]) -> Vec<usize> {
    let mut rows = crate::util::sorted_unique(es.iter().map(|e| e.machine));
    rows.sort_by(|&x, &y| {
        let key = |m| {
            (tests.iter())
                .map(|t| share(es, m, &t.2).map_or(-1.0, |s| s.0))
                .collect::<Vec<f64>>()
        };
        key(y)
            .partial_cmp(&key(x))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    rows
}

fn chart(es: &[&Entry], tests: &[(u8, u64, String)], rows: &[usize], names: &[String]) -> BarChart {
    let series = (tests.iter())
        .map(|(_, _, test)| BarSeries {
            name: test.clone(),
            values: (rows.iter())
                .map(|&m| {
                    let (pct, e) = share(es, m, test)?;
                    Some(Bar {
                        value: pct,
                        err: None,
                        label: format!("{pct:.0} % · {} t/s", fmt_num(ts(e))),
                        tooltip: format!("{}: {pct:.1} % of the fastest", describe(e)),
                        tags: tags_of(e),
                    })
                })
                .collect(),
        })
        .collect();
    BarChart {
        subtitle: format!(
            "each machine at its fastest setting of each test, depth 0; 100 % = the fastest machine{}",
            crate::report::wrapped(" · ", &es[0].badges.join(", "), "")
        ),
        x_label: "% of the fastest machine's tokens per second".into(),
        categories: (rows.iter())
            .map(|&m| Category {
                label: names[m].clone(),
                ..Default::default()
            })
            .collect(),
        series,
        empty: NO_MACHINES.into(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::leaderboard::testdata::{file, model, run, test};
    use crate::report::leaderboard::{Exclude, load::board};

    const T: &str = "2026-01-01T10:00:00Z";

    fn machine(host: &str, pp: f64, tg: f64) -> (std::path::PathBuf, crate::record::RunRecord) {
        let r = run(
            host,
            T,
            vec![model("m", "Q4_1")],
            vec![
                test("m", 64, 0, 0, 2, pp, T),
                test("m", 0, 16, 0, 2, tg, T),
                test("m", 0, 16, 0, 1, tg / 2.0, T),
            ],
        );
        file(host, r, |_| {})
    }

    #[test]
    fn bars_are_shares_of_the_fastest_machine_with_the_fastest_first() {
        let b = board(
            vec![
                machine("slow", 100.0, 10.0),
                machine("fast", 400.0, 20.0),
                machine("mid", 200.0, 15.0),
            ],
            &Exclude::default(),
        );
        let c = machines(&b);
        assert_eq!(c.len(), 1);
        let rows: Vec<_> = c[0].categories.iter().map(|x| x.label.as_str()).collect();
        assert_eq!(rows, ["fast", "mid", "slow"]);
        let pp: Vec<f64> = c[0].series[0]
            .values
            .iter()
            .map(|v| v.as_ref().unwrap().value)
            .collect();
        assert_eq!(pp, [100.0, 50.0, 25.0]);
        let tg = c[0].series[1].values[2].as_ref().unwrap();
        assert_eq!(tg.value, 50.0, "each machine's fastest setting (2 threads)");
        assert_eq!(tg.label, "50 % · 10.0 t/s");
        assert!(!c[0].render().contains("class=\"empty\""));
    }

    #[test]
    fn one_machine_gives_the_placeholder() {
        let b = board(vec![machine("only", 1.0, 1.0)], &Exclude::default());
        let c = machines(&b);
        assert_eq!(c.len(), 1);
        assert!(c[0].render().contains("two or more machines"));
    }
}
