//! The machine a result was measured on: its fingerprint (CPU, GPUs, host name) and description.

use crate::engine::DeviceKind;
use crate::record::RunInfo;
use crate::report::wrapped;
use crate::util::units::GIB;

#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    pub key: String,
    pub hostname: String,
    pub cpu_model: String,
    pub gpus: Vec<String>,
    pub backend: String,
    pub details: String,
    /// What two machines are compared by, as (label, value).
    pub facts: Vec<(String, String)>,
    pub bandwidth_gbs: Option<f64>,
    /// A model smaller than the last-level cache may be read above the DRAM bandwidth.
    pub llc_bytes: Option<u64>,
}

impl Machine {
    pub fn of(run: &RunInfo) -> Machine {
        let s = &run.system;
        let build = &run.llama_cpp;
        Machine {
            key: fingerprint(run),
            hostname: s.hostname.clone(),
            cpu_model: s.cpu_model.clone(),
            gpus: gpu_descriptions(run),
            backend: run.backends.clone(),
            details: format!(
                "{} physical / {} logical cores, {:.1} GiB RAM, {} {} ({}), llama-cpp-sys-2 {} ({}), {} backend, tpsbench {}{}",
                s.physical_cores,
                s.logical_cores,
                s.ram_bytes as f64 / GIB,
                s.os,
                s.kernel,
                s.arch,
                build.sys_crate_version,
                build.build_commit.as_deref().unwrap_or("commit unknown"),
                build.gpu_backend,
                run.tool.version,
                wrapped(" (", run.tool.git_commit.as_deref().unwrap_or(""), ")"),
            ),
            facts: vec![],
            bandwidth_gbs: run.host_bandwidth.as_ref().map(|b| b.read_gbs),
            llc_bytes: run.host_bandwidth.as_ref().and_then(|b| b.llc_bytes),
        }
        .with_facts(run)
    }

    /// `facts` from the run, the bandwidth from `bandwidth_gbs` (maybe an older run's).
    pub fn with_facts(mut self, run: &RunInfo) -> Machine {
        let s = &run.system;
        let b = &run.llama_cpp;
        let mut f: Vec<(String, String)> = Vec::new();
        let mut add = |k: &str, v: String| f.push((k.to_string(), v));
        add("CPU", cpu_line(&s.cpu_model));
        let cores = format!("{} / {}", s.physical_cores, s.logical_cores);
        add("cores / threads", cores);
        if !b.cpu_features.is_empty() {
            add("SIMD", b.cpu_features.join(" "));
        }
        let bandwidth = match self.bandwidth_gbs {
            Some(g) => format!("{g:.1} GB/s read (measured)"),
            None => "not measured".into(),
        };
        add("host bandwidth", bandwidth);
        for g in &run.gpus {
            let (gib, driver) = (g.memory_total as f64 / GIB, g.driver_version.as_deref());
            let driver = driver.unwrap_or("unknown");
            add("GPU", format!("{}, {gib:.0} GiB, driver {driver}", g.name));
        }
        let commit = b.build_commit.as_deref().unwrap_or("commit unknown");
        let tool = run.tool.git_commit.as_deref().unwrap_or("");
        let dirty: Vec<String> = ([("llama.cpp", commit), ("tpsbench", tool)].iter())
            .filter(|(_, c)| c.ends_with("-dirty"))
            .map(|(n, c)| format!("{n} {c}"))
            .collect();
        let (flags, dirty) = (&b.cmake_flags, dirty.join(", "));
        let dirty = wrapped(" [dirty build: ", &dirty, "]");
        let backend = format!("{} backend{}", b.gpu_backend, wrapped(", ", flags, ""));
        add("llama.cpp", format!("{commit} ({backend}){dirty}"));
        self.facts = f;
        self
    }

    pub fn label(&self) -> String {
        let l = format!("{}: {}", self.hostname, self.cpu_model);
        self.gpus.iter().fold(l, |l, g| l + " + " + g)
    }
}

/// The CPU as recorded, said to be only a name without a model number (a hypervisor may
/// hide it): the page does not pretend to know more.
pub fn cpu_line(model: &str) -> String {
    if model.trim().is_empty() {
        "not recorded".into()
    } else if model.chars().any(|c| c.is_ascii_digit()) {
        model.to_string()
    } else {
        format!("{model} (no model number: the host, e.g. a hypervisor, does not report it)")
    }
}

pub fn gpu_descriptions(run: &RunInfo) -> Vec<String> {
    (run.devices.iter())
        .filter(|d| matches!(d.kind, DeviceKind::Gpu | DeviceKind::Igpu))
        .map(|d| d.description.clone())
        .collect()
}

pub fn hardware(run: &RunInfo) -> String {
    let gpus = gpu_descriptions(run).join(", ");
    format!("{} | {gpus}", run.system.cpu_model)
}

pub fn fingerprint(run: &RunInfo) -> String {
    format!("{} | {}", hardware(run), run.system.hostname)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cpu_without_a_model_number_is_said_to_be_only_a_name() {
        assert_eq!(
            super::cpu_line("AMD EPYC 9654 96-Core Processor"),
            "AMD EPYC 9654 96-Core Processor"
        );
        assert_eq!(
            super::cpu_line("AMD EPYC"),
            "AMD EPYC (no model number: the host, e.g. a hypervisor, does not report it)"
        );
        assert_eq!(super::cpu_line(""), "not recorded");
    }
}
