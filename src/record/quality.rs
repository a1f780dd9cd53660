//! A variant's quality figures: llama-perplexity `--kl-divergence`'s statistics.

use serde::{Deserialize, Serialize};

/// Quality against a reference, with llama-perplexity `--kl-divergence`'s definitions: over
/// the scored tokens (second half of each chunk of `n_ctx` tokens).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Quality {
    /// The reference variant's model name.
    pub reference: String,
    pub n_tokens: u64,
    /// KL(reference ‖ model) per token, in nats.
    pub kld_mean: f64,
    pub kld_mean_uncertainty: f64,
    pub kld_median: f64,
    pub kld_p90: f64,
    pub kld_p99: f64,
    pub kld_max: f64,
    /// ln(PPL(model) / PPL(reference)).
    pub ln_ppl_ratio: f64,
    pub ln_ppl_ratio_uncertainty: f64,
    pub ppl: f64,
    pub ppl_ref: f64,
    pub same_top_p: f64,
    pub same_top_p_uncertainty: f64,
    pub rms_dp: f64,
    #[serde(default)]
    pub n_ctx: u32,
    #[serde(default)]
    pub n_chunks: u32,
    /// `file:<path>`, `sharegpt:<path>` or `kl-divergence-base:<path>`.
    #[serde(default)]
    pub text_source: String,
    #[serde(default)]
    pub text_sha256: String,
    /// The rest of what llama-perplexity prints (absent from files before they were kept).
    pub kld_percentiles: Option<Percentiles>,
    pub dp_percentiles: Option<Percentiles>,
    /// The pairs are a figure and its standard error.
    pub dp_mean: Option<(f64, f64)>,
    pub rms_dp_uncertainty: Option<f64>,
    pub ppl_uncertainties: Option<(f64, f64)>,
    pub ppl_ratio: Option<(f64, f64)>,
    pub ln_ppl_correlation: Option<f64>,
}

/// A distribution over scored tokens at the points llama-perplexity prints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub max: f64,
    pub p99_9: f64,
    pub p99: f64,
    pub p95: f64,
    pub p90: f64,
    pub p75: f64,
    pub median: f64,
    pub p25: f64,
    pub p10: f64,
    pub p5: f64,
    pub p1: f64,
    pub p0_1: f64,
    pub min: f64,
}
