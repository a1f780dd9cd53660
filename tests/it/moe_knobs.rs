//! The llama-bench parameters of `config::knobs`' table end to end on the CPU build: the
//! real binary and llama.cpp on the tiny mixture-of-experts model (`tpsbench synth --preset
//! tiny-moe`, Qwen3-30B-A3B's architecture at a size that loads in milliseconds). On a CPU
//! build every tensor ends on the CPU whatever the placement asks; what is checked is that
//! each setting runs, reaches llama.cpp (its own log says so) and is recorded, exported and
//! warned about.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{self, tpsbench};

/// A temp dir with `tiny-moe.gguf` and the dense `tiny.gguf`, and `config` as models.toml.
fn moe_dir(config: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    support::synth_to(&dir.path().join("tiny-moe.gguf"), &["--preset", "tiny-moe"]);
    // `--preset tiny` is the default: the same bytes as every other module's tiny model.
    support::synth_to(&dir.path().join("tiny.gguf"), &[]);
    let path = dir.path().join("models.toml");
    std::fs::write(&path, config).unwrap();
    (dir, path)
}

fn run(config: &Path, args: &[&str]) -> std::process::Output {
    tpsbench()
        .args(["run", "--quiet", "--no-save", "--config"])
        .arg(config)
        .args(args)
        .output()
        .unwrap()
}

const SWEEP: &str =
    "[sweep]\nn_prompt = 8\nn_gen = 0\nn_threads = 1\nrepetitions = 1\nwarmup = 0\n";

#[test]
fn n_cpu_moe_and_tensor_overrides_run_on_the_tiny_moe_and_are_recorded() {
    let (_dir, config) = moe_dir(&format!(
        "{SWEEP}n_cpu_moe = [0, 2]\ntensor_buft_overrides = [\"none\", \".ffn_.*_exps.=CPU\"]\n\
         [[model]]\nname = \"moe\"\npath = \"tiny-moe.gguf\"\n"
    ));
    let out = run(&config, &["--output", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("warning"),
        "nothing to warn about: {stderr}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tests = v["tests"].as_array().unwrap();
    let ids: Vec<&str> = tests.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "moe/F32/pp8/ncmoe=0/ot=none",
            "moe/F32/pp8/ncmoe=0/ot=.ffn_.*_exps.=CPU",
            "moe/F32/pp8/ncmoe=2/ot=none",
            "moe/F32/pp8/ncmoe=2/ot=.ffn_.*_exps.=CPU",
        ]
    );
    for t in tests {
        assert_eq!(t["status"], "ok", "{t}");
        assert!(t.get("not_honoured").is_none(), "{t}");
        assert_eq!(t["placement"]["devices"][0]["name"], "CPU", "{t}");
    }
    // Under llama-bench's names, absent at the default.
    assert!(tests[0].get("n_cpu_moe").is_none() && tests[0].get("tensor_buft_overrides").is_none());
    assert_eq!(tests[2]["n_cpu_moe"], 2);
    assert_eq!(tests[1]["tensor_buft_overrides"], ".ffn_.*_exps.=CPU");
    let mut identities: Vec<&str> = tests
        .iter()
        .map(|t| t["identity"].as_str().unwrap())
        .collect();
    identities.sort();
    identities.dedup();
    assert_eq!(identities.len(), 4, "each setting is its own test");

    // llama.cpp itself says it kept layer 0's and layer 1's experts, and only those, on
    // the CPU buffer type for n_cpu_moe = 2.
    let out = tpsbench()
        .args([
            "run",
            "--no-save",
            "--verbose",
            "--filter",
            "ncmoe=2/ot=none",
            "--config",
        ])
        .arg(&config)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    let overridden: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("buffer type overridden to CPU"))
        .collect();
    assert_eq!(
        overridden.len(),
        6,
        "3 expert tensors x 2 layers:\n{}",
        overridden.join("\n")
    );
    assert!(
        overridden
            .iter()
            .all(|l| l.contains("blk.0.") || l.contains("blk.1."))
    );

    // The llama-bench export carries them under llama-bench's names and types.
    let out = run(&config, &["--output", "llama-bench-json"]);
    assert!(out.status.success());
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[3]["n_cpu_moe"], 2);
    assert_eq!(rows[3]["tensor_buft_overrides"], ".ffn_.*_exps.=CPU");
    assert_eq!(rows[0]["tensor_buft_overrides"], "none");
    assert_eq!(rows[0]["repack"], true);
    // The Markdown table shows the columns that differ from llama-bench's defaults.
    let out = run(&config, &["--output", "md"]);
    let md = String::from_utf8_lossy(&out.stdout);
    let header = md.lines().next().unwrap();
    assert!(header.contains("ncmoe") && header.contains(" ot "), "{md}");
    assert!(!header.contains("repack"), "{md}");
}

