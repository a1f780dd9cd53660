//! The quality of ladder variants, with llama-perplexity `--kl-divergence`'s definitions:
//! the reference's log-probabilities over the evaluation tokens, stored once in
//! llama-perplexity's base file format (keyed by the reference's SHA-256, the tokens, ctx,
//! chunks and the llama.cpp build, and reused by later runs), or a base file that
//! llama-perplexity wrote (`reference_logits`); then one pass per variant compared with it.

use std::path::Path;
use std::time::Instant;

use super::Reporter;
use super::base_file::{self, BaseFile};
use super::cache::BaseInfo;
use super::error::{LadderError, input};
use super::eval;
use crate::config::ladder::Ladder;
use crate::engine::llama::LlamaModel;
use crate::engine::{LoadParams, ServingModel};
use crate::record::Quality;
use crate::util::units::format_size;

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

/// The ladder's evaluation text: a text file as it is, or a ShareGPT file's conversations
/// (prompt and reply, in file order) up to about 16 bytes a token to evaluate.
fn eval_text(l: &Ladder) -> Result<EvalText, LadderError> {
    let p = &l.eval.text;
    let read = |cause| LadderError::EvalText {
        path: p.clone(),
        cause,
    };
    let (text, kind) = if crate::serving::sharegpt::is_file(p).map_err(read)? {
        let budget = 16 * (l.eval.n_ctx * l.eval.n_chunks) as usize;
        let f = crate::serving::dataset::load(p).map_err(|e| input(p, e))?;
        let mut text = String::new();
        for c in &f.prompts {
            if text.len() >= budget {
                break;
            }
            text += &format!(
                "{}\n\n{}\n\n",
                c.text,
                c.reply.as_deref().unwrap_or_default()
            );
        }
        (text, "sharegpt")
    } else {
        (std::fs::read_to_string(p).map_err(read)?, "file")
    };
    Ok(EvalText {
        sha256: crate::util::hash::sha256_hex(text.as_bytes()),
        source: format!("{kind}:{}", p.display()),
        text,
    })
}

/// The reference pass of one ladder: what every variant is compared with.
pub struct Reference {
    store: BaseFile,
    text_source: String,
    text_sha256: String,
    bytes_per_token: Option<f64>,
    ref_tokens_per_token: Option<f64>,
    /// The reference's own figures (KLD 0, its perplexity).
    pub own: Extras,
}

impl Reference {
    fn extras(&self, mut q: Quality) -> Extras {
        q.n_ctx = self.store.n_ctx as u32;
        q.n_chunks = self.store.n_chunks() as u32;
        q.text_source = self.text_source.clone();
        q.text_sha256 = self.text_sha256.clone();
        Extras {
            quality: Some(q),
            bytes_per_token: self.bytes_per_token,
            ref_tokens_per_token: self.ref_tokens_per_token,
        }
    }
}

/// Where the quality passes of ladder `l` put the model: the first value of each of its
/// model-level axes, as its first speed test loads it (unconfigured: llama-bench's ngl 99).
pub fn load_params(l: &Ladder) -> LoadParams {
    LoadParams::with(|k| k.axis(&l.axes).into_iter().next())
}

/// The llama.cpp build the stored rows depend on.
fn llama_build() -> String {
    format!(
        "llama-cpp-sys-2 {} llama-cpp-rs@{} {}",
        crate::engine::linkage::LLAMA_SYS_VERSION,
        env!("TPSBENCH_LLAMA_RS_COMMIT"),
        crate::util::system::gpu_backend()
    )
}

/// Where the reference's rows over `tokens` are stored: named by the reference's SHA-256,
/// the tokens, ctx, chunks and the llama.cpp build.
pub fn store_path(l: &Ladder, ref_sha256: &str, tokens: &[i32]) -> std::path::PathBuf {
    let (n_ctx, n_chunks) = (l.eval.n_ctx as usize, tokens.len() / l.eval.n_ctx as usize);
    let mut key = format!("{ref_sha256}\n{n_ctx}\n{n_chunks}\n{}\n", llama_build()).into_bytes();
    key.extend(tokens.iter().flat_map(|t| t.to_le_bytes()));
    let key = crate::util::hash::sha256_hex(&key);
    l.cache_dir
        .join(format!("{}-kld-{}.logits", &ref_sha256[..16], &key[..16]))
}

