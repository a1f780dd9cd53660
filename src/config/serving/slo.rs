//! `slo` and `goodput` in `[serving]`: per-request thresholds, the share of requests that
//! must meet them, and the bounds of the goodput search (docs/configuration.md).

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::k;
use crate::config::{ConfigError, Ctx};

/// Per-request thresholds: a request is good when it meets every threshold given; a test
/// meets the SLO when at least `attainment` of its requests are good.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Slo {
    /// Time to first token, milliseconds.
    pub ttft_ms: Option<f64>,
    /// Inter-token latency, milliseconds.
    pub itl_ms: Option<f64>,
    /// Whole request, milliseconds.
    pub e2e_ms: Option<f64>,
    /// Share of requests that must be good: 0 < attainment ≤ 1 (default 0.9).
    pub attainment: f64,
}

/// Bounds of the goodput search: a bisection on the Poisson arrival rate (requests/s) for
/// the highest rate that still meets the SLO.
#[derive(Debug, Clone, PartialEq)]
pub struct GoodputSearch {
    pub min_rate: f64,
    pub max_rate: f64,
    /// Bisection steps after the bounds are tried.
    pub steps: u32,
    /// Wall-clock budget of the whole search.
    pub max_seconds: f64,
    /// Requests per tried rate; default: `[serving] n_requests`.
    pub n_requests: u32,
}

/// `slo = { ... }`: metric keys are open-ended (`ttft_p90_ms`), so a map checked here.
pub(crate) type RawSlo = Spanned<BTreeMap<String, Spanned<f64>>>;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGoodput {
    min_rate: Option<Spanned<f64>>,
    max_rate: Option<Spanned<f64>>,
    steps: Option<Spanned<u32>>,
    max_seconds: Option<Spanned<f64>>,
    n_requests: Option<Spanned<u32>>,
}

const METRICS: [&str; 3] = ["ttft", "itl", "e2e"];
const DEFAULT_ATTAINMENT: f64 = 0.9;

/// `ttft_ms` → ("ttft", None), `ttft_p90_ms` → ("ttft", Some(90)).
fn metric_key(k: &str) -> Option<(&str, Option<u32>)> {
    let base = k.strip_suffix("_ms")?;
    let (metric, n) = match base.split_once("_p") {
        Some((m, nn)) => (m, Some(nn.parse().ok().filter(|_| nn.len() <= 2)?)),
        None => (base, None),
    };
    (METRICS.contains(&metric) && n.is_none_or(|n| (1..=99).contains(&n))).then_some((metric, n))
}

pub(super) fn slo(ctx: &Ctx, raw: &RawSlo) -> Result<Slo, ConfigError> {
    let mut s = Slo::default();
    // The attainment a percentile key sets, with the key, to check they all agree.
    let mut implied: Option<(String, u32)> = None;
    let mut explicit = None;
    for (name, v) in raw.get_ref() {
        let key = k(&format!("slo.{name}"));
        let x = *v.get_ref();
        if name == "attainment" {
            if !(x > 0.0 && x <= 1.0) {
                let msg = format!("{x} is not a share of requests: give 0 < attainment ≤ 1");
                return Err(ctx.err(v.span(), &key, msg));
            }
            explicit = Some(x);
            continue;
        }
        let Some((metric, nn)) = metric_key(name) else {
            let known = ["ttft_ms", "itl_ms", "e2e_ms", "attainment", "ttft_p90_ms"];
            let msg = crate::config::suggest::did_you_mean(name, &known).unwrap_or_else(|| {
                format!("unknown field `{name}`: use ttft_ms, itl_ms, e2e_ms (or <metric>_p<NN>_ms) and attainment")
            });
            return Err(ctx.err(v.span(), &key, msg));
        };
        if !(x > 0.0 && x.is_finite()) {
            let msg = format!("{x} is not a threshold: give milliseconds above 0");
            return Err(ctx.err(v.span(), &key, msg));
        }
        let slot = match metric {
            "ttft" => &mut s.ttft_ms,
            "itl" => &mut s.itl_ms,
            _ => &mut s.e2e_ms,
        };
        if slot.replace(x).is_some() {
            let msg = format!("the {metric} threshold is given twice");
            return Err(ctx.err(v.span(), &key, msg));
        }
        if let Some(n) = nn {
            match &implied {
                Some((other, m)) if *m != n => {
                    let msg = format!(
                        "p{n} disagrees with {other} (p{m}): one SLO has one attainment, \
                         so every percentile must be the same"
                    );
                    return Err(ctx.err(v.span(), &key, msg));
                }
                _ => implied = Some((name.clone(), n)),
            }
        }
    }
    if s.ttft_ms.is_none() && s.itl_ms.is_none() && s.e2e_ms.is_none() {
        let msg = "an SLO needs at least one threshold: ttft_ms, itl_ms or e2e_ms \
                   (or ttft_p90_ms ...)";
        return Err(ctx.err(raw.span(), &k("slo"), msg));
    }
    s.attainment = match (explicit, &implied) {
        (Some(a), Some((other, n))) if (a - f64::from(*n) / 100.0).abs() > 1e-9 => {
            let span = raw.get_ref()["attainment"].span();
            let msg = format!(
                "attainment {a} disagrees with {other} (p{n}): give one or make them equal"
            );
            return Err(ctx.err(span, &k("slo.attainment"), msg));
        }
        (Some(a), _) => a,
        (None, Some((_, n))) => f64::from(*n) / 100.0,
        (None, None) => DEFAULT_ATTAINMENT,
    };
    Ok(s)
}

