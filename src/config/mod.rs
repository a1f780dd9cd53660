//! `models.toml`: the models and the sweep axes. Every mistake is reported with the file,
//! the line and the key, because a sweep that dies an hour in on a typo is the worst outcome.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

mod axis_values;
pub mod bench_args;
pub mod endpoint;
mod error;
pub(crate) mod knobs;
pub(crate) mod ladder;
pub(crate) mod names;
pub mod quant_types;
pub mod recipe;
pub(crate) mod serving;
mod settings;
pub mod speculative;
pub(crate) mod suggest;
pub(crate) mod synth_spec;
pub mod tokens;
pub mod tune;
pub(crate) mod unknown_key;
pub(crate) mod values;

pub(crate) use values::scalar_int;
use values::{int_or, list, scalar_float};

pub use axis_values::{FlashAttn, KV_TYPES, SplitMode};
pub use endpoint::{Api, Served, ServedDraft, ServerLaunch};
pub(crate) use error::Ctx;
pub use error::{ConfigError, Invalid};
pub use knobs::{Axes, TestParams};
pub use settings::{AutoRounds, MAX_ROUNDS, MAX_ROUNDS_RULE, RunSettings};
pub use tokens::PromptTokens;

#[derive(Debug, Clone, PartialEq)]
pub struct ModelEntry {
    pub name: String,
    /// The GGUF file, resolved against the directory of the config file. None: a served
    /// model only (`endpoint`), which gets no in-process tests.
    pub path: Option<PathBuf>,
    pub axes: Axes,
    /// `synth = "llama-3-8b:Q4_K_M"`: written by `tpsbench run` when `path` is missing.
    pub synth: Option<synth_spec::SynthSpec>,
    /// `endpoint` / `server`: the model is also (or only) reached over HTTP.
    pub served: Option<Served>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub file: PathBuf,
    pub settings: RunSettings,
    pub models: Vec<ModelEntry>,
    /// The `[serving]` table: serving tests run on every model; None without the table.
    pub serving: Option<crate::config::serving::ServingConfig>,
    /// `[[ladder]]` tables: variants built from a base file, with quality tests.
    pub ladders: Vec<ladder::Ladder>,
    /// The `[speculative]` table: drafters measured against plain decoding.
    pub speculative: Option<speculative::SpeculativeConfig>,
    /// The `[tune]` table: what `tpsbench tune` races for, within which limits.
    pub tune: Option<tune::Tune>,
    /// `[sweep] text`: the text of `tokens = "text"` tests (ShareGPT or a prompt file),
    /// resolved against the config's folder; read once by the runner.
    pub text: Option<PathBuf>,
}

type Axis = Option<Spanned<toml::Value>>;

const MODEL_NAME: (&str, &str) = ("model", "duplicate model name");

/// `RawSweep`, one sweep table (the global `[sweep]` or a model's `[model.sweep]`), and
/// `SWEEP_KEYS`, the names of its fields, which `flatten` hides from serde ("did you mean").
/// The keys of the parameter table (`config::knobs`) that are not fields land in `rest`; any
/// other key is refused there, as `deny_unknown_fields` would (it cannot go with `flatten`).
/// `tokens` (`random`, llama-bench's ids, and/or `text`) is an axis of the llama-bench tests;
/// `text`, the file `tokens = "text"` tests read, belongs to the top-level `[sweep]` only.
macro_rules! raw_sweep {
    ($($field:ident),* $(,)?) => {
        #[derive(Deserialize, Default)]
        pub(crate) struct RawSweep {
            $(pub(crate) $field: Axis,)*
            pub(crate) text: Option<Spanned<String>>,
            #[serde(flatten)]
            pub(crate) rest: std::collections::BTreeMap<String, toml::Value>,
        }

        pub(crate) const SWEEP_KEYS: &[&str] = &[$(stringify!($field),)* "text"];
    };
}

raw_sweep! {
    n_prompt, n_gen, n_depth, n_batch, n_ubatch, n_gpu_layers, split_mode, main_gpu, n_threads,
    flash_attn, type_k, type_v, no_kv_offload, warmup, repetitions, ci_target, max_repetitions,
    max_seconds, seed, rounds, max_rounds, max_rounds_seconds, tokens,
}

