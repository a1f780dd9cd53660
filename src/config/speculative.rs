//! The `[speculative]` table of models.toml (docs/configuration.md shows it), checked key
//! by key with the value checks `[sweep]` uses; mistakes name file, line and key.

use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use crate::config::quant_types::QuantType;
use crate::config::values::{int_or, rounds, scalar_int};
use crate::config::{ConfigError, Ctx, Invalid};

/// A llama.cpp drafter type (common/speculative.h, `common_speculative_type`), named and
/// serialized as its `--spec-type` takes it, in its enum's order (the discriminant is the
/// enum value); `none` is plain decoding, a tune's candidate without a drafter.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Drafter {
    #[default]
    #[serde(rename = "none")]
    Plain,
    DraftSimple,
    DraftEagle3,
    DraftMtp,
    DraftDflash,
    DraftDspark,
    NgramSimple,
    NgramMapK,
    NgramMapK4v,
    NgramMod,
    NgramCache,
}

/// Plain decoding: not a `drafters` value, every speculative test is paired with it already.
pub const PLAIN: Drafter = Drafter::Plain;

super::names::names!(Drafter::name {
    Plain = "none",
    DraftSimple = "draft-simple",
    DraftEagle3 = "draft-eagle3",
    DraftMtp = "draft-mtp",
    DraftDflash = "draft-dflash",
    DraftDspark = "draft-dspark",
    NgramSimple = "ngram-simple",
    NgramMapK = "ngram-map-k",
    NgramMapK4v = "ngram-map-k4v",
    NgramMod = "ngram-mod",
    NgramCache = "ngram-cache",
});

impl Drafter {
    /// The types a `drafters` list takes: all but plain decoding.
    pub const TYPES: &[Drafter] = Drafter::ALL.split_at(1).1;

    /// Whether it runs a draft model that the user names (`draft`).
    pub fn needs_draft(self) -> bool {
        matches!(
            self,
            Drafter::DraftSimple
                | Drafter::DraftEagle3
                | Drafter::DraftDflash
                | Drafter::DraftDspark
        )
    }
}

/// A draft model: a ladder variant of the target's ladder (self-draft), or a file.
#[derive(Debug, Clone, PartialEq)]
pub enum DraftRef {
    /// A quantization label (`Q4_0`) of the ladder the target belongs to.
    Variant(String),
    /// A GGUF, resolved against the configuration's folder.
    File(PathBuf),
}

