//! The parts of `[tune]` about latency: the goodput objective, which serves
//! `[serving]`'s requests at one load and counts the ones that meet `[serving] slo`, and the
//! TTFT/ITL limits of a llama-bench objective. The SLO is `[serving]`'s own (`Slo`), parsed
//! there once: a race reads it rather than keeping a second copy.

use toml::Spanned;

use crate::config::serving::{ServingConfig, Slo};
use crate::config::values::{float_opt, once_each};
use crate::config::{ConfigError, Ctx};

use super::Objective;

/// The goodput objective: every candidate serves `[serving]`'s requests at one Poisson rate
/// in `slots` sequences at once, and its figure per round is its goodput, the requests that
/// meet the SLO per second (vLLM's `bench serve --goodput`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GoodputObjective {
    pub slo: Slo,
    /// Poisson arrivals, requests per second (`[serving] arrival_rate`, one value).
    pub rate: f64,
    /// Sequences decoded at once, the concurrency: `[tune] slots`, a candidate axis (each
    /// value with every configuration of the sweep), else `[serving] slots`.
    pub slots: Vec<u32>,
    /// Requests per round (`[serving] n_requests`).
    pub n_requests: u32,
    /// "pp128+tg64" (synthetic prompts) or the prompt file's name.
    pub workload: String,
}

impl GoodputObjective {
    /// "goodput at 4 req/s, 16 requests pp64+tg32, 4 slots: TTFT ≤ 500 ms, ITL ≤ 50 ms for 90%".
    pub fn describe(&self) -> String {
        let (rate, n, workload) = (self.rate, self.n_requests, &self.workload);
        let (slots, slo) = (describe_slots(&self.slots), describe_slo(&self.slo));
        format!("goodput at {rate} req/s, {n} requests {workload}, {slots}: {slo}")
    }
}

/// "4 slots", or "slots 2/4/8" when they are a candidate axis.
pub fn describe_slots(slots: &[u32]) -> String {
    match slots {
        [s] => format!("{s} slots"),
        v => {
            let v: Vec<String> = v.iter().map(u32::to_string).collect();
            format!("slots {}", v.join("/"))
        }
    }
}

/// "TTFT ≤ 500 ms, ITL ≤ 50 ms for 90% of requests".
pub fn describe_slo(s: &Slo) -> String {
    let limit = |(name, v): (&str, Option<f64>)| Some(format!("{name} ≤ {} ms", v?));
    let parts = [("TTFT", s.ttft_ms), ("ITL", s.itl_ms), ("E2E", s.e2e_ms)].map(limit);
    let parts: Vec<String> = parts.into_iter().flatten().collect();
    let share = s.attainment * 100.0;
    format!("{} for {share}% of requests", parts.join(", "))
}

/// The latency limits of a llama-bench objective: a raced candidate whose `quantile` of
/// its measured repetitions breaks one is excluded from the answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyLimits {
    /// A ppN objective: its prefill's time, the TTFT of an N-token prompt less sampling.
    pub max_ttft_ms: Option<f64>,
    /// A tgN objective: its repetition's time over N, the mean inter-token latency (TPOT).
    pub max_itl_ms: Option<f64>,
    /// Which quantile of the repetitions must stay within them (0.9 by default).
    pub quantile: f64,
}

impl LatencyLimits {
    pub const DEFAULT_QUANTILE: f64 = 0.9;

    pub fn any(&self) -> bool {
        self.max_ttft_ms.is_some() || self.max_itl_ms.is_some()
    }
}

type V = Option<Spanned<toml::Value>>;

