//! A real offloading backend: the Vulkan build of tpsbench (scripts/setup-vulkan) on Mesa's
//! software Vulkan device, llvmpipe. llama.cpp offloads layers, KV cache and experts to it
//! exactly as to a GPU, so each test asserts the placement llama.cpp reported, with bytes per
//! device, against what its sweep asked.
//!
//! TPSBENCH_VULKAN names the wrapper scripts/setup-vulkan prints (scripts/test exports it).
//! Without it the tests print "skipped: no Vulkan build" and pass, unless
//! TPSBENCH_REQUIRE_VULKAN is set (CI): then they fail.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support;
use crate::support::tiny_with;

/// The Vulkan tpsbench, or `None` after printing why the test is skipped (panics when
/// required).
pub(crate) fn vulkan_or_skip() -> Option<PathBuf> {
    match std::env::var_os("TPSBENCH_VULKAN") {
        Some(p) => {
            let p = PathBuf::from(p);
            assert!(p.is_file(), "TPSBENCH_VULKAN={} is not a file", p.display());
            Some(p)
        }
        None if std::env::var_os("TPSBENCH_REQUIRE_VULKAN").is_some() => panic!(
            "TPSBENCH_REQUIRE_VULKAN is set but TPSBENCH_VULKAN is not (run scripts/setup-vulkan \
             and export TPSBENCH_VULKAN=<the path it prints>)"
        ),
        None => {
            eprintln!(
                "skipped: no Vulkan build (TPSBENCH_VULKAN is not set; scripts/test sets it from \
                 scripts/setup-vulkan; set TPSBENCH_REQUIRE_VULKAN=1 to make this fail)"
            );
            None
        }
    }
}

/// `run --output json` of `config` with the Vulkan build; asserts success.
fn run_vulkan(bin: &Path, config: &Path) -> Value {
    let (out, v) = support::run_json_of(bin, config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    v
}

fn tests_of(v: &Value) -> &Vec<Value> {
    v["tests"].as_array().unwrap()
}

/// The test whose id has the segment `part`, e.g. `ngl=2`.
fn test<'a>(v: &'a Value, part: &str) -> &'a Value {
    tests_of(v)
        .iter()
        .find(|t| t["id"].as_str().unwrap().split('/').any(|s| s == part))
        .unwrap_or_else(|| panic!("no test {part} in {v}"))
}

/// `(layers, model_bytes, kv_bytes, compute_bytes)` of `device` in a test's placement;
/// zeros when it holds nothing.
fn on(t: &Value, device: &str) -> (u64, u64, u64, u64) {
    let devices = t["placement"]["devices"].as_array().unwrap();
    match devices.iter().find(|d| d["name"] == device) {
        Some(d) => (
            d["layers"].as_u64().unwrap(),
            d["model_bytes"].as_u64().unwrap(),
            d["kv_bytes"].as_u64().unwrap(),
            d["compute_bytes"].as_u64().unwrap(),
        ),
        None => (0, 0, 0, 0),
    }
}

fn offloaded(t: &Value) -> (u64, u64) {
    let p = &t["placement"];
    (
        p["layers_offloaded"].as_u64().unwrap(),
        p["layers_total"].as_u64().unwrap(),
    )
}

/// llama.cpp prints buffer sizes in MiB with two decimals: bytes read back are within this.
const HALF_CENTI_MIB: u64 = 5243;

const SWEEP: &str = "n_prompt = 8\nn_gen = 0\nn_threads = 2\nrepetitions = 1\nwarmup = 0\n";

