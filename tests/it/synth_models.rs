//! `synth = "preset:TYPE"` in a `[[model]]`: the real binary writes the missing model with
//! llama.cpp's quantizer where needed, then measures it; nothing is downloaded.

use assert_cmd::Command;
use serde_json::Value;

#[test]
fn a_missing_model_with_a_synth_spec_is_written_then_measured_and_a_filtered_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("models.toml");
    std::fs::write(
        &config,
        "[sweep]\nn_prompt = 16\nn_gen = 4\nrepetitions = 2\nn_threads = 1\n\n\
         [[model]]\nname = \"made\"\npath = \"models/made.gguf\"\nsynth = \"tiny:Q8_0\"\n\n\
         [[model]]\nname = \"skipped\"\npath = \"models/skipped.gguf\"\nsynth = \"tiny\"\n",
    )
    .unwrap();
    let out = Command::cargo_bin("tpsbench")
        .unwrap()
        .args(["run", "--output", "json", "--no-save", "--filter", "made/"])
        .arg("--config")
        .arg(&config)
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("synthesizing tiny Q8_0"), "{stderr}");
    assert!(dir.path().join("models/made.gguf").is_file());
    assert!(
        !dir.path().join("models/skipped.gguf").exists(),
        "a model no test of the filter uses is not synthesized"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("models"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let model = &v["models"][0];
    assert_eq!(model["quantization"], "Q8_0");
    let tests = v["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 2);
    assert!(tests.iter().all(|t| t["status"] == "ok"), "{tests:?}");
}

#[test]
fn an_unknown_synth_preset_is_one_config_error_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("models.toml");
    std::fs::write(
        &config,
        "[[model]]\nname = \"m\"\npath = \"m.gguf\"\nsynth = \"llama-9b:Q4_K_M\"\n",
    )
    .unwrap();
    let out = Command::cargo_bin("tpsbench")
        .unwrap()
        .args(["run", "--no-save", "--config"])
        .arg(&config)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(":4") && stderr.contains("model[0].synth") && stderr.contains("llama-9b"),
        "{stderr}"
    );
}