/// `objective = "goodput"`: its SLO and load from `[serving]`; `at` is the objective's span.
pub(super) fn goodput(
    ctx: &Ctx,
    at: std::ops::Range<usize>,
    serving: Option<&ServingConfig>,
    slots: &V,
) -> Result<(GoodputObjective, Objective), ConfigError> {
    let key = "tune.objective";
    let Some(sc) = serving else {
        let msg = "objective \"goodput\" serves [serving]'s requests under its slo: add a \
                   [serving] table with slo = { ttft_ms = 500, itl_ms = 50 } and one \
                   arrival_rate (docs/tune.md)";
        return Err(ctx.err(at, key, msg));
    };
    let Some(slo) = sc.slo.clone() else {
        let msg = "objective \"goodput\" counts the requests that meet [serving] slo, and \
                   there is none: add slo = { ttft_ms = 500, itl_ms = 50 } to [serving]";
        return Err(ctx.err(at, key, msg));
    };
    let rate = match sc.arrival_rate.as_slice() {
        [r] => *r,
        rates => {
            let msg = format!(
                "objective \"goodput\" races every candidate at one load, and [serving] \
                 arrival_rate has {} rates: give one (requests per second; a rate far above \
                 the server's sends them all at once)",
                rates.len()
            );
            return Err(ctx.err(at, key, msg));
        }
    };
    // One tg test of a request's context per candidate, for the limits that prune before the
    // race ("ppN+tgM" would plan two); a prompt file's requests count their output only.
    let prompt = if sc.dataset.is_some() { 0 } else { sc.n_prompt };
    let sizes = Objective {
        n_prompt: 0,
        n_gen: prompt + sc.n_gen,
        n_depth: 0,
    };
    let slots = once_each(ctx.int_list("tune.slots", slots, (1, 256), vec![sc.slots])?);
    let g = GoodputObjective {
        slo,
        rate,
        slots,
        n_requests: sc.n_requests,
        workload: sc.workload(),
    };
    Ok((g, sizes))
}

/// `max_ttft_ms`, `max_itl_ms` and `latency_quantile`, checked against the objective
/// (`goodput`, `decode`: the goodput or the speculative one): each limit needs an objective
/// that measures its latency, and the goodput objective's SLO is `[serving] slo`'s, so a
/// second threshold beside it is refused.
pub(super) fn latency(
    ctx: &Ctx,
    objective: &Objective,
    (goodput, decode): (bool, bool),
    (ttft, itl, quantile): (&V, &V, &V),
) -> Result<LatencyLimits, ConfigError> {
    let max_ttft_ms = float_opt(ctx, "tune.max_ttft_ms", ttft, 1e-3, 1e9)?;
    let max_itl_ms = float_opt(ctx, "tune.max_itl_ms", itl, 1e-3, 1e9)?;
    for (key, v) in [("max_ttft_ms", ttft), ("max_itl_ms", itl)] {
        let Some(v) = v else { continue };
        let what = if key == "max_ttft_ms" { "TTFT" } else { "ITL" };
        let msg = if decode {
            format!(
                "{key} limits a tgN or ppN objective's repetitions; objective \"speculative\" \
                 times whole generations of several prompts, not single tokens: remove it or \
                 race a \"tgN\" objective"
            )
        } else if goodput {
            format!(
                "the goodput objective's latencies are [serving] slo's; {key} limits a tgN or \
                 ppN objective: put the {what} threshold in slo"
            )
        } else if key == "max_itl_ms" && !(objective.n_prompt == 0 && objective.n_gen > 0) {
            format!(
                "max_itl_ms needs a decode objective \"tgN\" (its repetitions time N tokens \
                 one at a time); objective {objective} measures no inter-token latency"
            )
        } else if key == "max_ttft_ms" && !(objective.n_gen == 0 && objective.n_prompt > 0) {
            format!(
                "max_ttft_ms needs a prefill objective \"ppN\" (its repetitions time an \
                 N-token prompt's prefill); objective {objective} measures no time to first token"
            )
        } else {
            continue;
        };
        return Err(ctx.err(v.span(), &format!("tune.{key}"), msg));
    }
    let q = float_opt(ctx, "tune.latency_quantile", quantile, 0.01, 1.0)?;
    if let (Some(_), Some(v)) = (q, quantile)
        && max_ttft_ms.is_none()
        && max_itl_ms.is_none()
    {
        let msg = "latency_quantile says which quantile max_ttft_ms or max_itl_ms limits, and \
                   neither is given: add one or remove latency_quantile";
        return Err(ctx.err(v.span(), "tune.latency_quantile", msg));
    }
    Ok(LatencyLimits {
        max_ttft_ms,
        max_itl_ms,
        quantile: q.unwrap_or(LatencyLimits::DEFAULT_QUANTILE),
    })
}
