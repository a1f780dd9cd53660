//! Roofline arithmetic, pure. Decoding reads every weight once per token (of a mixture of
//! experts, only the experts its router picks), plus the KV cache of the context so far, so
//! tokens/s ≤ bandwidth / bytes per token. Prefill is compute bound: about 2·n_params FLOPs
//! per token (one multiply-add per weight).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Shape {
    pub n_layer: u64,
    /// Width of K (and of V) per position and layer: n_head_kv · head_dim.
    pub n_embd_kv: u64,
    pub weight_bytes: u64,
    /// Bytes of the input embedding table, read one row per token when the output matrix is
    /// a separate tensor (when tied, the table is read whole as the output projection).
    pub input_embedding_bytes: u64,
    pub tied_embeddings: bool,
    pub n_vocab: u64,
    pub n_params: u64,
    /// A mixture of experts: bytes of the routed expert tensors (`ffn_*_exps`), of which a
    /// token reads `n_expert_used` of `n_expert`. 0 for a dense model.
    pub expert_bytes: u64,
    pub n_expert: u64,
    pub n_expert_used: u64,
}

/// Bytes per element of a KV-cache type (block types averaged over their block); f16's for a
/// name ggml does not know.
pub fn kv_type_bytes(t: &str) -> f64 {
    (crate::gguf::GGML_TYPES.iter())
        .find(|g| g.1.eq_ignore_ascii_case(t))
        .map_or(2.0, |&(_, _, block, bytes)| bytes as f64 / block as f64)
}

impl Shape {
    /// All layers, K and V.
    pub fn kv_bytes_per_position(&self, type_k: &str, type_v: &str) -> f64 {
        self.n_layer as f64
            * self.n_embd_kv as f64
            * (kv_type_bytes(type_k) + kv_type_bytes(type_v))
    }

