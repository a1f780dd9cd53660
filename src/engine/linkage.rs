//! Which llama.cpp library the process runs, and whether it is the one tpsbench was built
//! for. A `dynamic-link` build finds libllama.so at run time (LD_LIBRARY_PATH): "bring your
//! own llama.cpp", e.g. a CUDA build made by scripts/build-llama-shared on a GPU machine.
//! The C API has no version number, and a library from other sources would mismatch the
//! compiled-in struct layouts silently, so start-up compares the stamp that script writes
//! next to the libraries (and ggml's version string) with what this binary was built for.
//! Pure, except [`read_stamp`]; the engine finds the library path and calls [`check`].

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::EngineError;

/// Version of llama-cpp-sys-2, pinned in Cargo.toml (a unit test keeps the two in step).
pub const LLAMA_SYS_VERSION: &str = "0.1.161";

/// The stamp file scripts/build-llama-shared writes next to the libraries.
pub const STAMP_FILE: &str = "tpsbench-llama.stamp";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Library {
    /// "static" (linked into tpsbench) or "dynamic" (a shared libllama found at run time).
    pub linkage: String,
    /// The file holding libllama's code: the shared library as loaded, or the executable.
    pub path: String,
    pub ggml_version: String,
    /// The key=value stamp found next to a shared library (llama_cpp_sys_2,
    /// llama_cpp_rs_commit, backend, cmake_flags, built_at, build_seconds, host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BuiltFor {
    pub sys_version: String,
    /// The llama-cpp-rs commit pinning llama.cpp (a prefix of the full hash; may be empty).
    pub llama_rs_commit: String,
    /// ggml's version in the vendored sources (may be empty when unknown).
    pub ggml_version: String,
}

impl BuiltFor {
    pub fn this_build() -> Self {
        BuiltFor {
            sys_version: LLAMA_SYS_VERSION.to_string(),
            llama_rs_commit: env!("TPSBENCH_LLAMA_RS_COMMIT").to_string(),
            ggml_version: env!("TPSBENCH_GGML_VERSION").to_string(),
        }
    }

    fn describe(&self) -> String {
        let mut s = format!("llama-cpp-sys-2 {}", self.sys_version);
        if !self.llama_rs_commit.is_empty() {
            s.push_str(&format!(" (llama-cpp-rs@{})", self.llama_rs_commit));
        }
        s
    }
}

/// Parses `key=value` lines; blank lines and `#` comments are skipped.
pub fn parse_stamp(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

pub fn read_stamp(library: &Path) -> Option<BTreeMap<String, String>> {
    let file = library.parent()?.join(STAMP_FILE);
    std::fs::read_to_string(file).ok().map(|t| parse_stamp(&t))
}

/// Whether two commit hashes name the same commit (one may be abbreviated).
fn same_commit(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    a.len() >= 7 && b.len() >= 7 && (a.starts_with(&b) || b.starts_with(&a))
}

/// Refuses a library that is not the llama.cpp this binary was built for, with one line
/// that names the library, both versions and the fix. `stamp` is `None` when the library
/// has none (a static build, or shared libraries built some other way).
pub fn check(
    built: &BuiltFor,
    library: &str,
    ggml_version: &str,
    stamp: Option<&BTreeMap<String, String>>,
) -> Result<(), EngineError> {
    let fix = format!(
        "rebuild the libraries with scripts/build-llama-shared from {}, or point LD_LIBRARY_PATH at \
         matching libraries",
        built.describe()
    );
    if let Some(s) = stamp {
        let field = |k: &str| s.get(k).map_or("", String::as_str);
        let (lib_sys, lib_commit) = (field("llama_cpp_sys_2"), field("llama_cpp_rs_commit"));
        if lib_sys.is_empty() {
            return Err(EngineError::Other(format!(
                "{library}: its {STAMP_FILE} has no llama_cpp_sys_2 line; {fix}"
            )));
        }
        let commit_differs = !built.llama_rs_commit.is_empty()
            && !lib_commit.is_empty()
            && !same_commit(lib_commit, &built.llama_rs_commit);
        if lib_sys != built.sys_version || commit_differs {
            let short: String = lib_commit.chars().take(12).collect();
            return Err(EngineError::Other(format!(
                "{library} was built from llama-cpp-sys-2 {lib_sys} (llama-cpp-rs@{short}) but \
                 this tpsbench needs {}; {fix}",
                built.describe()
            )));
        }
    }
    if !built.ggml_version.is_empty()
        && !ggml_version.is_empty()
        && ggml_version != built.ggml_version
    {
        return Err(EngineError::Other(format!(
            "{library} is ggml {ggml_version} but this tpsbench was built for ggml {} ({}); {fix}",
            built.ggml_version,
            built.describe()
        )));
    }
    Ok(())
}

static CURRENT: OnceLock<Library> = OnceLock::new();

/// Set once, by the engine at start-up.
pub fn set_current(lib: Library) {
    let _ = CURRENT.set(lib);
}

pub fn current() -> Option<&'static Library> {
    CURRENT.get()
}

