//! Facts about the machine, the build and the model files, for the result metadata.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::record::{LlamaBuild, SystemInfo, ToolInfo};

/// Version of llama-cpp-sys-2, pinned in Cargo.toml (a unit test keeps the two in step).
pub const LLAMA_SYS_VERSION: &str = "0.1.161";

pub fn tool() -> ToolInfo {
    let commit = env!("TPSBENCH_GIT_COMMIT");
    ToolInfo {
        name: "tpsbench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: (!commit.is_empty()).then(|| commit.to_string()),
    }
}

/// The GPU backend compiled in through Cargo features.
pub fn gpu_backend() -> &'static str {
    if cfg!(feature = "cuda") {
        "cuda"
    } else if cfg!(feature = "vulkan") {
        "vulkan"
    } else if cfg!(feature = "metal") {
        "metal"
    } else {
        "cpu"
    }
}

/// The build facts; `cpu_features` (the probed SIMD features that are on) is completed with
/// those the CPU section of `system_info` lists (AVX512_VNNI, AVX512_BF16, ...).
pub fn llama_build(system_info: String, cpu_features: Vec<String>) -> LlamaBuild {
    let probed: Vec<(&str, bool)> = cpu_features.iter().map(|f| (f.as_str(), true)).collect();
    let cpu_features = crate::machine::facts::simd_features(&probed, &system_info);
    let rs = env!("TPSBENCH_LLAMA_RS_COMMIT");
    let library = crate::linkage::current().cloned();
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
    match crate::linkage::current() {
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

/// The 1, 5 and 15 minute load averages from /proc/loadavg; `None` where there is no such
/// file (not Linux) or it cannot be read as three numbers.
pub fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}

/// Physical cores, llama-bench's default thread count (at least 1).
pub fn physical_cores() -> u32 {
    let s = sysinfo::System::new();
    s.physical_core_count()
        .or_else(|| std::thread::available_parallelism().ok().map(usize::from))
        .unwrap_or(1)
        .max(1) as u32
}

/// Hex SHA-256 of a file, streamed.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(format!("{:x}", h.finalize()))
}

/// Now, as RFC 3339 UTC with second precision (llama-bench's `test_time` format).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// SIMD features the CPU has but llama.cpp was not built with: a silent slowdown to warn of.
pub fn missing_simd(built: &[(&'static str, bool)]) -> Vec<&'static str> {
    let mut missing = Vec::new();
    #[cfg(target_arch = "x86_64")]
    for (name, has) in [
        ("AVX", std::arch::is_x86_feature_detected!("avx")),
        ("AVX2", std::arch::is_x86_feature_detected!("avx2")),
        ("FMA", std::arch::is_x86_feature_detected!("fma")),
        ("F16C", std::arch::is_x86_feature_detected!("f16c")),
    ] {
        if has && built.iter().any(|&(n, b)| n == name && !b) {
            missing.push(name);
        }
    }
    let _ = built;
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_sys_version_matches_cargo_toml() {
        let manifest = include_str!("../Cargo.toml");
        assert!(manifest.contains(&format!(
            "llama-cpp-sys-2 = {{ version = \"={LLAMA_SYS_VERSION}\""
        )));
    }

    #[test]
    fn sha256_of_a_known_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(
            sha256_file(&p).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn load_average_is_read_where_proc_has_it() {
        let la = load_average();
        assert_eq!(la.is_some(), Path::new("/proc/loadavg").exists());
        for v in la.into_iter().flatten() {
            assert!(v.is_finite() && v >= 0.0, "{v}");
        }
    }

    #[test]
    fn timestamp_is_rfc3339_utc() {
        let t = now_rfc3339();
        assert!(chrono::DateTime::parse_from_rfc3339(&t).is_ok(), "{t}");
    }

    #[test]
    fn missing_simd_reports_only_features_the_cpu_has() {
        let none_built = [
            ("AVX", false),
            ("AVX2", false),
            ("FMA", false),
            ("F16C", false),
        ];
        let m = missing_simd(&none_built);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            m.contains(&"AVX2"),
            std::arch::is_x86_feature_detected!("avx2")
        );
        let all_built = [("AVX", true), ("AVX2", true), ("FMA", true), ("F16C", true)];
        assert!(missing_simd(&all_built).is_empty());
        let _ = m;
    }
}
