//! The row llama-bench writes for one test (`-o json` / `-o jsonl`), so llama.cpp's tools
//! (`scripts/compare-llama-bench.py`) read tpsbench results: the pinned llama-bench's field
//! names, order and JSON types, every parameter from `config::knobs::PARAMS`.

use serde::Serialize;
use serde_json::{Value, json};

use crate::config::knobs::knob;
use crate::engine::DeviceKind;
use crate::record::{RunRecord, Status, TestRecord};

/// One row: llama-bench's fields in its order (see [`fields`]), each with its JSON value.
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaBenchRow(pub Vec<(&'static str, Value)>);

impl Serialize for LlamaBenchRow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// Device descriptions of the given kinds, joined as llama-bench joins them.
fn device_info(run: &RunRecord, kinds: &[DeviceKind]) -> String {
    let of_kinds = run.run.devices.iter().filter(|d| kinds.contains(&d.kind));
    let descriptions: Vec<&str> = of_kinds.map(|d| d.description.as_str()).collect();
    descriptions.join(", ")
}

/// One row per measured test. Failed tests are left out: llama-bench writes a row only for a
/// test it measured, and a row without figures would read as 0 t/s.
pub fn rows(run: &RunRecord) -> Vec<LlamaBenchRow> {
    let mut cpu_info = device_info(run, &[DeviceKind::Cpu, DeviceKind::Accel]);
    if cpu_info.is_empty() {
        cpu_info = run.run.system.cpu_model.clone();
    }
    let gpu_info = device_info(run, &[DeviceKind::Gpu, DeviceKind::Igpu]);
    let build = &run.run.llama_cpp;
    (run.tests.iter())
        .filter(|t| t.kind.is_llama_bench() && t.status == Status::Ok && t.avg_ts.is_some())
        .map(|t| row(t, build, &cpu_info, &gpu_info))
        .collect()
}

fn row(
    t: &TestRecord,
    build: &crate::record::LlamaBuild,
    cpu_info: &str,
    gpu_info: &str,
) -> LlamaBenchRow {
    let p = &t.params;
    let build_commit = build
        .build_commit
        .clone()
        .unwrap_or_else(|| format!("llama-cpp-sys-2@{}", build.sys_crate_version));
    let load_mode = knob("load_mode").map(|k| k.get(p).show());
    let value = |name: &'static str| -> Value {
        if let Some(k) = knob(name) {
            return k.bench_json(&k.get(p));
        }
        match name {
            "build_commit" => json!(build_commit),
            "build_number" => json!(build.build_number.unwrap_or(0)),
            "cpu_info" => json!(cpu_info),
            "gpu_info" => json!(gpu_info),
            "backends" => json!(t.backends),
            "model_filename" => json!(t.model_filename),
            "model_type" => json!(t.model_type.clone().unwrap_or_else(|| t.model.clone())),
            "model_size" => json!(t.model_size.unwrap_or(0)),
            "model_n_params" => json!(t.model_n_params.unwrap_or(0)),
            // Older compare-llama-bench.py versions read use_mmap: mmap unless a mode
            // without it.
            "use_mmap" => json!(!matches!(
                load_mode.as_deref(),
                Some("none" | "mlock" | "dio")
            )),
            "test_time" => json!(t.test_time),
            "avg_ns" => json!(t.avg_ns.unwrap_or(0)),
            "stddev_ns" => json!(t.stddev_ns.unwrap_or(0)),
            "avg_ts" => json!(t.avg_ts.unwrap_or(0.0)),
            "stddev_ts" => json!(t.stddev_ts.unwrap_or(0.0)),
            "samples_ns" => json!(t.samples_ns),
            "samples_ts" => json!(t.samples_ts),
            _ => Value::Null,
        }
    };
    let mut row: Vec<(&'static str, Value)> = fields().into_iter().map(|f| (f, value(f))).collect();
    // llama-bench has no text tests: a text row says so in a key of its own (after
    // n_depth), and random-token rows stay exactly llama-bench's.
    if !p.tokens.is_random() {
        let depth = row.iter().position(|(k, _)| *k == "n_depth");
        let at = depth.map_or(row.len(), |i| i + 1);
        row.insert(at, ("tokens", json!(p.tokens.as_str())));
    }
    LlamaBenchRow(row)
}

/// Every field of a row, in order: llama-bench's [`FIELDS`], with any parameter of the table
/// that llama-bench does not write (a tpsbench one) before `n_prompt`, where llama-bench
/// adds its own newer parameters.
pub fn fields() -> Vec<&'static str> {
    let fields: Vec<&str> = FIELDS.split(',').collect();
    let at = fields.iter().position(|f| *f == "n_prompt");
    crate::config::knobs::with_others(&fields, at.unwrap_or(fields.len()))
}

/// llama-bench's field names, comma-separated in its order, then the samples: what every row
/// must carry.
pub const FIELDS: &str = "\
    build_commit,build_number,cpu_info,gpu_info,backends,model_filename,model_type,model_size,\
    model_n_params,n_batch,n_ubatch,n_threads,cpu_mask,cpu_strict,poll,type_k,type_v,n_gpu_layers,\
    n_cpu_moe,split_mode,main_gpu,no_kv_offload,flash_attn,devices,tensor_split,\
    tensor_buft_overrides,load_mode,lazy_mode,use_mmap,embeddings,no_op_offload,no_host,repack,\
    fit_target,fit_min_ctx,n_prompt,n_gen,n_depth,test_time,avg_ns,stddev_ns,avg_ts,stddev_ts,\
    samples_ns,samples_ts";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::fixtures;

    #[test]
    fn rows_have_llama_bench_fields_in_order_and_types() {
        let run = fixtures::run();
        let r = rows(&run);
        assert_eq!(r.len(), 1, "the failed test is left out");
        let v = serde_json::to_value(&r[0]).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort();
        let mut want: Vec<&str> = fields();
        want.sort();
        assert_eq!(keys, want, "exactly these fields");
        let text = serde_json::to_string(&r[0]).unwrap();
        let pos: Vec<usize> = (FIELDS.split(','))
            .map(|f| text.find(&format!("\"{f}\":")).unwrap())
            .collect();
        assert!(pos.windows(2).all(|w| w[0] < w[1]), "llama-bench's order");
        for f in [
            "build_number",
            "model_size",
            "n_threads",
            "poll",
            "flash_attn",
            "avg_ns",
        ] {
            assert!(v[f].is_i64() || v[f].is_u64(), "{f} is an integer");
        }
        for f in [
            "cpu_strict",
            "no_kv_offload",
            "embeddings",
            "no_host",
            "use_mmap",
            "repack",
        ] {
            assert!(v[f].is_boolean(), "{f} is a boolean");
        }
        for f in [
            "build_commit",
            "cpu_info",
            "gpu_info",
            "cpu_mask",
            "test_time",
        ] {
            assert!(v[f].is_string(), "{f} is a string");
        }
        assert!(v["avg_ts"].is_f64() && v["stddev_ts"].is_f64());
        assert_eq!(
            v["cpu_info"], "cpu",
            "no CPU device listed: the system CPU model"
        );
        assert_eq!(v["build_commit"], "llama-cpp-sys-2@0.1.161");
    }

    #[test]
    fn a_text_row_carries_tokens_after_n_depth_and_a_random_row_does_not() {
        let mut run = fixtures::run();
        let random = serde_json::to_string(&rows(&run)[0]).unwrap();
        assert!(!random.contains("\"tokens\""));
        run.tests[0].params.tokens = crate::config::PromptTokens::Text;
        let text = serde_json::to_string(&rows(&run)[0]).unwrap();
        let at = |k: &str| text.find(&format!("\"{k}\":")).unwrap();
        assert!(
            at("n_depth") < at("tokens") && at("tokens") < at("test_time"),
            "{text}"
        );
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap()["tokens"],
            "text"
        );
    }
}
