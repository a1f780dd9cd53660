use super::Exporter;
use super::llama_bench_row::rows;
use crate::record::RunRecord;

/// llama-bench's `-o jsonl`: one test row per line (see `llama_bench_row`).
pub struct LlamaBenchJsonl;

impl Exporter for LlamaBenchJsonl {
    fn render(&self, run: &RunRecord) -> Vec<u8> {
        let mut out = Vec::new();
        for r in rows(run) {
            serde_json::to_writer(&mut out, &r).expect("rows always serialize");
            out.push(b'\n');
        }
        out
    }

    fn skipped(&self, run: &RunRecord) -> Option<String> {
        super::llama_bench_skipped("llama-bench-jsonl", run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::fixtures;

    #[test]
    fn snapshot() {
        let out = String::from_utf8(LlamaBenchJsonl.render(&fixtures::run())).unwrap();
        insta::assert_snapshot!(out);
    }

    #[test]
    fn one_line_per_measured_test() {
        let mut run = fixtures::run();
        run.tests.push(run.tests[0].clone());
        let out = String::from_utf8(LlamaBenchJsonl.render(&run)).unwrap();
        assert_eq!(out.lines().count(), 2, "two measured, one failed: {out}");
        for l in out.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert!(v["avg_ts"].is_f64());
        }
    }
}