    pub fn weight_bytes_per_token(&self) -> f64 {
        let all = if self.tied_embeddings || self.n_vocab == 0 {
            self.weight_bytes as f64
        } else {
            // One row of the input table instead of the whole table.
            let row = self.input_embedding_bytes as f64 / self.n_vocab as f64;
            self.weight_bytes as f64 - self.input_embedding_bytes as f64 + row
        };
        // A mixture of experts reads only the experts its router picks: n_expert_used of
        // n_expert per layer (a batch of one token; the shared experts are dense weights).
        let unread = if self.n_expert > 0 && self.n_expert_used < self.n_expert {
            self.expert_bytes as f64 * (1.0 - self.n_expert_used as f64 / self.n_expert as f64)
        } else {
            0.0
        };
        all - unread
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecodeRoofline {
    /// Weights plus the mean KV cache of the test.
    pub bytes_per_token: f64,
    /// GB/s (1e9 bytes/s).
    pub bandwidth_gbs: f64,
    /// "probe: ..." (host), "table: ...".
    pub bandwidth_source: String,
    pub roofline_ts: f64,
    pub achieved_gbs: f64,
    pub percent_of_roofline: f64,
    /// The rate implies more bytes/s than the ceiling, so the ceiling is wrong (a busy probe,
    /// or a cache the probe did not see) and tables say so rather than print the percent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub above_ceiling: bool,
}

/// Decode roofline for `n_gen` tokens generated after `n_depth` tokens at `ts` tokens/s,
/// with `kv_bytes_per_position` bytes of K and V per cached token (all layers): llama.cpp's
/// KV buffer over its cells where known, else [`Shape::kv_bytes_per_position`].
pub fn decode(
    shape: &Shape,
    n_depth: u32,
    n_gen: u32,
    kv_bytes_per_position: f64,
    ts: f64,
    bandwidth_gbs: f64,
    bandwidth_source: &str,
) -> DecodeRoofline {
    // Token i attends over n_depth + i positions; only filled cells count, not the padding
    // llama.cpp masks: the ceiling is what an ideal kernel reaches.
    let mean_ctx = f64::from(n_depth) + f64::from(n_gen.saturating_sub(1)) / 2.0;
    let bytes_per_token = shape.weight_bytes_per_token() + mean_ctx * kv_bytes_per_position;
    let roofline_ts = bandwidth_gbs * 1e9 / bytes_per_token;
    let achieved_gbs = ts * bytes_per_token / 1e9;
    DecodeRoofline {
        bytes_per_token,
        bandwidth_gbs,
        bandwidth_source: bandwidth_source.to_string(),
        roofline_ts,
        achieved_gbs,
        percent_of_roofline: 100.0 * ts / roofline_ts,
        above_ceiling: achieved_gbs > bandwidth_gbs,
    }
}

impl DecodeRoofline {
    /// The same measurement against another ceiling (a host probe raised after the test ran):
    /// the bytes per token and the achieved rate stay, the ceiling and its percentage move.
    pub fn rebased(&self, bandwidth_gbs: f64, bandwidth_source: &str) -> DecodeRoofline {
        DecodeRoofline {
            bandwidth_gbs,
            bandwidth_source: bandwidth_source.to_string(),
            roofline_ts: bandwidth_gbs * 1e9 / self.bytes_per_token,
            percent_of_roofline: 100.0 * self.achieved_gbs / bandwidth_gbs,
            above_ceiling: self.achieved_gbs > bandwidth_gbs,
            ..self.clone()
        }
    }

    pub fn is_from_host_probe(&self) -> bool {
        self.bandwidth_source.starts_with("probe:")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrefillCompute {
    /// 2 · n_params: one multiply-add per weight per token (attention over the context
    /// adds 4 · n_layer · n_embd_kv-scale terms, small at these lengths and left out).
    pub flops_per_token: f64,
    pub achieved_tflops: f64,
}

pub fn prefill(shape: &Shape, ts: f64) -> PrefillCompute {
    let flops_per_token = 2.0 * shape.n_params as f64;
    PrefillCompute {
        flops_per_token,
        achieved_tflops: ts * flops_per_token / 1e12,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> Shape {
        Shape {
            n_layer: 30,
            n_embd_kv: 192,
            weight_bytes: 96_000_000,
            input_embedding_bytes: 16_000_000,
            tied_embeddings: true,
            n_vocab: 49152,
            n_params: 134_515_008,
            expert_bytes: 0,
            n_expert: 0,
            n_expert_used: 0,
        }
    }

    #[test]
    fn a_mixture_of_experts_reads_only_the_experts_its_router_picks() {
        // Qwen3-30B-A3B-like: 8 of 128 experts per token; the rest of the weights whole.
        let moe = Shape {
            weight_bytes: 1_000,
            expert_bytes: 640,
            n_expert: 128,
            n_expert_used: 8,
            ..shape()
        };
        assert_eq!(moe.weight_bytes_per_token(), 360.0 + 640.0 * 8.0 / 128.0);
        // Every expert used, or a dense model: all of it.
        let all = Shape {
            n_expert_used: 128,
            ..moe
        };
        assert_eq!(all.weight_bytes_per_token(), 1_000.0);
    }

    #[test]
    fn kv_bytes_follow_layers_width_and_type() {
        // 30 layers · 192 · (2 + 2) bytes for f16 K and V
        assert_eq!(shape().kv_bytes_per_position("f16", "f16"), 23_040.0);
        assert_eq!(
            shape().kv_bytes_per_position("q8_0", "q8_0"),
            30.0 * 192.0 * 2.0 * 34.0 / 32.0
        );
    }

    #[test]
    fn decode_at_zero_depth_is_weights_over_bandwidth() {
        let r = decode(&shape(), 0, 1, 23_040.0, 50.0, 9.6, "probe");
        assert_eq!(r.bytes_per_token, 96_000_000.0);
        assert!((r.roofline_ts - 100.0).abs() < 1e-9);
        assert!((r.percent_of_roofline - 50.0).abs() < 1e-9);
        assert!((r.achieved_gbs - 4.8).abs() < 1e-9);
        assert!(!r.above_ceiling);
    }

    #[test]
    fn a_rate_above_the_ceiling_says_the_ceiling_is_wrong() {
        // 157 t/s of 96 MB per token is 15 GB/s: a 9.6 GB/s probe cannot be the ceiling.
        let r = decode(&shape(), 0, 1, 23_040.0, 157.0, 9.6, "probe");
        assert!(r.above_ceiling && r.percent_of_roofline > 100.0);
    }

    #[test]
    fn depth_adds_the_mean_kv_cache_read() {
        let r = decode(&shape(), 1000, 129, 23_040.0, 50.0, 9.6, "probe");
        assert_eq!(r.bytes_per_token, 96_000_000.0 + 1064.0 * 23_040.0);
    }

    #[test]
    fn untied_embeddings_read_one_input_row() {
        let mut s = shape();
        s.tied_embeddings = false;
        let row = 16_000_000.0 / 49152.0;
        assert!((s.weight_bytes_per_token() - (80_000_000.0 + row)).abs() < 1e-6);
    }

    #[test]
    fn prefill_counts_two_flops_per_parameter() {
        let p = prefill(&shape(), 1000.0);
        assert_eq!(p.flops_per_token, 269_030_016.0);
        assert!((p.achieved_tflops - 0.269_030_016).abs() < 1e-12);
    }

    #[test]
    fn a_roofline_rebased_on_a_higher_probe_keeps_its_rate_and_falls_below_the_ceiling() {
        let shape = Shape {
            weight_bytes: 1_000_000_000,
            ..Shape::default()
        };
        let r = decode(
            &shape,
            0,
            1,
            0.0,
            30.0,
            21.6,
            "probe: host DRAM read, 2 threads",
        );
        assert!(r.above_ceiling && r.is_from_host_probe());
        let again = r.rebased(43.9, "probe: host DRAM read, 2 threads");
        let fresh = decode(
            &shape,
            0,
            1,
            0.0,
            30.0,
            43.9,
            "probe: host DRAM read, 2 threads",
        );
        assert!(!again.above_ceiling);
        assert!((again.percent_of_roofline - fresh.percent_of_roofline).abs() < 1e-9);
        assert!((again.roofline_ts - fresh.roofline_ts).abs() < 1e-9);
        assert_eq!(again.achieved_gbs, r.achieved_gbs);
        assert!(!decode(&shape, 0, 1, 0.0, 30.0, 4800.0, "table: H200").is_from_host_probe());
    }
}
