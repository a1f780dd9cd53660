//! The `[serving]` table of models.toml: which serving tests to run, on every model.
//! Deserialized with the rest of the file into [`RawServing`], then checked key by key with
//! the value checks `[sweep]` uses; mistakes name file, line and key.

use crate::config::Invalid;

use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use crate::config::values::{boolean, file_name, float_opt, int_or, list, once_each, scalar_int};
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

super::names::names!(Mode::name {
    Request = "request",
    Parallel = "parallel",
    Arrival = "arrival",
    Goodput = "goodput",
});

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
    pub goodput: GoodputSearch,
}

impl ServingConfig {
    /// The prompt file's name, or `pp<n_prompt>+tg<n_gen>` (synthetic prompts) without one.
    pub fn workload(&self) -> String {
        match &self.dataset {
            Some(p) => file_name(p),
            None => format!("pp{}+tg{}", self.n_prompt, self.n_gen),
        }
    }
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

fn mode(x: &toml::Value) -> Result<Mode, Invalid> {
    x.as_str().and_then(Mode::parse).ok_or_else(|| {
        Invalid(format!(
            "{x} is not a mode: use \"request\", \"parallel\", \"arrival\" or \"goodput\""
        ))
    })
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

/// Checks the table key by key in a fixed order: the first mistake is the one reported.
pub(crate) fn parse(ctx: &Ctx, raw: Spanned<RawServing>) -> Result<ServingConfig, ConfigError> {
    let table_span = raw.span();
    let r = raw.into_inner();
    let n_prompt = int_or(ctx, &k("n_prompt"), &r.n_prompt, (1, 1 << 20), 128)? as u32;
    let n_gen = int_or(ctx, &k("n_gen"), &r.n_gen, (1, 1 << 20), 64)? as u32;
    let n_parallel = ctx.int_list(&k("n_parallel"), &r.n_parallel, (1, 256), vec![1, 2, 4, 8])?;
    let shared_prompt = ctx.list_or(&k("shared_prompt"), &r.shared_prompt, vec![false], boolean)?;
    let arrival_rate = ctx.list_or(&k("arrival_rate"), &r.arrival_rate, vec![], rate)?;
    let modes = modes(ctx, &r, !arrival_rate.is_empty())?;
    let max_parallel = i64::from(n_parallel.iter().copied().max().unwrap_or(1));
    let (dataset, chat_template) = prompts(ctx, &r, table_span)?;
    let temperature = float_opt(ctx, &k("temperature"), &r.temperature, 0.0, 100.0)?;
    let price_per_hour = float_opt(ctx, &k("price_per_hour"), &r.price_per_hour, 0.0, 1e12)?;
    let targets = r.targets.as_ref().map(|t| targets::targets(ctx, t));
    let targets = targets.transpose()?;
    let slo = r.slo.as_ref().map(|v| slo::slo(ctx, v)).transpose()?;
    let n_requests = int_or(ctx, &k("n_requests"), &r.n_requests, (1, 100_000), 8)? as u32;
    let goodput = slo::goodput(ctx, r.goodput.as_ref(), n_requests)?;
    let seed = (r.seed.as_ref())
        .map(|v| scalar_int(ctx, &k("seed"), v, 0, i64::MAX).map(|s| s as u64))
        .transpose()?;
    Ok(ServingConfig {
        modes,
        n_prompt,
        n_gen,
        n_parallel,
        shared_prompt,
        kv_unified: r.kv_unified.unwrap_or(false),
        repetitions: int_or(ctx, &k("repetitions"), &r.repetitions, (1, 10_000), 3)? as u32,
        n_requests,
        arrival_rate,
        slots: int_or(ctx, &k("slots"), &r.slots, (1, 256), max_parallel)? as u32,
        dataset,
        chat_template,
        temperature: temperature.unwrap_or(0.0),
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
    let m = once_each(list(ctx, &k("modes"), v, mode)?);
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
    let dataset = (r.dataset.as_ref())
        .map(|d| ctx.path(&k("dataset"), d, "expected the path of a prompt file"))
        .transpose()?;
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
