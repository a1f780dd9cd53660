//! The row llama-bench writes for one test (`llama-bench -o json` / `-o jsonl`), so that
//! llama.cpp's tools, `scripts/compare-llama-bench.py` first, read tpsbench results.
//!
//! Field names, order and JSON types are llama-bench's `test::get_fields()` and
//! `get_field_type()` in the llama.cpp generation that llama-cpp-sys-2 0.1.161 builds (the
//! one with `load_mode` and `lazy_mode`): build_number and counts are integers, cpu_strict,
//! no_kv_offload, embeddings, no_host and repack booleans, flash_attn an integer (-1 auto,
//! 0 off, 1 on), avg_ts and stddev_ts floats, everything else strings. One field is added:
//! `use_mmap` (a boolean), which `load_mode` replaced but which compare-llama-bench.py
//! versions before that change require; newer versions drop keys they do not know.
//! The parameters of `config::knobs`' table come from the test's values (llama-bench's
//! defaults where the test leaves one unset), typed as the table says llama-bench types them.

use serde::Serialize;

use crate::record::{RunRecord, Status, TestRecord};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlamaBenchRow {
    pub build_commit: String,
    pub build_number: i64,
    pub cpu_info: String,
    pub gpu_info: String,
    pub backends: String,
    pub model_filename: String,
    pub model_type: String,
    pub model_size: u64,
    pub model_n_params: u64,
    pub n_batch: u32,
    pub n_ubatch: u32,
    pub n_threads: u32,
    pub cpu_mask: String,
    pub cpu_strict: bool,
    pub poll: u32,
    pub type_k: String,
    pub type_v: String,
    pub n_gpu_layers: i32,
    pub n_cpu_moe: u32,
    pub split_mode: String,
    pub main_gpu: u32,
    pub no_kv_offload: bool,
    pub flash_attn: i32,
    pub devices: String,
    pub tensor_split: String,
    pub tensor_buft_overrides: String,
    pub load_mode: String,
    pub lazy_mode: String,
    pub use_mmap: bool,
    pub embeddings: bool,
    pub no_op_offload: u32,
    pub no_host: bool,
    pub repack: bool,
    pub fit_target: u64,
    pub fit_min_ctx: u32,
    pub n_prompt: u32,
    pub n_gen: u32,
    pub n_depth: u32,
    pub test_time: String,
    pub avg_ns: u64,
    pub stddev_ns: u64,
    pub avg_ts: f64,
    pub stddev_ts: f64,
    pub samples_ns: Vec<u64>,
    pub samples_ts: Vec<f64>,
}

/// Device descriptions of the given kinds, joined as llama-bench joins them.
fn device_info(run: &RunRecord, kinds: &[&str]) -> String {
    run.run
        .devices
        .iter()
        .filter(|d| kinds.contains(&d.kind.as_str()))
        .map(|d| d.description.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One row per measured test. Failed tests are left out: llama-bench writes a row only for a
/// test it measured, and a row without figures would read as 0 t/s.
pub fn rows(run: &RunRecord) -> Vec<LlamaBenchRow> {
    let mut cpu_info = device_info(run, &["cpu", "accel"]);
    if cpu_info.is_empty() {
        cpu_info = run.run.system.cpu_model.clone();
    }
    let gpu_info = device_info(run, &["gpu", "igpu"]);
    let build = &run.run.llama_cpp;
    run.tests
        .iter()
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
    let k = |name: &str| {
        p.knobs
            .get(name)
            .unwrap_or(crate::config::knobs::KnobValue::Int(0))
    };
    let load_mode = k("load_mode").show();
    LlamaBenchRow {
        build_commit: build
            .build_commit
            .clone()
            .unwrap_or_else(|| format!("llama-cpp-sys-2@{}", build.sys_crate_version)),
        build_number: build.build_number.unwrap_or(0),
        cpu_info: cpu_info.to_string(),
        gpu_info: gpu_info.to_string(),
        backends: t.backends.clone(),
        model_filename: t.model_filename.clone(),
        model_type: t.model_type.clone().unwrap_or_else(|| t.model.clone()),
        model_size: t.model_size.unwrap_or(0),
        model_n_params: t.model_n_params.unwrap_or(0),
        n_batch: p.n_batch,
        n_ubatch: p.n_ubatch,
        n_threads: p.n_threads,
        cpu_mask: k("cpu_mask").show(),
        cpu_strict: k("cpu_strict").as_bool(),
        poll: k("poll").as_i64().clamp(0, 100) as u32,
        type_k: p.type_k.clone(),
        type_v: p.type_v.clone(),
        n_gpu_layers: p.n_gpu_layers,
        n_cpu_moe: k("n_cpu_moe").as_i64().max(0) as u32,
        split_mode: p.split_mode.as_str().into(),
        main_gpu: p.main_gpu.max(0) as u32,
        no_kv_offload: p.no_kv_offload,
        flash_attn: p.flash_attn,
        devices: k("devices").show(),
        tensor_split: k("tensor_split").show(),
        tensor_buft_overrides: k("tensor_buft_overrides").show(),
        // Older compare-llama-bench.py versions read use_mmap: mmap unless a mode without it.
        use_mmap: !matches!(load_mode.as_str(), "none" | "mlock" | "dio"),
        load_mode,
        lazy_mode: k("lazy_mode").show(),
        embeddings: k("embeddings").as_bool(),
        no_op_offload: u32::from(k("no_op_offload").as_bool()),
        no_host: k("no_host").as_bool(),
        repack: k("repack").as_bool(),
        fit_target: k("fit_target").as_i64().max(0) as u64,
        fit_min_ctx: k("fit_min_ctx").as_i64().clamp(0, u32::MAX as i64) as u32,
        n_prompt: p.n_prompt,
        n_gen: p.n_gen,
        n_depth: p.n_depth,
        test_time: t.test_time.clone(),
        avg_ns: t.avg_ns.unwrap_or(0),
        stddev_ns: t.stddev_ns.unwrap_or(0),
        avg_ts: t.avg_ts.unwrap_or(0.0),
        stddev_ts: t.stddev_ts.unwrap_or(0.0),
        samples_ns: t.samples_ns.clone(),
        samples_ts: t.samples_ts.clone(),
    }
}

/// llama-bench's field names in its order, then the samples: what every row must carry.
pub const FIELDS: &[&str] = &[
    "build_commit",
    "build_number",
    "cpu_info",
    "gpu_info",
    "backends",
    "model_filename",
    "model_type",
    "model_size",
    "model_n_params",
    "n_batch",
    "n_ubatch",
    "n_threads",
    "cpu_mask",
    "cpu_strict",
    "poll",
    "type_k",
    "type_v",
    "n_gpu_layers",
    "n_cpu_moe",
    "split_mode",
    "main_gpu",
    "no_kv_offload",
    "flash_attn",
    "devices",
    "tensor_split",
    "tensor_buft_overrides",
    "load_mode",
    "lazy_mode",
    "use_mmap",
    "embeddings",
    "no_op_offload",
    "no_host",
    "repack",
    "fit_target",
    "fit_min_ctx",
    "n_prompt",
    "n_gen",
    "n_depth",
    "test_time",
    "avg_ns",
    "stddev_ns",
    "avg_ts",
    "stddev_ts",
    "samples_ns",
    "samples_ts",
];

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
        let mut want: Vec<&str> = FIELDS.to_vec();
        want.sort();
        assert_eq!(keys, want, "exactly these fields");
        let text = serde_json::to_string(&r[0]).unwrap();
        let pos: Vec<usize> = FIELDS
            .iter()
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
}
