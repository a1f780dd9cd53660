use super::*;

fn kv_devices(p: &Placement) -> Vec<&str> {
    let kv = p.devices.iter().filter(|d| d.kv_bytes > 0);
    kv.map(|d| d.name.as_str()).collect()
}

// Captured from llama.cpp (this repository's vendored copy, CPU build) loading the tiny
// synthetic model and creating a tg4 context, with the tensor-by-tensor lines left out.
const CPU_TINY: &str = include_str!("../../../tests/fixtures/placement/cpu-tiny.log");
// Built from llama.cpp's format strings (llama-model.cpp, llama-kv-cache.cpp,
// llama-context.cpp) for a 32-layer 8B llama on H200s: no GPU in this project's CI.
const CUDA_FULL: &str = include_str!("../../../tests/fixtures/placement/cuda-8b-full.log");
const CUDA_NGL10_NKVO: &str =
    include_str!("../../../tests/fixtures/placement/cuda-8b-ngl10-nkvo.log");
const CUDA_2GPU: &str = include_str!("../../../tests/fixtures/placement/cuda-2gpu-layer.log");
// Captured from a real GPU backend: tpsbench built with --features vulkan (Vulkan headers
// 1.4.309) on Mesa's llvmpipe software device, SmolLM2-135M Q4_1 at n_gpu_layers 10.
const VULKAN_NGL10: &str =
    include_str!("../../../tests/fixtures/placement/vulkan-llvmpipe-ngl10.log");

// Captured from the Vulkan build (scripts/setup-vulkan) on llvmpipe: the tiny MoE preset
// (qwen3moe, 4 layers of 8 experts, Q8_0) at n_gpu_layers 99 and n_cpu_moe 2, the lines
// relevant_lines keeps.
const VULKAN_MOE_NCMOE2: &str =
    include_str!("../../../tests/fixtures/placement/vulkan-llvmpipe-moe-ncmoe2.log");

const MIB: u64 = 1 << 20;

fn dev<'a>(p: &'a Placement, name: &str) -> &'a DevicePlacement {
    p.devices
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("no device {name} in {:?}", p.devices))
}

#[test]
fn cpu_build_puts_every_layer_and_the_kv_cache_on_the_cpu() {
    let p = parse(CPU_TINY).expect("placement found");
    assert_eq!(
        (p.layers_offloaded, p.layers_total),
        (0, 3),
        "2 layers + output"
    );
    assert_eq!(p.devices.len(), 1);
    let cpu = dev(&p, "CPU");
    assert_eq!(cpu.layers, 3);
    assert_eq!(cpu.model_bytes, (5.24 * MIB as f64).round() as u64);
    assert_eq!(cpu.kv_bytes, MIB / 4);
    assert_eq!(cpu.compute_bytes, (0.05 * MIB as f64).round() as u64);
    assert_eq!(kv_devices(&p), vec!["CPU"]);
    let names: Vec<(&str, &str)> = p
        .buffers
        .iter()
        .map(|b| (b.kind.as_str(), b.name.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("model", "CPU_Mapped"),
            ("output", "CPU"),
            ("kv", "CPU"),
            ("compute", "CPU")
        ]
    );
}

#[test]
fn full_cuda_offload_puts_layers_and_kv_on_the_gpu_and_embeddings_on_the_host() {
    let p = parse(CUDA_FULL).unwrap();
    assert_eq!((p.layers_offloaded, p.layers_total), (33, 33));
    let gpu = dev(&p, "CUDA0");
    assert_eq!(gpu.layers, 33);
    assert_eq!(gpu.model_bytes, (4403.49 * MIB as f64).round() as u64);
    assert_eq!(gpu.kv_bytes, 80 * MIB);
    assert_eq!(gpu.compute_bytes, (258.5 * MIB as f64).round() as u64);
    // The token embeddings stay in host memory (CPU_Mapped), as do the CUDA_Host buffers.
    let cpu = dev(&p, "CPU");
    assert_eq!(cpu.layers, 0);
    assert_eq!(cpu.model_bytes, (281.81 * MIB as f64).round() as u64);
    assert_eq!(cpu.kv_bytes, 0);
    assert_eq!(cpu.compute_bytes, (9.01 * MIB as f64).round() as u64);
    assert_eq!(kv_devices(&p), vec!["CUDA0"]);
}

