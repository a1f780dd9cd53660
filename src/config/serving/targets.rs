//! The `targets` table of `[serving]`: the service-level targets a serving test is checked
//! against, with the same file-line-key errors as the rest of the table.

use serde::Serialize;
use toml::Spanned;

use super::Ctx;
use crate::config::ConfigError;

pub(super) fn targets(
    ctx: &Ctx,
    v: &Spanned<toml::Value>,
    number: &dyn Fn(&toml::Value) -> Option<f64>,
) -> Result<Targets, ConfigError> {
    let table = v.get_ref().as_table().ok_or_else(|| {
        ctx.err(
            v.span(),
            "targets",
            "expected a table: { per_request_ts = 20, ttft_ms = 500 }",
        )
    })?;
    let mut t = Targets {
        per_request_ts: None,
        ttft_ms: None,
        percentile: 90,
    };
    for (k, x) in table {
        let key = format!("targets.{k}");
        match k.as_str() {
            "per_request_ts" | "ttft_ms" => {
                let n = number(x)
                    .filter(|n| *n > 0.0 && n.is_finite())
                    .ok_or_else(|| {
                        ctx.err(v.span(), &key, format!("{x} is not a positive number"))
                    })?;
                if k == "ttft_ms" {
                    t.ttft_ms = Some(n);
                } else {
                    t.per_request_ts = Some(n);
                }
            }
            "percentile" => match x.as_integer() {
                Some(q @ (50 | 90 | 99)) => t.percentile = q as u32,
                _ => return Err(ctx.err(v.span(), &key, "must be 50, 90 or 99")),
            },
            _ => {
                return Err(ctx.err(
                    v.span(),
                    &key,
                    "unknown key: use per_request_ts, ttft_ms and percentile",
                ));
            }
        }
    }
    Ok(t)
}

/// Service-level targets a serving test is checked against.
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
