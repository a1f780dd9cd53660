//! Pure serving metrics: request traces to latency distributions and rates, llama-batched-
//! bench's figures, target checks, capacity and cost. No engine, no I/O.

use crate::record::serving::{Dist, RepFigures, RequestSample, Targets};

pub fn dist(xs: &[f64]) -> Dist {
    if xs.is_empty() {
        return Dist::default();
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    Dist {
        n: v.len() as u64,
        mean: v.iter().sum::<f64>() / v.len() as f64,
        min: v[0],
        p50: crate::stats::quantile(&v, 0.50),
        p90: crate::stats::quantile(&v, 0.90),
        p99: crate::stats::quantile(&v, 0.99),
        max: v[v.len() - 1],
    }
}

/// One request on the engine clock (nanoseconds).
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub arrival_ns: u64,
    /// When its prompt entered a batch.
    pub admitted_ns: u64,
    pub n_prompt: u32,
    pub token_ns: Vec<u64>,
    pub tokens: Vec<i32>,
}

const MS: f64 = 1e6;

impl Trace {
    pub fn ttft_ns(&self) -> Option<u64> {
        Some(self.token_ns.first()?.saturating_sub(self.arrival_ns))
    }

    pub fn e2e_ns(&self) -> Option<u64> {
        Some(self.token_ns.last()?.saturating_sub(self.arrival_ns))
    }