#[test]
fn vulkan_partial_n_gpu_layers_splits_layers_weights_and_kv_cache_between_vulkan0_and_cpu() {
    let Some(bin) = vulkan_or_skip() else { return };
    let (_dir, config) = tiny_with(&format!(
        "[sweep]\n{SWEEP}n_gpu_layers = [0, 1, 2, 99]\n\
         [[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n"
    ));
    let v = run_vulkan(&bin, &config);
    let devices = v["run"]["devices"].as_array().unwrap();
    assert!(
        devices
            .iter()
            .any(|d| d["name"] == "Vulkan0"
                && d["description"].as_str().unwrap().contains("llvmpipe")),
        "llvmpipe is Vulkan0: {devices:?}"
    );
    for t in tests_of(&v) {
        assert_eq!(t["status"], "ok", "{t}");
    }
    // The tiny model: 2 repeating layers + the output layer. llama.cpp offloads the output
    // layer first, then the repeating layers from the last.
    let ngl0 = test(&v, "ngl=0");
    let ngl1 = test(&v, "ngl=1");
    let ngl2 = test(&v, "ngl=2");
    let all = test(&v, "ngl=99");
    assert_eq!(offloaded(ngl0), (0, 3));
    assert_eq!(offloaded(ngl1), (1, 3));
    assert_eq!(offloaded(ngl2), (2, 3));
    assert_eq!(offloaded(all), (3, 3));
    let (l0, w0, kv0, _) = on(ngl0, "CPU");
    assert_eq!((l0, on(ngl0, "Vulkan0").0), (3, 0));
    assert!(w0 > 0 && kv0 > 0);
    assert_eq!(
        on(ngl0, "Vulkan0").2,
        0,
        "no layer offloaded, no KV on Vulkan0"
    );

    // n_gpu_layers 1: only the output layer is offloaded; the KV cache (per repeating layer)
    // stays on the CPU.
    let (cpu_l, _, cpu_kv, _) = on(ngl1, "CPU");
    let (gpu_l, gpu_w, gpu_kv, _) = on(ngl1, "Vulkan0");
    assert_eq!((cpu_l, gpu_l), (2, 1));
    assert!(
        gpu_w > 0,
        "the output layer's weights are on Vulkan0: {ngl1}"
    );
    assert_eq!((cpu_kv, gpu_kv), (kv0, 0));

    // n_gpu_layers 2: output + layer 1 on Vulkan0, layer 0 on the CPU; the KV cache splits
    // one layer each, so each device holds exactly half of the whole cache.
    let (cpu_l, _, cpu_kv, _) = on(ngl2, "CPU");
    let (gpu_l, gpu_w2, gpu_kv, gpu_compute) = on(ngl2, "Vulkan0");
    assert_eq!((cpu_l, gpu_l), (1, 2));
    // (llama.cpp prints MiB with two decimals: 0.125 MiB reads 0.12.)
    assert_eq!(cpu_kv, gpu_kv, "{ngl2}");
    assert!(cpu_kv.abs_diff(kv0 / 2) <= HALF_CENTI_MIB, "{ngl2}");
    assert!(
        gpu_w2 > gpu_w,
        "a repeating layer's weights joined the output's: {ngl2}"
    );
    assert!(gpu_compute > 0, "Vulkan0 computes: {ngl2}");

    // All offloaded: every layer and the whole KV cache on Vulkan0.
    let (cpu_l, _, cpu_kv, _) = on(all, "CPU");
    let (gpu_l, gpu_w3, gpu_kv, _) = on(all, "Vulkan0");
    assert_eq!((cpu_l, gpu_l, cpu_kv, gpu_kv), (0, 3, 0, kv0), "{all}");
    assert!(gpu_w3 > gpu_w2, "{all}");
    for t in tests_of(&v) {
        assert!(
            t["placement"].get("mismatch").is_none(),
            "placement as asked, nothing flagged: {t}"
        );
    }
}

#[test]
fn vulkan_no_kv_offload_keeps_the_kv_cache_on_the_cpu_with_every_layer_on_vulkan0() {
    let Some(bin) = vulkan_or_skip() else { return };
    let (_dir, config) = tiny_with(&format!(
        "[sweep]\n{SWEEP}n_gpu_layers = 99\nno_kv_offload = [false, true]\n\
         [[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n"
    ));
    let v = run_vulkan(&bin, &config);
    let on_gpu = test(&v, "nkvo=0");
    let on_cpu = test(&v, "nkvo=1");
    assert_eq!(offloaded(on_gpu), (3, 3));
    assert_eq!(offloaded(on_cpu), (3, 3));
    let kv = on(on_gpu, "Vulkan0").2;
    assert!(kv > 0, "{on_gpu}");
    assert_eq!(on(on_gpu, "CPU").2, 0, "{on_gpu}");
    // no_kv_offload: the same bytes of KV cache, all in host memory; the layers stay put.
    assert_eq!(on(on_cpu, "Vulkan0").2, 0, "{on_cpu}");
    assert_eq!(on(on_cpu, "CPU").2, kv, "{on_cpu}");
    assert_eq!(on(on_cpu, "Vulkan0").0, 3);
    assert_eq!(
        on(on_cpu, "Vulkan0").1,
        on(on_gpu, "Vulkan0").1,
        "same weights on Vulkan0"
    );
}