#[cfg(test)]
mod tests {
    #[test]
    fn pinned_sys_version_matches_cargo_toml() {
        let manifest = include_str!("../../Cargo.toml");
        assert!(manifest.contains(&format!(
            "llama-cpp-sys-2 = {{ version = \"={}\"",
            super::LLAMA_SYS_VERSION
        )));
    }

    use super::*;

    fn built() -> BuiltFor {
        BuiltFor {
            sys_version: "0.1.161".into(),
            llama_rs_commit: "e7af607ebd5e".into(),
            ggml_version: "0.26.0".into(),
        }
    }

    const STAMP: &str = "# Written by tpsbench's scripts/build-llama-shared\n\
        llama_cpp_sys_2=0.1.161\n\
        llama_cpp_rs_commit=e7af607ebd5ec2932709ef918c17cca2f9b0fce4\n\
        backend=cuda\n\
        cmake_flags=GGML_CUDA=ON CMAKE_CUDA_ARCHITECTURES=90\n\n";

    #[test]
    fn stamp_parses_key_value_lines_and_skips_comments() {
        let s = parse_stamp(STAMP);
        assert_eq!(s.len(), 4);
        assert_eq!(s["backend"], "cuda");
        assert_eq!(s["cmake_flags"], "GGML_CUDA=ON CMAKE_CUDA_ARCHITECTURES=90");
    }

    #[test]
    fn matching_stamp_with_full_commit_is_accepted() {
        let s = parse_stamp(STAMP);
        assert_eq!(
            check(&built(), "/l/libllama.so", "0.26.0", Some(&s)),
            Ok(())
        );
        // No stamp (static build, or libraries built another way) and the same ggml.
        assert_eq!(check(&built(), "/l/libllama.so", "0.26.0", None), Ok(()));
    }

    #[test]
    fn other_crate_version_is_refused_with_one_clear_line() {
        let s = parse_stamp(&STAMP.replace("0.1.161", "0.1.150"));
        let e = check(&built(), "/l/libllama.so.0", "0.26.0", Some(&s))
            .unwrap_err()
            .to_string();
        assert!(!e.contains('\n'));
        assert!(
            e.starts_with(
                "/l/libllama.so.0 was built from llama-cpp-sys-2 0.1.150 (llama-cpp-rs@e7af607ebd5e) \
                 but this tpsbench needs llama-cpp-sys-2 0.1.161 (llama-cpp-rs@e7af607ebd5e)"
            ),
            "{e}"
        );
        assert!(e.contains("scripts/build-llama-shared"), "{e}");
    }

    #[test]
    fn other_commit_is_refused_even_with_the_same_crate_version() {
        let s = parse_stamp(&STAMP.replace("e7af607ebd5ec29", "0123456789abcde"));
        let e = check(&built(), "/l/libllama.so", "0.26.0", Some(&s))
            .unwrap_err()
            .to_string();
        assert!(e.contains("llama-cpp-rs@0123456789ab"), "{e}");
    }

    #[test]
    fn stamp_without_version_and_other_ggml_are_refused() {
        let s = parse_stamp("backend=cpu\n");
        let e = check(&built(), "/l/libllama.so", "0.26.0", Some(&s))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no llama_cpp_sys_2 line"), "{e}");
        let e = check(&built(), "/l/libllama.so", "0.9.4", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("is ggml 0.9.4 but this tpsbench was built for ggml 0.26.0"),
            "{e}"
        );
    }

    #[test]
    fn commits_compare_by_prefix_but_not_when_too_short() {
        assert!(same_commit("e7af607ebd5e", "E7AF607EBD5EC2932709"));
        assert!(!same_commit("e7af607ebd5e", "e7af608"));
        assert!(!same_commit("e7a", "e7af607ebd5e"), "too short to tell");
    }

    #[test]
    fn stamp_is_read_from_the_library_directory() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("libllama.so.0");
        assert_eq!(read_stamp(&lib), None);
        std::fs::write(dir.path().join(STAMP_FILE), STAMP).unwrap();
        assert_eq!(read_stamp(&lib).unwrap()["llama_cpp_sys_2"], "0.1.161");
    }
}