#[test]
fn partial_offload_with_no_kv_offload_keeps_the_kv_cache_on_the_host() {
    let p = parse(CUDA_NGL10_NKVO).unwrap();
    assert_eq!((p.layers_offloaded, p.layers_total), (10, 33));
    assert_eq!(dev(&p, "CPU").layers, 23);
    assert_eq!(dev(&p, "CUDA0").layers, 10);
    assert_eq!(kv_devices(&p), vec!["CPU"]);
    assert_eq!(dev(&p, "CUDA0").kv_bytes, 0);
}

#[test]
fn layer_split_over_two_gpus_is_reported_per_device() {
    let p = parse(CUDA_2GPU).unwrap();
    assert_eq!((p.layers_offloaded, p.layers_total), (33, 33));
    assert_eq!(dev(&p, "CUDA0").layers + dev(&p, "CUDA1").layers, 33);
    assert!(dev(&p, "CUDA0").layers > 0 && dev(&p, "CUDA1").layers > 0);
    assert_eq!(kv_devices(&p), vec!["CUDA0", "CUDA1"]);
    assert_eq!(dev(&p, "CUDA1").kv_bytes, 40 * MIB);
}

#[test]
fn offloaded_line_is_the_fallback_when_layer_lines_are_missing() {
    let text = "load_tensors: offloaded 12/29 layers to GPU\n\
                load_tensors:        CUDA0 model buffer size =   100.00 MiB\n";
    let p = parse(text).unwrap();
    assert_eq!((p.layers_offloaded, p.layers_total), (12, 29));
    assert_eq!(dev(&p, "CUDA0").model_bytes, 100 * MIB);
}

#[test]
fn a_repeated_reservation_replaces_compute_buffers_but_kv_buffers_add_up() {
    let text = "sched_reserve:      CUDA0 compute buffer size =   100.00 MiB\n\
                sched_reserve:      CUDA0 compute buffer size =   300.00 MiB\n\
                llama_kv_cache:      CUDA0 KV buffer size =    10.00 MiB\n\
                llama_kv_cache:      CUDA0 KV buffer size =     6.00 MiB\n";
    let p = parse(text).unwrap();
    assert_eq!(dev(&p, "CUDA0").compute_bytes, 300 * MIB);
    assert_eq!(
        dev(&p, "CUDA0").kv_bytes,
        16 * MIB,
        "e.g. an SWA cache beside the base one"
    );
}

#[test]
fn text_without_placement_lines_gives_none() {
    assert_eq!(parse(""), None);
    assert_eq!(parse("llama_context: n_ctx = 512\nsome other line\n"), None);
    // Lookalikes that must not count.
    assert_eq!(parse("llama_kv_cache: layer   0: dev = CPU\n"), None);
    assert_eq!(
        parse("load_tensors: offloading 30 repeating layers to GPU\n"),
        None
    );
    assert_eq!(
        parse("~llama_context: CPU compute buffer size is 0.0451 MiB, matches expectation\n"),
        None
    );
    assert_eq!(parse("load_tensors: model buffer size = 1.00 MiB\n"), None);
}

#[test]
fn host_buffer_types_belong_to_the_cpu() {
    for host in [
        "CPU",
        "CPU_Mapped",
        "CPU_REPACK",
        "CUDA_Host",
        "Vulkan_Host",
    ] {
        assert_eq!(device_of_buffer(host), "CPU", "{host}");
    }
    for gpu in ["CUDA0", "CUDA1", "Vulkan0", "CUDA_Split", "MTL0"] {
        assert_eq!(device_of_buffer(gpu), gpu);
    }
}

#[test]
fn keeping_only_the_relevant_lines_changes_nothing_parsed() {
    for log in [CPU_TINY, CUDA_FULL, CUDA_NGL10_NKVO, CUDA_2GPU] {
        let kept = relevant_lines(log);
        assert!(kept.len() < log.len());
        assert_eq!(parse(&kept), parse(log));
    }
    assert_eq!(relevant_lines("llama_context: n_ctx = 512\n"), "");
}

