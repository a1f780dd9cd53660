use super::Exporter;
use super::llama_bench_row::rows;
use crate::record::RunRecord;

/// llama-bench's `-o json`: an array of test rows (see `llama_bench_row`).
pub struct LlamaBenchJson;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::fixtures;

    #[test]
    fn snapshot() {
        let out = String::from_utf8(LlamaBenchJson.render(&fixtures::run())).unwrap();
        insta::assert_snapshot!(out);
    }

    #[test]
    fn is_an_array_of_rows() {
        let v: serde_json::Value =
            serde_json::from_slice(&LlamaBenchJson.render(&fixtures::run())).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 1);
        assert_eq!(v[0]["n_prompt"], 512);
    }
}
