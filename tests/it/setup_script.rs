//! `scripts/setup --check-libclang` must answer what bindgen (clang-sys, loading libclang at
//! run time) would find: libclang.so, libclang-<ver>.so, libclang.so.<n>, libclang-<ver>.so.<n>,
//! never libclang-cpp (another library), and LIBCLANG_PATH (a directory or a file) as the only
//! place searched when it is set. Each case builds temporary directories holding only the
//! named files and points the script at them with TPSBENCH_LIBCLANG_DIRS, which stands in for
//! the machine's own library directories.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A temporary directory holding empty files with these names.
fn dir_with(names: &[&str]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for n in names {
        std::fs::write(d.path().join(n), b"").unwrap();
    }
    d
}

/// Runs `scripts/setup --check-libclang` with `system` as the machine's library directories
/// and the given environment; returns (exit code, stdout).
fn check(system: &[&Path], env: &[(&str, &Path)]) -> (i32, String) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/setup");
    let dirs: Vec<String> = system.iter().map(|p| p.display().to_string()).collect();
    let mut cmd = Command::new("bash");
    cmd.arg(&script)
        .arg("--check-libclang")
        .env("TPSBENCH_LIBCLANG_DIRS", dirs.join(" "))
        .env_remove("LIBCLANG_PATH")
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LIBRARY_PATH");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    (out.status.code().unwrap_or(-1), stdout)
}

fn found(names: &[&str]) -> (i32, String) {
    let d = dir_with(names);
    check(&[d.path()], &[])
}

#[test]
fn only_libclang_cpp_is_reported_missing() {
    let (code, out) = found(&["libclang-cpp.so.14"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("libclang: missing"), "{out}");
    let (code, out) = found(&["libclang-cpp.so", "libclang-cpp.so.18.1"]);
    assert_eq!(
        (code, out.starts_with("libclang: missing")),
        (1, true),
        "{out}"
    );
}

#[test]
fn an_empty_directory_is_reported_missing() {
    let (code, out) = found(&[]);
    assert_eq!((code, out.trim()), (1, "libclang: missing"));
}

#[test]
fn every_name_bindgen_loads_is_reported_found() {
    for name in [
        "libclang-14.so.1",
        "libclang.so.1",
        "libclang.so",
        "libclang-14.so",
    ] {
        let (code, out) = found(&[name]);
        assert_eq!((code, out.trim()), (0, "libclang: found"), "{name}");
    }
}

#[test]
fn libclang_beside_libclang_cpp_is_found() {
    let (code, out) = found(&["libclang-cpp.so.14", "libclang-14.so.1"]);
    assert_eq!((code, out.trim()), (0, "libclang: found"));
}

#[test]
fn every_listed_directory_is_searched() {
    let empty = dir_with(&["libclang-cpp.so.14"]);
    let with = dir_with(&["libclang.so.1"]);
    let (code, out) = check(&[empty.path(), with.path()], &[]);
    assert_eq!((code, out.trim()), (0, "libclang: found"));
}

#[test]
fn libclang_path_is_the_only_place_searched_when_set() {
    // clang-sys looks nowhere else when LIBCLANG_PATH is set: a libclang in the system
    // directories does not help a build whose LIBCLANG_PATH holds none.
    let system = dir_with(&["libclang.so.1"]);
    let wrong = dir_with(&["libclang-cpp.so.14"]);
    let (code, out) = check(&[system.path()], &[("LIBCLANG_PATH", wrong.path())]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("libclang: missing"), "{out}");
    assert!(out.contains("LIBCLANG_PATH"), "says why: {out}");
    let right = dir_with(&["libclang-18.so.18.1"]);
    let (code, out) = check(&[], &[("LIBCLANG_PATH", right.path())]);
    assert_eq!((code, out.trim()), (0, "libclang: found"));
}

#[test]
fn libclang_path_may_name_the_library_file() {
    let d = dir_with(&["libclang.so.18"]);
    let file = d.path().join("libclang.so.18");
    let (code, out) = check(&[], &[("LIBCLANG_PATH", &file)]);
    assert_eq!((code, out.trim()), (0, "libclang: found"));
    let cpp = dir_with(&["libclang-cpp.so.18"]);
    let file = cpp.path().join("libclang-cpp.so.18");
    let (code, out) = check(&[], &[("LIBCLANG_PATH", &file)]);
    assert_eq!(code, 1, "{out}");
}

#[test]
fn library_search_paths_in_the_environment_are_searched() {
    // clang-sys also searches LD_LIBRARY_PATH and LIBRARY_PATH (e.g. a conda environment).
    let system = dir_with(&[]);
    for var in ["LD_LIBRARY_PATH", "LIBRARY_PATH"] {
        let env_dir = dir_with(&["libclang.so.1"]);
        let (code, out) = check(&[system.path()], &[(var, env_dir.path())]);
        assert_eq!((code, out.trim()), (0, "libclang: found"), "{var}");
    }
}
