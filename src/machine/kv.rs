//! The KV cache of a test: llama.cpp's own figure where its log gave one, else computed.

use serde::{Deserialize, Serialize};

use super::roofline::Shape;
use crate::engine::placement::Placement;
use crate::plan::TestParams;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KvCacheSource {
    /// The KV buffer sizes llama.cpp logged when it made the test's context.
    #[serde(rename = "llama.cpp")]
    LlamaCpp,
    /// n_ctx × the model's per-position bytes, when llama.cpp's figure is not known. A lower
    /// bound: llama.cpp pads the context (to 256 cells in the pinned version).
    #[serde(rename = "computed")]
    Computed,
}

/// The KV cache of a test: bytes, their source, and the bytes per cached position the decode
/// roofline uses (llama.cpp's bytes over its cells where both are known).
pub fn kv_cache(
    p: &TestParams,
    shape: Option<&Shape>,
    placement: Option<&Placement>,
) -> (Option<u64>, Option<KvCacheSource>, Option<f64>) {
    let computed = shape.map(|s| s.kv_bytes_per_position(&p.type_k, &p.type_v));
    let per_position = placement
        .and_then(Placement::kv_bytes_per_cell)
        .or(computed);
    match (placement.and_then(Placement::kv_bytes), computed) {
        (Some(b), _) => (Some(b), Some(KvCacheSource::LlamaCpp), per_position),
        (None, Some(pp)) => {
            let bytes = (pp * f64::from(p.n_ctx())) as u64;
            (Some(bytes), Some(KvCacheSource::Computed), per_position)
        }
        (None, None) => (None, None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{Ceilings, Monitor};

    const CPU_TINY: &str = include_str!("../../tests/fixtures/placement/cpu-tiny.log");
    const CUDA_FULL: &str = include_str!("../../tests/fixtures/placement/cuda-8b-full.log");
    const VULKAN_NGL10: &str =
        include_str!("../../tests/fixtures/placement/vulkan-llvmpipe-ngl10.log");

    /// The tiny synthetic model's shape: 2 layers, K and V 128 wide per position.
    fn tiny() -> Shape {
        Shape {
            n_layer: 2,
            n_embd_kv: 128,
            weight_bytes: 5_500_000,
            input_embedding_bytes: 0,
            tied_embeddings: true,
            n_vocab: 0,
            n_params: 1_400_000,
            expert_bytes: 0,
            n_expert: 0,
            n_expert_used: 0,
        }
    }

    fn tg(n_gen: u32) -> TestParams {
        let mut p =
            crate::plan::expand_axes(&crate::config::Axes::llama_bench_defaults(1))[0].clone();
        (p.n_prompt, p.n_gen) = (0, n_gen);
        p
    }

    #[test]
    fn llama_cpps_kv_buffer_beats_the_computed_figure() {
        // tg4 on the tiny model: 4 positions computed (4 KiB), but llama.cpp padded the
        // context to 256 cells and allocated 0.25 MiB.
        let placement = crate::engine::placement::parse(CPU_TINY).unwrap();
        let p = tg(4);
        let (bytes, source, per_position) = kv_cache(&p, Some(&tiny()), Some(&placement));
        assert_eq!(bytes, Some(262_144));
        assert_eq!(source, Some(KvCacheSource::LlamaCpp));
        assert_eq!(per_position, Some(1024.0));
        let (bytes, source, _) = kv_cache(&p, Some(&tiny()), None);
        assert_eq!(
            bytes,
            Some(4 * 1024),
            "the fallback: n_ctx x bytes per position"
        );
        assert_eq!(source, Some(KvCacheSource::Computed));
        assert_eq!(kv_cache(&p, None, None), (None, None, None));
    }

    #[test]
    fn without_a_cell_count_the_roofline_uses_the_computed_bytes_per_position() {
        let placement = crate::engine::placement::parse(VULKAN_NGL10).unwrap();
        let (bytes, source, per_position) = kv_cache(&tg(16), Some(&tiny()), Some(&placement));
        assert_eq!(bytes, placement.kv_bytes());
        assert_eq!(source, Some(KvCacheSource::LlamaCpp));
        assert_eq!(
            per_position,
            Some(tiny().kv_bytes_per_position("f16", "f16"))
        );
    }

    #[test]
    fn the_resources_of_a_decode_test_name_the_kv_source_and_read_its_bytes_per_token() {
        // An 8B llama on a GPU: llama.cpp's 80 MiB over 640 cells is 128 KiB per position.
        let shape = Shape {
            n_layer: 32,
            n_embd_kv: 1024,
            weight_bytes: 4_000_000_000,
            input_embedding_bytes: 0,
            tied_embeddings: true,
            n_vocab: 0,
            n_params: 8_000_000_000,
            expert_bytes: 0,
            n_expert: 0,
            n_expert_used: 0,
        };
        let placement = crate::engine::placement::parse(CUDA_FULL).unwrap();
        let mut m = Monitor::new(
            None,
            Ceilings {
                gpu_build: true,
                device: Some((4800.0, "table: H200".into())),
                host: None,
            },
        );
        let mut p = tg(128);
        (p.n_depth, p.n_gpu_layers) = (512, 99);
        let a = m.begin();
        let r = m.end(a, &p, Some(&shape), Some(&placement), Some(100.0), 128);
        assert_eq!(r.kv_cache_bytes, Some(80 << 20));
        assert_eq!(r.kv_cache_source, Some(KvCacheSource::LlamaCpp));
        let roof = r.roofline.clone().unwrap();
        // Weights plus the mean filled context (512 + 127/2 positions) of 131072 bytes.
        assert_eq!(roof.bytes_per_token, 4e9 + 575.5 * 131_072.0);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["kv_cache_source"], "llama.cpp");
    }

    #[test]
    fn older_result_files_without_a_source_still_read() {
        let r: crate::machine::Resources = serde_json::from_str(
            r#"{"peak_rss_bytes":null,"kv_cache_bytes":4096,"energy":null,
                "joules_per_token":null,"roofline":null,"prefill":null}"#,
        )
        .unwrap();
        assert_eq!(r.kv_cache_source, None);
    }
}
