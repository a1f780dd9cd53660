use super::*;
use crate::config::knobs::KnobValue;

/// A 4-layer MoE: per layer 100 bytes of attention and 3 expert tensors of 1000; token
/// embeddings 50 (tied: no output.weight), output_norm 10.
fn moe() -> Vec<(String, u64)> {
    let mut v = vec![
        ("token_embd.weight".to_string(), 50),
        ("output_norm.weight".to_string(), 10),
    ];
    for il in 0..4 {
        v.push((format!("blk.{il}.attn_q.weight"), 100));
        for k in ["gate", "up", "down"] {
            v.push((format!("blk.{il}.ffn_{k}_exps.weight"), 1000));
        }
    }
    v
}

fn device(name: &str, kind: DeviceKind, free: u64) -> DeviceInfo {
    DeviceInfo {
        name: name.into(),
        description: String::new(),
        backend: String::new(),
        kind,
        memory_total: free,
        memory_free: free,
    }
}

fn params(ngl: i32, ncmoe: i64) -> TestParams {
    let mut p = crate::plan::expand_axes(&crate::config::Axes::llama_bench_defaults(1))[0].clone();
    p.n_gpu_layers = ngl;
    p.knobs.set("n_cpu_moe", KnobValue::Int(ncmoe));
    p
}

fn shares(p: &TestParams, devices: &[DeviceInfo]) -> Vec<(String, u64, u64)> {
    let t = moe();
    let m = ModelTensors {
        tensors: &t,
        n_layer: 4,
        kv_bytes_per_layer: 7.0,
    };
    estimate(&m, p, devices)
        .unwrap()
        .into_iter()
        .map(|d| (d.name, d.weight_bytes, d.kv_bytes))
        .collect()
}

fn s(n: &str, w: u64, kv: u64) -> (String, u64, u64) {
    (n.to_string(), w, kv)
}

#[test]
fn a_build_without_an_offload_device_keeps_everything_on_the_cpu() {
    let cpu = [device("CPU", DeviceKind::Cpu, 1 << 30)];
    assert_eq!(shares(&params(99, 0), &cpu), vec![s("CPU", 12_460, 28)]);
}

#[test]
fn n_gpu_layers_offloads_the_output_layer_first_then_the_last_layers_with_their_kv() {
    let devs = [
        device("Vulkan0", DeviceKind::Gpu, 1 << 30),
        device("CPU", DeviceKind::Cpu, 1 << 30),
    ];
    // 1: the output layer (its norm, and its copy of the tied embeddings).
    assert_eq!(
        shares(&params(1, 0), &devs),
        vec![s("CPU", 12_450, 28), s("Vulkan0", 60, 0)]
    );
    // 3: output + layers 2 and 3 and their KV cache.
    assert_eq!(
        shares(&params(3, 0), &devs),
        vec![s("CPU", 6_250, 14), s("Vulkan0", 6_260, 14)]
    );
    // All (99 and -1 alike): only the input embeddings stay in host memory.
    let all = vec![s("CPU", 50, 0), s("Vulkan0", 12_460, 28)];
    assert_eq!(shares(&params(99, 0), &devs), all);
    assert_eq!(shares(&params(-1, 0), &devs), all);
    assert_eq!(shares(&params(0, 0), &devs), vec![s("CPU", 12_460, 28)]);
}

#[test]
fn n_cpu_moe_and_overrides_move_experts_to_the_cpu_and_no_kv_offload_the_cache() {
    let devs = [device("Vulkan0", DeviceKind::Gpu, 1 << 30)];
    // The experts of layers 0 and 1 (6000 bytes) on the CPU; their layers stay offloaded.
    assert_eq!(
        shares(&params(99, 2), &devs),
        vec![s("CPU", 6_050, 0), s("Vulkan0", 6_460, 28)]
    );
    let mut p = params(99, 0);
    p.knobs.set(
        "tensor_buft_overrides",
        KnobValue::Text("blk\\.3\\.ffn_.*_exps=CPU".into()),
    );
    p.no_kv_offload = true;
    assert_eq!(
        shares(&p, &devs),
        vec![s("CPU", 3_050, 28), s("Vulkan0", 9_460, 0)]
    );
}

