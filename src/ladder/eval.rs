//! Quality passes, as llama-perplexity `--kl-divergence` runs them: the evaluation tokens are
//! cut into chunks of `n_ctx` (BOS first when the vocabulary adds one), each chunk is
//! decoded from an empty cache, and the positions of its second half (but the last) are
//! scored against the next token.
//!
//! The reference pass writes its scored rows to a base file (`base_file`, llama-perplexity's
//! format, about n_vocab × 2 bytes a position), kept for later runs; each variant pass reads
//! them back in the same order and compares on the fly. Memory stays one chunk of rows.

use std::path::Path;

use crate::engine::llama::LlamaModel;
use crate::ladder::base_file::{BaseFile, Writer};
use crate::ladder::error::LadderError;
use crate::ladder::kld::{Accumulator, compare, encode, row_len, self_stat};
use crate::util::rng::SplitMix64;

/// The evaluation tokens: the first `min(n_chunks, tokens / n_ctx)` whole chunks of `n_ctx`.
pub fn whole_chunks(tokens: &[i32], n_ctx: usize, n_chunks: usize) -> &[i32] {
    &tokens[..(tokens.len() / n_ctx.max(2)).min(n_chunks) * n_ctx.max(2)]
}

/// Positions of a chunk whose next-token prediction is scored: the second half, but the
/// last (its next token is in the following chunk).
pub(crate) fn is_scored(i: usize, n_ctx: usize) -> bool {
    i >= n_ctx / 2 && i + 1 < n_ctx
}

/// Draws a token from the `top_k` most likely at `temperature`, never a `banned` one; `u` is
/// uniform in [0, 1). Pure, so seeded generation is reproducible.
pub fn sample(logits: &[f32], banned: &[bool], temperature: f32, top_k: usize, u: f64) -> usize {
    let mut cand: Vec<(f32, usize)> = logits
        .iter()
        .enumerate()
        .filter(|(i, l)| !banned.get(*i).copied().unwrap_or(false) && l.is_finite())
        .map(|(i, &l)| (l, i))
        .collect();
    if cand.is_empty() {
        return 0;
    }
    let k = top_k.clamp(1, cand.len());
    cand.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0));
    cand.truncate(k);
    // Sort so that the draw does not depend on select_nth's arbitrary order.
    cand.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let t = f64::from(temperature.max(1e-3));
    let max = f64::from(cand[0].0);
    let w: Vec<f64> = cand
        .iter()
        .map(|c| ((f64::from(c.0) - max) / t).exp())
        .collect();
    let mut x = u.clamp(0.0, 1.0) * w.iter().sum::<f64>();
    for (c, wi) in cand.iter().zip(&w) {
        if x < *wi {
            return c.1;
        }
        x -= wi;
    }
    cand[k - 1].1
}

