//! The JSON Lines writer: tpsbench's test records, or llama-bench's rows
//! (`llama_bench_row`), one per line.

use serde::Serialize;

pub(super) fn lines<T: Serialize>(items: impl IntoIterator<Item = T>) -> Vec<u8> {
    let mut out = Vec::new();
    for x in items {
        serde_json::to_writer(&mut out, &x).expect("records always serialize");
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::record::RunRecord;
    use crate::report::export::Format::{self, Json, Jsonl, LlamaBenchJson, LlamaBenchJsonl};
    use crate::report::export::fixtures;

    fn text(f: Format, run: &RunRecord) -> String {
        String::from_utf8(f.render(run)).unwrap()
    }

    #[test]
    fn round_trips_through_serde() {
        let run = fixtures::run();
        let back: RunRecord = serde_json::from_slice(&Json.render(&run)).unwrap();
        assert_eq!(back, run);
    }

    #[test]
    fn one_parseable_line_per_test() {
        let out = text(Jsonl, &fixtures::run());
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
        insta::assert_snapshot!(text(LlamaBenchJson, &fixtures::run()));
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
        insta::assert_snapshot!(text(LlamaBenchJsonl, &fixtures::run()));
    }

    #[test]
    fn llama_bench_jsonl_has_one_line_per_measured_test() {
        let mut run = fixtures::run();
        run.tests.push(run.tests[0].clone());
        let out = text(LlamaBenchJsonl, &run);
        assert_eq!(out.lines().count(), 2, "two measured, one failed: {out}");
        for l in out.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert!(v["avg_ts"].is_f64());
        }
    }
}