#[test]
fn context_and_load_parameters_reach_llama_cpp_and_unhonoured_ones_are_recorded() {
    let (_dir, config) = moe_dir(&format!(
        "{SWEEP}repack = false\nload_mode = \"none\"\nno_op_offload = true\nembeddings = true\n\
         poll = 0\nfit_target = 256\ndevices = \"CPU\"\n\
         [[model]]\nname = \"moe\"\npath = \"tiny-moe.gguf\"\n"
    ));
    let out = run(&config, &["--output", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // What this OpenMP build cannot honour: warned before the run, once, and recorded in
    // the test. fit_target is honoured: llama.cpp's fit ran (its common library is linked).
    assert_eq!(
        stderr.matches("warning: poll = 0: not honoured").count(),
        1,
        "{stderr}"
    );
    assert!(
        !stderr.contains("fit_target = 256: not honoured"),
        "{stderr}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = &v["tests"][0];
    assert_eq!(t["status"], "ok", "{t}");
    let notes: Vec<&str> = t["not_honoured"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(
        notes,
        [
            "poll = 0: not honoured, this build's CPU backend uses OpenMP, whose threads do not read the thread pool's polling level"
        ]
    );
    // What fit chose, recorded with the placement: on a machine without a GPU, the model
    // fits in host memory as it is (llama.cpp's default n_gpu_layers, no split, no override),
    // for the test's context.
    let fit = &t["placement"]["fit"];
    assert_eq!(fit["target_mib"], 256, "{t}");
    assert_eq!(fit["min_ctx"], 0, "{t}");
    assert_eq!(fit["n_gpu_layers"], -1, "{t}");
    assert!(
        fit.get("overrides").is_none() && fit.get("tensor_split").is_none(),
        "{t}"
    );
    assert_eq!(
        fit["n_ctx"],
        t["n_prompt"].as_u64().unwrap()
            + t["n_gen"].as_u64().unwrap()
            + t["n_depth"].as_u64().unwrap(),
        "{t}"
    );
    for (k, want) in [
        ("repack", Value::Bool(false)),
        ("load_mode", "none".into()),
        ("no_op_offload", Value::Bool(true)),
        ("embeddings", Value::Bool(true)),
        ("devices", "CPU".into()),
        ("fit_target", 256.into()),
    ] {
        assert_eq!(t[k], want, "{k}: {t}");
    }
    // load_mode none: llama.cpp reads the file instead of mapping it.
    let out = tpsbench()
        .args(["run", "--no-save", "--verbose", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(
        !log.contains("CPU_Mapped model buffer"),
        "no mmap with load_mode none"
    );
    assert!(!log.contains("CPU_REPACK"), "repack off");
}

#[test]
fn a_fit_target_no_memory_can_meet_fails_its_tests_naming_the_memory_and_the_sweep_goes_on() {
    // 2^30 MiB (1 PiB) free is more than any machine has: llama.cpp's fit finds nothing.
    let (_dir, config) = moe_dir(&format!(
        "{SWEEP}fit_target = [1073741824, 0]\n\
         [[model]]\nname = \"moe\"\npath = \"tiny-moe.gguf\"\n"
    ));
    let out = run(&config, &["--output", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let tests = v["tests"].as_array().unwrap();
    let failed: Vec<&Value> = tests
        .iter()
        .filter(|t| t["fit_target"] == 1073741824)
        .collect();
    assert!(!failed.is_empty(), "{v}");
    for t in failed {
        assert_eq!(t["status"], "failed", "{t}");
        let e = t["error"].as_str().unwrap_or_else(|| panic!("{t}"));
        assert!(
            e.contains("llama.cpp's fit found no placement that leaves 1073741824 MiB free")
                && e.contains("the weights need")
                && e.contains("free: CPU "),
            "{e}"
        );
    }
    // The tests without fit ran.
    assert!(
        tests
            .iter()
            .filter(|t| t["fit_target"] != 1073741824)
            .all(|t| t["status"] == "ok"),
        "{v}"
    );
}

#[test]
fn n_cpu_moe_on_a_dense_model_and_a_pattern_matching_nothing_are_warnings() {
    let (_dir, config) = moe_dir(&format!(
        "{SWEEP}n_cpu_moe = 1\ntensor_buft_overrides = \"nothing_here=CPU\"\n\
         [[model]]\nname = \"dense\"\npath = \"tiny.gguf\"\n"
    ));
    let out = run(&config, &["--output", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("n_cpu_moe:") && stderr.contains("has no expert tensors"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the pattern \"nothing_here\" matches no tensor"),
        "{stderr}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tests"][0]["status"], "ok");
}