#[test]
fn a_real_vulkan_partial_offload_splits_layers_and_kv_cache_as_llama_cpp_logged() {
    let p = parse(VULKAN_NGL10).unwrap();
    // llama.cpp offloads the output layer first, then the last 9 repeating layers.
    assert_eq!((p.layers_offloaded, p.layers_total), (10, 31));
    let gpu = dev(&p, "Vulkan0");
    let cpu = dev(&p, "CPU");
    assert_eq!((gpu.layers, cpu.layers), (10, 21));
    assert_eq!(gpu.model_bytes, (47.71 * MIB as f64).round() as u64);
    // The KV cache follows the layers: 21 of 30 layers' cells on the host.
    assert_eq!(cpu.kv_bytes, (3.94 * MIB as f64).round() as u64);
    assert_eq!(gpu.kv_bytes, (1.69 * MIB as f64).round() as u64);
    // llama.cpp reports the mmap'd range for CPU_Mapped: here the whole file.
    assert_eq!(cpu.model_bytes, (92.10 * MIB as f64).round() as u64);
    assert_eq!(kv_devices(&p), vec!["CPU", "Vulkan0"]);
}

#[test]
fn the_kv_cache_cells_and_bytes_are_llama_cpps_own() {
    // The tiny model's tg4 context: n_ctx 4 padded to 256 cells, 0.25 MiB of f16 K and V.
    let p = parse(CPU_TINY).unwrap();
    assert_eq!(p.kv_cells, Some(256));
    assert_eq!(p.kv_bytes(), Some(MIB / 4));
    assert_eq!(p.kv_bytes_per_cell(), Some(1024.0));
    // A 32-layer 8B llama: 8 KV heads of 128, f16 K and V = 32 · 1024 · 4 bytes per cell.
    let p = parse(CUDA_FULL).unwrap();
    assert_eq!(p.kv_cells, Some(640));
    assert_eq!(p.kv_bytes_per_cell(), Some(32.0 * 1024.0 * 4.0));
    // No cells line: the bytes are known, the bytes per cell are not.
    let p = parse(VULKAN_NGL10).unwrap();
    assert_eq!(p.kv_cells, None);
    assert!(p.kv_bytes().is_some() && p.kv_bytes_per_cell().is_none());
}

#[test]
fn two_kv_caches_of_different_sizes_have_no_single_cell_count() {
    let text = "llama_kv_cache:        CPU KV buffer size =    10.00 MiB\n\
                llama_kv_cache: size =   10.00 MiB (  4096 cells,  20 layers,  1/1 seqs)\n\
                llama_kv_cache:        CPU KV buffer size =     2.00 MiB\n\
                llama_kv_cache: size =    2.00 MiB (  1024 cells,   6 layers,  1/1 seqs)\n";
    let p = parse(text).unwrap();
    assert_eq!(p.kv_cells, None);
    assert_eq!(p.kv_bytes(), Some(12 * MIB));
    assert_eq!(p.kv_bytes_per_cell(), None);
}

// Built from llama.cpp's format strings (llama-model.cpp's layer lines, llama-model-loader's
// override line) for a 4-layer MoE at n_gpu_layers 99 with n_cpu_moe 2: the experts of
// layers 0-1 overridden to the CPU, those of layers 2-3 with their layers on Vulkan0.
const MOE_NCMOE2: &str = "\
load_tensors: layer   0 assigned to device Vulkan0, is_swa = 0
load_tensors: layer   1 assigned to device Vulkan0, is_swa = 0
load_tensors: layer   2 assigned to device Vulkan0, is_swa = 0
load_tensors: layer   3 assigned to device Vulkan0, is_swa = 0
load_tensors: layer   4 assigned to device Vulkan0, is_swa = 0
tensor blk.0.ffn_gate_exps.weight (0 MiB f32) buffer type overridden to CPU
tensor blk.0.ffn_down_exps.weight (0 MiB f32) buffer type overridden to CPU
tensor blk.0.ffn_up_exps.weight (0 MiB f32) buffer type overridden to CPU
tensor blk.1.ffn_gate_exps.weight (0 MiB f32) buffer type overridden to CPU_REPACK
tensor blk.1.ffn_down_exps.weight (0 MiB f32) buffer type overridden to CPU_REPACK
tensor blk.1.ffn_up_exps.weight (0 MiB f32) buffer type overridden to CPU_REPACK
load_tensors: offloaded 5/5 layers to GPU
load_tensors:   CPU_Mapped model buffer size =     1.00 MiB
load_tensors:      Vulkan0 model buffer size =     2.00 MiB
";