impl DraftRef {
    /// How ids and records name it: the label, or the file name.
    pub fn label(&self) -> String {
        match self {
            DraftRef::Variant(q) => q.clone(),
            DraftRef::File(p) => crate::config::values::file_name(p),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SpeculativeConfig {
    /// Model names or quantization labels whose tests get speculative tests; empty: every
    /// model with a file.
    pub targets: Vec<String>,
    /// The prompts: a ShareGPT JSON file or a prompt file (JSONL or one per line).
    pub dataset: PathBuf,
    /// Prompts sampled per test; each is generated plain and speculative once per round.
    pub n_prompts: u32,
    /// Tokens to generate per prompt (ShareGPT: at most this many; its own reply length
    /// caps it below, as vLLM samples it).
    pub n_gen: u32,
    /// Rounds, each plain and speculative over every prompt (their order alternating by
    /// round): the speedup's interval is between rounds.
    pub rounds: u32,
    pub seed: Option<u64>,
    pub drafters: Vec<Drafter>,
    pub draft: Vec<DraftRef>,
    /// K: most tokens drafted per step (every drafter's drafts are capped by it).
    pub draft_max: Vec<u32>,
    pub draft_min: Vec<u32>,
    pub p_min: Vec<f64>,
    pub draft_n_gpu_layers: Vec<i32>,
}

type V = Option<Spanned<toml::Value>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSpeculative {
    targets: V,
    dataset: Option<Spanned<String>>,
    n_prompts: V,
    n_gen: V,
    rounds: V,
    seed: V,
    drafters: V,
    draft: V,
    draft_max: V,
    draft_min: V,
    p_min: V,
    draft_n_gpu_layers: V,
}

fn k(name: &str) -> String {
    format!("speculative.{name}")
}

fn string(x: &toml::Value) -> Result<String, Invalid> {
    match x.as_str() {
        Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
        _ => Err(Invalid(format!("{x} is not a name"))),
    }
}

fn drafter(x: &toml::Value) -> Result<Drafter, Invalid> {
    let s = x.as_str().unwrap_or_default();
    if let Some(d) = Drafter::parse(s).filter(|d| *d != PLAIN) {
        return Ok(d);
    }
    let names: Vec<&str> = Drafter::TYPES.iter().map(|d| d.name()).collect();
    let near = crate::config::suggest::suggest(s, &names)
        .map(|c| format!(" (did you mean {c:?}?)"))
        .unwrap_or_default();
    Err(Invalid(format!(
        "{x} is not a drafter type of the pinned llama.cpp{near}: use one of {}",
        names.join(", ")
    )))
}

fn p_min(x: &toml::Value) -> Result<f64, Invalid> {
    match x.as_float().or_else(|| x.as_integer().map(|i| i as f64)) {
        Some(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(Invalid(format!("{x} is not a probability (0 to 1)"))),
    }
}

/// Checks the table key by key in a fixed order: the first mistake is the one reported.
pub(crate) fn parse(
    ctx: &Ctx,
    raw: Spanned<RawSpeculative>,
    ladders: &[crate::config::ladder::Ladder],
) -> Result<SpeculativeConfig, ConfigError> {
    let span = raw.span();
    let r = raw.into_inner();
    let Some(d) = &r.dataset else {
        let msg = "speculative tests need real text (random tokens are almost never accepted): \
                   set `dataset` to a ShareGPT JSON file (scripts/setup --dataset sharegpt) or a \
                   prompt file";
        return Err(ctx.err(span, &k("dataset"), msg));
    };
    let dataset = ctx.path(&k("dataset"), d, "expected the path of a prompt file")?;
    let n_prompts = int_or(ctx, &k("n_prompts"), &r.n_prompts, (1, 100_000), 4)? as u32;
    let n_gen = int_or(ctx, &k("n_gen"), &r.n_gen, (1, 1 << 16), 128)? as u32;
    let rounds = rounds(ctx, &k("rounds"), &r.rounds, 5)?;
    let seed = (r.seed.as_ref())
        .map(|v| scalar_int(ctx, &k("seed"), v, 0, i64::MAX).map(|s| s as u64))
        .transpose()?;
    let targets = ctx.list_or(&k("targets"), &r.targets, Vec::new(), string)?;
    let drafters = ctx.list_or(
        &k("drafters"),
        &r.drafters,
        vec![Drafter::DraftSimple],
        drafter,
    )?;
    Ok(SpeculativeConfig {
        targets,
        dataset,
        n_prompts,
        n_gen,
        rounds,
        seed,
        draft: drafts(ctx, (span, &r), ladders, &drafters)?,
        drafters,
        draft_max: ctx.int_list(&k("draft_max"), &r.draft_max, (1, 256), vec![4])?,
        draft_min: ctx.int_list(&k("draft_min"), &r.draft_min, (0, 256), vec![0])?,
        p_min: ctx.list_or(&k("p_min"), &r.p_min, vec![0.0], p_min)?,
        draft_n_gpu_layers: ctx.int_list(
            &k("draft_n_gpu_layers"),
            &r.draft_n_gpu_layers,
            (-1, 100_000),
            vec![-1],
        )?,
    })
}

/// The `draft` list: ladder variants of the target's ladder (a self-draft) or files; one is
/// needed when a drafter drafts with a draft model.
fn drafts(
    ctx: &Ctx,
    (span, r): (std::ops::Range<usize>, &RawSpeculative),
    ladders: &[crate::config::ladder::Ladder],
    drafters: &[Drafter],
) -> Result<Vec<DraftRef>, ConfigError> {
    let draft = ctx.list_or(&k("draft"), &r.draft, Vec::new(), |x| {
        string(x).map(|s| match QuantType::parse(&s).is_ok() {
            true => DraftRef::Variant(s),
            false => DraftRef::File(ctx.dir().join(s)),
        })
    })?;
    // A self-draft is a variant the ladder builds: its type must be one of a ladder's.
    let unbuilt = |d: &&DraftRef| match d {
        DraftRef::Variant(q) => !ladders.iter().any(|l| l.types.iter().any(|t| t.name == q)),
        DraftRef::File(_) => false,
    };
    if let (Some(v), Some(DraftRef::Variant(q))) = (&r.draft, draft.iter().find(unbuilt)) {
        let msg = format!(
            "{q} is a quantization type but no [[ladder]] builds it: add it to the target's \
             ladder `types`, or give the draft GGUF's path"
        );
        return Err(ctx.err(v.span(), &k("draft"), msg));
    }
    if let (true, Some(d)) = (draft.is_empty(), drafters.iter().find(|d| d.needs_draft())) {
        let at = r.drafters.as_ref().map_or(span, |v| v.span());
        let msg = format!(
            "{d} drafts with a draft model: name one in `draft` (a ladder type of the \
             target's ladder, such as \"Q4_0\", or a GGUF path)"
        );
        return Err(ctx.err(at, &k("draft"), msg));
    }
    Ok(draft)
}
