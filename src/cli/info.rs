//! `tpsbench info`: the machine, the llama.cpp build, SIMD, bandwidth, power, devices.

use anyhow::Result;

use crate::engine::llama;
use crate::system;

pub(super) fn info(json: bool, probe: bool) -> Result<i32> {
    llama::init(false).map_err(anyhow::Error::msg)?;
    let sys = system::system();
    let build = system::llama_build(llama::system_info(), llama::cpu_features_on());
    let devices = llama::devices();
    let features = llama::cpu_features();
    let missing = system::missing_simd(&features);
    if json {
        let v = serde_json::json!({
            "tool": system::tool(),
            "system": sys,
            "llama_cpp": build,
            "cmake_flags": system::cmake_flags(),
            "cpu_features": features.iter().map(|(n, b)| (n.to_string(), *b)).collect::<std::collections::BTreeMap<_, _>>(),
            "devices": devices,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    let tool = system::tool();
    println!(
        "tpsbench {} ({})",
        tool.version,
        tool.git_commit.as_deref().unwrap_or("no git commit")
    );
    println!(
        "CPU:      {} ({} physical / {} logical cores, {})",
        sys.cpu_model, sys.physical_cores, sys.logical_cores, sys.arch
    );
    println!(
        "RAM:      {:.1} GiB",
        sys.ram_bytes as f64 / (1u64 << 30) as f64
    );
    println!("OS:       {} (kernel {})", sys.os, sys.kernel);
    println!(
        "llama.cpp: llama-cpp-sys-2 {} ({}), GPU backend: {}",
        build.sys_crate_version,
        build.build_commit.as_deref().unwrap_or("commit unknown"),
        build.gpu_backend
    );
    println!("cmake:    {}", system::cmake_flags());
    if let Some(lib) = &build.library {
        println!(
            "library:  {} {} (ggml {})",
            lib.linkage, lib.path, lib.ggml_version
        );
        if let Some(s) = &lib.stamp {
            let get = |k: &str| s.get(k).map(String::as_str).unwrap_or("?");
            println!(
                "stamp:    llama-cpp-sys-2 {}, llama-cpp-rs@{:.12}, backend {}, built {} on {}",
                get("llama_cpp_sys_2"),
                get("llama_cpp_rs_commit"),
                get("backend"),
                get("built_at"),
                get("host")
            );
        }
    }
    let on: Vec<&str> = features.iter().filter(|f| f.1).map(|f| f.0).collect();
    println!("SIMD:     {}", on.join(" "));
    if !missing.is_empty() {
        println!(
            "WARNING:  the CPU has {} but llama.cpp was built without it",
            missing.join(", ")
        );
    }
    println!("system:   {}", build.system_info);
    let machine = format!(
        "{} | {} cores | {} bytes RAM",
        sys.cpu_model, sys.logical_cores, sys.ram_bytes
    );
    let bw = crate::machine::bandwidth::cached_or_probe(sys.logical_cores, &machine, probe);
    println!(
        "memory:   host DRAM read {:.1} GB/s, copy {:.1} GB/s ({} threads, measured {})",
        bw.read_gbs, bw.copy_gbs, bw.threads, bw.measured_at
    );
    if let (Some(llc), Some(gbs)) = (bw.llc_bytes, bw.llc_read_gbs) {
        println!(
            "          cache-resident read {gbs:.1} GB/s ({} MiB last-level cache)",
            llc >> 20
        );
    }
    let power = crate::machine::energy::detect()
        .map_or("none readable (no NVML, no RAPL)".to_string(), |s| s.name());
    println!("power:    {power}");
    if let Some(n) = crate::machine::nvml::Nvml::load() {
        for g in n.facts() {
            println!(
                "GPU:      {} | {:.1} GiB | compute {} | driver {}",
                g.name,
                g.memory_total as f64 / (1u64 << 30) as f64,
                g.compute_capability.as_deref().unwrap_or("?"),
                g.driver_version.as_deref().unwrap_or("?")
            );
        }
    }
    println!("devices:");
    for d in &devices {
        println!(
            "  {} ({}, {}): {} | {:.1} GiB total, {:.1} GiB free",
            d.name,
            d.backend,
            d.kind,
            d.description,
            d.memory_total as f64 / (1u64 << 30) as f64,
            d.memory_free as f64 / (1u64 << 30) as f64
        );
    }
    Ok(0)
}