/// The reference of ladder `l`: the base file `reference_logits`, else the stored rows of
/// the reference variant (at `ref_path`, loaded with [`load_params`]) over the evaluation
/// text, computed when not stored yet.
pub fn reference(
    l: &Ladder,
    ref_path: &Path,
    n_threads: u32,
    rep: &Reporter,
) -> Result<Reference, LadderError> {
    let ref_name = l.reference_name();
    let mut r = match &l.reference_logits {
        Some(p) => {
            let store = open_logits(l, p)?;
            let tokens: Vec<u8> = store.tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
            Reference {
                text_sha256: crate::util::hash::sha256_hex(tokens),
                store,
                text_source: format!("kl-divergence-base:{}", p.display()),
                bytes_per_token: None,
                ref_tokens_per_token: None,
                own: Extras::default(),
            }
        }
        None => stored_reference(l, ref_path, n_threads, rep)?,
    };
    let q = eval::stored_pass(&r.store)?.finish(&ref_name);
    rep.line(&format!(
        "[quality] {ref_name} (reference): {} tokens scored in {} chunks of {}, PPL {:.4}",
        q.n_tokens,
        r.store.n_chunks(),
        r.store.n_ctx,
        q.ppl,
    ));
    r.own = r.extras(q);
    Ok(r)
}

/// Bad input found before a run: a `reference_logits` file that does not read, or was made
/// for another ctx, vocabulary or text than the ladder's; a store the disk cannot hold.
pub fn check(l: &Ladder, base: &BaseInfo) -> Result<(), LadderError> {
    let Some(p) = &l.reference_logits else {
        // The store at most: the configured chunks.
        let e = &l.eval;
        let need = base_file::bytes(e.n_ctx as usize, e.n_chunks as usize, base.n_vocab);
        return super::cache::check_space(&l.cache_dir.join("reference.logits"), need);
    };
    let store = open_logits(l, p)?;
    let bad = |why: String| input(p, why);
    if base.n_vocab != 0 && store.n_vocab != base.n_vocab {
        return Err(bad(format!(
            "made for a vocabulary of {} tokens, the ladder's base has {}",
            store.n_vocab, base.n_vocab
        )));
    }
    // Without a text of its own the ladder scores the file's tokens, as llama-perplexity
    // --kl-divergence does; a text named beside the file must be the one it was made on.
    if l.eval.text_given {
        let text = eval_text(l)?;
        let all = LlamaModel::load_vocab(&base.path)?.tokenize(&text.text, true, false)?;
        let ours = eval::whole_chunks(&all, store.n_ctx, store.n_chunks());
        let n = ours.len().min(store.tokens.len());
        if let Some(i) = (0..n).find(|&i| ours[i] != store.tokens[i]) {
            return Err(bad(format!(
                "made for other tokens than [ladder.eval] text {}: they differ from \
                 token {i} on (remove `text` to score the file's own tokens)",
                l.eval.text.display()
            )));
        }
    }
    Ok(())
}

/// A base file given as `reference_logits`, checked against the ladder's ctx.
fn open_logits(l: &Ladder, p: &Path) -> Result<BaseFile, LadderError> {
    let mut store = BaseFile::open(p)?;
    if store.n_ctx != l.eval.n_ctx as usize {
        return Err(input(
            p,
            format!(
                "made with ctx {}, the ladder evaluates ctx {}: set [ladder.eval] ctx = {}",
                store.n_ctx, l.eval.n_ctx, store.n_ctx
            ),
        ));
    }
    let keep = store.n_chunks().min(l.eval.n_chunks as usize) * store.n_ctx;
    store.tokens.truncate(keep);
    Ok(store)
}

