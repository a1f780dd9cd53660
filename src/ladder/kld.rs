//! Output quality of a model against a reference, computed as llama-perplexity
//! `--kl-divergence` computes it (tools/perplexity/perplexity.cpp in llama.cpp): the
//! reference's rows are kept as llama.cpp keeps them, 16 bits an entry (`encode`); a model's
//! logit row is compared with one (`compare`) in the same single-precision steps; the sums
//! and the per-token values give the figures llama-perplexity prints (`Accumulator`).
//!
//! The 16-bit rows cost what they cost llama.cpp: each entry carries an error of up to
//! about 1.2e-4 nats (16/65535 / 2), so the reference run through `--kl-divergence`
//! against its own stored rows shows a KLD of order 1e-5 (either sign), not 0. The reference's own row
//! in a table is its stored rows against themselves (`self_stat`): KLD 0 by definition.

use crate::record::{Percentiles, Quality};

/// llama.cpp skips reference log-probabilities below this in the KLD sum (their
/// probability, < 1.1e-7, cannot matter), and stores none lower.
pub const MIN_LOG_PROB: f32 = -16.0;

/// 16-bit entries of one stored row: its scale and minimum log-probability (two f32), then
/// one entry per token, padded to an even count.
pub fn row_len(n_vocab: usize) -> usize {
    2 * n_vocab.div_ceil(2) + 4
}

fn put_f32(out: &mut [u16], x: f32) {
    let b = x.to_bits();
    out[0] = b as u16;
    out[1] = (b >> 16) as u16;
}

fn get_f32(row: &[u16]) -> f32 {
    f32::from_bits(u32::from(row[0]) | (u32::from(row[1]) << 16))
}

fn max_index(logits: &[f32]) -> (f32, usize) {
    let later = logits.iter().copied().zip(0..).skip(1);
    later.fold(
        (logits[0], 0),
        |best, (x, i)| if x > best.0 { (x, i) } else { best },
    )
}

/// ln Σ exp(l − max), summed in f64 and rounded to f32, as llama.cpp does.
fn log_sum_exp(logits: &[f32], max: f32) -> f32 {
    let sum: f64 = logits.iter().map(|&l| f64::from((l - max).exp())).sum();
    sum.ln() as f32
}

