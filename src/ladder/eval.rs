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
use crate::ladder::base_file::{BaseFile, Writer, scored};
use crate::ladder::error::{LadderError, input};
use crate::ladder::kld::{Accumulator, compare, encode, row_len, self_stat};

/// The evaluation tokens: the first `min(n_chunks, tokens / n_ctx)` whole chunks of `n_ctx`.
pub fn whole_chunks(tokens: &[i32], n_ctx: usize, n_chunks: usize) -> &[i32] {
    &tokens[..(tokens.len() / n_ctx.max(2)).min(n_chunks) * n_ctx.max(2)]
}

/// Called with a scored position, its next token and its logits.
type PerRow<'a> = dyn FnMut(usize, usize, &[f32]) -> Result<(), LadderError> + 'a;

/// Decodes the whole chunks of `n_ctx` in `tokens` with `model`, calling `per_row(position,
/// next token, logits)` for each scored position in order; `progress(chunk, n_chunks)`.
fn scored_rows(
    model: &LlamaModel,
    tokens: &[i32],
    n_ctx: usize,
    n_threads: u32,
    progress: &mut dyn FnMut(usize, usize),
    per_row: &mut PerRow,
) -> Result<(), LadderError> {
    let mut ctx = model.eval_context(n_ctx as u32, n_threads)?;
    let n = tokens.len() / n_ctx;
    for (c, chunk) in tokens.chunks_exact(n_ctx).enumerate() {
        progress(c, n);
        ctx.chunk(chunk, &|i| scored(n_ctx).contains(&i))?;
        for i in scored(n_ctx) {
            per_row(i, chunk[i + 1] as usize, ctx.row(i)?)?;
        }
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
) -> Result<(), LadderError> {
    let mut w = Writer::create(path, n_ctx, model.n_vocab(), tokens)?;
    let mut row = vec![0u16; row_len(model.n_vocab())];
    let mut write = |_: usize, t, logits: &[f32]| {
        encode(logits, t, &mut row);
        w.row(&row)
    };
    scored_rows(model, tokens, n_ctx, n_threads, progress, &mut write)?;
    w.finish()
}

/// The reference's own figures from its stored rows (KLD 0 by definition).
pub fn stored_pass(store: &BaseFile) -> Result<Accumulator, LadderError> {
    let mut rows = store.rows()?;
    let (mut acc, mut stored) = (Accumulator::default(), Vec::new());
    for c in 0..store.n_chunks() {
        rows.next_chunk(&mut stored)?;
        let next = &store.chunk(c)[scored(store.n_ctx).start + 1..];
        for (row, &t) in stored.chunks_exact(row_len(store.n_vocab)).zip(next) {
            acc.add(&self_stat(row, t as usize));
        }
    }
    Ok(acc)
}

/// A variant pass: compares `model` (of the reference's vocabulary) with the stored rows of
/// the reference, read a chunk at a time.
pub fn variant_pass(
    model: &LlamaModel,
    store: &BaseFile,
    n_threads: u32,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Accumulator, LadderError> {
    let mut rows = store.rows()?;
    let (mut acc, mut stored) = (Accumulator::default(), Vec::new());
    let (first, width) = (scored(store.n_ctx).start, row_len(store.n_vocab));
    let mut add = |i: usize, t, logits: &[f32]| -> Result<(), LadderError> {
        if i == first {
            rows.next_chunk(&mut stored)?;
        }
        let base = &stored[(i - first) * width..][..width];
        acc.add(&compare(base, logits, t));
        Ok(())
    };
    let tokens = &store.tokens;
    scored_rows(model, tokens, store.n_ctx, n_threads, progress, &mut add)?;
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
}
