//! What `tpsbench info` reports, in one structure: `info --json` serializes it, and the text
//! is rendered from that same JSON, reading each fact by its JSON path, so the text can show
//! nothing the JSON lacks (a unit test checks every path the text reads).

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{DeviceInfo, LlamaBuild, SystemInfo, ToolInfo};
use crate::machine::bandwidth::Bandwidth;
use crate::machine::nvml::GpuFacts;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineFacts {
    pub tool: ToolInfo,
    pub system: SystemInfo,
    pub llama_cpp: LlamaBuild,
    /// `llama_cpp.cmake_flags` again, at the top level, where scripts read it.
    pub cmake_flags: String,
    pub cpu_features: BTreeMap<String, bool>,
    /// SIMD features the CPU has but the build lacks (figures will be low).
    pub simd_missing: Vec<String>,
    pub host_bandwidth: Bandwidth,
    /// "nvml", "rapl", or None.
    pub power_source: Option<String>,
    pub gpus: Vec<GpuFacts>,
    pub devices: Vec<DeviceInfo>,
}

impl MachineFacts {
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("plain data serializes")
    }

    pub fn to_text(&self) -> String {
        render(&Reader {
            v: &self.to_json(),
            read: RefCell::default(),
        })
    }
}

/// Reads facts out of the JSON by path, remembering the paths read.
struct Reader<'a> {
    v: &'a Value,
    read: RefCell<Vec<String>>,
}

impl<'a> Reader<'a> {
    fn get(&self, path: &str) -> &'a Value {
        self.read.borrow_mut().push(path.to_string());
        self.v.pointer(path).unwrap_or(&Value::Null)
    }

    /// A string or number as text; `or` for null.
    fn s(&self, path: &str, or: &str) -> String {
        match self.get(path) {
            Value::Null => or.to_string(),
            Value::String(s) => s.clone(),
            v => v.to_string(),
        }
    }

    fn f(&self, path: &str) -> f64 {
        self.get(path).as_f64().unwrap_or(f64::NAN)
    }

    fn gib(&self, path: &str) -> String {
        format!("{:.1} GiB", self.f(path) / (1u64 << 30) as f64)
    }

    fn len(&self, path: &str) -> usize {
        self.get(path).as_array().map_or(0, Vec::len)
    }

    fn present(&self, path: &str) -> bool {
        !self.get(path).is_null()
    }

    fn list(&self, path: &str) -> Vec<String> {
        (0..self.len(path))
            .map(|i| self.s(&format!("{path}/{i}"), "?"))
            .collect()
    }
}

fn render(r: &Reader) -> String {
    let mut out = Vec::new();
    machine(r, &mut out);
    build(r, &mut out);
    memory_and_power(r, &mut out);
    devices(r, &mut out);
    out.join("\n") + "\n"
}

fn machine(r: &Reader, out: &mut Vec<String>) {
    out.push(format!(
        "tpsbench {} ({})",
        r.s("/tool/version", "?"),
        r.s("/tool/git_commit", "no git commit")
    ));
    out.push(format!(
        "CPU:      {} ({} physical / {} logical cores, {})",
        r.s("/system/cpu_model", "?"),
        r.s("/system/physical_cores", "?"),
        r.s("/system/logical_cores", "?"),
        r.s("/system/arch", "?")
    ));
    out.push(format!("RAM:      {}", r.gib("/system/ram_bytes")));
    out.push(format!(
        "OS:       {} (kernel {})",
        r.s("/system/os", "?"),
        r.s("/system/kernel", "?")
    ));
}

fn build(r: &Reader, out: &mut Vec<String>) {
    out.push(format!(
        "llama.cpp: llama-cpp-sys-2 {} ({}), GPU backend: {}",
        r.s("/llama_cpp/sys_crate_version", "?"),
        r.s("/llama_cpp/build_commit", "commit unknown"),
        r.s("/llama_cpp/gpu_backend", "?")
    ));
    out.push(format!("cmake:    {}", r.s("/cmake_flags", "?")));
    if r.present("/llama_cpp/library") {
        out.push(format!(
            "library:  {} {} (ggml {})",
            r.s("/llama_cpp/library/linkage", "?"),
            r.s("/llama_cpp/library/path", "?"),
            r.s("/llama_cpp/library/ggml_version", "?")
        ));
        if r.present("/llama_cpp/library/stamp") {
            let stamp = |k: &str| r.s(&format!("/llama_cpp/library/stamp/{k}"), "?");
            out.push(format!(
                "stamp:    llama-cpp-sys-2 {}, llama-cpp-rs@{:.12}, backend {}, built {} on {}",
                stamp("llama_cpp_sys_2"),
                stamp("llama_cpp_rs_commit"),
                stamp("backend"),
                stamp("built_at"),
                stamp("host")
            ));
        }
    }
    out.push(format!(
        "SIMD:     {}",
        r.list("/llama_cpp/cpu_features").join(" ")
    ));
    let missing = r.list("/simd_missing");
    if !missing.is_empty() {
        out.push(format!(
            "WARNING:  the CPU has {} but llama.cpp was built without it",
            missing.join(", ")
        ));
    }
    out.push(format!("system:   {}", r.s("/llama_cpp/system_info", "?")));
}

