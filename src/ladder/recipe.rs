//! A ladder's recipe variants (`config::recipe`): checked against the base before anything
//! runs, named in the cache by a hash of what they are built from (the resolved overrides and
//! the imatrix's identity), and built: the imatrix read, or computed from its text once and
//! cached beside the variants in llama-imatrix's format, then llama.cpp's quantizer.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::config::ladder::Ladder;
use crate::config::recipe::{ImatrixSource, RecipeVariant};
use crate::engine::imatrix::{ComputeParams, Imatrix, compute};
use crate::engine::quantize::{Overrides, overrides_for};
use crate::ladder::Reporter;
use crate::ladder::cache::BaseInfo;
use crate::ladder::error::{LadderError, input};
use crate::record::RecipeRecord;
use crate::util::hash::sha256_hex;
use crate::util::system::sha256_file;

/// A recipe variant resolved against its base: what it is built from and where it goes.
pub struct Resolved {
    pub path: PathBuf,
    pub overrides: Overrides<'static>,
    /// The imatrix file (given, or where the computed one is cached).
    pub imatrix: Option<PathBuf>,
    pub record: RecipeRecord,
}

/// Checks recipe `v` of ladder `l` on its base and resolves it; reads no model weights.
/// The error names the variant: a pattern that matches no tensor, a template or an imatrix
/// of another model, a file that cannot be read.
pub fn resolve(l: &Ladder, v: &RecipeVariant, base: &BaseInfo) -> Result<Resolved, LadderError> {
    let name = format!("{}-{}", l.name, v.name);
    let fail = |why: String| LadderError::Variant {
        name: name.clone(),
        why,
    };
    let overrides = overrides_for(&v.recipe, &base.header).map_err(|e| fail(e.to_string()))?;
    let hash = |p: &Path| sha256_file(p).map_err(|e| fail(format!("{}: {e}", p.display())));
    let short: String = base.sha256.chars().take(16).collect();
    let mut record = RecipeRecord {
        name: v.name.clone(),
        overrides: v.recipe.overrides_text(),
        ..Default::default()
    };
    let (imatrix, identity) = match &v.recipe.imatrix {
        None => (None, String::new()),
        Some(ImatrixSource::File(p)) => {
            let m = Imatrix::read(p).map_err(|e| fail(e.to_string()))?;
            m.check_model(&base.header)
                .map_err(|why| fail(format!("imatrix {}: {why}", p.display())))?;
            let sha = hash(p)?;
            record.imatrix_sha256 = Some(sha.clone());
            record.imatrix_text = m.datasets.first().cloned();
            (Some(p.clone()), sha)
        }
        Some(ImatrixSource::Text {
            text,
            n_ctx,
            n_chunks,
        }) => {
            let sha = hash(text)?;
            let identity = format!("{sha} ctx {n_ctx} chunks {n_chunks:?}");
            let key: String = sha256_hex(&identity).chars().take(12).collect();
            record.imatrix_text = text.file_name().map(|f| f.to_string_lossy().into_owned());
            record.imatrix_text_sha256 = Some(sha);
            let cached = l.cache_dir.join(format!("{short}-imatrix-{key}.gguf"));
            (Some(cached), identity)
        }
    };
    let o = &overrides;
    let what = format!(
        "{} {:?} {:?} {:?} {} {identity}",
        v.quant.name, o.tensor_types, o.output, o.token_embd, o.pure
    );
    let key: String = sha256_hex(what).chars().take(12).collect();
    Ok(Resolved {
        path: l.cache_dir.join(format!("{short}-{}-{key}.gguf", v.name)),
        overrides,
        imatrix,
        record,
    })
}

/// Returns the cached variant or builds it (its imatrix first, when computed from a text);
/// the record's imatrix hash is that of the file the quantizer was given.
pub fn build(
    l: &Ladder,
    v: &RecipeVariant,
    base: &BaseInfo,
    n_threads: u32,
    tag: &str,
    rep: &Reporter,
) -> Result<(PathBuf, RecipeRecord), LadderError> {
    let mut r = resolve(l, v, base)?;
    let imatrix = match (&r.imatrix, &v.recipe.imatrix) {
        (
            Some(p),
            Some(ImatrixSource::Text {
                text,
                n_ctx,
                n_chunks,
            }),
        ) => {
            if Imatrix::read(p).is_err() {
                let params = ComputeParams {
                    text: std::fs::read_to_string(text).map_err(|cause| LadderError::EvalText {
                        path: text.clone(),
                        cause,
                    })?,
                    dataset: text.display().to_string(),
                    n_ctx: *n_ctx,
                    n_chunks: *n_chunks,
                    n_threads,
                };
                compute_to(l, base, &params, p, tag, rep)?;
            }
            let sha = sha256_file(p).map_err(|e| input(p, e))?;
            r.record.imatrix_sha256 = Some(sha);
            Some(Imatrix::read(p)?)
        }
        (Some(p), _) => Some(Imatrix::read(p)?),
        _ => None,
    };
    let o = Overrides {
        imatrix: imatrix.as_ref(),
        ..r.overrides.clone()
    };
    let path = super::build_variant(base, l, v.quant, Some((&r.path, &o)), n_threads, tag, rep)?;
    Ok((path, r.record))
}

/// Computes the imatrix of `base` over `p`'s text into `dest` (written whole, then renamed).
fn compute_to(
    l: &Ladder,
    base: &BaseInfo,
    p: &ComputeParams,
    dest: &Path,
    tag: &str,
    rep: &Reporter,
) -> Result<(), LadderError> {
    let start = Instant::now();
    let load = crate::ladder::quality::load_params(l);
    let m = compute(&base.path, &load, p, &mut |c, n| {
        rep.status(&format!("{tag}: imatrix chunk {c}/{n}"));
    })?;
    super::cache::create_dir(&l.cache_dir)?;
    let tmp = dest.with_extension(format!("tmp{}", std::process::id()));
    super::cache::via_tmp(dest, &tmp, |tmp| Ok(m.write(tmp)?))?;
    let secs = start.elapsed().as_secs_f64();
    rep.line(&format!("{tag}: imatrix {} ({secs:.1} s)", dest.display()));
    Ok(())
}
