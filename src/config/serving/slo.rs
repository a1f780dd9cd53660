//! `slo` and `goodput` in `[serving]`: per-request thresholds, the share of requests that
//! must meet them, and the bounds of the goodput search (docs/configuration.md).

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::k;
use crate::config::{ConfigError, Ctx};

/// Per-request thresholds: a request is good when it meets every threshold given; a test
/// meets the SLO when at least `attainment` of its requests are good.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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

#[derive(Deserialize)]
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

/// `ttft_p90_ms` → ("ttft", 90).
fn percentile_key(k: &str) -> Option<(&str, u32)> {
    let (metric, rest) = k.split_once("_p")?;
    let nn = rest.strip_suffix("_ms")?;
    let n: u32 = nn.parse().ok().filter(|_| nn.len() <= 2)?;
    (METRICS.contains(&metric) && (1..=99).contains(&n)).then_some((metric, n))
}

pub(super) fn slo(ctx: &Ctx, raw: &RawSlo) -> Result<Slo, ConfigError> {
    let mut s = Slo {
        ttft_ms: None,
        itl_ms: None,
        e2e_ms: None,
        attainment: DEFAULT_ATTAINMENT,
    };
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
        let (metric, nn) = match name.strip_suffix("_ms") {
            Some(m) if METRICS.contains(&m) => (m, None),
            _ => match percentile_key(name) {
                Some((m, n)) => (m, Some(n)),
                None => {
                    let known = ["ttft_ms", "itl_ms", "e2e_ms", "attainment", "ttft_p90_ms"];
                    return Err(ctx.err(v.span(), &key, unknown_slo_key(name, &known)));
                }
            },
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

fn unknown_slo_key(name: &str, known: &[&str]) -> String {
    crate::config::suggest::did_you_mean(name, known).unwrap_or_else(|| {
        format!(
            "unknown field `{name}`: use ttft_ms, itl_ms, e2e_ms (or <metric>_p<NN>_ms) and attainment"
        )
    })
}

pub(super) fn goodput(
    ctx: &Ctx,
    raw: Option<&Spanned<RawGoodput>>,
    n_requests: u32,
) -> Result<GoodputSearch, ConfigError> {
    let mut g = GoodputSearch {
        min_rate: 0.25,
        max_rate: 64.0,
        steps: 6,
        max_seconds: 600.0,
        n_requests,
    };
    let Some(raw) = raw else { return Ok(g) };
    let r = raw.get_ref();
    if let Some(v) = &r.min_rate {
        g.min_rate = *v.get_ref();
    }
    if let Some(v) = &r.max_rate {
        g.max_rate = *v.get_ref();
    }
    if !(g.min_rate > 0.0 && g.min_rate.is_finite()) {
        let span = r.min_rate.as_ref().map_or(raw.span(), |v| v.span());
        let msg = format!(
            "{} is not a rate: give requests per second above 0",
            g.min_rate
        );
        return Err(ctx.err(span, &k("goodput.min_rate"), msg));
    }
    if !(g.max_rate > g.min_rate && g.max_rate <= 1e6) {
        let span = r.max_rate.as_ref().map_or(raw.span(), |v| v.span());
        let msg = format!(
            "{} must be above min_rate ({}) and at most 1e6 requests per second",
            g.max_rate, g.min_rate
        );
        return Err(ctx.err(span, &k("goodput.max_rate"), msg));
    }
    if let Some(v) = &r.steps {
        g.steps = *v.get_ref();
        if !(1..=30).contains(&g.steps) {
            let msg = format!("{} is out of range: must be between 1 and 30", g.steps);
            return Err(ctx.err(v.span(), &k("goodput.steps"), msg));
        }
    }
    if let Some(v) = &r.max_seconds {
        g.max_seconds = *v.get_ref();
        if !(g.max_seconds > 0.0 && g.max_seconds.is_finite()) {
            let msg = format!(
                "{} is not a time budget: give seconds above 0",
                g.max_seconds
            );
            return Err(ctx.err(v.span(), &k("goodput.max_seconds"), msg));
        }
    }
    if let Some(v) = &r.n_requests {
        g.n_requests = *v.get_ref();
        if !(1..=100_000).contains(&g.n_requests) {
            let msg = format!(
                "{} is out of range: must be between 1 and 100000",
                g.n_requests
            );
            return Err(ctx.err(v.span(), &k("goodput.n_requests"), msg));
        }
    }
    Ok(g)
}
