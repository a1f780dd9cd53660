//! Facts about the machine, the build and the model files, for the result metadata.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

pub(crate) fn gpu_backend() -> &'static str {
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

/// The per-user cache folder, `${XDG_CACHE_HOME:-~/.cache}/tpsbench`.
pub(crate) fn user_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("tpsbench"))
}

/// Hex SHA-256 of a file, read once: kept in the per-user cache by (path, size, mtime,
/// inode), so that an unchanged file (a model of 80 GB) is not read again.
pub(crate) fn sha256_file(path: &Path) -> std::io::Result<String> {
    match user_cache_dir() {
        Some(dir) => sha256_cached(&dir.join("sha256.tsv"), path),
        None => sha256_read(path),
    }
}

/// `sha256_file` with the cache in `cache` (lines `key<TAB>sha256`; a lost or stale line is
/// only a file read again).
pub(crate) fn sha256_cached(cache: &Path, path: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    let abs = std::fs::canonicalize(path)?;
    let (shown, len, ino) = (abs.display(), m.len(), m.ino());
    let key = format!("{shown}\t{len}\t{}.{}\t{ino}\t", m.mtime(), m.mtime_nsec());
    let text = std::fs::read_to_string(cache).unwrap_or_default();
    let cached = text.lines().find_map(|l| l.strip_prefix(&key));
    if let Some(sha) = cached {
        return Ok(sha.to_string());
    }
    let sha = sha256_read(path)?;
    let prefix = format!("{}\t", abs.display());
    let mut kept: String = (text.lines())
        .filter(|l| !l.starts_with(&prefix))
        .map(|l| format!("{l}\n"))
        .collect();
    kept.push_str(&format!("{key}{sha}\n"));
    let tmp = cache.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::create_dir_all(cache.parent().unwrap_or(Path::new(".")))
        .and_then(|_| std::fs::write(&tmp, kept))
        .and_then(|_| std::fs::rename(&tmp, cache));
    Ok(sha)
}

fn sha256_read(path: &Path) -> std::io::Result<String> {
    let mut h = Sha256::new();
    let mut file = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(path)?);
    std::io::copy(&mut file, &mut h)?;
    Ok(crate::util::hash::hex(h.finalize()))
}

/// Now, as RFC 3339 UTC with second precision (llama-bench's `test_time` format).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// SIMD features the CPU has but llama.cpp was not built with: a silent slowdown to warn of.
pub(crate) fn missing_simd(built: &[(&'static str, bool)]) -> Vec<&'static str> {
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
    fn a_hashed_file_is_not_read_again_until_its_size_mtime_or_inode_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (cache, p) = (dir.path().join("c/sha256.tsv"), dir.path().join("m.gguf"));
        std::fs::write(&p, b"abc").unwrap();
        let first = sha256_cached(&cache, &p).unwrap();
        assert_eq!(first, sha256_read(&p).unwrap());
        // New bytes of the same size under the old mtime: the cached hash proves no read.
        let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
        std::fs::write(&p, b"abd").unwrap();
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(mtime).unwrap();
        assert_eq!(sha256_cached(&cache, &p).unwrap(), first);
        f.set_modified(mtime + std::time::Duration::from_secs(1))
            .unwrap();
        let second = sha256_cached(&cache, &p).unwrap();
        assert_eq!(second, sha256_read(&p).unwrap());
        assert_ne!(second, first);
        // One line per file.
        assert_eq!(std::fs::read_to_string(&cache).unwrap().lines().count(), 1);
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