/// `(layer, device, bytes)` of a test's expert placement.
fn experts(t: &Value) -> Vec<(u64, String, u64)> {
    t["placement"]["experts"]
        .as_array()
        .unwrap_or_else(|| panic!("no experts in {t}"))
        .iter()
        .map(|e| {
            (
                e["layer"].as_u64().unwrap(),
                e["device"].as_str().unwrap().to_string(),
                e["bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn expert_bytes(t: &Value, device: &str) -> u64 {
    let devices = t["placement"]["devices"].as_array().unwrap();
    devices
        .iter()
        .find(|d| d["name"] == device)
        .and_then(|d| d.get("expert_bytes"))
        .map_or(0, |b| b.as_u64().unwrap())
}

const TINY_MOE: &str =
    "[[model]]\nname = \"moe\"\npath = \"tiny-moe.gguf\"\nsynth = \"tiny-moe\"\n";

#[test]
fn vulkan_n_cpu_moe_keeps_the_experts_of_the_first_n_layers_on_the_cpu_and_the_rest_on_vulkan0() {
    let Some(bin) = vulkan_or_skip() else { return };
    let (_dir, config) = tiny_with(&format!(
        "[sweep]\n{SWEEP}n_gpu_layers = 99\nn_cpu_moe = [0, 1, 2, 4]\n{TINY_MOE}"
    ));
    let v = run_vulkan(&bin, &config);
    // The tiny MoE: 4 layers of 8 experts, each layer's experts the same size.
    let none = test(&v, "ncmoe=0");
    let per_layer = experts(none)[0].2;
    assert!(per_layer > 0);
    let mut vulkan_weights = Vec::new();
    for n in [0u64, 1, 2, 4] {
        let t = test(&v, &format!("ncmoe={n}"));
        assert_eq!(t["status"], "ok", "{t}");
        assert_eq!(offloaded(t), (5, 5), "every layer is on Vulkan0: {t}");
        let want: Vec<(u64, String, u64)> = (0..4)
            .map(|il| {
                let dev = if il < n { "CPU" } else { "Vulkan0" };
                (il, dev.to_string(), per_layer)
            })
            .collect();
        assert_eq!(experts(t), want, "n_cpu_moe = {n}");
        assert_eq!(expert_bytes(t, "CPU"), n * per_layer, "n_cpu_moe = {n}");
        assert_eq!(
            expert_bytes(t, "Vulkan0"),
            (4 - n) * per_layer,
            "n_cpu_moe = {n}"
        );
        // llama.cpp logged one override per expert tensor moved (gate, up, down).
        let overrides = t["placement"]
            .get("overrides")
            .map_or(0, |o| o.as_array().unwrap().len());
        assert_eq!(overrides as u64, 3 * n, "{t}");
        // The KV cache stays with the layers: all on Vulkan0.
        assert_eq!(on(t, "CPU").2, 0, "{t}");
        assert!(t["placement"].get("mismatch").is_none(), "as asked: {t}");
        vulkan_weights.push(on(t, "Vulkan0").1);
    }
    // Vulkan0's model buffer shrinks by about one layer's experts per layer moved (llama.cpp
    // logs MiB with two decimals: the difference of two is within 0.01 MiB).
    for (i, n) in [(1, 1u64), (2, 2), (3, 4)] {
        let moved = vulkan_weights[0] - vulkan_weights[i];
        let want = n * per_layer;
        assert!(
            moved.abs_diff(want) <= 2 * HALF_CENTI_MIB,
            "n_cpu_moe = {n}: Vulkan0 lost {moved} bytes, the experts are {want}"
        );
    }
}

#[test]
fn vulkan_tensor_buft_overrides_move_the_named_experts_to_the_cpu() {
    let Some(bin) = vulkan_or_skip() else { return };
    let (_dir, config) = tiny_with(&format!(
        "[sweep]\n{SWEEP}n_gpu_layers = 99\n\
         tensor_buft_overrides = 'blk\\.[13]\\.ffn_.*_exps=CPU'\n{TINY_MOE}"
    ));
    let v = run_vulkan(&bin, &config);
    let t = &tests_of(&v)[0];
    assert_eq!(t["status"], "ok", "{t}");
    let got: Vec<(u64, String)> = experts(t).into_iter().map(|(l, d, _)| (l, d)).collect();
    let want: Vec<(u64, String)> = [(0, "Vulkan0"), (1, "CPU"), (2, "Vulkan0"), (3, "CPU")]
        .into_iter()
        .map(|(l, d)| (l, d.to_string()))
        .collect();
    assert_eq!(got, want, "{t}");
    assert_eq!(expert_bytes(t, "CPU"), expert_bytes(t, "Vulkan0"), "{t}");
    assert!(t["placement"].get("mismatch").is_none(), "{t}");
}

#[test]
fn vulkan_devices_none_keeps_everything_on_the_cpu_and_vulkan0_offloads() {
    let Some(bin) = vulkan_or_skip() else { return };
    let (_dir, config) = tiny_with(&format!(
        "[sweep]\n{SWEEP}n_gpu_layers = 99\ndevices = [\"auto\", \"Vulkan0\", \"none\"]\n\
         [[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n"
    ));
    let v = run_vulkan(&bin, &config);
    for id in ["dev=auto", "dev=Vulkan0"] {
        let t = test(&v, id);
        assert_eq!(offloaded(t), (3, 3), "{t}");
        assert_eq!(on(t, "Vulkan0").0, 3);
        assert!(on(t, "Vulkan0").2 > 0, "KV on Vulkan0: {t}");
    }
    let t = test(&v, "dev=none");
    assert_eq!(offloaded(t), (0, 3), "{t}");
    let devices = t["placement"]["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 1, "no Vulkan0 buffer at all: {t}");
    let (layers, weights, kv, _) = on(t, "CPU");
    assert_eq!(layers, 3);
    // The same KV cache, now on the CPU; the weights all in host memory.
    assert_eq!(kv, on(test(&v, "dev=auto"), "Vulkan0").2);
    assert!(weights > on(test(&v, "dev=auto"), "Vulkan0").1, "{t}");
}

#[test]
fn vulkan_fit_target_runs_llama_cpps_fit_and_the_record_says_what_it_chose() {
    let Some(bin) = vulkan_or_skip() else { return };
    // n_gpu_layers = 0 asks for nothing offloaded; with fit_target, llama.cpp's fit starts
    // from its default (every layer) and keeps what fits, as llama-bench's -fitt does.
    let (_dir, config) = tiny_with(&format!(
        "[sweep]\n{SWEEP}n_gpu_layers = 0\nfit_target = [1024, 1073741824]\n{TINY_MOE}"
    ));
    let (_, v) = support::run_json_of(&bin, &config);
    let tests = tests_of(&v);
    let fits = |t: &Value| t["fit_target"].as_u64();
    // 1 GiB free on llvmpipe (its memory is the host's): the tiny model fits whole.
    let t = tests.iter().find(|t| fits(t) == Some(1024)).unwrap();
    assert_eq!(t["status"], "ok", "{t}");
    assert!(t.get("not_honoured").is_none(), "{t}");
    let fit = &t["placement"]["fit"];
    assert_eq!(fit["target_mib"], 1024, "{t}");
    assert_eq!(fit["n_gpu_layers"], -1, "{t}");
    assert_eq!(offloaded(t), (5, 5), "{t}");
    assert_eq!(expert_bytes(t, "CPU"), 0, "{t}");
    assert!(expert_bytes(t, "Vulkan0") > 0, "{t}");
    assert!(t["placement"].get("mismatch").is_none(), "{t}");
    // 1 PiB free on Vulkan0: no offload meets it, and fit moves everything to host memory
    // (n_gpu_layers 0): the layers, the experts and the KV cache on the CPU, nothing but an
    // empty compute buffer on Vulkan0. (A target host memory cannot meet either fails the
    // test: tests/moe_knobs.rs.)
    let t = tests.iter().find(|t| fits(t) == Some(1073741824)).unwrap();
    assert_eq!(t["status"], "ok", "{t}");
    assert_eq!(t["placement"]["fit"]["n_gpu_layers"], 0, "{t}");
    assert_eq!(offloaded(t), (0, 5), "{t}");
    let (layers, weights, kv, _) = on(t, "CPU");
    assert!(layers == 5 && weights > 0 && kv > 0, "{t}");
    assert_eq!(
        expert_bytes(t, "CPU"),
        expert_bytes(
            tests.iter().find(|t| fits(t) == Some(1024)).unwrap(),
            "Vulkan0"
        ),
        "{t}"
    );
    assert_eq!(on(t, "Vulkan0").1, 0, "no weights on Vulkan0: {t}");
}