/// The reference variant's rows over the evaluation text: stored ones when a store with
/// their key exists, else computed and stored (refused when the disk cannot hold them).
fn stored_reference(
    l: &Ladder,
    ref_path: &Path,
    n_threads: u32,
    rep: &Reporter,
) -> Result<Reference, LadderError> {
    let ref_name = l.reference_name();
    let text = eval_text(l)?;
    let ref_model = LlamaModel::load(ref_path, &load_params(l))?;
    let all = ref_model.tokenize(&text.text, true, false)?;
    let (n_ctx, n_chunks) = (l.eval.n_ctx as usize, l.eval.n_chunks as usize);
    let tokens = eval::whole_chunks(&all, n_ctx, n_chunks);
    if tokens.is_empty() {
        return Err(LadderError::TextTooShort {
            ladder: l.name.clone(),
            tokens: all.len(),
            n_ctx,
        });
    }
    if tokens.len() < n_chunks * n_ctx {
        rep.warn(&format!(
            "ladder {}: the evaluation text holds {} chunks of {n_ctx} tokens, not {n_chunks}",
            l.name,
            tokens.len() / n_ctx
        ));
    }
    let plain_tokens = ref_model.tokenize(&text.text, false, false)?.len().max(1);
    let ref_tokens_per_token = match &l.tokenizer {
        Some(p) => Some(eval::count_reference_tokens(p, &text.text)? as f64 / plain_tokens as f64),
        None => None,
    };
    let sha = crate::util::system::sha256_file(ref_path).map_err(|e| input(ref_path, e))?;
    let path = store_path(l, &sha, tokens);
    let (tag, shown) = (format!("[quality] {ref_name}"), path.display());
    match BaseFile::open(&path) {
        Ok(_) => rep.line(&format!("{tag}: reusing the stored reference {shown}")),
        Err(_) => {
            let need = base_file::bytes(n_ctx, tokens.len() / n_ctx, ref_model.n_vocab());
            let size = format_size(need);
            rep.line(&format!(
                "{tag}: storing the reference's log-probabilities, {size} → {shown}"
            ));
            super::cache::create_dir(&l.cache_dir)?;
            super::cache::check_space(&path, need)?;
            let start = Instant::now();
            eval::reference_pass(&ref_model, tokens, n_ctx, n_threads, &path, &mut |c, n| {
                rep.status(&format!("{tag}: chunk {c}/{n}"));
            })?;
            let secs = start.elapsed().as_secs_f64();
            rep.line(&format!("{tag}: stored in {secs:.1} s"));
        }
    }
    Ok(Reference {
        store: BaseFile::open(&path)?,
        text_source: text.source,
        text_sha256: text.sha256,
        bytes_per_token: Some(text.text.len() as f64 / plain_tokens as f64),
        ref_tokens_per_token,
        own: Extras::default(),
    })
}

/// Evaluates variant `name` (at `path`, loaded with [`load_params`]) against the reference.
pub fn variant(
    l: &Ladder,
    r: &Reference,
    name: &str,
    path: &Path,
    n_threads: u32,
    rep: &Reporter,
) -> Result<Extras, LadderError> {
    let tag = format!("[quality] {name}");
    let start = Instant::now();
    let model = LlamaModel::load(path, &load_params(l))?;
    let fail = |why: String| LadderError::Variant {
        name: name.to_string(),
        why,
    };
    if model.n_vocab() != r.store.n_vocab {
        return Err(fail(format!(
            "the vocabulary differs from the reference's ({} vs {} tokens)",
            model.n_vocab(),
            r.store.n_vocab
        )));
    }
    let acc = eval::variant_pass(&model, &r.store, n_threads, &mut |c, n| {
        rep.status(&format!("{tag}: chunk {c}/{n}"));
    })
    .map_err(|e| fail(e.to_string()))?;
    let q = acc.finish(&l.reference_name());
    rep.line(&format!(
        "{tag}: KLD {:.5} ± {:.5} (99.9 % {:.5}), ln(PPL ratio) {:.4} ± {:.4}, same top p {:.2} % ({:.1} s)",
        q.kld_mean,
        q.kld_mean_uncertainty,
        q.kld_percentiles.unwrap_or_default().p99_9,
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
