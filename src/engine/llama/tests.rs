//! What llama.cpp receives for a test's parameters: the model, context (timed and batched)
//! and thread-pool parameters of a handful of settings, recorded field by field, so that a
//! change in how they are built (the knob hook) is seen to keep every value.

use llama_cpp_sys_2 as sys;

use crate::config::knobs::{KnobValue, PARAMS, knob};
use crate::engine::{BatchParams, LoadParams};
use crate::plan::TestParams;

/// pp512 at llama-bench's defaults with 4 threads, then `changes`.
fn test(changes: &[(&str, KnobValue)]) -> TestParams {
    let mut p = TestParams::default();
    for k in PARAMS {
        k.set(&mut p, &k.default_value());
    }
    p.n_gen = 0;
    p.n_threads = 4;
    for (name, v) in changes {
        knob(name).expect("a parameter of the table").set(&mut p, v);
    }
    p
}

fn context_fields(cp: &sys::llama_context_params) -> String {
    format!(
        "n_ctx {} n_batch {} n_ubatch {} type_k {} type_v {} offload_kqv {} flash_attn_type {} \
         n_threads {} n_threads_batch {} embeddings {} op_offload {} swa_full {}",
        cp.n_ctx,
        cp.n_batch,
        cp.n_ubatch,
        cp.type_k,
        cp.type_v,
        cp.offload_kqv,
        cp.flash_attn_type,
        cp.n_threads,
        cp.n_threads_batch,
        cp.embeddings,
        cp.op_offload,
        cp.swa_full
    )
}

/// One line per path: the model load, the timed context with its thread pool, the batched
/// (serving) context.
fn record(p: &TestParams) -> [String; 3] {
    let (mp, _parts) = super::model::model_params(&LoadParams::of(p)).unwrap();
    let model = format!(
        "model n_gpu_layers {} split_mode {} main_gpu {} no_host {} use_extra_bufts {}",
        mp.n_gpu_layers, mp.split_mode, mp.main_gpu, mp.no_host, mp.use_extra_bufts
    );
    let (cp, tpp) = super::knobs::llama_bench(p).unwrap();
    let timed = format!(
        "timed {} | pool n_threads {} poll {} strict_cpu {} cpus {}",
        context_fields(&cp),
        tpp.n_threads,
        tpp.poll,
        tpp.strict_cpu,
        tpp.cpumask.iter().filter(|&&b| b).count()
    );
    let bp = BatchParams {
        base: p.clone(),
        n_ctx: 1024,
        n_seq_max: 4,
        kv_unified: true,
    };
    let cp = super::batch::context_params(&bp).unwrap();
    let batched = format!(
        "batched {} | n_seq_max {} kv_unified {} n_outputs_max {} n_outputs_max_per_seq {} \
         no_perf {}",
        context_fields(&cp),
        cp.n_seq_max,
        cp.kv_unified,
        cp.n_outputs_max,
        cp.n_outputs_max_per_seq,
        cp.no_perf
    );
    [model, timed, batched]
}

