//! Output quality of a model against a reference, with llama-perplexity `--kl-divergence`'s
//! definitions (tools/perplexity/perplexity.cpp in llama.cpp). Pure math: from logit rows
//! and the actual next token to per-token statistics, and from those to the aggregate
//! figures with the same uncertainty estimates llama.cpp prints.
//!
//! One difference, on purpose: llama.cpp stores the reference's log-probabilities
//! compressed to 16 bits (an error of up to ~1e-4 nats per entry); tpsbench keeps them in
//! f32, so a model compared with itself gives exactly KLD 0 and 100 % same top token.

use crate::record::Quality;

/// llama.cpp skips reference log-probabilities below this in the KLD sum (their
/// probability, < 1.1e-7, cannot matter).
pub const MIN_LOG_PROB: f32 = -16.0;

/// Log-softmax of one logit row into `out`, computed as llama.cpp does: subtract the
/// maximum, sum the exponentials in f64, take the logarithm in f32.
pub fn log_softmax(logits: &[f32], out: &mut Vec<f32>) {
    out.clear();
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = logits.iter().map(|&l| f64::from((l - max).exp())).sum();
    let lse = sum.ln() as f32;
    out.extend(logits.iter().map(|&l| (l - max) - lse));
}

/// Index of the largest value; the first one on ties (as llama.cpp).
pub fn argmax(v: &[f32]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
}

/// One scored token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenStat {
    /// KL(reference ‖ model) over the vocabulary, nats.
    pub kld: f64,
    /// −ln p(actual next token) under the model, and under the reference.
    pub nll: f64,
    pub nll_ref: f64,
    /// p(actual next token) under the model minus under the reference.
    pub dp: f64,
    /// Both put their highest probability on the same token.
    pub same_top: bool,
}

/// Compares two log-probability rows (from [`log_softmax`]) at a position whose actual next
/// token is `next`.
pub fn compare(ref_logp: &[f32], logp: &[f32], next: usize) -> TokenStat {
    let kld: f64 = ref_logp
        .iter()
        .zip(logp)
        .filter(|(r, _)| **r > MIN_LOG_PROB)
        .map(|(&r, &q)| f64::from(r.exp()) * f64::from(r - q))
        .sum();
    let nll = -f64::from(logp[next]);
    let nll_ref = -f64::from(ref_logp[next]);
    TokenStat {
        kld,
        nll,
        nll_ref,
        dp: (-nll).exp() - (-nll_ref).exp(),
        same_top: argmax(ref_logp) == argmax(logp),
    }
}

/// Running sums over scored tokens, as llama.cpp's `kl_divergence_result`, plus the
/// per-token KLD values for the percentiles.
#[derive(Debug, Clone, Default)]
pub struct Accumulator {
    sum_nll: f64,
    sum_nll2: f64,
    sum_nll_ref: f64,
    sum_nll_ref2: f64,
    sum_nll_nll_ref: f64,
    sum_kld: f64,
    sum_kld2: f64,
    sum_dp2: f64,
    sum_dp4: f64,
    n_same_top: u64,
    klds: Vec<f32>,
}

/// Mean and its standard error, as llama.cpp's `mean_and_uncertainty` (no uncertainty from
/// 10 values or fewer).
pub fn mean_and_uncertainty(sum: f64, sum2: f64, n: u64) -> (f64, f64) {
    if n < 1 {
        return (0.0, 0.0);
    }
    let nf = n as f64;
    let f = sum / nf;
    let var = sum2 / nf - f * f;
    let df = if var > 0.0 && n > 10 {
        (var / (nf - 1.0)).sqrt()
    } else {
        0.0
    };
    (f, df)
}

/// Covariance of the two means, as llama.cpp's `covariance` (0 below 10 values).
pub fn covariance(sum_a: f64, sum_b: f64, sum_ab: f64, n: u64) -> f64 {
    if n < 10 {
        return 0.0;
    }
    let nf = n as f64;
    (sum_ab / nf - (sum_a / nf) * (sum_b / nf)) / (nf - 1.0)
}

/// The median: the middle value, or the mean of the two middle ones.
pub fn median(sorted: &[f32]) -> f64 {
    let n = sorted.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 0 => 0.5 * (f64::from(sorted[n / 2 - 1]) + f64::from(sorted[n / 2])),
        _ => f64::from(sorted[n / 2]),
    }
}

