use super::Exporter;
use crate::config::knobs::KNOBS;
use crate::record::RunRecord;

/// One row per test with llama-bench's column names (samples joined by ';'); the
/// parameters of `config::knobs`' table follow type_v, in the table's order.
pub struct Csv;

const COLUMNS: &[&str] = &[
    "id",
    "model",
    "status",
    "error",
    "model_filename",
    "model_type",
    "model_size",
    "model_n_params",
    "backends",
    "n_batch",
    "n_ubatch",
    "n_threads",
    "n_gpu_layers",
    "split_mode",
    "main_gpu",
    "no_kv_offload",
    "flash_attn",
    "type_k",
    "type_v",
    "n_prompt",
    "n_gen",
    "n_depth",
    "test_time",
    "avg_ns",
    "stddev_ns",
    "avg_ts",
    "stddev_ts",
    "median_ts",
    "samples_ns",
    "samples_ts",
];

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt<T: ToString>(x: &Option<T>) -> String {
    x.as_ref().map(ToString::to_string).unwrap_or_default()
}

fn join<T: ToString>(xs: &[T]) -> String {
    xs.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(";")
}

impl Exporter for Csv {
    fn render(&self, run: &RunRecord) -> Vec<u8> {
        let knobs_at = COLUMNS
            .iter()
            .position(|c| *c == "type_v")
            .map_or(0, |i| i + 1);
        let mut header: Vec<&str> = COLUMNS.to_vec();
        for (i, k) in KNOBS.iter().enumerate() {
            header.insert(knobs_at + i, k.name);
        }
        let mut out = header.join(",");
        out.push('\n');
        for t in &run.tests {
            let p = &t.params;
            let status = serde_json::to_value(t.status).expect("serializes");
            let row = [
                t.id.clone(),
                t.model.clone(),
                status.as_str().unwrap_or_default().to_string(),
                opt(&t.error),
                t.model_filename.clone(),
                opt(&t.model_type),
                opt(&t.model_size),
                opt(&t.model_n_params),
                t.backends.clone(),
                p.n_batch.to_string(),
                p.n_ubatch.to_string(),
                p.n_threads.to_string(),
                p.n_gpu_layers.to_string(),
                p.split_mode.as_str().to_string(),
                p.main_gpu.to_string(),
                p.no_kv_offload.to_string(),
                p.flash_attn.to_string(),
                p.type_k.clone(),
                p.type_v.clone(),
                p.n_prompt.to_string(),
                p.n_gen.to_string(),
                p.n_depth.to_string(),
                t.test_time.clone(),
                opt(&t.avg_ns),
                opt(&t.stddev_ns),
                opt(&t.avg_ts),
                opt(&t.stddev_ts),
                opt(&t.median_ts),
                join(&t.samples_ns),
                join(&t.samples_ts),
            ];
            let mut row: Vec<String> = row.to_vec();
            for (i, k) in KNOBS.iter().enumerate() {
                let v = p.knobs.get(k.name).unwrap_or_else(|| k.default_value());
                let text = match k.bench_json(&v) {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                row.insert(knobs_at + i, text);
            }
            out.push_str(&row.iter().map(|s| field(s)).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
        out.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::fixtures;

    #[test]
    fn header_and_rows_have_the_same_width_and_quotes_are_escaped() {
        let out = String::from_utf8(Csv.render(&fixtures::run())).unwrap();
        let lines: Vec<_> = out.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("id,model,status"));
        assert!(lines[2].contains("\"failed to create context, \"\"oom\"\"\""));
        assert!(lines[1].contains("1000000000;1024000000"));
    }
}