pub(super) fn goodput(
    ctx: &Ctx,
    raw: Option<&Spanned<RawGoodput>>,
    n_requests: u32,
) -> Result<GoodputSearch, ConfigError> {
    let default = RawGoodput::default();
    let r = raw.map_or(&default, Spanned::get_ref);
    let or = |v: &Option<Spanned<f64>>, default| v.as_ref().map_or(default, |v| *v.get_ref());
    let g = GoodputSearch {
        min_rate: or(&r.min_rate, 0.25),
        max_rate: or(&r.max_rate, 64.0),
        steps: r.steps.as_ref().map_or(6, |v| *v.get_ref()),
        max_seconds: or(&r.max_seconds, 600.0),
        n_requests: r.n_requests.as_ref().map_or(n_requests, |v| *v.get_ref()),
    };
    // A key's own span, or the table's for a bound left at its default.
    let fail = |span: Option<std::ops::Range<usize>>, key: &str, msg: String| {
        let key = k(&format!("goodput.{key}"));
        let span = span.or_else(|| raw.map(Spanned::span));
        Err(ctx.err(span.unwrap_or_default(), &key, msg))
    };
    let span = |v: &Option<Spanned<f64>>| v.as_ref().map(Spanned::span);
    if !(g.min_rate > 0.0 && g.min_rate.is_finite()) {
        let msg = format!(
            "{} is not a rate: give requests per second above 0",
            g.min_rate
        );
        return fail(span(&r.min_rate), "min_rate", msg);
    }
    if !(g.max_rate > g.min_rate && g.max_rate <= 1e6) {
        let msg = format!(
            "{} must be above min_rate ({}) and at most 1e6 requests per second",
            g.max_rate, g.min_rate
        );
        return fail(span(&r.max_rate), "max_rate", msg);
    }
    if !(1..=30).contains(&g.steps) {
        let msg = format!("{} is out of range: must be between 1 and 30", g.steps);
        return fail(r.steps.as_ref().map(Spanned::span), "steps", msg);
    }
    if !(g.max_seconds > 0.0 && g.max_seconds.is_finite()) {
        let msg = format!(
            "{} is not a time budget: give seconds above 0",
            g.max_seconds
        );
        return fail(span(&r.max_seconds), "max_seconds", msg);
    }
    if !(1..=100_000).contains(&g.n_requests) {
        let msg = format!(
            "{} is out of range: must be between 1 and 100000",
            g.n_requests
        );
        return fail(r.n_requests.as_ref().map(Spanned::span), "n_requests", msg);
    }
    Ok(g)
}