/// Replaces a non-finite value (which JSON cannot carry) with 0.
fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

impl Accumulator {
    pub fn add(&mut self, t: &TokenStat) {
        self.sum_nll += t.nll;
        self.sum_nll2 += t.nll * t.nll;
        self.sum_nll_ref += t.nll_ref;
        self.sum_nll_ref2 += t.nll_ref * t.nll_ref;
        self.sum_nll_nll_ref += t.nll * t.nll_ref;
        self.sum_kld += t.kld;
        self.sum_kld2 += t.kld * t.kld;
        let dp2 = t.dp * t.dp;
        self.sum_dp2 += dp2;
        self.sum_dp4 += dp2 * dp2;
        self.n_same_top += u64::from(t.same_top);
        self.klds.push(t.kld as f32);
    }

    pub fn count(&self) -> u64 {
        self.klds.len() as u64
    }

    /// The aggregate figures; `reference` names the reference model. The evaluation fields
    /// (`n_ctx`, `n_chunks`, text) are left empty for the caller.
    pub fn finish(&self, reference: &str) -> Quality {
        let n = self.count();
        let (log_ppl, log_ppl_unc) = mean_and_uncertainty(self.sum_nll, self.sum_nll2, n);
        let (log_ppl_ref, log_ppl_ref_unc) =
            mean_and_uncertainty(self.sum_nll_ref, self.sum_nll_ref2, n);
        let cov = covariance(self.sum_nll, self.sum_nll_ref, self.sum_nll_nll_ref, n);
        let ratio_var = log_ppl_unc * log_ppl_unc + log_ppl_ref_unc * log_ppl_ref_unc - 2.0 * cov;
        let (kld_mean, kld_unc) = mean_and_uncertainty(self.sum_kld, self.sum_kld2, n);
        let (mse, _) = mean_and_uncertainty(self.sum_dp2, self.sum_dp4, n);
        let same = if n > 0 {
            self.n_same_top as f64 / n as f64
        } else {
            0.0
        };
        let same_unc = if n > 1 {
            (same * (1.0 - same) / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let mut sorted = self.klds.clone();
        sorted.sort_by(f32::total_cmp);
        Quality {
            reference: reference.to_string(),
            n_tokens: n,
            kld_mean: finite(kld_mean),
            kld_mean_uncertainty: finite(kld_unc),
            kld_median: finite(median(&sorted)),
            kld_p90: finite(crate::stats::quantile(&sorted, 0.90)),
            kld_p99: finite(crate::stats::quantile(&sorted, 0.99)),
            kld_max: finite(sorted.last().map_or(0.0, |&x| f64::from(x))),
            ln_ppl_ratio: finite(log_ppl - log_ppl_ref),
            ln_ppl_ratio_uncertainty: finite(ratio_var.max(0.0).sqrt()),
            ppl: finite(log_ppl.exp()),
            ppl_ref: finite(log_ppl_ref.exp()),
            same_top_p: same,
            same_top_p_uncertainty: finite(same_unc),
            rms_dp: finite(mse.max(0.0).sqrt()),
            n_ctx: 0,
            n_chunks: 0,
            text_source: String::new(),
            text_sha256: String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logp(logits: &[f32]) -> Vec<f32> {
        let mut v = Vec::new();
        log_softmax(logits, &mut v);
        v
    }

    #[test]
    fn log_softmax_normalizes() {
        let v = logp(&[1.0, 2.0, 3.0, -50.0]);
        let total: f64 = v.iter().map(|x| f64::from(x.exp())).sum();
        assert!((total - 1.0).abs() < 1e-6, "{total}");
        assert!(v[2] > v[1] && v[1] > v[0]);
        // shift invariance
        let w = logp(&[101.0, 102.0, 103.0, 50.0]);
        for (a, b) in v.iter().zip(&w) {
            assert!((a - b).abs() < 1e-5);
        }
    }

    #[test]
    fn a_row_against_itself_has_zero_divergence_and_the_same_top() {
        let r = logp(&[0.5, 2.0, -1.0, 1.5]);
        let t = compare(&r, &r, 3);
        assert_eq!(t.kld, 0.0);
        assert_eq!(t.dp, 0.0);
        assert!(t.same_top);
        assert_eq!(t.nll, t.nll_ref);
    }

    #[test]
    fn kld_matches_the_closed_form_for_two_tokens() {
        // p = (0.5, 0.5), q = (0.9, 0.1): KL(p‖q) = 0.5 ln(0.5/0.9) + 0.5 ln(0.5/0.1)
        let p = logp(&[0.0, 0.0]);
        let q = logp(&[(0.9f32).ln(), (0.1f32).ln()]);
        let t = compare(&p, &q, 1);
        let expected = 0.5 * (0.5f64 / 0.9).ln() + 0.5 * (0.5f64 / 0.1).ln();
        assert!((t.kld - expected).abs() < 1e-6, "{} vs {expected}", t.kld);
        assert!(t.kld > 0.0);
        assert!((t.dp - (0.1 - 0.5)).abs() < 1e-6);
        assert!((t.nll - -(0.1f64).ln()).abs() < 1e-6);
        // p ties: argmax is the first index; q's top is 0 too.
        assert!(t.same_top);
        let q2 = logp(&[(0.1f32).ln(), (0.9f32).ln()]);
        assert!(!compare(&p, &q2, 1).same_top);
    }

    #[test]
    fn negligible_reference_probabilities_are_skipped_as_in_llama_cpp() {
        let p = logp(&[0.0, -30.0]);
        let q = logp(&[0.0, 0.0]);
        let t = compare(&p, &q, 0);
        // only the first term: 1 · (0 − ln 0.5)
        assert!((t.kld - 2f64.ln()).abs() < 1e-6, "{}", t.kld);
    }

    #[test]
    fn aggregation_follows_llama_cpp() {
        let mut acc = Accumulator::default();
        for i in 0..20 {
            let x = f64::from(i);
            acc.add(&TokenStat {
                kld: x / 100.0,
                nll: 2.0 + x / 10.0,
                nll_ref: 2.0,
                dp: if i % 2 == 0 { 0.1 } else { -0.1 },
                same_top: i < 15,
            });
        }
        let q = acc.finish("ref");
        assert_eq!(q.n_tokens, 20);
        assert_eq!(q.reference, "ref");
        assert!((q.kld_mean - 0.095).abs() < 1e-9);
        // standard error of the mean of 0..19 / 100: sample variance of 0..19 is 35
        let sd = 35f64.sqrt() / 100.0;
        assert!(
            (q.kld_mean_uncertainty - sd / 20f64.sqrt()).abs() < 1e-6,
            "{}",
            q.kld_mean_uncertainty
        );
        assert!((q.kld_median - 0.095).abs() < 1e-6);
        assert!((q.kld_max - 0.19).abs() < 1e-6);
        assert!((q.kld_p90 - 0.171).abs() < 1e-6, "{}", q.kld_p90);
        assert!((q.ln_ppl_ratio - 0.95).abs() < 1e-9);
        assert!((q.ppl_ref - 2f64.exp()).abs() < 1e-9);
        assert!((q.same_top_p - 0.75).abs() < 1e-12);
        assert!((q.same_top_p_uncertainty - (0.75f64 * 0.25 / 19.0).sqrt()).abs() < 1e-12);
        assert!((q.rms_dp - 0.1).abs() < 1e-9);
        // nll_ref is constant: the ratio's uncertainty is the model's alone
        let (_, unc) = mean_and_uncertainty(
            (0..20).map(|i| 2.0 + f64::from(i) / 10.0).sum(),
            (0..20).map(|i| (2.0 + f64::from(i) / 10.0).powi(2)).sum(),
            20,
        );
        assert!((q.ln_ppl_ratio_uncertainty - unc).abs() < 1e-9);
    }

    #[test]
    fn few_tokens_give_no_uncertainty_and_no_tokens_give_zeros_not_nan() {
        assert_eq!(mean_and_uncertainty(3.0, 5.0, 2), (1.5, 0.0));
        let q = Accumulator::default().finish("r");
        assert_eq!(q.n_tokens, 0);
        assert!(q.kld_mean == 0.0 && q.ppl.is_finite() && q.same_top_p == 0.0);
    }

    #[test]
    fn the_median_is_the_middle_or_the_mean_of_the_two_middle_values() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(median(&v), 2.5);
        assert_eq!(median(&[3.0, 1.0, 2.0][..1]), 3.0);
    }
}