/// The expert tensors of a 4-layer MoE: 3 per layer, of 1000, 2000 and 3000 bytes, plus a
/// dense tensor that must be ignored.
fn moe_tensors() -> Vec<(String, u64)> {
    let mut v = vec![("blk.0.attn_q.weight".to_string(), 99_999)];
    for il in 0..4 {
        for (kind, bytes) in [("gate", 1000), ("down", 2000), ("up", 3000)] {
            v.push((format!("blk.{il}.ffn_{kind}_exps.weight"), bytes));
        }
    }
    v
}

#[test]
fn expert_tensors_are_recognized_by_name_as_llama_cpp_matches_them() {
    assert_eq!(expert_layer("blk.12.ffn_up_exps.weight"), Some(12));
    assert_eq!(expert_layer("blk.0.ffn_gate_up_exps.weight"), Some(0));
    assert_eq!(expert_layer("blk.3.ffn_down_chexps.weight"), Some(3));
    assert_eq!(expert_layer("blk.3.ffn_down_exps.bias"), Some(3));
    for not in [
        "blk.3.ffn_up.weight",
        "blk.3.ffn_up_shexp.weight",
        "blk.3.ffn_gate_inp.weight",
        "token_embd.weight",
        "blk.x.ffn_up_exps.weight",
        "blk.3.attn_q.weight",
    ] {
        assert_eq!(expert_layer(not), None, "{not}");
    }
}

#[test]
fn experts_follow_their_overrides_and_otherwise_their_layer() {
    let p = parse_with_experts(MOE_NCMOE2, &moe_tensors()).unwrap();
    let per_layer: Vec<(u32, &str, u64, u32)> = p
        .experts
        .iter()
        .map(|e| (e.layer, e.device.as_str(), e.bytes, e.tensors))
        .collect();
    assert_eq!(
        per_layer,
        vec![
            (0, "CPU", 6000, 3),
            (1, "CPU", 6000, 3),
            (2, "Vulkan0", 6000, 3),
            (3, "Vulkan0", 6000, 3)
        ]
    );
    assert_eq!(dev(&p, "CPU").expert_bytes, 12_000);
    assert_eq!(dev(&p, "Vulkan0").expert_bytes, 12_000);
    assert_eq!(p.overrides.len(), 6);
    assert_eq!(p.overrides[3].buffer, "CPU_REPACK");
    // Without a tensor table the devices are known, the expert bytes are not.
    let p = parse(MOE_NCMOE2).unwrap();
    assert!(p.experts.is_empty() && p.devices.iter().all(|d| d.expert_bytes == 0));
    // Kept by relevant_lines.
    assert_eq!(
        parse_with_experts(&relevant_lines(MOE_NCMOE2), &moe_tensors()),
        parse_with_experts(MOE_NCMOE2, &moe_tensors())
    );
}

#[test]
fn override_lines_of_another_shape_are_ignored() {
    for line in [
        "tensor blk.0.ffn_up_exps.weight buffer type overridden to CPU",
        "tensor (0 MiB f32) buffer type overridden to CPU",
        "tensor blk.0.ffn_up_exps.weight (0 MiB f32) buffer type overridden to ",
        "tensor blk.0.ffn_up_exps.weight (0 MiB f32) buffer type overridden to CPU and more",
    ] {
        assert_eq!(parse(line), None, "{line}");
    }
}

fn asked(ngl: i32, nkvo: bool, ncmoe: u32) -> Asked {
    Asked {
        n_gpu_layers: ngl,
        no_kv_offload: nkvo,
        n_cpu_moe: ncmoe,
        ..Asked::default()
    }
}

#[test]
fn a_placement_as_asked_has_no_mismatch() {
    assert!(mismatches(&asked(10, true, 0), &parse(CUDA_NGL10_NKVO).unwrap()).is_empty());
    assert!(mismatches(&asked(99, false, 0), &parse(CUDA_FULL).unwrap()).is_empty());
    assert!(mismatches(&asked(10, false, 0), &parse(VULKAN_NGL10).unwrap()).is_empty());
    let moe = parse_with_experts(MOE_NCMOE2, &moe_tensors()).unwrap();
    assert!(mismatches(&asked(99, false, 2), &moe).is_empty());
    // A CPU build cannot offload: the run warns once, the tests are not flagged.
    assert!(mismatches(&asked(99, false, 0), &parse(CPU_TINY).unwrap()).is_empty());
}