#[test]
fn several_devices_split_the_layers_by_tensor_split_or_free_memory() {
    let devs = [
        device("CUDA0", DeviceKind::Gpu, 3 << 30),
        device("CUDA1", DeviceKind::Gpu, 1 << 30),
        device("CPU", DeviceKind::Cpu, 1 << 30),
    ];
    // 5 layers offloaded, 3:1 by free memory: places 0-3 of 5 (< 0.75) on CUDA0, 4 on CUDA1.
    assert_eq!(
        shares(&params(99, 0), &devs),
        vec![s("CPU", 50, 0), s("CUDA0", 12_400, 28), s("CUDA1", 60, 0)]
    );
    let mut p = params(99, 0);
    p.knobs
        .set("tensor_split", KnobValue::Text("1.00/1.00".into()));
    // 1:1: places 0-2 (< 0.5) on CUDA0, 3-4 on CUDA1.
    assert_eq!(
        shares(&p, &devs),
        vec![s("CPU", 50, 0), s("CUDA0", 9_300, 21), s("CUDA1", 3_160, 7)]
    );
    p.split_mode = crate::config::SplitMode::None;
    p.main_gpu = 1;
    assert_eq!(
        shares(&p, &devs),
        vec![s("CPU", 50, 0), s("CUDA1", 12_460, 28)]
    );
    p.split_mode = crate::config::SplitMode::Row;
    let t = moe();
    let m = ModelTensors {
        tensors: &t,
        n_layer: 4,
        kv_bytes_per_layer: 7.0,
    };
    assert!(
        estimate(&m, &p, &devs)
            .unwrap_err()
            .to_string()
            .contains("row")
    );
}

#[test]
fn devices_none_and_a_named_device_choose_the_offload_devices() {
    let devs = [
        device("Vulkan0", DeviceKind::Gpu, 1 << 30),
        device("CPU", DeviceKind::Cpu, 1 << 30),
    ];
    let mut p = params(99, 0);
    p.knobs.set("devices", KnobValue::Text("none".into()));
    assert_eq!(shares(&p, &devs), vec![s("CPU", 12_460, 28)]);
    p.knobs.set("devices", KnobValue::Text("Vulkan0".into()));
    assert_eq!(
        shares(&p, &devs),
        vec![s("CPU", 50, 0), s("Vulkan0", 12_460, 28)]
    );
    p.knobs.set("devices", KnobValue::Text("CUDA0".into()));
    let t = moe();
    let m = ModelTensors {
        tensors: &t,
        n_layer: 4,
        kv_bytes_per_layer: 7.0,
    };
    assert!(
        estimate(&m, &p, &devs)
            .unwrap_err()
            .to_string()
            .contains("no device CUDA0")
    );
}

#[test]
fn one_device_holds_every_layer_only_when_all_are_offloaded_to_one() {
    let one = [
        device("Vulkan0", DeviceKind::Gpu, 1 << 30),
        device("CPU", DeviceKind::Cpu, 1 << 30),
    ];
    assert_eq!(
        sole_device(&params(99, 2), 4, &one).as_deref(),
        Some("Vulkan0")
    );
    assert_eq!(
        sole_device(&params(-1, 0), 4, &one).as_deref(),
        Some("Vulkan0")
    );
    assert_eq!(
        sole_device(&params(4, 0), 4, &one),
        None,
        "layer 0 on the CPU"
    );
    let two = [
        device("CUDA0", DeviceKind::Gpu, 1 << 30),
        device("CUDA1", DeviceKind::Gpu, 1 << 30),
    ];
    assert_eq!(sole_device(&params(99, 0), 4, &two), None);
    assert_eq!(sole_device(&params(99, 0), 4, &[]), None);
}

#[test]
fn the_kv_cache_holds_the_context_padded_to_256_cells_as_the_pinned_llama_cpp_makes_it() {
    // One sequence: n_ctx rounded up to a multiple of 256.
    assert_eq!(kv_cells(1, 1, false), 256);
    assert_eq!(kv_cells(64, 1, false), 256);
    assert_eq!(kv_cells(256, 1, false), 256);
    assert_eq!(kv_cells(257, 1, false), 512);
    assert_eq!(kv_cells(4096, 1, true), 4096);
    // What llama.cpp logged for the tiny model's tg4 (tests/fixtures/placement/cpu-tiny.log):
    // n_ctx 4, a cache of 256 cells.
    let log = include_str!("../../../../tests/fixtures/placement/cpu-tiny.log");
    let logged = crate::engine::placement::parse(log).unwrap().kv_cells;
    assert_eq!(Some(kv_cells(4, 1, false)), logged);
    // Several sequences, one unified cache: the padded context, shared.
    assert_eq!(kv_cells(300, 3, true), 512);
    // Several sequences, a stream each: 512 / 3 = 170 cells, padded to 256 per stream.
    assert_eq!(kv_cells(300, 3, false), 768);
    assert_eq!(kv_cells(1024, 4, false), 1024);
}
