//! Peak memory bandwidth of known GPUs (vendor datasheets), for the decode roofline when the
//! device cannot report it. Matched by substring of the device name, most specific first.

/// (name substring, GB/s, note)
pub const KNOWN: &[(&str, f64, &str)] = &[
    ("H200", 4800.0, "NVIDIA H200 SXM, HBM3e"),
    ("H100 NVL", 3900.0, "NVIDIA H100 NVL"),
    ("H100 PCIe", 2000.0, "NVIDIA H100 PCIe, HBM2e"),
    ("H100", 3350.0, "NVIDIA H100 SXM5, HBM3"),
    ("GH200", 4000.0, "NVIDIA GH200 (HBM3)"),
    ("A100-SXM4-80GB", 2039.0, "NVIDIA A100 80GB SXM"),
    ("A100 80GB PCIe", 1935.0, "NVIDIA A100 80GB PCIe"),
    ("A100", 1555.0, "NVIDIA A100 40GB"),
    ("L40S", 864.0, "NVIDIA L40S"),
    ("L40", 864.0, "NVIDIA L40"),
    ("L4", 300.0, "NVIDIA L4"),
    ("A10G", 600.0, "NVIDIA A10G"),
    ("A10", 600.0, "NVIDIA A10"),
    ("V100", 900.0, "NVIDIA V100 (HBM2)"),
    ("T4", 320.0, "NVIDIA T4"),
    ("RTX 5090", 1792.0, "NVIDIA GeForce RTX 5090"),
    ("RTX 4090", 1008.0, "NVIDIA GeForce RTX 4090"),
    ("RTX 4080", 717.0, "NVIDIA GeForce RTX 4080"),
    ("RTX 3090", 936.0, "NVIDIA GeForce RTX 3090"),
    ("RTX 6000 Ada", 960.0, "NVIDIA RTX 6000 Ada"),
    ("MI300X", 5300.0, "AMD Instinct MI300X"),
    ("MI250", 3277.0, "AMD Instinct MI250"),
    ("M2 Ultra", 800.0, "Apple M2 Ultra"),
    ("M3 Max", 400.0, "Apple M3 Max (40-core GPU)"),
];

/// Peak bandwidth for a device name, with the table row that matched.
pub fn bandwidth_of(device: &str) -> Option<(f64, &'static str)> {
    let &(_, gbs, note) = KNOWN.iter().find(|(k, _, _)| device.contains(k))?;
    Some((gbs, note))
}

/// A CPU build on a machine with an NVIDIA or AMD GPU (a display-class PCI device of that
/// vendor under `sysfs`, normally /sys/bus/pci/devices): the line saying which, and the
/// command that builds for it. None on a GPU build, or with no such GPU.
pub fn unused_gpu_warning(gpu_backend: &str, sysfs: &std::path::Path) -> Option<String> {
    if gpu_backend != "cpu" {
        return None;
    }
    let read =
        |d: &std::path::Path, f: &str| std::fs::read_to_string(d.join(f)).unwrap_or_default();
    let (who, feature) = std::fs::read_dir(sysfs).ok()?.flatten().find_map(|e| {
        let p = e.path();
        match (
            read(&p, "class").starts_with("0x03"),
            read(&p, "vendor").trim(),
        ) {
            (true, "0x10de") => Some(("an NVIDIA", "cuda")),
            (true, "0x1002") => Some(("an AMD", "vulkan")),
            _ => None,
        }
    })?;
    Some(format!(
        "warning: this tpsbench is built for the CPU but the machine has {who} GPU: every test runs on the CPU. Build for it: scripts/bench (or cargo build --release --features {feature})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specific_names_win_over_general_ones() {
        assert_eq!(bandwidth_of("NVIDIA H100 PCIe").unwrap().0, 2000.0);
        assert_eq!(bandwidth_of("NVIDIA H100 80GB HBM3").unwrap().0, 3350.0);
        assert_eq!(bandwidth_of("NVIDIA H200").unwrap().0, 4800.0);
        assert_eq!(bandwidth_of("NVIDIA A100-SXM4-80GB").unwrap().0, 2039.0);
        assert_eq!(bandwidth_of("NVIDIA L4").unwrap().0, 300.0);
        assert!(bandwidth_of("Intel Xeon").is_none());
    }

    #[test]
    fn a_cpu_build_on_a_machine_with_an_nvidia_gpu_says_how_to_build_for_it() {
        let d = tempfile::tempdir().unwrap();
        for (dev, class, vendor) in [
            ("0000:00:02.0", "0x030000", "0x8086"),
            ("0000:17:00.0", "0x030200", "0x10de"),
        ] {
            std::fs::create_dir(d.path().join(dev)).unwrap();
            std::fs::write(d.path().join(dev).join("class"), class).unwrap();
            std::fs::write(d.path().join(dev).join("vendor"), vendor).unwrap();
        }
        let w = unused_gpu_warning("cpu", d.path()).unwrap();
        assert!(
            w.contains("an NVIDIA GPU") && w.contains("--features cuda"),
            "{w}"
        );
        assert_eq!(unused_gpu_warning("cuda", d.path()), None);
        assert_eq!(unused_gpu_warning("cpu", &d.path().join("none")), None);
    }
}