/// Stores one logit row into `out` (`row_len` entries) as llama-perplexity's
/// `--kl-divergence-base` does: log-probabilities from the maximum down to 16 nats below
/// it, in 65535 steps. Returns −ln p(`next`).
pub fn encode(logits: &[f32], next: usize, out: &mut [u16]) -> f64 {
    let (max, _) = max_index(logits);
    let min = logits.iter().copied().fold(max, f32::min).max(max - 16.0);
    let lse = log_sum_exp(logits, max);
    let scale = (max - min) / 65535.0;
    put_f32(&mut out[0..2], scale);
    put_f32(&mut out[2..4], min - max - lse);
    let q = &mut out[4..];
    q.fill(0);
    if scale != 0.0 {
        let inv = 1.0 / scale;
        for (o, &l) in q.iter_mut().zip(logits) {
            if l > min {
                *o = (inv * (l - min)).round_ties_even() as u16;
            }
        }
    }
    f64::from(max + lse - logits[next])
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenStat {
    /// KL(reference ‖ model) over the vocabulary, nats.
    pub kld: f64,
    /// −ln p(actual next token) under the model, and under the reference.
    pub nll: f32,
    pub nll_ref: f32,
    /// p(actual next token) under the model minus under the reference.
    pub dp: f32,
    /// Both put their highest probability on the same token.
    pub same_top: bool,
}

/// Compares a model's logit row with the reference's stored row (from [`encode`]) at a
/// position whose actual next token is `next`.
pub fn compare(base: &[u16], logits: &[f32], next: usize) -> TokenStat {
    let (max, imax) = max_index(logits);
    let lse = log_sum_exp(logits, max);
    let (scale, min_lp) = (get_f32(&base[0..2]), get_f32(&base[2..4]));
    let q = &base[4..];
    let nll = max + lse - logits[next];
    let nll_ref = -(scale * f32::from(q[next]) + min_lp);
    let top = max + lse;
    let (mut kld, mut best, mut imax_base) = (0.0f64, 0.0f32, 0);
    for (i, &l) in logits.iter().enumerate() {
        let p = scale * f32::from(q[i]) + min_lp;
        if i == 0 || p > best {
            (best, imax_base) = (p, i);
        }
        if p > MIN_LOG_PROB {
            kld += f64::from(p.exp() * (p - l + top));
        }
    }
    TokenStat {
        kld,
        nll,
        nll_ref,
        dp: (-nll).exp() - (-nll_ref).exp(),
        same_top: imax == imax_base,
    }
}

/// The reference's stored row against itself: its perplexity, KLD 0.
pub fn self_stat(base: &[u16], next: usize) -> TokenStat {
    let nll = -(get_f32(&base[0..2]) * f32::from(base[4 + next]) + get_f32(&base[2..4]));
    TokenStat {
        kld: 0.0,
        nll,
        nll_ref: nll,
        dp: 0.0,
        same_top: true,
    }
}

/// Running sums over scored tokens, as llama.cpp's `kl_divergence_result`, plus the
/// per-token KLD and Δp values for the percentiles.
#[derive(Debug, Clone, Default)]
pub struct Accumulator {
    sum_nll: f64,
    sum_nll2: f64,
    sum_nll_ref: f64,
    sum_nll_ref2: f64,
    sum_nll_nll_ref: f64,
    sum_kld: f64,
    sum_kld2: f64,
    sum_dp: f64,
    sum_dp2: f64,
    sum_dp4: f64,
    n_same_top: u64,
    klds: Vec<f32>,
    dps: Vec<f32>,
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

/// llama-perplexity's percentile of sorted values: linear between neighbours, in f32.
fn percentile(sorted: &[f32], fraction: f32) -> f32 {
    let p = fraction * (sorted.len() - 1) as f32;
    let ip = p as usize;
    let p = p - ip as f32;
    (1.0 - p) * sorted[ip] + p * sorted[(ip + 1).min(sorted.len() - 1)]
}

/// The distribution of `values` at llama-perplexity's points (all 0 when empty).
pub fn percentiles(mut values: Vec<f32>) -> Percentiles {
    if values.is_empty() {
        return Percentiles::default();
    }
    values.sort_by(f32::total_cmp);
    let n = values.len();
    let median = if n % 2 == 0 {
        0.5 * (values[n / 2] + values[n / 2 - 1])
    } else {
        values[n / 2]
    };
    let at = |f: f32| finite(f64::from(percentile(&values, f)));
    Percentiles {
        max: finite(f64::from(values[n - 1])),
        p99_9: at(0.999),
        p99: at(0.99),
        p95: at(0.95),
        p90: at(0.90),
        p75: at(0.75),
        median: finite(f64::from(median)),
        p25: at(0.25),
        p10: at(0.10),
        p5: at(0.05),
        p1: at(0.01),
        p0_1: at(0.001),
        min: finite(f64::from(values[0])),
    }
}

/// Replaces a non-finite value (which JSON cannot carry) with 0.
fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

impl Accumulator {
    pub fn add(&mut self, t: &TokenStat) {
        self.sum_nll += f64::from(t.nll);
        self.sum_nll2 += f64::from(t.nll * t.nll);
        self.sum_nll_ref += f64::from(t.nll_ref);
        self.sum_nll_ref2 += f64::from(t.nll_ref * t.nll_ref);
        self.sum_nll_nll_ref += f64::from(t.nll * t.nll_ref);
        self.sum_kld += t.kld;
        self.sum_kld2 += t.kld * t.kld;
        self.sum_dp += f64::from(t.dp);
        let dp2 = f64::from(t.dp * t.dp);
        self.sum_dp2 += dp2;
        self.sum_dp4 += dp2 * dp2;
        self.n_same_top += u64::from(t.same_top);
        self.klds.push(t.kld as f32);
        self.dps.push(t.dp);
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
        let ln_ratio = finite(log_ppl - log_ppl_ref);
        let ln_ratio_unc = finite(ratio_var.max(0.0).sqrt());
        let ratio = ln_ratio.exp();
        let (kld_mean, kld_unc) = mean_and_uncertainty(self.sum_kld, self.sum_kld2, n);
        let (dp_mean, dp_unc) = mean_and_uncertainty(self.sum_dp, self.sum_dp2, n);
        let (mse, mse_unc) = mean_and_uncertainty(self.sum_dp2, self.sum_dp4, n);
        let rms = mse.max(0.0).sqrt();
        // Below 2 tokens `same` is 0 or 1 and its uncertainty 0.
        let same = self.n_same_top as f64 / n.max(1) as f64;
        let same_unc = (same * (1.0 - same) / (n.max(2) - 1) as f64).sqrt();
        let kld = percentiles(self.klds.clone());
        let (ppl, ppl_ref) = (finite(log_ppl.exp()), finite(log_ppl_ref.exp()));
        Quality {
            reference: reference.to_string(),
            n_tokens: n,
            kld_mean: finite(kld_mean),
            kld_mean_uncertainty: finite(kld_unc),
            kld_median: kld.median,
            kld_p90: kld.p90,
            kld_p99: kld.p99,
            kld_max: kld.max,
            ln_ppl_ratio: ln_ratio,
            ln_ppl_ratio_uncertainty: ln_ratio_unc,
            ppl,
            ppl_ref,
            same_top_p: same,
            same_top_p_uncertainty: finite(same_unc),
            rms_dp: finite(rms),
            kld_percentiles: Some(kld),
            dp_percentiles: Some(percentiles(self.dps.clone())),
            dp_mean: Some((finite(dp_mean), finite(dp_unc))),
            rms_dp_uncertainty: Some(finite(0.5 / rms * mse_unc)),
            ppl_uncertainties: Some((finite(ppl * log_ppl_unc), finite(ppl_ref * log_ppl_ref_unc))),
            ppl_ratio: Some((finite(ratio), finite(ratio * ln_ratio_unc))),
            ln_ppl_correlation: Some(finite(cov / (log_ppl_unc * log_ppl_ref_unc))),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(logits: &[f32]) -> Vec<u16> {
        let mut r = vec![0; row_len(logits.len())];
        encode(logits, 0, &mut r);
        r
    }

    #[test]
    fn a_stored_row_has_the_layout_llama_cpp_writes() {
        assert_eq!(row_len(5), 10);
        assert_eq!(row_len(6), 10);
        let r = row(&[0.0, 16.0, -30.0]);
        assert_eq!(get_f32(&r[0..2]), 16.0 / 65535.0);
        // max 16, min clamped to 0 (16 below), entries from 0 to 65535; below min stays 0
        assert_eq!(&r[4..7], &[0, 65535, 0]);
    }

    #[test]
    fn a_row_against_its_own_logits_is_near_zero_divergence_and_the_same_top() {
        let logits = [0.5, 2.0, -1.0, 1.5];
        let t = compare(&row(&logits), &logits, 3);
        assert!(t.kld.abs() < 1e-5, "{}", t.kld);
        assert!(t.dp.abs() < 1e-4 && t.same_top);
        assert!((t.nll - t.nll_ref).abs() < 1e-3);
        let s = self_stat(&row(&logits), 3);
        assert_eq!((s.kld, s.dp, s.nll), (0.0, 0.0, s.nll_ref));
    }

    #[test]
    fn kld_matches_the_closed_form_for_two_tokens() {
        // p = (0.5, 0.5), q = (0.9, 0.1): KL(p‖q) = 0.5 ln(0.5/0.9) + 0.5 ln(0.5/0.1)
        let p = row(&[0.0, 0.0]);
        let t = compare(&p, &[(0.9f32).ln(), (0.1f32).ln()], 1);
        let expected = 0.5 * (0.5f64 / 0.9).ln() + 0.5 * (0.5f64 / 0.1).ln();
        assert!((t.kld - expected).abs() < 1e-5, "{} vs {expected}", t.kld);
        assert!((f64::from(t.dp) - (0.1 - 0.5)).abs() < 1e-5);
        assert!((f64::from(t.nll) - -(0.1f64).ln()).abs() < 1e-5);
        // p ties: its top is the first index; q's top is 0 too.
        assert!(t.same_top);
        assert!(!compare(&p, &[(0.1f32).ln(), (0.9f32).ln()], 1).same_top);
    }

    #[test]
    fn negligible_reference_probabilities_are_skipped_as_in_llama_cpp() {
        let t = compare(&row(&[0.0, -30.0]), &[0.0, 0.0], 0);
        // only the first term: 1 · (0 − ln 0.5)
        assert!((t.kld - 2f64.ln()).abs() < 1e-6, "{}", t.kld);
    }

    #[test]
    fn aggregation_follows_llama_cpp() {
        let mut acc = Accumulator::default();
        for i in 0..20 {
            let x = i as f32;
            acc.add(&TokenStat {
                kld: f64::from(i) / 100.0,
                nll: 2.0 + x / 10.0,
                nll_ref: 2.0,
                dp: if i % 2 == 0 { 0.1 } else { -0.1 },
                same_top: i < 15,
            });
        }
        let q = acc.finish("ref");
        assert_eq!((q.n_tokens, q.reference.as_str()), (20, "ref"));
        assert!((q.kld_mean - 0.095).abs() < 1e-9);
        // standard error of the mean of 0..19 / 100: sample variance of 0..19 is 35
        let sd = 35f64.sqrt() / 100.0;
        assert!((q.kld_mean_uncertainty - sd / 20f64.sqrt()).abs() < 1e-6);
        let k = q.kld_percentiles.unwrap();
        assert!((q.kld_median - 0.095).abs() < 1e-6 && k.median == q.kld_median);
        assert!((q.kld_max - 0.19).abs() < 1e-6 && k.min == 0.0);
        assert!((q.kld_p90 - 0.171).abs() < 1e-6, "{}", q.kld_p90);
        assert!((k.p99_9 - 0.18981).abs() < 1e-6, "{}", k.p99_9);
        assert!((q.ln_ppl_ratio - 0.95).abs() < 1e-6);
        assert!((q.ppl_ref - 2f64.exp()).abs() < 1e-6);
        assert!((q.same_top_p - 0.75).abs() < 1e-12);
        assert!((q.same_top_p_uncertainty - (0.75f64 * 0.25 / 19.0).sqrt()).abs() < 1e-12);
        assert!((q.rms_dp - 0.1).abs() < 1e-6);
        assert!(q.dp_mean.unwrap().0.abs() < 1e-9);
        let d = q.dp_percentiles.unwrap();
        assert!((d.max - 0.1).abs() < 1e-7 && (d.min + 0.1).abs() < 1e-7);
        // nll_ref is constant: the ratio's uncertainty is the model's alone, no correlation
        let (_, unc) = mean_and_uncertainty(
            (0..20).map(|i| 2.0 + f64::from(i) / 10.0).sum(),
            (0..20).map(|i| (2.0 + f64::from(i) / 10.0).powi(2)).sum(),
            20,
        );
        assert!((q.ln_ppl_ratio_uncertainty - unc).abs() < 1e-6);
        assert_eq!(q.ln_ppl_correlation, Some(0.0));
        let (r, ru) = q.ppl_ratio.unwrap();
        assert!(
            (r - 0.95f64.exp()).abs() < 1e-6 && (ru - r * q.ln_ppl_ratio_uncertainty).abs() < 1e-9
        );
    }

    #[test]
    fn few_tokens_give_no_uncertainty_and_no_tokens_give_zeros_not_nan() {
        assert_eq!(mean_and_uncertainty(3.0, 5.0, 2), (1.5, 0.0));
        let q = Accumulator::default().finish("r");
        assert_eq!(q.n_tokens, 0);
        assert!(q.kld_mean == 0.0 && q.ppl.is_finite() && q.same_top_p == 0.0);
        assert!(q.rms_dp_uncertainty.unwrap().is_finite());
    }

    #[test]
    fn percentiles_interpolate_in_f32_as_llama_perplexity() {
        let p = percentiles(vec![4.0, 1.0, 3.0, 2.0]);
        assert_eq!((p.median, p.max, p.min), (2.5, 4.0, 1.0));
        assert!((p.p90 - 3.7).abs() < 1e-6, "{}", p.p90);
        assert_eq!(percentiles(vec![3.0, 1.0, 2.0]).median, 2.0);
    }
}