#[test]
fn llama_cpp_receives_the_values_of_every_parameter() {
    use KnobValue::{Bool, Int, Text};
    let t = |s: &str| Text(s.to_string());
    let cases: Vec<(&str, Vec<(&str, KnobValue)>)> = vec![
        ("defaults", vec![]),
        (
            "batches",
            vec![("n_batch", Int(512)), ("n_ubatch", Int(128))],
        ),
        (
            "kv types",
            vec![("type_k", t("q8_0")), ("type_v", t("q4_0"))],
        ),
        ("fa off", vec![("flash_attn", Int(0))]),
        ("fa on", vec![("flash_attn", Int(1))]),
        ("nkvo", vec![("no_kv_offload", Bool(true))]),
        ("threads", vec![("n_threads", Int(3))]),
        (
            "placement",
            vec![
                ("n_gpu_layers", Int(5)),
                ("split_mode", t("row")),
                ("main_gpu", Int(1)),
            ],
        ),
        (
            "map",
            vec![
                ("embeddings", Bool(true)),
                ("no_op_offload", Bool(true)),
                ("cpu_mask", t("0x5")),
                ("cpu_strict", Bool(true)),
                ("no_host", Bool(true)),
                ("repack", Bool(false)),
            ],
        ),
    ];
    let got: Vec<String> = cases
        .iter()
        .flat_map(|(name, changes)| record(&test(changes)).map(|line| format!("{name}: {line}")))
        .collect();
    // ggml types: f16 1, q4_0 2, q8_0 8; llama_split_mode: layer 1, row 2.
    let ctx = |n_ctx: u32, fields: &str| {
        format!("n_ctx {n_ctx} {fields} embeddings false op_offload true swa_full false")
    };
    let timed = |name: &str, fields: &str, pool: &str| {
        format!("{name}: timed {} | pool {pool}", ctx(512, fields))
    };
    let batched = |name: &str, fields: &str| {
        format!(
            "{name}: batched {} | n_seq_max 4 kv_unified true n_outputs_max 0 \
             n_outputs_max_per_seq 1 no_perf false",
            ctx(1024, fields)
        )
    };
    let model = |name: &str, fields: &str| format!("{name}: model {fields}");
    let default_model =
        "n_gpu_layers 99 split_mode 1 main_gpu 0 no_host false use_extra_bufts true";
    let fields = |b: &str, kv: &str, offload: bool, fa: i32, threads: u32| {
        format!(
            "{b} {kv} offload_kqv {offload} flash_attn_type {fa} n_threads {threads} \
             n_threads_batch {threads}"
        )
    };
    let default_pool = "n_threads 4 poll 50 strict_cpu false cpus 0";
    let batches = "n_batch 2048 n_ubatch 512";
    let f16 = "type_k 1 type_v 1";
    let mut want = Vec::new();
    let mut plain = |name: &str, f: String, pool: &str, m: &str| {
        want.push(model(name, m));
        want.push(timed(name, &f, pool));
        want.push(batched(name, &f));
    };
    plain(
        "defaults",
        fields(batches, f16, true, -1, 4),
        default_pool,
        default_model,
    );
    plain(
        "batches",
        fields("n_batch 512 n_ubatch 128", f16, true, -1, 4),
        default_pool,
        default_model,
    );
    plain(
        "kv types",
        fields(batches, "type_k 8 type_v 2", true, -1, 4),
        default_pool,
        default_model,
    );
    plain(
        "fa off",
        fields(batches, f16, true, 0, 4),
        default_pool,
        default_model,
    );
    plain(
        "fa on",
        fields(batches, f16, true, 1, 4),
        default_pool,
        default_model,
    );
    plain(
        "nkvo",
        fields(batches, f16, false, -1, 4),
        default_pool,
        default_model,
    );
    plain(
        "threads",
        fields(batches, f16, true, -1, 3),
        "n_threads 3 poll 50 strict_cpu false cpus 0",
        default_model,
    );
    plain(
        "placement",
        fields(batches, f16, true, -1, 4),
        default_pool,
        "n_gpu_layers 5 split_mode 2 main_gpu 1 no_host false use_extra_bufts true",
    );
    let f = fields(batches, f16, true, -1, 4);
    let f = format!("{f} embeddings true op_offload false swa_full false");
    let m = "n_gpu_layers 99 split_mode 1 main_gpu 0 no_host true use_extra_bufts false";
    want.push(model("map", m));
    want.push(format!(
        "map: timed n_ctx 512 {f} | pool n_threads 4 poll 50 strict_cpu true cpus 2"
    ));
    want.push(format!(
        "map: batched n_ctx 1024 {f} | n_seq_max 4 kv_unified true n_outputs_max 0 \
         n_outputs_max_per_seq 1 no_perf false"
    ));
    assert_eq!(got, want);
}
