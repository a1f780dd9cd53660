//! The compare scripts' own logic (the order of the sides in a round, the statistics behind
//! every verdict, how llama-batched-bench's rows are read) is checked by their Python unit
//! tests, `scripts/test-compare-scripts`; this runs them with every `cargo test`.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn the_compare_scripts_unit_tests_pass() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/test-compare-scripts");
    let out = Command::new("python3")
        .arg(&script)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 is needed for the compare scripts' tests (scripts/setup installs it)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}", stderr);
    assert!(stderr.contains("OK"), "{}", stderr);
}
