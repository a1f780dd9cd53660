//! The quality of ladder variants, with llama-perplexity `--kl-divergence`'s definitions:
//! the reference variant's pass over the evaluation text (its log-probabilities spilled to
//! the cache directory), then one pass per variant compared with it.

use std::path::Path;
use std::time::Instant;

use super::Reporter;
use super::cache::BaseInfo;
use super::error::LadderError;
use super::eval::{self, Spill};
use crate::config::ladder::Ladder;
use crate::engine::LoadParams;
use crate::engine::llama::LlamaModel;
use crate::record::Quality;

/// Quality-side figures of one variant.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    pub quality: Option<Quality>,
    pub bytes_per_token: Option<f64>,
    pub ref_tokens_per_token: Option<f64>,
}

/// The evaluation text and where it came from.
struct EvalText {
    text: String,
    source: String,
    sha256: String,
}

fn sha256_hex(bytes: &[u8]) -> String {
    crate::util::hash::sha256_hex(bytes)
}

/// The configured text file, or text the reference writes (cached beside the variants).
fn eval_text(
    l: &Ladder,
    base: &BaseInfo,
    model: &LlamaModel,
    n_threads: u32,
    rep: &Reporter,
) -> Result<EvalText, LadderError> {
    if let Some(p) = &l.eval.text {
        let text = std::fs::read_to_string(p).map_err(|cause| LadderError::EvalText {
            path: p.clone(),
            cause,
        })?;
        return Ok(EvalText {
            sha256: sha256_hex(text.as_bytes()),
            source: format!("file:{}", p.display()),
            text,
        });
    }
    let e = &l.eval;
    // A margin over n_ctx × chunks: the text is tokenized again and may come out shorter.
    let n_new = (e.n_ctx * e.n_chunks + e.n_ctx / 4 + 16) as usize;
    let key =
        sha256_hex(format!("{}\n{}\n{}\n{}", l.reference.name, e.seed, n_new, e.prompt).as_bytes());
    let cached = l.cache_dir.join(format!(
        "{}-{}-text-{}.txt",
        &base.sha256[..16],
        l.reference.name,
        &key[..12]
    ));
    let source = format!(
        "generated:{}:seed={}:tokens={n_new}",
        l.variant_name(l.reference),
        e.seed
    );
    let text = match std::fs::read_to_string(&cached) {
        Ok(t) => {
            rep.line(&format!("[text] cached {}", cached.display()));
            t
        }
        Err(_) => {
            let start = Instant::now();
            let t =
                eval::generate_text(model, &e.prompt, n_new, e.seed, n_threads, &mut |d, n| {
                    rep.status(&format!(
                        "[text] generating with {}: {d}/{n} tokens",
                        l.variant_name(l.reference)
                    ));
                })?;
            write_text(&cached, &t)?;
            rep.line(&format!(
                "[text] {} generated {n_new} tokens (seed {}, {:.1} s) → {}",
                l.variant_name(l.reference),
                e.seed,
                start.elapsed().as_secs_f64(),
                cached.display()
            ));
            t
        }
    };
    Ok(EvalText {
        sha256: sha256_hex(text.as_bytes()),
        source,
        text,
    })
}

/// Writes the generated text under a temporary name, then renames it.
fn write_text(path: &Path, text: &str) -> Result<(), LadderError> {
    let tmp = path.with_extension("txt.tmp");
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|cause| LadderError::Write {
            path: path.to_path_buf(),
            cause,
        })
}

/// The reference pass of one ladder: what every variant is compared with.
pub struct Reference {
    n_ctx: u32,
    chunks: Vec<Vec<i32>>,
    spill: Spill,
    text_source: String,
    text_sha256: String,
    bytes_per_token: f64,
    ref_tokens_per_token: Option<f64>,
    /// The reference's own figures (KLD 0, its perplexity).
    pub own: Extras,
}

impl Reference {
    fn extras(&self, mut q: Quality) -> Extras {
        q.n_ctx = self.n_ctx;
        q.n_chunks = self.chunks.len() as u32;
        q.text_source = self.text_source.clone();
        q.text_sha256 = self.text_sha256.clone();
        Extras {
            quality: Some(q),
            bytes_per_token: Some(self.bytes_per_token),
            ref_tokens_per_token: self.ref_tokens_per_token,
        }
    }
}

/// Where the quality passes of ladder `l` put the model: the first value of each of its
/// model-level axes, as its first speed test loads it. Unconfigured, that is llama-bench's
/// `n_gpu_layers` 99 (every layer offloaded where a GPU is), what the passes always used.
pub fn load_params(l: &Ladder) -> LoadParams {
    LoadParams::with(|k| k.axis(&l.axes).into_iter().next())
}

