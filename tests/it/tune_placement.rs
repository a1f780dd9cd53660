//! Placement in `tpsbench tune` (issue 46): the memory limit per device, computed from the
//! GGUF and each candidate's placement before any speed is measured, and the bisection of a
//! monotone placement axis, whose boundary races with its neighbour. On the CPU build
//! (always) and on the Vulkan build on llvmpipe (skipped, saying so, without it).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{self, only_result, tune_into};

/// The tests' tpsbench: the CPU build.
fn cpu_build() -> PathBuf {
    assert_cmd::cargo::cargo_bin("tpsbench")
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

/// The test whose id is `id`.
fn test<'a>(r: &'a Value, id: &str) -> &'a Value {
    r["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no test {id}"))
}

/// Rounds a test ran (1 for a single round).
fn rounds(t: &Value) -> u64 {
    t["rounds"].as_array().map_or(1, |r| r.len().max(1) as u64)
}

#[test]
fn tune_bisects_n_gpu_layers_races_the_boundary_with_its_neighbour_and_the_file_replays() {
    let (dir, cfg) = support::tiny_with(
        "[sweep]\nrepetitions = 1\nn_gpu_layers = [0, 1, 2, 3]\n\n\
         [[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n\n\
         [tune]\nobjective = \"tg8\"\nmax_rounds = 4\n",
    );
    let results = dir.path().join("results");
    let (code, out, err) = tune_into(&cpu_build(), &cfg, &results);
    assert_eq!(code, 0, "{err}");
    let path = only_result(&results);
    let r = json(&path);
    let t = &r["run"]["tune"];
    let b = &t["bisections"][0];
    assert_eq!(b["axis"], "n_gpu_layers", "{t}");
    assert_eq!(b["values"], serde_json::json!([0, 1, 2, 3]));
    // The most offload is probed first; it loads and runs (the CPU build ignores it), so
    // it is the boundary, and it races with n_gpu_layers 2.
    let ids = strs(&b["ids"]);
    assert_eq!(
        b["probes"],
        serde_json::json!([{ "id": ids[3], "ok": true }])
    );
    assert_eq!(b["boundary"], ids[3].as_str());
    assert_eq!(strs(&b["raced"]), vec![ids[2].clone(), ids[3].clone()]);
    let cands = t["candidates"].as_array().unwrap();
    let raced: Vec<&str> = cands.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(raced, vec![ids[2].as_str(), ids[3].as_str()]);
    // The probe was the boundary's first round; the race's rounds follow it.
    assert_eq!(cands[1]["probe_rounds"], 1, "{t}");
    assert!(cands[0].get("probe_rounds").is_none(), "{t}");
    for c in cands {
        let extra = c["probe_rounds"].as_u64().unwrap_or(0);
        assert_eq!(
            rounds(test(&r, c["id"].as_str().unwrap())),
            c["rounds"].as_u64().unwrap() + extra
        );
    }
    assert!(
        out.contains("bisected n_gpu_layers: 1 probe and 2 raced instead of 4 candidates"),
        "{out}"
    );
    assert!(out.contains("boundary ngl 3"), "{out}");
    // The file replays, bisection included; an edited boundary is refused.
    tpsbench::record::verify::read(&path).unwrap();
    let mut edited = r.clone();
    edited["run"]["tune"]["bisections"][0]["boundary"] = Value::String(ids[2].clone());
    std::fs::write(&path, serde_json::to_string(&edited).unwrap()).unwrap();
    let e = tpsbench::record::verify::read(&path)
        .unwrap_err()
        .to_string();
    assert!(e.contains("bisections[0].boundary"), "{e}");
}

#[test]
fn tune_with_bisect_false_races_every_value() {
    let (dir, cfg) = support::tiny_with(
        "[sweep]\nrepetitions = 1\nn_gpu_layers = [0, 1, 2, 3]\n\n\
         [[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n\n\
         [tune]\nobjective = \"tg8\"\nmax_rounds = 2\nbisect = false\n",
    );
    let results = dir.path().join("results");
    let (code, out, err) = tune_into(&cpu_build(), &cfg, &results);
    assert_eq!(code, 0, "{err}");
    let r = json(&only_result(&results));
    assert_eq!(r["run"]["tune"]["candidates"].as_array().unwrap().len(), 4);
    assert!(r["run"]["tune"].get("bisections").is_none());
    assert!(!out.contains("bisected"), "{out}");
}

/// docs/examples/tune-llvmpipe-moe.toml with its model in `dir` (the tests' synth models).
fn llvmpipe_example() -> (tempfile::TempDir, PathBuf) {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/examples/tune-llvmpipe-moe.toml"),
    )
    .unwrap();
    support::tiny_with(&text.replace("../../models/tiny-moe.gguf", "tiny-moe.gguf"))
}