#[test]
fn experts_of_the_first_n_cpu_moe_layers_off_the_cpu_are_flagged() {
    let moe = parse_with_experts(MOE_NCMOE2, &moe_tensors()).unwrap();
    assert_eq!(
        mismatches(&asked(99, false, 4), &moe),
        vec![
            "n_cpu_moe = 4 asks for the experts of layers 0-3 on the CPU; those of layer(s) 2, 3 are not"
        ]
    );
    // Experts moved that were not asked for.
    assert_eq!(
        mismatches(&asked(99, false, 1), &moe),
        vec!["n_cpu_moe = 1, but the experts of layer(s) 1 were moved to the CPU too"]
    );
    // Unless overrides were asked: they may move any tensor.
    let with_ot = Asked {
        tensor_overrides: true,
        ..asked(99, false, 0)
    };
    assert!(mismatches(&with_ot, &moe).is_empty());
}

#[test]
fn layers_and_kv_cache_not_where_asked_are_flagged() {
    let nkvo = parse(CUDA_NGL10_NKVO).unwrap();
    assert_eq!(
        mismatches(&asked(20, true, 0), &nkvo),
        vec!["n_gpu_layers = 20 asks for 20 of 33 layers on a GPU; llama.cpp put 10 there"]
    );
    assert_eq!(
        mismatches(&asked(10, false, 0), &nkvo),
        vec![
            "no_kv_offload = false, but the KV cache of the 9 offloaded repeating layers is on the CPU"
        ]
    );
    assert_eq!(
        mismatches(&asked(-1, true, 0), &parse(CUDA_FULL).unwrap()),
        vec!["no_kv_offload = true, but llama.cpp put KV cache on CUDA0"]
    );
    // llama.cpp's fit picks the layers itself: n_gpu_layers is then no request.
    let fit = Asked {
        fit: true,
        ..asked(20, true, 0)
    };
    assert!(mismatches(&fit, &nkvo).is_empty());
}

/// The tiny MoE's expert tensors as its GGUF lists them: gate, up and down of each layer,
/// 64 × 64 × 8 experts in Q8_0 (34 bytes per 32 values) = 34816 bytes each.
fn tiny_moe_tensors() -> Vec<(String, u64)> {
    let mut v = Vec::new();
    for il in 0..4 {
        for kind in ["gate", "up", "down"] {
            v.push((format!("blk.{il}.ffn_{kind}_exps.weight"), 34_816));
        }
    }
    v
}

#[test]
fn a_real_vulkan_n_cpu_moe_run_puts_the_first_layers_experts_on_the_host() {
    let p = parse_with_experts(VULKAN_MOE_NCMOE2, &tiny_moe_tensors()).unwrap();
    assert_eq!((p.layers_offloaded, p.layers_total), (5, 5));
    // llama.cpp logs the CPU override as Vulkan_Host (pinned host memory for the GPU): the
    // host's, so the CPU's.
    assert_eq!(p.overrides.len(), 6);
    assert!(p.overrides.iter().all(|o| o.buffer == "Vulkan_Host"));
    let per_layer: Vec<(u32, &str, u64)> = p
        .experts
        .iter()
        .map(|e| (e.layer, e.device.as_str(), e.bytes))
        .collect();
    assert_eq!(
        per_layer,
        vec![
            (0, "CPU", 104_448),
            (1, "CPU", 104_448),
            (2, "Vulkan0", 104_448),
            (3, "Vulkan0", 104_448)
        ]
    );
    assert_eq!(dev(&p, "CPU").expert_bytes, 208_896);
    assert_eq!(dev(&p, "Vulkan0").expert_bytes, 208_896);
    // The model buffers as llama.cpp logged them: the moved experts are in host memory.
    assert_eq!(
        dev(&p, "CPU").model_bytes,
        (0.39 * MIB as f64).round() as u64
    );
    assert_eq!(
        dev(&p, "Vulkan0").model_bytes,
        (0.38 * MIB as f64).round() as u64
    );
    assert_eq!(kv_devices(&p), vec!["Vulkan0"]);
    assert!(mismatches(&asked(99, false, 2), &p).is_empty());
    assert_eq!(
        mismatches(&asked(99, false, 3), &p),
        vec![
            "n_cpu_moe = 3 asks for the experts of layers 0-2 on the CPU; those of layer(s) 2 are not"
        ]
    );
    let kept = relevant_lines(VULKAN_MOE_NCMOE2);
    assert_eq!(
        parse_with_experts(&kept, &tiny_moe_tensors()),
        Some(p),
        "the override lines are kept"
    );
}