fn uniform(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Has the model write about `n_new` tokens after `prompt` (top-k 40, temperature 0.8,
/// seeded; end-of-text and control tokens excluded) and returns prompt and continuation
/// as text. When the context fills, it restarts from the last half.
pub(crate) fn generate_text(
    model: &LlamaModel,
    prompt: &str,
    n_new: usize,
    seed: u64,
    n_threads: u32,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<String, LadderError> {
    let window = match model.n_ctx_train() {
        0 => 2048,
        n => n.min(2048),
    } as usize;
    let window = window.max(64);
    let banned = model.non_text_tokens();
    let mut all = model.tokenize(prompt, true, false)?;
    if all.is_empty() {
        return Err(LadderError::EmptyPrompt);
    }
    if all.len() > window / 2 {
        all.drain(..all.len() - window / 2);
    }
    let mut ctx = model.eval_context(window as u32, n_threads)?;
    let mut logits = ctx.decode_last(&all, 0)?;
    let mut pos = all.len();
    let mut rng = SplitMix64(seed);
    for n in 0..n_new {
        if n % 32 == 0 {
            progress(n, n_new);
        }
        let t = sample(&logits, &banned, 0.8, 40, uniform(&mut rng)) as i32;
        all.push(t);
        if pos + 1 > window {
            ctx.clear();
            let keep = &all[all.len() - window / 2..];
            logits = ctx.decode_last(keep, 0)?;
            pos = keep.len();
        } else {
            logits = ctx.decode_last(&[t], pos)?;
            pos += 1;
        }
    }
    progress(n_new, n_new);
    Ok(model.detokenize(&all)?)
}

/// Called with the next token, a model's logit row and the reference's stored row.
type RowPair<'a> = dyn FnMut(usize, &[f32], &[u16]) -> Result<(), String> + 'a;

/// Evaluates the chunks of `store` with `model` (each decoded from an empty cache, its first
/// token replaced by BOS when the vocabulary adds one, as llama-perplexity does), calling
/// `per_row(next_token, logits, stored_row)` for each scored position in order;
/// `progress(chunk, n_chunks)`. Without a model, only the stored rows are read.
fn eval_rows(
    model: Option<&LlamaModel>,
    store: &BaseFile,
    n_threads: u32,
    progress: &mut dyn FnMut(usize, usize),
    per_row: &mut RowPair,
) -> Result<(), String> {
    let (n_ctx, n) = (store.n_ctx, store.n_chunks());
    let width = row_len(store.n_vocab);
    let mut ctx = match model {
        Some(m) => Some(m.eval_context(n_ctx as u32, n_threads)?),
        None => None,
    };
    let mut rows = store.rows()?;
    let mut stored = Vec::new();
    let first = n_ctx / 2;
    for c in 0..n {
        progress(c, n);
        rows.next_chunk(&mut stored)?;
        let chunk = store.chunk(c);
        let row_of = |i: usize| &stored[(i - first) * width..(i - first + 1) * width];
        let Some(ctx) = ctx.as_mut() else {
            for i in first..n_ctx - 1 {
                per_row(chunk[i + 1] as usize, &[], row_of(i))?;
            }
            continue;
        };
        let mut tokens = chunk.to_vec();
        if let Some(b) = model.and_then(LlamaModel::bos) {
            tokens[0] = b;
        }
        ctx.clear();
        ctx.decode(&tokens, 0, &|i| is_scored(i, n_ctx), &mut |i, row| {
            per_row(chunk[i + 1] as usize, row, row_of(i))
        })?;
    }
    progress(n, n);
    Ok(())
}

/// The reference pass: writes the scored rows of `model` over `tokens` (whole chunks of
/// `n_ctx`) to a base file at `path`.
pub fn reference_pass(
    model: &LlamaModel,
    tokens: &[i32],
    n_ctx: usize,
    n_threads: u32,
    path: &Path,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(), String> {
    let n_vocab = model.n_vocab();
    let mut w = Writer::create(path, n_ctx, n_vocab, tokens)?;
    let mut ctx = model.eval_context(n_ctx as u32, n_threads)?;
    let mut row = vec![0u16; row_len(n_vocab)];
    let n = tokens.len() / n_ctx;
    for (c, chunk) in tokens.chunks_exact(n_ctx).enumerate() {
        progress(c, n);
        let mut t = chunk.to_vec();
        if let Some(b) = model.bos() {
            t[0] = b;
        }
        ctx.clear();
        ctx.decode(&t, 0, &|i| is_scored(i, n_ctx), &mut |i, logits| {
            encode(logits, chunk[i + 1] as usize, &mut row);
            w.row(&row)
        })?;
    }
    progress(n, n);
    w.finish()
}

/// The reference's own figures from its stored rows (KLD 0 by definition).
pub fn stored_pass(store: &BaseFile) -> Result<Accumulator, String> {
    let mut acc = Accumulator::default();
    eval_rows(None, store, 1, &mut |_, _| {}, &mut |next, _, stored| {
        acc.add(&self_stat(stored, next));
        Ok(())
    })?;
    Ok(acc)
}

/// A variant pass: compares `model` with the stored rows of the reference.
pub fn variant_pass(
    model: &LlamaModel,
    store: &BaseFile,
    n_threads: u32,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Accumulator, String> {
    if model.n_vocab() != store.n_vocab {
        return Err(format!(
            "the vocabulary differs from the reference's ({} vs {} tokens)",
            model.n_vocab(),
            store.n_vocab
        ));
    }
    let mut acc = Accumulator::default();
    eval_rows(
        Some(model),
        store,
        n_threads,
        progress,
        &mut |next, logits, stored| {
            acc.add(&compare(stored, logits, next));
            Ok(())
        },
    )?;
    Ok(acc)
}

/// Tokens of `text` under a Hugging Face `tokenizer.json` (no special tokens added).
pub(crate) fn count_reference_tokens(
    tokenizer_json: &Path,
    text: &str,
) -> Result<usize, LadderError> {
    let input = |why: String| LadderError::Input {
        path: tokenizer_json.to_path_buf(),
        why,
    };
    let tok = tokenizers::Tokenizer::from_file(tokenizer_json)
        .map_err(|e| input(format!("not a usable tokenizer.json: {e}")))?;
    let enc = tok
        .encode(text, false)
        .map_err(|e| input(format!("cannot encode the text: {e}")))?;
    Ok(enc.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_evaluation_tokens_are_whole_chunks_and_capped() {
        let t: Vec<i32> = (10..30).collect();
        assert_eq!(
            whole_chunks(&t, 8, 5).len(),
            16,
            "20 tokens hold 2 whole chunks of 8"
        );
        assert_eq!(whole_chunks(&t, 8, 1), &t[..8]);
    }

    #[test]
    fn the_second_half_but_the_last_position_is_scored() {
        let scored: Vec<usize> = (0..8).filter(|&i| is_scored(i, 8)).collect();
        assert_eq!(scored, [4, 5, 6]);
        // llama-perplexity: n_ctx - 1 - n_ctx/2 per chunk
        assert_eq!((0..512).filter(|&i| is_scored(i, 512)).count(), 255);
    }

    #[test]
    fn sampling_respects_bans_top_k_and_the_draw() {
        let logits = [0.0, 5.0, 4.0, -1.0, 3.0];
        let none = [false; 5];
        // top-1 is greedy whatever the draw
        assert_eq!(sample(&logits, &none, 1.0, 1, 0.99), 1);
        // banning the best gives the next best
        let mut ban = none;
        ban[1] = true;
        assert_eq!(sample(&logits, &ban, 1.0, 1, 0.5), 2);
        // a draw near 0 picks the most likely, near 1 the least likely of the top-k
        assert_eq!(sample(&logits, &none, 1.0, 3, 0.0), 1);
        assert_eq!(sample(&logits, &none, 1.0, 3, 0.999_999), 4);
        // low temperature concentrates the mass on the top token
        assert_eq!(sample(&logits, &none, 0.01, 3, 0.9), 1);
    }
}
