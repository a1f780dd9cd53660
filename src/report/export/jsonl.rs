use super::Exporter;
use crate::record::RunRecord;

/// One test record per line, as llama-bench's `-o jsonl`.
pub struct Jsonl;

impl Exporter for Jsonl {
    fn render(&self, run: &RunRecord) -> Vec<u8> {
        let mut out = Vec::new();
        for t in &run.tests {
            serde_json::to_writer(&mut out, t).expect("records always serialize");
            out.push(b'\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::fixtures;

    #[test]
    fn one_parseable_line_per_test() {
        let out = String::from_utf8(Jsonl.render(&fixtures::run())).unwrap();
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
}
