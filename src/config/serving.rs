//! The `[serving]` table of models.toml: which serving tests to run, on every model. Parsed
//! from the same text as the rest of the file; mistakes name file, line and key.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::config::ConfigError;

mod slo;
mod targets;
pub use slo::{GoodputSearch, Slo};
pub use targets::Targets;
use targets::targets;

/// The kinds of serving test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// One request at a time: TTFT, inter-token latency, per-request decode rate.
    Request,
    /// B sequences decoded together, as llama-batched-bench.
    Parallel,
    /// Requests arriving at a Poisson rate, with continuous batching.
    Arrival,
    /// The highest arrival rate that meets the `slo` (issue 29): a search over `goodput`.
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

#[derive(Debug, Clone, PartialEq)]
pub struct ServingConfig {
    pub modes: Vec<Mode>,
    /// Synthetic prompt length and tokens to generate per request (without a dataset; with
    /// one, `n_gen` is the default of a prompt's `max_tokens`).
    pub n_prompt: u32,
    pub n_gen: u32,
    /// B values of the parallel test.
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServing {
    modes: V,
    n_prompt: V,
    n_gen: V,
    n_parallel: V,
    shared_prompt: V,
    kv_unified: V,
    repetitions: V,
    n_requests: V,
    arrival_rate: V,
    slots: V,
    dataset: V,
    chat_template: V,
    temperature: V,
    seed: V,
    targets: V,
    price_per_hour: V,
    slo: Option<slo::RawSlo>,
    goodput: Option<Spanned<slo::RawGoodput>>,
}

#[derive(Deserialize)]
struct Doc {
    serving: Option<Spanned<RawServing>>,
}

struct Ctx<'a> {
    file: &'a Path,
    src: &'a str,
}

impl Ctx<'_> {
    fn err(&self, span: Range<usize>, key: &str, message: impl Into<String>) -> ConfigError {
        let offset = span.start.min(self.src.len());
        ConfigError {
            file: self.file.to_path_buf(),
            line: Some(self.src[..offset].matches('\n').count() + 1),
            key: Some(format!("serving.{key}")),
            message: message.into(),
        }
    }
}

