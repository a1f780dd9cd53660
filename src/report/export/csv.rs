use serde_json::Value;

use crate::config::knobs::{knob, with_others};
use crate::record::RunRecord;

/// llama-bench's CSV header, in its order.
const COLUMNS: &str = "\
    id,model,status,error,model_filename,model_type,model_size,model_n_params,backends,n_batch,\
    n_ubatch,n_threads,n_gpu_layers,split_mode,main_gpu,no_kv_offload,flash_attn,type_k,type_v,\
    n_prompt,n_gen,n_depth,tokens,test_time,avg_ns,stddev_ns,avg_ts,stddev_ts,median_ts,\
    samples_ns,samples_ts";

/// An RFC 4180 field.
pub(crate) fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A field of a test's JSON as CSV text: numbers as Rust prints them, arrays joined by ';'.
fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64().filter(|_| n.is_f64()) {
            Some(x) => x.to_string(),
            None => n.to_string(),
        },
        Value::Array(xs) => xs.iter().map(text).collect::<Vec<_>>().join(";"),
        v => v.to_string(),
    }
}

/// The columns: [`COLUMNS`] with the table's other parameters after type_v.
fn columns() -> Vec<&'static str> {
    let columns: Vec<&str> = COLUMNS.split(',').collect();
    let type_v = columns.iter().position(|c| *c == "type_v");
    with_others(&columns, type_v.map_or(0, |i| i + 1))
}

/// One row per test with llama-bench's column names (samples joined by ';'); a parameter's
/// value from the table (`config::knobs::PARAMS`) as llama-bench's CSV writes it.
pub(super) fn render(run: &RunRecord) -> Vec<u8> {
    let header = columns();
    let mut out = header.join(",") + "\n";
    for t in &run.tests {
        let p = &t.params;
        let json = serde_json::to_value(t).expect("records always serialize");
        let cell = |c: &str| -> String {
            match knob(c) {
                Some(k) => k.bench_text(&k.get(p)),
                None if c == "tokens" => p.tokens.as_str().to_string(),
                None => text(&json[c]),
            }
        };
        let row: Vec<String> = header.iter().map(|c| field(&cell(c))).collect();
        out.push_str(&(row.join(",") + "\n"));
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::fixtures;

    #[test]
    fn header_and_rows_have_the_same_width_and_quotes_are_escaped() {
        let out = String::from_utf8(render(&fixtures::run())).unwrap();
        let lines: Vec<_> = out.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("id,model,status"));
        assert!(lines[2].contains("\"failed to create context, \"\"oom\"\"\""));
        assert!(lines[1].contains("1000000000;1024000000"));
    }
}
