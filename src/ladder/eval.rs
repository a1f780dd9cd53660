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
use crate::ladder::error::{LadderError, input};
use crate::ladder::kld::{Accumulator, compare, encode, row_len, self_stat};

/// The evaluation tokens: the first `min(n_chunks, tokens / n_ctx)` whole chunks of `n_ctx`.
pub fn whole_chunks(tokens: &[i32], n_ctx: usize, n_chunks: usize) -> &[i32] {
    &tokens[..(tokens.len() / n_ctx.max(2)).min(n_chunks) * n_ctx.max(2)]
}

/// Positions of a chunk whose next-token prediction is scored: the second half, but the
/// last (its next token is in the following chunk).
pub(crate) fn is_scored(i: usize, n_ctx: usize) -> bool {
    i >= n_ctx / 2 && i + 1 < n_ctx
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
        Some(m) => Some(
            m.eval_context(n_ctx as u32, n_threads)
                .map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    let mut rows = store.rows().map_err(|e| e.to_string())?;
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
        })
        .map_err(|e| e.to_string())?;
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
    let mut ctx = (model.eval_context(n_ctx as u32, n_threads)).map_err(|e| e.to_string())?;
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
        })
        .map_err(|e| e.to_string())?;
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
    let bad = |why: String| input(tokenizer_json, why);
    let tok = tokenizers::Tokenizer::from_file(tokenizer_json)
        .map_err(|e| bad(format!("not a usable tokenizer.json: {e}")))?;
    let enc = tok
        .encode(text, false)
        .map_err(|e| bad(format!("cannot encode the text: {e}")))?;
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
}
