//! Decode speed against context depth: when the same test ran at several `n_depth` values,
//! one row per test and one column per depth (the curve; its points are the test records).

use crate::record::{RunRecord, Status, TestRecord};
use crate::report::group_by;

fn depths<'a>(tests: impl Iterator<Item = &'a &'a TestRecord>) -> Vec<u32> {
    crate::util::sorted_unique(tests.map(|t| t.params.n_depth))
}

/// The depth table, preceded by a blank line; empty when no test ran at two depths.
pub fn render(run: &RunRecord) -> String {
    // Rows keyed by the test id without its `@dN` part, in first-seen order.
    let tests = run.tests.iter().filter(|t| t.serving.is_none());
    let mut rows = group_by(tests, |t| strip_depth(&t.id));
    rows.retain(|r| depths(r.1.iter()).len() > 1);
    if rows.is_empty() {
        return String::new();
    }
    let depths = depths(rows.iter().flat_map(|r| &r.1));
    let cell = |t: &&TestRecord| match (t.status, t.avg_ts, t.stddev_ts) {
        (Status::Ok, Some(a), Some(s)) => format!("{a:.2} ± {s:.2}"),
        _ => "failed".into(),
    };
    let mut header = vec!["test (t/s at depth)".to_string()];
    header.extend(depths.iter().map(|d| format!("d{d}")));
    let mut table = vec![header];
    for (key, tests) in &rows {
        let at = |d| tests.iter().find(|t| t.params.n_depth == d);
        let cells = depths.iter().map(|&d| at(d).map_or(String::new(), cell));
        table.push(std::iter::once(key.clone()).chain(cells).collect());
    }
    format!("\n{}", crate::util::table::aligned(&table, &|c| c == 0))
}

/// `m/Q4_1/tg128@d512/t=1` → `m/Q4_1/tg128/t=1`.
fn strip_depth(id: &str) -> String {
    id.split('/')
        .map(|part| part.split_once("@d").map_or(part, |(head, _)| head))
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::fixtures;

    #[test]
    fn a_sweep_over_depth_becomes_one_row_per_test() {
        let mut run = fixtures::run();
        let base = run.tests[0].clone();
        run.tests.clear();
        for (d, ns) in [
            (0u32, 1_000_000_000u64),
            (512, 2_000_000_000),
            (1024, 4_000_000_000),
        ] {
            let mut t = base.clone();
            t.params.n_depth = d;
            t.id = if d == 0 {
                "m/Q4_1/tg128".into()
            } else {
                format!("m/Q4_1/tg128@d{d}")
            };
            t.params.n_prompt = 0;
            t.params.n_gen = 128;
            t.set_samples(vec![ns, ns]);
            run.tests.push(t);
        }
        let out = render(&run);
        let lines: Vec<&str> = out.trim().lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert!(
            lines[0].contains(" d0 |") && lines[0].contains(" d1024 |"),
            "{out}"
        );
        assert!(lines[2].starts_with("| m/Q4_1/tg128 "), "{out}");
        assert!(
            lines[2].contains("128.00 ± 0.00") && lines[2].contains("32.00 ± 0.00"),
            "{out}"
        );
    }

    #[test]
    fn no_table_without_two_depths() {
        assert_eq!(render(&fixtures::run()), "");
        assert_eq!(strip_depth("a/b/pp512@d4096/t=1"), "a/b/pp512/t=1");
    }
}
