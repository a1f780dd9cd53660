//! The JSON formats: tpsbench's own document and records, and llama-bench's rows
//! (`llama_bench_row`) as an array or one per line.

use serde::Serialize;

use super::Exporter;
use super::llama_bench_row::rows;
use crate::record::RunRecord;

/// The whole result document, pretty-printed.
pub struct Json;
/// One test record per line, as llama-bench's `-o jsonl`.
pub struct Jsonl;
/// llama-bench's `-o json`: an array of test rows.
pub struct LlamaBenchJson;
/// llama-bench's `-o jsonl`: one test row per line.
pub struct LlamaBenchJsonl;

fn lines<T: Serialize>(items: impl IntoIterator<Item = T>) -> Vec<u8> {
    let mut out = Vec::new();
    for x in items {
        serde_json::to_writer(&mut out, &x).expect("records always serialize");
        out.push(b'\n');
    }
    out
}

impl Exporter for Json {
    fn render(&self, run: &RunRecord) -> Vec<u8> {
        crate::record::results::to_json_bytes(run)
    }
}

impl Exporter for Jsonl {
    fn render(&self, run: &RunRecord) -> Vec<u8> {
        lines(&run.tests)
    }
}

impl Exporter for LlamaBenchJson {
    fn render(&self, run: &RunRecord) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(&rows(run)).expect("rows always serialize");
        v.push(b'\n');
        v
    }

    fn skipped(&self, run: &RunRecord) -> Option<String> {
        super::llama_bench_skipped("llama-bench-json", run)
    }
}

impl Exporter for LlamaBenchJsonl {
    fn render(&self, run: &RunRecord) -> Vec<u8> {
        lines(rows(run))
    }

    fn skipped(&self, run: &RunRecord) -> Option<String> {
        super::llama_bench_skipped("llama-bench-jsonl", run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::fixtures;

    fn text(e: &dyn Exporter, run: &RunRecord) -> String {
        String::from_utf8(e.render(run)).unwrap()
    }

    #[test]
    fn round_trips_through_serde() {
        let run = fixtures::run();
        let back: RunRecord = serde_json::from_slice(&Json.render(&run)).unwrap();
        assert_eq!(back, run);
    }

    #[test]
    fn one_parseable_line_per_test() {
        let out = text(&Jsonl, &fixtures::run());
        let lines: Vec<_> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        for l in lines {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert!(
                v["n_prompt"].is_u64(),
                "params are flattened like llama-bench rows"
            );
        }
    }

    #[test]
    fn llama_bench_json_snapshot() {
        insta::assert_snapshot!(text(&LlamaBenchJson, &fixtures::run()));
    }

    #[test]
    fn llama_bench_json_is_an_array_of_rows() {
        let v: serde_json::Value =
            serde_json::from_slice(&LlamaBenchJson.render(&fixtures::run())).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 1);
        assert_eq!(v[0]["n_prompt"], 512);
    }

    #[test]
    fn llama_bench_jsonl_snapshot() {
        insta::assert_snapshot!(text(&LlamaBenchJsonl, &fixtures::run()));
    }

    #[test]
    fn llama_bench_jsonl_has_one_line_per_measured_test() {
        let mut run = fixtures::run();
        run.tests.push(run.tests[0].clone());
        let out = text(&LlamaBenchJsonl, &run);
        assert_eq!(out.lines().count(), 2, "two measured, one failed: {out}");
        for l in out.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert!(v["avg_ts"].is_f64());
        }
    }
}
