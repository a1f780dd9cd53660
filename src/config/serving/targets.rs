//! The `targets` table of `[serving]`: the service-level targets a serving test is checked
//! against, with the same file-line-key errors as the rest of the table.

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::k;
use crate::config::{ConfigError, Ctx};

/// `targets = { per_request_ts = 20, ttft_ms = 500, percentile = 90 }` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTargets {
    per_request_ts: Option<Spanned<f64>>,
    ttft_ms: Option<Spanned<f64>>,
    percentile: Option<Spanned<u32>>,
}

pub(super) fn targets(ctx: &Ctx, raw: &Spanned<RawTargets>) -> Result<Targets, ConfigError> {
    let r = raw.get_ref();
    let positive = |v: &Option<Spanned<f64>>, name: &str| match v {
        None => Ok(None),
        Some(v) if *v.get_ref() > 0.0 && v.get_ref().is_finite() => Ok(Some(*v.get_ref())),
        Some(v) => {
            let msg = format!("{} is not a positive number", v.get_ref());
            Err(ctx.err(v.span(), &k(&format!("targets.{name}")), msg))
        }
    };
    let percentile = match &r.percentile {
        None => 90,
        Some(p) if matches!(p.get_ref(), 50 | 90 | 99) => *p.get_ref(),
        Some(p) => {
            let msg = "must be 50, 90 or 99";
            return Err(ctx.err(p.span(), &k("targets.percentile"), msg));
        }
    };
    Ok(Targets {
        per_request_ts: positive(&r.per_request_ts, "per_request_ts")?,
        ttft_ms: positive(&r.ttft_ms, "ttft_ms")?,
        percentile,
    })
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Targets {
    /// Each request must stream at least this many tokens/s after its first token.
    pub per_request_ts: Option<f64>,
    /// Each request must see its first token within this many milliseconds.
    pub ttft_ms: Option<f64>,
    /// Share of requests that must meet both (50, 90 or 99): the checks are TTFT at this
    /// percentile and time per output token at this percentile (the slow tail).
    pub percentile: u32,
}
