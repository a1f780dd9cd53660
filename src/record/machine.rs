//! The run's facts about the tool, the llama.cpp build and the machine, as record types.

use crate::engine::linkage::{self, LLAMA_SYS_VERSION};
use crate::machine;
use crate::util::system::gpu_backend;

use super::facts::simd_features;
use super::{LlamaBuild, SystemInfo, ToolInfo};

pub fn tool() -> ToolInfo {
    let commit = env!("TPSBENCH_GIT_COMMIT");
    ToolInfo {
        name: "tpsbench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: (!commit.is_empty()).then(|| commit.to_string()),
    }
}

/// The build facts; `cpu_features` (the probed SIMD features that are on) is completed with
/// those the CPU section of `system_info` lists (AVX512_VNNI, AVX512_BF16, ...).
pub fn llama_build(system_info: String, cpu_features: Vec<String>) -> LlamaBuild {
    let probed: Vec<(&str, bool)> = cpu_features.iter().map(|f| (f.as_str(), true)).collect();
    let cpu_features = simd_features(&probed, &system_info);
    let rs = env!("TPSBENCH_LLAMA_RS_COMMIT");
    let library = linkage::current().cloned();
    // A shared llama.cpp brings its own backend: its stamp says which, not our features.
    let stamped = library
        .as_ref()
        .filter(|l| l.linkage == "dynamic")
        .map(|l| match &l.stamp {
            Some(s) => s
                .get("backend")
                .cloned()
                .unwrap_or_else(|| "unknown".into()),
            None => "unknown".into(),
        });
    LlamaBuild {
        sys_crate_version: LLAMA_SYS_VERSION.into(),
        build_number: None,
        build_commit: (!rs.is_empty()).then(|| format!("llama-cpp-rs@{rs}")),
        system_info,
        gpu_backend: stamped.unwrap_or_else(|| gpu_backend().into()),
        cmake_flags: cmake_flags(),
        cpu_features,
        library,
    }
}

/// The cmake options llama.cpp was configured with (GGML_NATIVE, GGML_CUDA, ...): those of
/// the copy linked in, or, for a shared library found at run time, those in its stamp.
pub fn cmake_flags() -> String {
    match linkage::current() {
        Some(l) if l.linkage == "dynamic" => l
            .stamp
            .as_ref()
            .and_then(|s| s.get("cmake_flags").cloned())
            .unwrap_or_else(|| "unknown (shared library without a stamp)".into()),
        _ => env!("TPSBENCH_LLAMA_CMAKE_FLAGS").to_string(),
    }
}

pub fn system() -> SystemInfo {
    let mut s = sysinfo::System::new();
    s.refresh_cpu_all();
    s.refresh_memory();
    let logical = s.cpus().len() as u32;
    SystemInfo {
        cpu_model: s
            .cpus()
            .first()
            .map(|c| c.brand().trim().to_string())
            .unwrap_or_default(),
        physical_cores: s.physical_core_count().map_or(logical, |n| n as u32),
        logical_cores: logical,
        ram_bytes: s.total_memory(),
        os: sysinfo::System::long_os_version().unwrap_or_default(),
        kernel: sysinfo::System::kernel_version().unwrap_or_default(),
        arch: sysinfo::System::cpu_arch(),
        hostname: sysinfo::System::host_name().unwrap_or_default(),
    }
}

/// Fills the run's GPU facts and finds the bandwidths for decode rooflines: the GPU's (from
/// the known-GPU table, by the name llama.cpp or NVML gives; none for an unknown GPU rather
/// than a wrong one) on a GPU build, and the host's from the probe (cached per machine;
/// `refresh` re-measures) unless `all_offloaded` says no test runs on the host.
pub fn roofline_bandwidth(
    info: &mut super::RunInfo,
    all_offloaded: bool,
    refresh: bool,
) -> machine::Ceilings {
    if let Some(n) = machine::nvml::Nvml::load() {
        info.gpus = n.facts();
    }
    let gpu_build = info.llama_cpp.gpu_backend != "cpu";
    let mut c = machine::Ceilings {
        gpu_build,
        ..machine::Ceilings::default()
    };
    if gpu_build {
        let names = info.gpus.iter().map(|g| g.name.clone()).chain(
            info.devices
                .iter()
                .filter(|d| d.kind == "gpu")
                .map(|d| d.description.clone()),
        );
        c.device = names
            .filter_map(|name| machine::gpus::bandwidth_of(&name))
            .map(|(gbs, note)| (gbs, format!("table: {note}")))
            .next();
        if all_offloaded {
            return c;
        }
    }
    let s = &info.system;
    let machine = format!(
        "{} | {} cores | {} bytes RAM",
        s.cpu_model, s.logical_cores, s.ram_bytes
    );
    let b = machine::bandwidth::cached_or_probe(s.logical_cores, &machine, refresh);
    c.host = Some((
        b.read_gbs,
        format!("probe: host DRAM read, {} threads", b.threads),
    ));
    info.host_bandwidth = Some(b);
    c
}