#[test]
fn vulkan_placement_tune_of_the_tiny_moe_excludes_by_device_memory_bisects_and_prints_commands() {
    let Some(bin) = crate::vulkan::vulkan_or_skip() else {
        return;
    };
    let (dir, cfg) = llvmpipe_example();
    let results = dir.path().join("results");
    let (code, out, err) = tune_into(&bin, &cfg, &results);
    assert_eq!(code, 0, "{err}\n{out}");
    let path = only_result(&results);
    let r = json(&path);
    let t = &r["run"]["tune"];
    assert_eq!(t["space"], 12, "{t}");
    assert!(
        strs(&t["limits"])
            .iter()
            .any(|l| l == "memory Vulkan0 512.0 KiB (max_device_memory_gib)"),
        "{t}"
    );
    // Excluded by Vulkan0's memory, with its figure: n_gpu_layers 4 and 5 with n_cpu_moe 0;
    // n_cpu_moe 4 keeps every expert on the CPU, so every n_gpu_layers fits. The KV cache
    // counts llama.cpp's 256 cells for the 64 tokens (Vulkan0's limit is 0.5 MiB for it).
    let excluded: Vec<(String, String)> = t["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["limit"], "memory", "{e}");
            (
                e["id"].as_str().unwrap().to_string(),
                e["why"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut seg: Vec<(&str, &str)> = Vec::new();
    for (id, why) in &excluded {
        assert!(
            why.starts_with("moe: Vulkan0 ") && why.ends_with("> 512.0 KiB"),
            "{why}"
        );
        assert!(why.contains("weights ") && why.contains(" + KV "), "{why}");
        let ngl = id.split('/').find(|s| s.starts_with("ngl=")).unwrap();
        let ncmoe = id
            .split('/')
            .find(|s| s.starts_with("ncmoe="))
            .unwrap_or("ncmoe=0");
        seg.push((ngl, ncmoe));
    }
    seg.sort();
    assert_eq!(
        seg,
        vec![("ngl=4", "ncmoe=0"), ("ngl=5", "ncmoe=0")],
        "{excluded:?}"
    );
    // n_gpu_layers bisected in each n_cpu_moe group: one probe each (the most offload left
    // loads), the boundary raced with its neighbour.
    let bis = t["bisections"].as_array().unwrap();
    assert_eq!(bis.len(), 2, "{t}");
    let mut boundaries = Vec::new();
    for b in bis {
        assert_eq!(b["axis"], "n_gpu_layers");
        let ids = strs(&b["ids"]);
        let top = ids.last().unwrap().clone();
        assert_eq!(
            b["probes"],
            serde_json::json!([{ "id": top, "ok": true }]),
            "{b}"
        );
        assert_eq!(strs(&b["raced"]), ids[ids.len() - 2..].to_vec(), "{b}");
        boundaries.push(
            b["values"]
                .as_array()
                .unwrap()
                .last()
                .unwrap()
                .as_i64()
                .unwrap(),
        );
    }
    boundaries.sort();
    assert_eq!(boundaries, vec![3, 5], "{t}");
    assert_eq!(t["candidates"].as_array().unwrap().len(), 4, "{t}");
    assert!(
        out.contains("bisected n_gpu_layers: 2 probes and 4 raced instead of 10 candidates"),
        "{out}"
    );
    assert!(
        out.contains("excluded by memory: 2 candidates (moe: Vulkan0 "),
        "{out}"
    );
    // The placement llama.cpp reported for the boundary at n_cpu_moe 4: every layer on Vulkan0.
    let all = bis
        .iter()
        .find(|b| b["values"].as_array().unwrap().last().unwrap() == 5)
        .unwrap();
    let top = test(&r, all["boundary"].as_str().unwrap());
    assert_eq!(top["placement"]["layers_offloaded"], 5, "{top}");
    // The winner as commands, with its placement.
    let w = test(&r, t["winner"].as_str().unwrap());
    let ngl = w["n_gpu_layers"].as_i64().unwrap();
    let server = out
        .lines()
        .find(|l| l.starts_with("llama-server -m "))
        .unwrap();
    let bench = out
        .lines()
        .find(|l| l.starts_with("llama-bench -m "))
        .unwrap();
    assert!(
        server.contains(&format!(" --n-gpu-layers {ngl}")),
        "{server}"
    );
    assert!(
        bench.contains(&format!(" -ngl {ngl}")) && bench.contains(" -p 64 -n 0"),
        "{bench}"
    );
    match w.get("n_cpu_moe").and_then(Value::as_i64) {
        Some(n) if n > 0 => {
            assert!(server.contains(&format!("--n-cpu-moe {n}")), "{server}");
            assert!(bench.contains(&format!("-ncmoe {n}")), "{bench}");
        }
        _ => assert!(!server.contains("--n-cpu-moe"), "{server}"),
    }
    tpsbench::record::verify::read(&path).unwrap();
    // What the run printed, for the docs (cargo test -- --nocapture).
    eprintln!("{out}");
}
