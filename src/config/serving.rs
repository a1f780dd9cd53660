//! The `[serving]` table of models.toml: which serving tests to run, on every model.
//! Deserialized with the rest of the file into [`RawServing`], then checked key by key with
//! the value checks `[sweep]` uses; mistakes name file, line and key.

use crate::config::Invalid;

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::config::values::{boolean, int_list, list, scalar_float, scalar_int};
use crate::config::{ConfigError, Ctx};

mod slo;
mod targets;
pub(crate) use slo::RawGoodput;
pub use slo::{GoodputSearch, Slo};
pub(crate) use targets::RawTargets;
pub use targets::Targets;

/// The kinds of serving test, recorded by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// One request at a time: TTFT, inter-token latency, per-request decode rate.
    Request,
    /// B sequences decoded together, as llama-batched-bench.
    Parallel,
    /// Requests arriving at a Poisson rate, with continuous batching.
    Arrival,
    /// The highest arrival rate that meets the `slo`: a search over `goodput`.
    Goodput,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Request => "request",
            Mode::Parallel => "parallel",
            Mode::Arrival => "arrival",
            Mode::Goodput => "goodput",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq<&str> for Mode {
    fn eq(&self, name: &&str) -> bool {
        self.name() == *name
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ServingConfig {
    pub modes: Vec<Mode>,
    /// Synthetic prompt length and tokens to generate per request (without a dataset; with
    /// one, `n_gen` is the default of a prompt's `max_tokens`).
    pub n_prompt: u32,
    pub n_gen: u32,
    pub n_parallel: Vec<u32>,
    pub shared_prompt: Vec<bool>,
    pub kv_unified: bool,
    pub repetitions: u32,
    /// Requests per request or arrival test.
    pub n_requests: u32,
    pub arrival_rate: Vec<f64>,
    /// Sequences the arrival test decodes at once; default: the largest n_parallel.
    pub slots: u32,
    /// Prompt file (JSONL or one prompt per line), resolved against the config's directory.
    pub dataset: Option<PathBuf>,
    pub chat_template: bool,
    /// 0 = greedy.
    pub temperature: f64,
    /// Seed of sampling, prompts and arrivals; default: `[sweep] seed`.
    pub seed: Option<u64>,
    pub targets: Option<Targets>,
    pub price_per_hour: Option<f64>,
    /// Per-request thresholds and the share of requests that must meet them; the goodput
    /// mode needs it.
    pub slo: Option<Slo>,
    /// Bounds of the goodput mode's search.
    pub goodput: GoodputSearch,
}

type V = Option<Spanned<toml::Value>>;

/// `[serving]` as written. Numbers and lists keep their span and value for the checks that
/// `[sweep]` shares; strings, booleans and tables are typed.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServing {
    modes: V,
    n_prompt: V,
    n_gen: V,
    n_parallel: V,
    shared_prompt: V,
    kv_unified: Option<bool>,
    repetitions: V,
    n_requests: V,
    arrival_rate: V,
    slots: V,
    dataset: Option<Spanned<String>>,
    chat_template: Option<Spanned<bool>>,
    temperature: V,
    seed: V,
    targets: Option<Spanned<RawTargets>>,
    price_per_hour: V,
    slo: Option<slo::RawSlo>,
    goodput: Option<Spanned<RawGoodput>>,
}

fn k(name: &str) -> String {
    format!("serving.{name}")
}

/// An integer key of `[serving]`: `default` when absent.
fn int(ctx: &Ctx, v: &V, name: &str, min: i64, max: i64, default: i64) -> Result<i64, ConfigError> {
    match v {
        None => Ok(default),
        Some(v) => scalar_int(ctx, &k(name), v, min, max),
    }
}

fn mode(x: &toml::Value) -> Result<Mode, Invalid> {
    match x.as_str() {
        Some("request") => Ok(Mode::Request),
        Some("parallel") => Ok(Mode::Parallel),
        Some("arrival") => Ok(Mode::Arrival),
        Some("goodput") => Ok(Mode::Goodput),
        _ => Err(Invalid(format!(
            "{x} is not a mode: use \"request\", \"parallel\", \"arrival\" or \"goodput\""
        ))),
    }
}

fn rate(x: &toml::Value) -> Result<f64, Invalid> {
    let r = x.as_float().or_else(|| x.as_integer().map(|i| i as f64));
    match r {
        Some(f) if f > 0.0 && f <= 1e6 => Ok(f),
        _ => Err(Invalid(format!(
            "{x} is not a rate in requests per second (> 0)"
        ))),
    }
}

/// Checks the `[serving]` table, key by key in a fixed order (the first mistake is the one
/// reported).
pub(crate) fn parse(ctx: &Ctx, raw: Spanned<RawServing>) -> Result<ServingConfig, ConfigError> {
    let table_span = raw.span();
    let r = raw.into_inner();
    let n_prompt = int(ctx, &r.n_prompt, "n_prompt", 1, 1 << 20, 128)? as u32;
    let n_gen = int(ctx, &r.n_gen, "n_gen", 1, 1 << 20, 64)? as u32;
    let n_parallel = match &r.n_parallel {
        None => vec![1, 2, 4, 8],
        Some(v) => int_list(ctx, &k("n_parallel"), v, 1, 256)?,
    };
    let shared_prompt = match &r.shared_prompt {
        None => vec![false],
        Some(v) => list(ctx, &k("shared_prompt"), v, boolean)?,
    };
    let arrival_rate = match &r.arrival_rate {
        None => vec![],
        Some(v) => list(ctx, &k("arrival_rate"), v, rate)?,
    };
    let modes = modes(ctx, &r, !arrival_rate.is_empty())?;
    let max_parallel = n_parallel.iter().copied().max().unwrap_or(1);
    let (dataset, chat_template) = prompts(ctx, &r, table_span)?;
    let temperature = match &r.temperature {
        None => 0.0,
        Some(v) => scalar_float(ctx, &k("temperature"), v, 0.0, 100.0)?,
    };
    let price_per_hour = r
        .price_per_hour
        .as_ref()
        .map(|v| scalar_float(ctx, &k("price_per_hour"), v, 0.0, 1e12))
        .transpose()?;
    let targets = r
        .targets
        .as_ref()
        .map(|t| targets::targets(ctx, t))
        .transpose()?;
    let slo = r.slo.as_ref().map(|v| slo::slo(ctx, v)).transpose()?;
    let n_requests = int(ctx, &r.n_requests, "n_requests", 1, 100_000, 8)? as u32;
    let goodput = slo::goodput(ctx, r.goodput.as_ref(), n_requests)?;
    let seed = r
        .seed
        .as_ref()
        .map(|v| scalar_int(ctx, &k("seed"), v, 0, i64::MAX).map(|s| s as u64))
        .transpose()?;
    Ok(ServingConfig {
        modes,
        n_prompt,
        n_gen,
        n_parallel,
        shared_prompt,
        kv_unified: r.kv_unified.unwrap_or(false),
        repetitions: int(ctx, &r.repetitions, "repetitions", 1, 10_000, 3)? as u32,
        n_requests,
        arrival_rate,
        slots: int(ctx, &r.slots, "slots", 1, 256, i64::from(max_parallel))? as u32,
        dataset,
        chat_template,
        temperature,
        seed,
        targets,
        price_per_hour,
        slo,
        goodput,
    })
}

/// `modes`, each once in the order given; by default request and parallel, and arrival when
/// there are arrival rates (`has_rates`). A mode without what it needs is refused.
fn modes(ctx: &Ctx, r: &RawServing, has_rates: bool) -> Result<Vec<Mode>, ConfigError> {
    let Some(v) = &r.modes else {
        let mut m = vec![Mode::Request, Mode::Parallel];
        if has_rates {
            m.push(Mode::Arrival);
        }
        return Ok(m);
    };
    let mut m: Vec<Mode> = Vec::new();
    for x in list(ctx, &k("modes"), v, mode)? {
        if !m.contains(&x) {
            m.push(x);
        }
    }
    if m.contains(&Mode::Arrival) && !has_rates {
        let msg = "the arrival mode needs `arrival_rate` (requests per second)";
        return Err(ctx.err(v.span(), &k("modes"), msg));
    }
    if m.contains(&Mode::Goodput) && r.slo.is_none() {
        let msg = "the goodput mode needs `slo` (per-request thresholds and an attainment)";
        return Err(ctx.err(v.span(), &k("modes"), msg));
    }
    Ok(m)
}

/// `dataset` (resolved against the config's folder) and `chat_template`, which applies to a
/// dataset's prompts only; `table_span` points at `[serving]` when the key has no span.
fn prompts(
    ctx: &Ctx,
    r: &RawServing,
    table_span: std::ops::Range<usize>,
) -> Result<(Option<PathBuf>, bool), ConfigError> {
    let dir = ctx.file.parent().unwrap_or(Path::new("."));
    let dataset = match &r.dataset {
        None => None,
        Some(d) if d.get_ref().trim().is_empty() => {
            return Err(ctx.err(
                d.span(),
                &k("dataset"),
                "expected the path of a prompt file",
            ));
        }
        Some(d) => Some(dir.join(d.get_ref())),
    };
    let chat_template = r.chat_template.as_ref().is_some_and(|c| *c.get_ref());
    if chat_template && dataset.is_none() {
        let span = r.chat_template.as_ref().map_or(table_span, |v| v.span());
        let msg = "the chat template applies to a `dataset`'s prompts: set one";
        return Err(ctx.err(span, &k("chat_template"), msg));
    }
    Ok((dataset, chat_template))
}

#[cfg(test)]
mod tests;