impl RawSweep {
    /// A typed parameter's value, with its place in the file (the others are in `rest`).
    fn axis(&self, k: &knobs::Knob) -> Option<&Spanned<toml::Value>> {
        match k.slot {
            knobs::Slot::Field(f) => (f.raw)(self),
            knobs::Slot::Map => None,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawModel {
    name: Spanned<String>,
    path: Option<Spanned<String>>,
    synth: Option<Spanned<String>>,
    sweep: Option<Spanned<RawSweep>>,
    endpoint: Option<Spanned<String>>,
    served_model: Option<Spanned<String>>,
    api: Option<Spanned<Api>>,
    request_timeout_s: Option<Spanned<f64>>,
    ca_file: Option<Spanned<String>>,
    server: Option<Spanned<endpoint::RawServer>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfig {
    sweep: Option<RawSweep>,
    #[serde(default)]
    model: Vec<RawModel>,
    #[serde(default)]
    ladder: Vec<ladder::RawLadder>,
    serving: Option<Spanned<serving::RawServing>>,
    speculative: Option<Spanned<speculative::RawSpeculative>>,
    tune: Option<Spanned<tune::RawTune>>,
}

pub fn load(file: &Path, physical_cores: u32) -> Result<Config, ConfigError> {
    let src = std::fs::read_to_string(file).map_err(|e| {
        let ctx = Ctx { file, src: "" };
        ctx.at(None, None, format!("cannot read the configuration: {e}"))
    })?;
    parse(file, &src, physical_cores)
}

/// Parses configuration text; `file` names it in errors and anchors relative model paths.
/// A configuration must define at least one test: a `[[model]]` sweep with a prompt or
/// generation size above 0, a `[serving]` table with models, or a `[[ladder]]`.
pub fn parse(file: &Path, src: &str, physical_cores: u32) -> Result<Config, ConfigError> {
    let ctx = Ctx { file, src };
    let raw: RawConfig = unknown_key::deserialize(&ctx)?;
    let (mut config, defaults) =
        parse_parts(&ctx, raw.sweep, raw.model, raw.serving, physical_cores)?;
    config.ladders = ladder::parse(&ctx, raw.ladder, &defaults)?;
    if let Some(s) = raw.speculative {
        config.speculative = Some(speculative::parse(&ctx, s, &config.ladders)?);
    }
    if let Some(t) = raw.tune {
        let span = t.span();
        let has_ladder = !config.ladders.is_empty();
        let tables = (config.serving.as_ref(), config.speculative.as_ref());
        config.tune = Some(tune::parse(&ctx, span, t.into_inner(), has_ladder, tables)?);
    }
    tokens::check_text(&ctx, &config)?;
    let sweeps = config
        .models
        .iter()
        .any(|m| m.path.is_some() && m.axes.n_prompt.iter().chain(&m.axes.n_gen).any(|&n| n > 0));
    let tables =
        (config.serving.is_some() || config.speculative.is_some()) && !config.models.is_empty();
    let served = config.models.iter().any(|m| m.served.is_some());
    if sweeps || tables || served || !config.ladders.is_empty() {
        return Ok(config);
    }
    if config.models.is_empty() {
        let msg = "nothing to measure: no [[model]] entries (add one with a name and a path) \
                   and no [[ladder]]";
        return Err(ctx.at(None, Some("model"), msg));
    }
    let msg = "nothing to measure: n_prompt and n_gen are all 0, and there is no [serving] \
               table or [[ladder]]";
    Err(ctx.err_at_key("n_prompt", "sweep.n_prompt", msg))
}

/// The configuration without its ladders (possibly without models) and the resolved
/// `[sweep]` axes, which ladders start from.
fn parse_parts(
    ctx: &Ctx,
    sweep: Option<RawSweep>,
    raw_models: Vec<RawModel>,
    raw_serving: Option<Spanned<serving::RawServing>>,
    physical_cores: u32,
) -> Result<(Config, Axes), ConfigError> {
    let mut defaults = Axes::llama_bench_defaults(physical_cores);
    let mut settings = RunSettings::LLAMA_BENCH;
    let mut text = None;
    if let Some(mut s) = sweep {
        apply_settings(ctx, &s, &mut settings)?;
        text = s
            .text
            .take()
            .map(|t| ctx.path("sweep.text", &t, "the text file's path is empty"))
            .transpose()?;
        apply_axes(ctx, "sweep", s, &mut defaults)?;
    }
    let mut models = Vec::new();
    for (i, m) in raw_models.into_iter().enumerate() {
        let entry = model_entry(ctx, &format!("model[{i}]"), m, &models, &defaults)?;
        models.push(entry);
    }
    let config = Config {
        file: ctx.file.to_path_buf(),
        settings,
        models,
        serving: raw_serving.map(|r| serving::parse(ctx, r)).transpose()?,
        ladders: Vec::new(),
        speculative: None,
        tune: None,
        text,
    };
    Ok((config, defaults))
}

/// One `[[model]]` entry; `earlier` are the entries before it (names are unique).
fn model_entry(
    ctx: &Ctx,
    key: &str,
    m: RawModel,
    earlier: &[ModelEntry],
    defaults: &Axes,
) -> Result<ModelEntry, ConfigError> {
    let taken = earlier.iter().map(|x| x.name.as_str());
    let name = unique_name(ctx, &format!("{key}.name"), &m.name, MODEL_NAME, taken)?;
    let path = (m.path.as_ref())
        .map(|p| ctx.path(&format!("{key}.path"), p, "the model path is empty"))
        .transpose()?;
    let synth = (m.synth.as_ref().map(|s| {
        let err = |e| ctx.err(s.span(), &format!("{key}.synth"), e);
        if m.path.is_none() {
            return Err(err(Invalid(
                "`synth` writes the model at `path`: set one".into(),
            )));
        }
        synth_spec::SynthSpec::parse(s.get_ref()).map_err(err)
    }))
    .transpose()?;
    let served = endpoint::served(ctx, key, &m)?;
    if m.path.is_none() && served.is_none() {
        let msg = "a model needs `path` (a GGUF file) or `endpoint` (a served model)";
        return Err(ctx.err(m.name.span(), &format!("{key}.path"), msg));
    }
    let mut axes = defaults.clone();
    if let Some(sweep) = m.sweep {
        model_sweep(ctx, key, sweep, &mut axes)?;
    }
    Ok(ModelEntry {
        name,
        path,
        axes,
        synth,
        served,
    })
}

/// A model's or ladder's `name`, trimmed, when it can name a folder and is not `taken`.
pub(crate) fn unique_name<'a>(
    ctx: &Ctx,
    key: &str,
    raw: &Spanned<String>,
    (what, duplicate): (&str, &str),
    mut taken: impl Iterator<Item = &'a str>,
) -> Result<String, ConfigError> {
    let name = values::folder_name(raw.get_ref(), what).map_err(|m| ctx.err(raw.span(), key, m))?;
    if taken.any(|t| t == name) {
        return Err(ctx.err(raw.span(), key, format!("{duplicate} {name:?}")));
    }
    Ok(name)
}

/// A `[model.sweep]` or `[ladder.sweep]` table onto `axes`: axes only, the run settings
/// being global.
pub(crate) fn model_sweep(
    ctx: &Ctx,
    key: &str,
    sweep: Spanned<RawSweep>,
    axes: &mut Axes,
) -> Result<(), ConfigError> {
    let span = sweep.span();
    let sweep = sweep.into_inner();
    if let Some(t) = &sweep.text {
        let msg = "`text` is read once for the whole run: set it in the top-level [sweep] table";
        return Err(ctx.err(t.span(), &format!("{key}.sweep.text"), msg));
    }
    for (k, v) in [
        ("warmup", &sweep.warmup),
        ("repetitions", &sweep.repetitions),
        ("seed", &sweep.seed),
        ("rounds", &sweep.rounds),
        ("max_rounds", &sweep.max_rounds),
        ("max_rounds_seconds", &sweep.max_rounds_seconds),
    ] {
        if v.is_some() {
            let msg = "run settings belong in the top-level [sweep] table";
            return Err(ctx.err(span.clone(), &format!("{key}.sweep.{k}"), msg));
        }
    }
    apply_axes(ctx, &format!("{key}.sweep"), sweep, axes)
}

/// `max_rounds` and `max_rounds_seconds`: the budget of `rounds = "auto"`, meaningless
/// without it.
fn apply_auto_budget(ctx: &Ctx, s: &RawSweep, out: &mut RunSettings) -> Result<(), ConfigError> {
    for (key, v) in [
        ("max_rounds", &s.max_rounds),
        ("max_rounds_seconds", &s.max_rounds_seconds),
    ] {
        if let (Some(v), None) = (v, &out.auto_rounds) {
            let msg = format!(
                "{key} is the budget of rounds = \"auto\"; set rounds = \"auto\" or remove it"
            );
            return Err(ctx.err(v.span(), &format!("sweep.{key}"), &msg));
        }
    }
    let Some(auto) = out.auto_rounds.as_mut() else {
        return Ok(());
    };
    if s.max_rounds.is_some() {
        auto.max_rounds = values::rounds(ctx, "sweep.max_rounds", &s.max_rounds, 0)?;
        auto.budget_given = true;
    }
    if let Some(v) = &s.max_rounds_seconds {
        auto.max_seconds = Some(scalar_float(ctx, "sweep.max_rounds_seconds", v, 1.0, 1e7)?);
        auto.budget_given = true;
    }
    out.rounds = auto.max_rounds;
    if !out.repetitions_given {
        out.repetitions = AutoRounds::REPETITIONS;
    }
    Ok(())
}

fn apply_settings(ctx: &Ctx, s: &RawSweep, out: &mut RunSettings) -> Result<(), ConfigError> {
    out.warmup = int_or(ctx, "sweep.warmup", &s.warmup, (0, 100), out.warmup.into())? as u32;
    if let Some(v) = &s.repetitions {
        out.repetitions = scalar_int(ctx, "sweep.repetitions", v, 1, 10_000)? as u32;
        out.repetitions_given = true;
    }
    let seed = int_or(ctx, "sweep.seed", &s.seed, (0, i64::MAX), out.seed as i64)?;
    out.seed = seed as u64;
    if let Some(v) = &s.rounds {
        if v.get_ref().as_str() == Some("auto") {
            out.auto_rounds = Some(AutoRounds {
                max_rounds: AutoRounds::DEFAULT_MAX_ROUNDS,
                max_seconds: None,
                budget_given: false,
            });
        } else if v.get_ref().is_str() {
            return Err(ctx.err(v.span(), "sweep.rounds", "expected an integer or \"auto\""));
        } else {
            out.rounds = scalar_int(ctx, "sweep.rounds", v, 1, 10_000)? as u32;
        }
    }
    apply_auto_budget(ctx, s, out)?;
    out.ci_target = values::float_opt(ctx, "sweep.ci_target", &s.ci_target, 0.0001, 0.5)?;
    if let Some(v) = &s.max_repetitions {
        out.max_repetitions = scalar_int(ctx, "sweep.max_repetitions", v, 1, 100_000)? as u32;
    }
    if let Some(v) = &s.max_seconds {
        out.max_seconds = scalar_float(ctx, "sweep.max_seconds", v, 0.001, 1e7)?;
    }
    if out.ci_target.is_some() && out.max_repetitions < out.repetitions {
        let span = s.max_repetitions.as_ref().map(|v| v.span()).unwrap_or(0..0);
        let (max, reps) = (out.max_repetitions, out.repetitions);
        let msg = format!("max_repetitions ({max}) is below repetitions ({reps})");
        return Err(ctx.err(span, "sweep.max_repetitions", msg));
    }
    Ok(())
}

pub(crate) fn apply_axes(
    ctx: &Ctx,
    table: &str,
    s: RawSweep,
    out: &mut Axes,
) -> Result<(), ConfigError> {
    let k = |name: &str| format!("{table}.{name}");
    // Integer bounds are sanity limits that catch a typo (an extra zero) before llama.cpp
    // does; the typed axes keep their place in the file for the message.
    if let Some(v) = &s.tokens {
        out.tokens = list(ctx, &k("tokens"), v, PromptTokens::of_toml)?;
    }
    for p in knobs::PARAMS {
        if let Some(v) = s.axis(p) {
            let values = list(ctx, &k(p.name), v, |x| p.value(x))?;
            p.set_axis(out, values);
        }
    }
    for (name, v) in &s.rest {
        let key = k(name);
        let err = |message: String| ctx.err_at_key(name, &key, message);
        let Some(knob) = knobs::knob(name) else {
            let known = unknown_key::known_keys(&["sweep"]).unwrap_or(&[]);
            // As serde's own refusal words it.
            let all = known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>();
            let message = suggest::did_you_mean(name, known).unwrap_or_else(|| {
                format!("unknown field `{name}`, expected one of {}", all.join(", "))
            });
            return Err(err(message));
        };
        let vs = values::items(v).and_then(|x| x.into_iter().map(|x| knob.value(x)).collect());
        knob.set_axis(out, vs.map_err(|e| err(e.0))?);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
