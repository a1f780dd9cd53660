//! The run's facts about the tool, the llama.cpp build and the machine, as record types.

use crate::engine::DeviceKind;
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

/// The build facts; `cpu_features`: the probed SIMD features that are on, and those the CPU
/// section of `system_info` lists (AVX512_VNNI, AVX512_BF16, ...).
pub fn llama_build(system_info: String) -> LlamaBuild {
    let cpu_features = simd_features(&crate::engine::llama::cpu_features(), &system_info);
    let rs = env!("TPSBENCH_LLAMA_RS_COMMIT");
    // A shared llama.cpp brings its own backend: its stamp says which, not our features.
    let stamped = from_stamp("backend", "unknown");
    LlamaBuild {
        sys_crate_version: LLAMA_SYS_VERSION.into(),
        build_number: None,
        build_commit: (!rs.is_empty()).then(|| format!("llama-cpp-rs@{rs}")),
        system_info,
        gpu_backend: stamped.unwrap_or_else(|| gpu_backend().into()),
        cmake_flags: cmake_flags(),
        cpu_features,
        library: linkage::current().cloned(),
    }
}

/// The cmake options llama.cpp was configured with (GGML_NATIVE, GGML_CUDA, ...): those of
/// the copy linked in, or, for a shared library found at run time, those in its stamp.
pub fn cmake_flags() -> String {
    from_stamp("cmake_flags", "unknown (shared library without a stamp)")
        .unwrap_or_else(|| env!("TPSBENCH_LLAMA_CMAKE_FLAGS").to_string())
}

/// Build fact `key` of a shared llama.cpp found at run time, from its stamp (`unknown`
/// without one); None for the copy linked in.
fn from_stamp(key: &str, unknown: &str) -> Option<String> {
    let l = linkage::current().filter(|l| l.linkage == "dynamic")?;
    let known = l.stamp.as_ref().and_then(|s| s.get(key).cloned());
    Some(known.unwrap_or_else(|| unknown.into()))
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

/// A decode test at or above this share of its host-probe ceiling makes the run probe again
/// at its end: either the machine really runs at its ceiling, or the probe was read in a slow
/// phase (a cloud host whose rate moves over minutes) and every roofline of the run is off.
pub const RECHECK_PERCENT: f64 = 90.0;

/// When a decode test came within [`RECHECK_PERCENT`] of its host-probe ceiling, probes again
/// ([`machine::bandwidth::probe_again`]) and moves every host roofline to a higher figure;
/// returns the line to tell the user, if it probed.
pub fn recheck_host_ceiling(record: &mut super::RunRecord) -> Option<String> {
    recheck_with(record, machine::bandwidth::probe_again)
}

/// [`recheck_host_ceiling`] with the probe given (unit tests give a fake one).
fn recheck_with(
    record: &mut super::RunRecord,
    probe_again: impl FnOnce(&machine::bandwidth::Bandwidth) -> machine::bandwidth::Bandwidth,
) -> Option<String> {
    let before = record.run.host_bandwidth.clone()?;
    let top = record
        .tests
        .iter()
        .filter_map(|t| t.resources.as_ref()?.roofline.as_ref())
        .filter(|r| r.is_from_host_probe())
        .map(|r| r.percent_of_roofline)
        .fold(f64::NEG_INFINITY, f64::max);
    if top < RECHECK_PERCENT {
        return None;
    }
    let best = probe_again(&before);
    let first = format!(
        "note: a decode test reached {top:.0}% of its host bandwidth ceiling ({:.1} GB/s read, \
         probed {}); probed again at the end of the run:",
        before.read_gbs, before.measured_at
    );
    if best.read_gbs <= before.read_gbs && best.llc_read_gbs <= before.llc_read_gbs {
        return Some(format!("{first} nothing read faster"));
    }
    rebase_host_rooflines(record, &best);
    let line = format!(
        "{first} the ceiling is now {:.1} GB/s (probed {}), the highest read on record for \
         this machine, and the rooflines use it",
        best.read_gbs, best.measured_at
    );
    record.run.host_bandwidth = Some(best);
    Some(line)
}

/// Moves every host-probe roofline of `record` to the ceiling `b` gives its working set.
fn rebase_host_rooflines(record: &mut super::RunRecord, b: &machine::bandwidth::Bandwidth) {
    for r in record
        .tests
        .iter_mut()
        .filter_map(|t| t.resources.as_mut()?.roofline.as_mut())
        .filter(|r| r.is_from_host_probe())
    {
        let (gbs, src) = machine::host_ceiling(b, r.bytes_per_token);
        *r = r.rebased(gbs, &src);
    }
}

/// This machine's host bandwidth: the figure cached for it, or a probe (`refresh`: again).
pub fn host_bandwidth(s: &SystemInfo, refresh: bool) -> machine::bandwidth::Bandwidth {
    let key = format!(
        "{} | {} cores | {} bytes RAM",
        s.cpu_model, s.logical_cores, s.ram_bytes
    );
    machine::bandwidth::cached_or_probe(s.logical_cores, &key, refresh)
}

/// Fills the run's GPU facts and the decode roofline bandwidths: the known-GPU table's (none
/// for an unknown GPU rather than a wrong one), and the host probe's unless `all_offloaded`.
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
                .filter(|d| d.kind == DeviceKind::Gpu)
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
    let b = host_bandwidth(&info.system, refresh);
    // DRAM's: the working set of a test is not known yet.
    c.host = Some(machine::host_ceiling(&b, f64::INFINITY));
    info.host_bandwidth = Some(b);
    c
}

#[cfg(test)]
mod tests;
