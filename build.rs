//! Records, at build time, which tpsbench commit and which llama.cpp sources went into the
//! binary, so that every result file can say what produced it.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
    let commit = Command::new("git")
        .args(["describe", "--always", "--dirty", "--abbrev=12"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=TPSBENCH_GIT_COMMIT={commit}");

    // llama-cpp-sys-2 (links = "llama") exports its cmake directory; its CMakeCache names the
    // vendored llama.cpp source tree, whose crate records the llama-cpp-rs commit that pins
    // llama.cpp. The vendored copy has no git history, so llama.cpp's own build number is 0.
    let mut llama_rs_commit = String::new();
    let mut ggml_version = String::new();
    let mut cmake_flags = String::new();
    let mut llama_src: Option<std::path::PathBuf> = None;
    if let Ok(dir) = std::env::var("DEP_LLAMA_GGML_CMAKE_DIR")
        .or_else(|_| std::env::var("DEP_LLAMA_BACKENDS_DIR"))
    {
        let out = std::path::Path::new(&dir)
            .ancestors()
            .find(|p| p.join("build/CMakeCache.txt").exists());
        if let Some(out) = out {
            let cache =
                std::fs::read_to_string(out.join("build/CMakeCache.txt")).unwrap_or_default();
            for line in cache.lines() {
                if let Some(src) = line.strip_prefix("CMAKE_HOME_DIRECTORY:INTERNAL=") {
                    llama_src = Some(std::path::PathBuf::from(src));
                    let vcs = std::path::Path::new(src).join("../.cargo_vcs_info.json");
                    let text = std::fs::read_to_string(vcs).unwrap_or_default();
                    if let Some(i) = text.find("\"sha1\": \"") {
                        llama_rs_commit = text[i + 9..].chars().take(12).collect();
                    }
                    // ggml's version, which a shared libggml reports through ggml_version():
                    // checked at start-up against the library a dynamic-link build finds.
                    let ggml = std::path::Path::new(src).join("ggml/CMakeLists.txt");
                    ggml_version =
                        ggml_version_of(&std::fs::read_to_string(ggml).unwrap_or_default());
                }
                for key in [
                    "GGML_NATIVE:",
                    "GGML_CUDA:",
                    "GGML_VULKAN:",
                    "GGML_METAL:",
                    "GGML_OPENMP:",
                    "CMAKE_CUDA_ARCHITECTURES:",
                ] {
                    if let Some(rest) = line.strip_prefix(key) {
                        let value = rest.split('=').nth(1).unwrap_or_default();
                        cmake_flags.push_str(&format!("{}={} ", key.trim_end_matches(':'), value));
                    }
                }
            }
        }
    }
    spec_loop(llama_src.as_deref());
    println!("cargo:rustc-env=TPSBENCH_LLAMA_RS_COMMIT={llama_rs_commit}");
    println!("cargo:rustc-env=TPSBENCH_GGML_VERSION={ggml_version}");
    println!(
        "cargo:rustc-env=TPSBENCH_LLAMA_CMAKE_FLAGS={}",
        cmake_flags.trim()
    );
}

/// Compiles the speculative loop (src/engine/llama/spec/loop.cpp, tpsbench's own C surface
/// over llama.cpp's drafters) against the headers of the very llama.cpp that llama-cpp-sys-2
/// built; its common library, which llama-cpp-sys-2 links, resolves the calls.
fn spec_loop(llama_src: Option<&std::path::Path>) {
    const FILE: &str = "src/engine/llama/spec/loop.cpp";
    println!("cargo:rerun-if-changed={FILE}");
    let Some(src) = llama_src else {
        panic!("llama-cpp-sys-2 did not say where its llama.cpp sources are (DEP_LLAMA_*)");
    };
    let mut b = cc::Build::new();
    b.cpp(true)
        .std("c++17")
        .file(FILE)
        .include(src.join("include"))
        .include(src.join("ggml/include"))
        .include(src.join("common"))
        .warnings(false)
        .opt_level(2);
    b.compile("tpsbench_spec_loop");
}

/// "0.26.0" from ggml's `set(GGML_VERSION_MAJOR 0)` ... lines; empty when they are missing.
fn ggml_version_of(cmake: &str) -> String {
    let part = |name: &str| {
        cmake.lines().find_map(|l| {
            l.trim()
                .strip_prefix(&format!("set(GGML_VERSION_{name} "))
                .and_then(|r| r.strip_suffix(')'))
                .map(|v| v.trim().to_string())
        })
    };
    match (part("MAJOR"), part("MINOR"), part("PATCH")) {
        (Some(a), Some(b), Some(c)) => format!("{a}.{b}.{c}"),
        _ => String::new(),
    }
}
