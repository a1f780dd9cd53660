//! The table of `tpsbench run --library DIR [--library DIR ...]`: per test, each build's
//! ratio to the first with a verdict paired by round, as `tpsbench compare` gives it. The
//! builds are measured (child processes, interleaved rounds, one record per build) by
//! `runner::library_ab`.

use crate::record::RunRecord;

pub use crate::runner::library_ab::{Launcher, run_rounds};

/// Per test, each build against the first: ratio, interval and verdict.
pub fn report(labels: &[String], records: &[RunRecord]) -> String {
    let mut out = String::new();
    let Some(first) = records.first() else {
        return out;
    };
    let a = super::compare::side_of_run(first);
    for (label, rec) in labels.iter().zip(records).skip(1) {
        let b = super::compare::side_of_run(rec);
        // The builds' launches alternate round by round: paired, no floor needed.
        let settings = crate::stats::compare::Settings {
            interleaved: true,
            ..Default::default()
        };
        let r = super::compare::compare_sides(&a, &b, &[], &settings);
        out.push_str(&r.to_markdown(&labels[0], label));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