/// Evaluates the reference variant (at `ref_path`) of ladder `l` over its evaluation text,
/// the model loaded with `load` (see [`load_params`]).
pub fn reference(
    l: &Ladder,
    base: &BaseInfo,
    ref_path: &Path,
    load: &LoadParams,
    n_threads: u32,
    rep: &Reporter,
) -> Result<Reference, LadderError> {
    let ref_name = l.variant_name(l.reference);
    let ref_model = LlamaModel::load(ref_path, load)?;
    let text = eval_text(l, base, &ref_model, n_threads, rep)?;
    let tokens = ref_model.tokenize(&text.text, true, false)?;
    let (n_ctx, n_chunks) = (l.eval.n_ctx as usize, l.eval.n_chunks as usize);
    let chunks = eval::chunks(&tokens, n_ctx, n_chunks, ref_model.bos());
    if chunks.is_empty() {
        return Err(LadderError::TextTooShort {
            ladder: l.name.clone(),
            tokens: tokens.len(),
            n_ctx,
        });
    }
    if chunks.len() < n_chunks {
        rep.warn(&format!(
            "ladder {}: the evaluation text holds {} chunks of {n_ctx} tokens, not {n_chunks}",
            l.name,
            chunks.len()
        ));
    }
    let plain_tokens = ref_model.tokenize(&text.text, false, false)?.len().max(1);
    let bytes_per_token = text.text.len() as f64 / plain_tokens as f64;
    let ref_tokens_per_token = match &l.tokenizer {
        Some(p) => Some(eval::count_reference_tokens(p, &text.text)? as f64 / plain_tokens as f64),
        None => None,
    };
    let start = Instant::now();
    let tag = format!("[quality] {ref_name}");
    let (spill, self_acc) =
        eval::reference_pass(&ref_model, &chunks, n_threads, &l.cache_dir, &mut |c, n| {
            rep.status(&format!("{tag}: chunk {c}/{n}"));
        })
        .map_err(LadderError::Reference)?;
    let q = self_acc.finish(&ref_name);
    rep.line(&format!(
        "{tag} (reference): {} tokens scored in {} chunks of {n_ctx}, PPL {:.4}, {:.3} bytes/token ({:.1} s)",
        q.n_tokens,
        chunks.len(),
        q.ppl,
        bytes_per_token,
        start.elapsed().as_secs_f64()
    ));
    let mut r = Reference {
        n_ctx: n_ctx as u32,
        chunks,
        spill,
        text_source: text.source,
        text_sha256: text.sha256,
        bytes_per_token,
        ref_tokens_per_token,
        own: Extras::default(),
    };
    r.own = r.extras(q);
    Ok(r)
}

/// Evaluates variant `name` (at `path`, loaded with `load`) against the reference.
pub fn variant(
    l: &Ladder,
    r: &Reference,
    name: &str,
    path: &Path,
    load: &LoadParams,
    n_threads: u32,
    rep: &Reporter,
) -> Result<Extras, LadderError> {
    let ref_name = l.variant_name(l.reference);
    let tag = format!("[quality] {name}");
    let start = Instant::now();
    let model = LlamaModel::load(path, load)?;
    let acc = eval::variant_pass(&model, &r.chunks, n_threads, &r.spill, &mut |c, n| {
        rep.status(&format!("{tag}: chunk {c}/{n}"));
    })
    .map_err(|why| LadderError::Variant {
        name: name.to_string(),
        why,
    })?;
    let q = acc.finish(&ref_name);
    rep.line(&format!(
        "{tag}: KLD {:.5} ± {:.5}, ln(PPL ratio) {:.4} ± {:.4}, same top p {:.2} % ({:.1} s)",
        q.kld_mean,
        q.kld_mean_uncertainty,
        q.ln_ppl_ratio,
        q.ln_ppl_ratio_uncertainty,
        100.0 * q.same_top_p,
        start.elapsed().as_secs_f64()
    ));
    Ok(r.extras(q))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::load_params;
    use crate::config::SplitMode;
    use crate::engine::LoadParams;
    use crate::plan::TestParams;

    /// What a load is asked: GPU layers, split mode, main GPU (the other model-level
    /// parameters at their defaults).
    fn load(n_gpu_layers: i32, split_mode: SplitMode, main_gpu: i32) -> LoadParams {
        LoadParams {
            params: TestParams {
                n_gpu_layers,
                split_mode,
                main_gpu,
                ..TestParams::default()
            },
            fit_context: None,
            load_mtp: false,
        }
    }

    fn ladder_load(extra: &str) -> LoadParams {
        let src = format!(
            "[[ladder]]\nname = \"smol\"\nbase = \"base.gguf\"\ntypes = [\"Q8_0\", \"Q4_0\"]\n{extra}"
        );
        let c = crate::config::parse(Path::new("dir/models.toml"), &src, 2).unwrap();
        load_params(&c.ladders[0])
    }

    #[test]
    fn an_unconfigured_ladder_is_evaluated_with_every_layer_offloaded_as_before() {
        assert_eq!(ladder_load(""), load(99, SplitMode::Layer, 0));
    }

    #[test]
    fn the_quality_passes_load_with_the_first_value_of_the_ladders_offload_axes() {
        let l = ladder_load(
            "[ladder.sweep]\nn_gpu_layers = [0, 99]\nsplit_mode = [\"none\", \"row\"]\nmain_gpu = [1, 0]\n",
        );
        assert_eq!(l, load(0, SplitMode::None, 1));
    }
}