    pub fn itl_ns(&self) -> impl Iterator<Item = u64> + '_ {
        self.token_ns.windows(2).map(|w| w[1].saturating_sub(w[0]))
    }

    /// (n_gen − 1) / (E2E − TTFT): how fast the response streams after its first token.
    pub fn decode_ts(&self) -> Option<f64> {
        let n = self.token_ns.len();
        let span = self.token_ns.last()?.saturating_sub(self.token_ns[0]);
        (n >= 2 && span > 0).then(|| (n - 1) as f64 * 1e9 / span as f64)
    }

    /// (E2E − TTFT) / (n_gen − 1), in ms.
    pub fn tpot_ms(&self) -> Option<f64> {
        let n = self.token_ns.len();
        let span = self.token_ns.last()?.saturating_sub(self.token_ns[0]);
        (n >= 2).then(|| span as f64 / MS / (n - 1) as f64)
    }

    pub fn sample(&self, repetition: u32, start_ns: u64) -> RequestSample {
        RequestSample {
            repetition,
            n_prompt: self.n_prompt,
            n_gen: self.token_ns.len() as u32,
            arrival_ms: self.arrival_ns.saturating_sub(start_ns) as f64 / MS,
            ttft_ms: self.ttft_ns().unwrap_or(0) as f64 / MS,
            e2e_ms: self.e2e_ns().unwrap_or(0) as f64 / MS,
            decode_ts: self.decode_ts(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Latencies {
    pub ttft_ms: Dist,
    pub itl_ms: Dist,
    pub e2e_ms: Dist,
    pub tpot_ms: Dist,
    pub queue_ms: Dist,
    pub per_request_ts: Option<f64>,
}

pub fn latencies<'a>(traces: impl IntoIterator<Item = &'a Trace>) -> Latencies {
    let (mut ttft, mut itl, mut e2e, mut tpot, mut queue, mut rates) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for t in traces {
        ttft.extend(t.ttft_ns().map(|x| x as f64 / MS));
        e2e.extend(t.e2e_ns().map(|x| x as f64 / MS));
        itl.extend(t.itl_ns().map(|x| x as f64 / MS));
        tpot.extend(t.tpot_ms());
        queue.push(t.admitted_ns.saturating_sub(t.arrival_ns) as f64 / MS);
        rates.extend(t.decode_ts());
    }
    Latencies {
        ttft_ms: dist(&ttft),
        itl_ms: dist(&itl),
        e2e_ms: dist(&e2e),
        tpot_ms: dist(&tpot),
        queue_ms: dist(&queue),
        per_request_ts: (!rates.is_empty()).then(|| rates.iter().sum::<f64>() / rates.len() as f64),
    }
}

/// One repetition's phase times and token counts, for llama-batched-bench's figures.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Phases {
    /// T_PP: from the start to the end of the prompt decode (synchronized).
    pub t_pp_ns: u64,
    pub t_tg_ns: u64,
    /// The whole repetition, first token sampling and sequence copies included.
    pub t_ns: u64,
    /// Prompt tokens decoded (S_PP's numerator: B·PP, or PP when shared).
    pub n_pp: u64,
    /// Tokens decoded in the generation loop (S_TG's numerator).
    pub n_tg: u64,
    pub n_out: u64,
    pub engine_ns: u64,
}

fn rate(n: u64, ns: u64) -> Option<f64> {
    (ns > 0).then(|| n as f64 * 1e9 / ns as f64)
}

impl Phases {
    /// Adds one request's phases to a request test's sums.
    pub fn add(&mut self, p: &Phases) {
        self.t_pp_ns += p.t_pp_ns;
        self.t_tg_ns += p.t_tg_ns;
        self.t_ns += p.t_ns;
        self.n_pp += p.n_pp;
        self.n_tg += p.n_tg;
        self.n_out += p.n_out;
        self.engine_ns += p.engine_ns;
    }

    /// S_PP, S_TG, S as llama-batched-bench prints them, plus the output rate.
    pub fn figures(&self) -> RepFigures {
        RepFigures {
            t_pp_ms: Some(self.t_pp_ns as f64 / MS),
            t_tg_ms: Some(self.t_tg_ns as f64 / MS),
            t_ms: self.t_ns as f64 / MS,
            aggregate_pp_ts: rate(self.n_pp, self.t_pp_ns),
            aggregate_ts: rate(self.n_tg, self.t_tg_ns).filter(|_| self.n_tg > 0),
            total_ts: rate(self.n_pp + self.n_tg, self.t_pp_ns + self.t_tg_ns),
            output_ts: rate(self.n_out, self.t_ns).unwrap_or(0.0),
            overhead_ms: self.t_ns.saturating_sub(self.engine_ns) as f64 / MS,
            idle_ms: None,
        }
    }
}

/// Figures of a whole arrival run: rates over the whole time only; the overhead excludes
/// `idle_ns`, the time spent waiting for requests.
pub fn arrival_figures(
    t_ns: u64,
    n_out: u64,
    n_tokens: u64,
    engine_ns: u64,
    idle_ns: u64,
) -> RepFigures {
    RepFigures {
        t_pp_ms: None,
        t_tg_ms: None,
        t_ms: t_ns as f64 / MS,
        aggregate_pp_ts: None,
        aggregate_ts: rate(n_out, t_ns),
        total_ts: rate(n_tokens, t_ns),
        output_ts: rate(n_out, t_ns).unwrap_or(0.0),
        overhead_ms: t_ns.saturating_sub(engine_ns + idle_ns) as f64 / MS,
        idle_ms: Some(idle_ns as f64 / MS),
    }
}

pub use crate::plan::serving::n_kv;

pub fn mean_of(xs: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = xs.into_iter().flatten().collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Whether a test meets the targets: TTFT and time per output token at the percentile.
pub fn meets(targets: &Targets, ttft_ms: &Dist, tpot_ms: &Dist) -> bool {
    let q = targets.percentile;
    let ttft_ok = targets
        .ttft_ms
        .is_none_or(|y| ttft_ms.n > 0 && ttft_ms.at(q) <= y);
    let rate_ok = targets
        .per_request_ts
        .is_none_or(|x| tpot_ms.n > 0 && tpot_ms.at(q) > 0.0 && 1000.0 / tpot_ms.at(q) >= x);
    ttft_ok && rate_ok
}

/// The index into `points` (load, meets) of the largest load that meets the targets.
pub fn capacity(points: &[(f64, bool)]) -> Option<usize> {
    points
        .iter()
        .enumerate()
        .filter(|(_, p)| p.1)
        .max_by(|a, b| a.1.0.total_cmp(&b.1.0))
        .map(|(i, _)| i)
}

/// Cost of a million generated tokens at `output_ts` on a machine priced per hour.
pub fn cost_per_mtok(price_per_hour: f64, output_ts: f64) -> Option<f64> {
    (output_ts > 0.0).then(|| price_per_hour / (output_ts * 3600.0) * 1e6)
}

/// Poisson arrivals: offsets (ns) of `n` requests at `rate` per second, the first at 0.
pub fn poisson_offsets(n: usize, rate: f64, seed: u64) -> Vec<u64> {
    let mut rng = crate::util::rng::SplitMix64(seed);
    let mut t = 0.0f64;
    (0..n)
        .map(|i| {
            if i > 0 {
                // u in (0, 1]: -ln(u) is finite.
                let u = ((rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
                t += -u.ln() / rate;
            }
            (t * 1e9).round() as u64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_hold_ordered_percentiles() {
        let d = dist(&[3.0, 1.0, 2.0, 100.0]);
        assert!(d.min <= d.p50 && d.p50 <= d.p90 && d.p90 <= d.p99 && d.p99 <= d.max);
        assert_eq!((d.n, d.min, d.max, d.mean), (4, 1.0, 100.0, 26.5));
        assert_eq!(dist(&[]), Dist::default());
        assert_eq!(dist(&[7.0]).p99, 7.0);
    }

    fn trace(arrival: u64, tokens: &[u64]) -> Trace {
        Trace {
            arrival_ns: arrival,
            admitted_ns: arrival,
            n_prompt: 4,
            token_ns: tokens.to_vec(),
            tokens: vec![0; tokens.len()],
        }
    }

    #[test]
    fn a_trace_gives_ttft_itl_e2e_and_decode_rate() {
        // arrives at 1 ms; tokens at 11, 13, 16, 21 ms
        let t = trace(1_000_000, &[11_000_000, 13_000_000, 16_000_000, 21_000_000]);
        assert_eq!(t.ttft_ns(), Some(10_000_000));
        assert_eq!(t.e2e_ns(), Some(20_000_000));
        assert_eq!(
            t.itl_ns().collect::<Vec<_>>(),
            [2_000_000, 3_000_000, 5_000_000]
        );
        // 3 tokens after the first in 10 ms
        assert!((t.decode_ts().unwrap() - 300.0).abs() < 1e-9);
        assert!((t.tpot_ms().unwrap() - 10.0 / 3.0).abs() < 1e-9);
        assert_eq!(
            trace(0, &[5]).decode_ts(),
            None,
            "one token: no decode rate"
        );
        let l = latencies([&t, &trace(0, &[5_000_000])]);
        assert_eq!(l.ttft_ms.n, 2);
        assert_eq!(l.itl_ms.n, 3);
        assert_eq!(l.tpot_ms.n, 1);
        assert!((l.per_request_ts.unwrap() - 300.0).abs() < 1e-9);
        let s = t.sample(2, 0);
        assert_eq!(
            (s.repetition, s.n_gen, s.ttft_ms, s.e2e_ms),
            (2, 4, 10.0, 20.0)
        );
    }

    #[test]
    fn phases_give_batched_bench_figures() {
        let p = Phases {
            t_pp_ns: 500_000_000,
            t_tg_ns: 2_000_000_000,
            t_ns: 2_600_000_000,
            n_pp: 4 * 128,
            n_tg: 4 * 64,
            n_out: 4 * 65,
            engine_ns: 2_500_000_000,
        };
        let f = p.figures();
        assert_eq!(f.aggregate_pp_ts, Some(1024.0));
        assert_eq!(f.aggregate_ts, Some(128.0));
        assert!((f.total_ts.unwrap() - 768.0 / 2.5).abs() < 1e-9);
        assert!((f.output_ts - 260.0 / 2.6).abs() < 1e-9);
        assert!((f.overhead_ms - 100.0).abs() < 1e-9);
        let a = arrival_figures(10_000_000_000, 500, 1500, 4_000_000_000, 5_000_000_000);
        assert_eq!((a.aggregate_ts, a.total_ts), (Some(50.0), Some(150.0)));
        assert!(
            (a.overhead_ms - 1000.0).abs() < 1e-9,
            "waiting is not overhead"
        );
        assert_eq!(a.idle_ms, Some(5000.0));
        let none = Phases::default().figures();
        assert_eq!((none.aggregate_ts, none.total_ts), (None, None));
    }

    #[test]
    fn n_kv_follows_batched_bench() {
        assert_eq!(n_kv(128, 64, 4, false, false), 4 * 192);
        assert_eq!(n_kv(128, 64, 4, true, true), 128 + 4 * 64);
        assert_eq!(n_kv(128, 64, 4, true, false), 4 * 128 + 4 * 64);
    }

    #[test]
    fn targets_capacity_and_cost() {
        let t = Targets {
            per_request_ts: Some(20.0),
            ttft_ms: Some(100.0),
            percentile: 90,
        };
        let ok_ttft = dist(&[50.0, 60.0, 90.0]);
        let slow_ttft = dist(&[50.0, 60.0, 900.0]);
        let fast = dist(&[40.0, 45.0, 49.0]); // ms per token: ≥ 20 t/s
        let slow = dist(&[40.0, 45.0, 60.0]);
        assert!(meets(&t, &ok_ttft, &fast));
        assert!(!meets(&t, &slow_ttft, &fast));
        assert!(!meets(&t, &ok_ttft, &slow));
        assert!(!meets(&t, &Dist::default(), &fast), "no data fails");
        let loose = Targets {
            per_request_ts: None,
            ttft_ms: None,
            percentile: 50,
        };
        assert!(meets(&loose, &slow_ttft, &slow));
        let points = [(1.0, true), (2.0, true), (4.0, false), (8.0, true)];
        assert_eq!(capacity(&points), Some(3));
        assert_eq!(capacity(&[(1.0, false)]), None);
        // $3.60 per hour at 100 t/s: 360 000 tokens an hour, $10 per million
        assert!((cost_per_mtok(3.6, 100.0).unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(cost_per_mtok(3.6, 0.0), None);
    }

    #[test]
    fn poisson_offsets_are_seeded_increasing_and_have_the_right_rate() {
        let a = poisson_offsets(2000, 4.0, 7);
        assert_eq!(a, poisson_offsets(2000, 4.0, 7));
        assert_ne!(a, poisson_offsets(2000, 4.0, 8));
        assert_eq!(a[0], 0);
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        // mean gap 0.25 s; 1999 gaps: the standard error is about 0.0056 s
        let mean_gap = a[1999] as f64 / 1e9 / 1999.0;
        assert!((mean_gap - 0.25).abs() < 0.03, "{mean_gap}");
    }
}