fn memory_and_power(r: &Reader, out: &mut Vec<String>) {
    let load = if r.present("/host_bandwidth/load_average/0") {
        format!(" at load {:.2}", r.f("/host_bandwidth/load_average/0"))
    } else {
        String::new()
    };
    out.push(format!(
        "memory:   host DRAM read {:.1} GB/s, copy {:.1} GB/s ({} threads, {} MiB buffer, measured {}{load})",
        r.f("/host_bandwidth/read_gbs"),
        r.f("/host_bandwidth/copy_gbs"),
        r.s("/host_bandwidth/threads", "?"),
        r.f("/host_bandwidth/buffer_bytes") / (1u64 << 20) as f64,
        r.s("/host_bandwidth/measured_at", "?")
    ));
    if r.present("/host_bandwidth/llc_bytes") && r.present("/host_bandwidth/llc_read_gbs") {
        out.push(format!(
            "          cache-resident read {:.1} GB/s ({} MiB last-level cache)",
            r.f("/host_bandwidth/llc_read_gbs"),
            r.f("/host_bandwidth/llc_bytes") as u64 >> 20
        ));
    }
    out.push(format!(
        "power:    {}",
        r.s("/power_source", "none readable (no NVML, no RAPL)")
    ));
}

fn devices(r: &Reader, out: &mut Vec<String>) {
    for i in 0..r.len("/gpus") {
        let g = |k: &str| format!("/gpus/{i}/{k}");
        out.push(format!(
            "GPU:      {} | {} | compute {} | driver {}",
            r.s(&g("name"), "?"),
            r.gib(&g("memory_total")),
            r.s(&g("compute_capability"), "?"),
            r.s(&g("driver_version"), "?")
        ));
    }
    out.push("devices:".to_string());
    for i in 0..r.len("/devices") {
        let d = |k: &str| format!("/devices/{i}/{k}");
        out.push(format!(
            "  {} ({}, {}): {} | {} total, {} free",
            r.s(&d("name"), "?"),
            r.s(&d("backend"), "?"),
            r.s(&d("kind"), "?"),
            r.s(&d("description"), "?"),
            r.gib(&d("memory_total")),
            r.gib(&d("memory_free"))
        ));
    }
}

/// Features of the CPU backend section of `llama_print_system_info()` ("CPU : SSE3 = 1 |
/// AVX = 1 | ..."), in its order, with their values; other backends' sections are skipped.
pub fn cpu_backend_features(system_info: &str) -> Vec<(String, String)> {
    let mut in_cpu = false;
    let features = system_info.split('|').filter_map(|part| {
        let mut entry = part.trim();
        if let Some((section, rest)) = entry.split_once(" : ") {
            in_cpu = section.trim() == "CPU";
            entry = rest.trim();
        }
        let (k, v) = entry.split_once('=').filter(|_| in_cpu)?;
        Some((k.trim().to_string(), v.trim().to_string()))
    });
    features.collect()
}

/// Build options the CPU section lists that are not instruction sets.
const NOT_SIMD: &[&str] = &["LLAMAFILE", "OPENMP", "REPACK", "KLEIDIAI", "ACCELERATE"];

/// The SIMD features a build has: the probed ones that are on, then those the CPU section of
/// `llama_print_system_info()` lists on (AVX512_VNNI, AVX512_BF16, ...), without repeats or
/// build options.
pub fn simd_features(probed: &[(&str, bool)], system_info: &str) -> Vec<String> {
    let mut out: Vec<_> = (probed.iter())
        .filter(|f| f.1)
        .map(|f| f.0.to_string())
        .collect();
    for (k, v) in cpu_backend_features(system_info) {
        if v != "0" && !NOT_SIMD.contains(&k.as_str()) && !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// Every CPU-backend feature by name: probed ones with their value, then the listed ones.
pub fn feature_map(probed: &[(&str, bool)], system_info: &str) -> BTreeMap<String, bool> {
    let mut m: BTreeMap<String, bool> = probed.iter().map(|&(k, b)| (k.to_string(), b)).collect();
    for (k, v) in cpu_backend_features(system_info) {
        m.entry(k).or_insert(v != "0");
    }
    m
}

#[cfg(test)]
mod tests;