/// Parses the `[serving]` table of `src`, if there is one.
pub fn parse(file: &Path, src: &str) -> Result<Option<ServingConfig>, ConfigError> {
    let ctx = Ctx { file, src };
    let doc: Doc = toml::from_str(src).map_err(|e| {
        let message = e
            .message()
            .lines()
            .next()
            .unwrap_or("invalid TOML")
            .to_string();
        let (key, message) =
            match crate::config::unknown_key::unknown_key(src, e.span().map(|s| s.start), &message)
            {
                Some((key, message)) => (Some(key), message),
                None => (None, message),
            };
        ConfigError {
            file: file.to_path_buf(),
            line: e
                .span()
                .map(|s| src[..s.start.min(src.len())].matches('\n').count() + 1),
            key,
            message,
        }
    })?;
    let Some(raw) = doc.serving else {
        return Ok(None);
    };
    let table_span = raw.span();
    let r = raw.into_inner();
    let int = |v: &V, key: &str, min: i64, max: i64, default: i64| -> Result<i64, ConfigError> {
        let Some(v) = v else { return Ok(default) };
        let n = v.get_ref().as_integer().ok_or_else(|| {
            ctx.err(
                v.span(),
                key,
                format!("expected an integer, got {}", v.get_ref().type_str()),
            )
        })?;
        if n < min || n > max {
            return Err(ctx.err(
                v.span(),
                key,
                format!("{n} is out of range: must be between {min} and {max}"),
            ));
        }
        Ok(n)
    };
    let boolean = |v: &V, key: &str, default: bool| -> Result<bool, ConfigError> {
        match v {
            None => Ok(default),
            Some(v) => v.get_ref().as_bool().ok_or_else(|| {
                ctx.err(
                    v.span(),
                    key,
                    format!("expected true or false, got {}", v.get_ref().type_str()),
                )
            }),
        }
    };
    let number = |v: &toml::Value| v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
    let items = |v: &Spanned<toml::Value>, key: &str| -> Result<Vec<toml::Value>, ConfigError> {
        let items = match v.get_ref() {
            toml::Value::Array(a) => a.clone(),
            other => vec![other.clone()],
        };
        if items.is_empty() {
            return Err(ctx.err(v.span(), key, "the list is empty: give at least one value"));
        }
        Ok(items)
    };

    let n_prompt = int(&r.n_prompt, "n_prompt", 1, 1 << 20, 128)? as u32;
    let n_gen = int(&r.n_gen, "n_gen", 1, 1 << 20, 64)? as u32;
    let n_parallel = match &r.n_parallel {
        None => vec![1, 2, 4, 8],
        Some(v) => items(v, "n_parallel")?
            .iter()
            .map(|x| match x.as_integer() {
                Some(n @ 1..=256) => Ok(n as u32),
                _ => Err(ctx.err(
                    v.span(),
                    "n_parallel",
                    format!("{x} is not a sequence count between 1 and 256"),
                )),
            })
            .collect::<Result<_, _>>()?,
    };
    let shared_prompt = match &r.shared_prompt {
        None => vec![false],
        Some(v) => items(v, "shared_prompt")?
            .iter()
            .map(|x| {
                x.as_bool().ok_or_else(|| {
                    ctx.err(
                        v.span(),
                        "shared_prompt",
                        "expected true or false (or a list of them)",
                    )
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let arrival_rate = match &r.arrival_rate {
        None => vec![],
        Some(v) => items(v, "arrival_rate")?
            .iter()
            .map(|x| match number(x) {
                Some(f) if f > 0.0 && f.is_finite() && f <= 1e6 => Ok(f),
                _ => Err(ctx.err(
                    v.span(),
                    "arrival_rate",
                    format!("{x} is not a rate in requests per second (> 0)"),
                )),
            })
            .collect::<Result<_, _>>()?,
    };
    let modes = match &r.modes {
        None => {
            let mut m = vec![Mode::Request, Mode::Parallel];
            if !arrival_rate.is_empty() {
                m.push(Mode::Arrival);
            }
            m
        }
        Some(v) => {
            let mut m = Vec::new();
            for x in items(v, "modes")? {
                let mode =
                    match x.as_str() {
                        Some("request") => Mode::Request,
                        Some("parallel") => Mode::Parallel,
                        Some("arrival") => Mode::Arrival,
                        Some("goodput") => Mode::Goodput,
                        _ => return Err(ctx.err(
                            v.span(),
                            "modes",
                            format!(
                                "{x} is not a mode: use \"request\", \"parallel\", \"arrival\" or \"goodput\""
                            ),
                        )),
                    };
                if !m.contains(&mode) {
                    m.push(mode);
                }
            }
            if m.contains(&Mode::Arrival) && arrival_rate.is_empty() {
                return Err(ctx.err(
                    v.span(),
                    "modes",
                    "the arrival mode needs `arrival_rate` (requests per second)",
                ));
            }
            if m.contains(&Mode::Goodput) && r.slo.is_none() {
                return Err(ctx.err(
                    v.span(),
                    "modes",
                    "the goodput mode needs `slo` (per-request thresholds and an attainment)",
                ));
            }
            m
        }
    };
    let max_parallel = n_parallel.iter().copied().max().unwrap_or(1);
    let dataset = match &r.dataset {
        None => None,
        Some(v) => match v.get_ref().as_str() {
            Some(s) if !s.trim().is_empty() => {
                Some(file.parent().unwrap_or(Path::new(".")).join(s))
            }
            _ => return Err(ctx.err(v.span(), "dataset", "expected the path of a prompt file")),
        },
    };
    let chat_template = boolean(&r.chat_template, "chat_template", false)?;
    if chat_template && dataset.is_none() {
        let span = r
            .chat_template
            .as_ref()
            .map_or(table_span.clone(), |v| v.span());
        return Err(ctx.err(
            span,
            "chat_template",
            "the chat template applies to a `dataset`'s prompts: set one",
        ));
    }
    let temperature = match &r.temperature {
        None => 0.0,
        Some(v) => match number(v.get_ref()) {
            Some(t) if (0.0..=100.0).contains(&t) => t,
            _ => {
                return Err(ctx.err(
                    v.span(),
                    "temperature",
                    "expected a number between 0 (greedy) and 100",
                ));
            }
        },
    };
    let price_per_hour = match &r.price_per_hour {
        None => None,
        Some(v) => match number(v.get_ref()) {
            Some(p) if p >= 0.0 && p.is_finite() => Some(p),
            _ => {
                return Err(ctx.err(
                    v.span(),
                    "price_per_hour",
                    "expected a price per hour (a number ≥ 0)",
                ));
            }
        },
    };
    let targets = match &r.targets {
        None => None,
        Some(v) => Some(targets(&ctx, v, &number)?),
    };
    let slo = match &r.slo {
        None => None,
        Some(v) => Some(slo::slo(&ctx, v)?),
    };
    let n_requests = int(&r.n_requests, "n_requests", 1, 100_000, 8)? as u32;
    let goodput = slo::goodput(&ctx, r.goodput.as_ref(), n_requests)?;
    Ok(Some(ServingConfig {
        modes,
        n_prompt,
        n_gen,
        n_parallel,
        shared_prompt,
        kv_unified: boolean(&r.kv_unified, "kv_unified", false)?,
        repetitions: int(&r.repetitions, "repetitions", 1, 10_000, 3)? as u32,
        n_requests,
        arrival_rate,
        slots: int(&r.slots, "slots", 1, 256, max_parallel as i64)? as u32,
        dataset,
        chat_template,
        temperature,
        seed: r
            .seed
            .as_ref()
            .map(|_| int(&r.seed, "seed", 0, i64::MAX, 0))
            .transpose()?
            .map(|s| s as u64),
        targets,
        price_per_hour,
        slo,
        goodput,
    }))
}

#[cfg(test)]
mod tests;
