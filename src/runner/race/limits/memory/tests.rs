use super::*;
use crate::config::knobs::KnobValue;
use crate::gguf::{tiny, writer::write_gguf};
use crate::plan::{Detail, TestKind};

fn gpu() -> DeviceInfo {
    DeviceInfo {
        name: "Vulkan0".into(),
        description: String::new(),
        backend: String::new(),
        kind: crate::engine::DeviceKind::Gpu,
        memory_total: 1 << 30,
        memory_free: 1 << 30,
    }
}

fn candidate(ngl: i32) -> PlannedTest {
    let mut params =
        crate::plan::expand_axes(&crate::config::Axes::llama_bench_defaults(1))[0].clone();
    params.n_gpu_layers = ngl;
    (params.n_prompt, params.n_gen) = (0, 8);
    PlannedTest {
        model: 0,
        id: "tiny/tg8".into(),
        params,
        kind: TestKind::Tg,
        identity: String::new(),
        detail: Detail::Bench,
    }
}

fn at64() -> Context {
    Context::one(64)
}

/// The device limit at `bytes`, no host limit.
fn on_device(bytes: u64) -> Limits {
    Limits {
        host: None,
        devices: vec![("Vulkan0".into(), bytes, String::new())],
        seen: vec![gpu()],
    }
}

#[test]
fn a_draft_on_the_device_counts_beside_its_target_and_one_left_on_the_cpu_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.gguf");
    write_gguf(
        &mut std::fs::File::create(&path).unwrap(),
        &tiny::document(1),
    )
    .unwrap();
    let (c, devices) = (candidate(99), [gpu()]);
    let mut shapes = Shapes::default();
    let cells = kv_cells(64, 1, false);
    let target = held(shapes.of(&path).unwrap(), &c.params, cells, &devices).unwrap();
    let alone = target.share("Vulkan0").unwrap().total();
    assert!(alone > 0);
    let limits = on_device(alone);
    // Candidate `c` under `limits` with the draft's `n_gpu_layers`.
    let with = |limits: &Limits, shapes: &mut Shapes, c: &PlannedTest, n_gpu_layers| {
        let draft = DraftModel {
            path: &path,
            label: "d",
            n_gpu_layers,
        };
        limits.excludes(shapes, &path, "t", c, at64(), Some(&draft))
    };
    assert_eq!(
        limits.excludes(&mut shapes, &path, "t", &c, at64(), None),
        None
    );
    // Every layer of the draft on the device too: twice the target's share.
    let why = with(&limits, &mut shapes, &c, -1)
        .expect("target and draft exceed what the target alone fills");
    assert!(
        why.starts_with(&format!("t: Vulkan0 {} (weights ", size(2 * alone))),
        "{why}"
    );
    assert!(why.contains("; ngl 99; draft d: weights "), "{why}");
    // The draft kept on the CPU (n_gpu_layers 0) adds nothing to the device.
    assert_eq!(with(&limits, &mut shapes, &c, 0), None);
    // On the host, it does: the file twice, beside the KV caches.
    let host = Limits {
        host: Some((target.host.total() + 1, String::new())),
        devices: Vec::new(),
        seen: vec![gpu()],
    };
    let why = with(&host, &mut shapes, &candidate(0), 0).unwrap();
    assert!(why.contains("draft d: weights"), "{why}");
}

#[test]
fn a_draft_is_placed_as_llama_cpp_places_it_not_with_the_targets_overrides() {
    let mut t = candidate(20).params;
    t.type_k = "q8_0".into();
    t.no_kv_offload = true;
    t.knobs.set("n_cpu_moe", KnobValue::Int(4));
    t.knobs.set("devices", KnobValue::Text("Vulkan0".into()));
    let d = DraftModel {
        path: Path::new("d.gguf"),
        label: "d",
        n_gpu_layers: 3,
    }
    .params(&t);
    assert_eq!(d.n_gpu_layers, 3);
    assert_eq!((d.type_k.as_str(), d.type_v.as_str()), ("f16", "f16"));
    assert!(!d.no_kv_offload);
    for name in ["n_cpu_moe", "devices"] {
        let k = crate::config::knobs::knob(name).unwrap();
        assert_eq!(d.knobs.get(name), Some(k.default_value()), "{name}");
    }
    assert_eq!((d.n_threads, d.n_ctx()), (t.n_threads, t.n_ctx()));
}
