//! The GPU placement axes and the placement record, end to end on a CPU build: the real
//! binary and llama.cpp on the tiny synthetic model. On a CPU build everything must be
//! reported on the CPU, whatever the sweep asked for.

use serde_json::Value;

use crate::support;
use crate::support::{tiny_with, tpsbench};

#[test]
fn gpu_axes_on_a_cpu_build_run_and_record_everything_on_the_cpu() {
    let (_dir, config) = tiny_with(
        "[sweep]\nn_prompt = 16\nn_gen = 0\nn_threads = 1\nrepetitions = 1\n\
         n_gpu_layers = 99\nsplit_mode = [\"layer\", \"none\"]\nno_kv_offload = [false, true]\n\
         [[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n",
    );
    let v = support::run_json(&config);
    let tests = v["tests"].as_array().unwrap();
    let ids: Vec<&str> = tests.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        vec![
            "tiny/F32/pp16/sm=layer/nkvo=0",
            "tiny/F32/pp16/sm=layer/nkvo=1",
            "tiny/F32/pp16/sm=none/nkvo=0",
            "tiny/F32/pp16/sm=none/nkvo=1",
        ]
    );
    for t in tests {
        assert_eq!(t["status"], "ok", "{t}");
        let p = &t["placement"];
        assert_eq!(p["layers_offloaded"], 0, "{p}");
        assert_eq!(p["layers_total"], 3, "2 layers + output: {p}");
        let devices = p["devices"].as_array().unwrap();
        assert_eq!(devices.len(), 1, "{p}");
        assert_eq!(devices[0]["name"], "CPU");
        assert_eq!(devices[0]["layers"], 3);
        assert!(
            devices[0]["model_bytes"].as_u64().unwrap() > 1_000_000,
            "{p}"
        );
        assert!(devices[0]["kv_bytes"].as_u64().unwrap() > 0, "{p}");
    }
    // Non-default values are recorded under llama-bench's names; defaults are left out.
    assert_eq!(tests[2]["split_mode"], "none");
    assert_eq!(tests[1]["no_kv_offload"], true);
    assert!(tests[0].get("split_mode").is_none() && tests[0].get("no_kv_offload").is_none());
    // Each split_mode value needs its own model load, so the identities differ.
    assert_ne!(tests[0]["identity"], tests[2]["identity"]);
}

#[test]
fn info_json_names_the_llama_cpp_library_this_binary_runs() {
    let out = tpsbench().args(["info", "--json"]).assert().success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let lib = &v["llama_cpp"]["library"];
    if cfg!(feature = "dynamic-link") {
        assert_eq!(lib["linkage"], "dynamic", "{lib}");
        assert!(lib["path"].as_str().unwrap().contains("libllama"), "{lib}");
    } else {
        assert_eq!(
            lib["linkage"], "static",
            "the default build links llama.cpp in: {lib}"
        );
        assert!(lib["path"].as_str().unwrap().ends_with("tpsbench"), "{lib}");
        assert!(lib.get("stamp").is_none());
    }
    let ggml = lib["ggml_version"].as_str().unwrap();
    assert_eq!(ggml.split('.').count(), 3, "ggml version {ggml}");
}

#[test]
fn serving_tests_record_the_placement_of_their_own_context() {
    let (_dir, config) = tiny_with(
        "[sweep]\nn_prompt = 8\nn_gen = 0\nn_threads = 1\nno_kv_offload = true\n\
         [serving]\nmodes = [\"parallel\"]\nn_prompt = 8\nn_gen = 4\nn_parallel = [1, 4]\n\
         repetitions = 1\n\
         [[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n",
    );
    let out = tpsbench()
        .args(["run", "--quiet", "--no-save", "--output", "json"])
        .args(["--filter", "serve-", "--config"])
        .arg(&config)
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let tests = v["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 2, "{tests:?}");
    let kv: Vec<u64> = tests
        .iter()
        .map(|t| {
            assert_eq!(t["status"], "ok", "{t}");
            assert_eq!(t["no_kv_offload"], true);
            let devices = t["placement"]["devices"].as_array().unwrap();
            assert_eq!(devices.len(), 1, "{t}");
            assert_eq!(devices[0]["name"], "CPU");
            devices[0]["kv_bytes"].as_u64().unwrap()
        })
        .collect();
    // One context for the group (n_seq_max 4) serves both tests: the same KV cache, and it
    // is the context's, not a llama-bench test's.
    assert!(kv[0] > 0 && kv[0] == kv[1], "{kv:?}");
}
