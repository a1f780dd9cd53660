use super::*;

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
    assert_eq!(p.kv_devices(), vec!["CPU"]);
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
    assert_eq!(p.kv_devices(), vec!["CUDA0"]);
    assert_eq!(
        p.summary(),
        "33/33 layers offloaded (CUDA0 33); KV on CUDA0"
    );
}

#[test]
fn partial_offload_with_no_kv_offload_keeps_the_kv_cache_on_the_host() {
    let p = parse(CUDA_NGL10_NKVO).unwrap();
    assert_eq!((p.layers_offloaded, p.layers_total), (10, 33));
    assert_eq!(dev(&p, "CPU").layers, 23);
    assert_eq!(dev(&p, "CUDA0").layers, 10);
    assert_eq!(p.kv_devices(), vec!["CPU"]);
    assert_eq!(dev(&p, "CUDA0").kv_bytes, 0);
}

#[test]
fn layer_split_over_two_gpus_is_reported_per_device() {
    let p = parse(CUDA_2GPU).unwrap();
    assert_eq!((p.layers_offloaded, p.layers_total), (33, 33));
    assert_eq!(dev(&p, "CUDA0").layers + dev(&p, "CUDA1").layers, 33);
    assert!(dev(&p, "CUDA0").layers > 0 && dev(&p, "CUDA1").layers > 0);
    assert_eq!(p.kv_devices(), vec!["CUDA0", "CUDA1"]);
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
    assert_eq!(p.kv_devices(), vec!["CPU", "Vulkan0"]);
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
