//! Quality passes, as llama-perplexity `--kl-divergence` runs them: the evaluation tokens are
//! cut into chunks of `n_ctx` (BOS first when the vocabulary adds one), each chunk is
//! decoded from an empty cache, and the positions of its second half (but the last) are
//! scored against the next token.
//!
//! The reference pass writes its log-probabilities of the scored positions, f32, to a spill
//! file beside the cache (n_vocab × 4 bytes a position); each variant pass reads them back
//! in the same order and compares on the fly. Memory stays one row.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::engine::llama::{LlamaModel, RowSink};
use crate::ladder::error::LadderError;
use crate::ladder::kld::{Accumulator, compare, log_softmax};
use crate::util::rng::SplitMix64;

/// The chunks to evaluate: `min(n_chunks, tokens / n_ctx)` slices of `n_ctx` tokens, the
/// first token of each replaced by `bos` when given (llama-perplexity does the same).
pub fn chunks(tokens: &[i32], n_ctx: usize, n_chunks: usize, bos: Option<i32>) -> Vec<Vec<i32>> {
    tokens
        .chunks_exact(n_ctx.max(2))
        .take(n_chunks)
        .map(|c| {
            let mut c = c.to_vec();
            if let Some(b) = bos {
                c[0] = b;
            }
            c
        })
        .collect()
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

/// The reference's log-probabilities on disk, deleted when dropped.
pub struct Spill {
    path: PathBuf,
    n_vocab: usize,
    rows: usize,
}

impl Drop for Spill {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
}

/// Evaluates `chunks` with `model`, calling `per_row(next_token, logits)` for each scored
/// position in order; `progress(chunk, n_chunks)`.
fn eval_rows(
    model: &LlamaModel,
    chunks: &[Vec<i32>],
    n_threads: u32,
    progress: &mut dyn FnMut(usize, usize),
    per_row: &mut RowSink,
) -> Result<(), String> {
    let Some(n_ctx) = chunks.first().map(Vec::len) else {
        return Ok(());
    };
    let mut ctx = model.eval_context(n_ctx as u32, n_threads)?;
    for (c, chunk) in chunks.iter().enumerate() {
        progress(c, chunks.len());
        ctx.clear();
        ctx.decode(chunk, 0, &|i| is_scored(i, n_ctx), &mut |i, row| {
            per_row(chunk[i + 1] as usize, row)
        })?;
    }
    progress(chunks.len(), chunks.len());
    Ok(())
}

/// The reference pass: writes the scored log-probabilities to a spill file in `dir` and
/// returns it with the reference's figures against itself.
pub fn reference_pass(
    model: &LlamaModel,
    chunks: &[Vec<i32>],
    n_threads: u32,
    dir: &Path,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(Spill, Accumulator), String> {
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let path = dir.join(format!("reference-{}.logprobs.tmp", std::process::id()));
    let mut spill = Spill {
        path: path.clone(),
        n_vocab: model.n_vocab(),
        rows: 0,
    };
    let mut w = BufWriter::new(File::create(&path).map_err(io_err(&path))?);
    let mut acc = Accumulator::default();
    let mut lp = Vec::new();
    let mut bytes = Vec::new();
    eval_rows(model, chunks, n_threads, progress, &mut |next, row| {
        log_softmax(row, &mut lp);
        bytes.clear();
        bytes.extend(lp.iter().flat_map(|x| x.to_le_bytes()));
        w.write_all(&bytes).map_err(io_err(&path))?;
        acc.add(&compare(&lp, &lp, next));
        spill.rows += 1;
        Ok(())
    })?;
    w.flush().map_err(io_err(&path))?;
    Ok((spill, acc))
}

/// A variant pass: compares `model` with the reference's spilled log-probabilities.
pub fn variant_pass(
    model: &LlamaModel,
    chunks: &[Vec<i32>],
    n_threads: u32,
    spill: &Spill,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Accumulator, String> {
    if model.n_vocab() != spill.n_vocab {
        return Err(format!(
            "the vocabulary differs from the reference's ({} vs {} tokens)",
            model.n_vocab(),
            spill.n_vocab
        ));
    }
    let path = &spill.path;
    let mut r = BufReader::new(File::open(path).map_err(io_err(path))?);
    let mut acc = Accumulator::default();
    let mut bytes = vec![0u8; spill.n_vocab * 4];
    let mut ref_lp: Vec<f32> = Vec::with_capacity(spill.n_vocab);
    let mut lp = Vec::new();
    let mut rows = 0;
    eval_rows(model, chunks, n_threads, progress, &mut |next, row| {
        if rows == spill.rows {
            return Err("more scored positions than the reference pass had".into());
        }
        r.read_exact(&mut bytes).map_err(io_err(path))?;
        ref_lp.clear();
        ref_lp.extend(
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
        log_softmax(row, &mut lp);
        acc.add(&compare(&ref_lp, &lp, next));
        rows += 1;
        Ok(())
    })?;
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
    fn chunks_are_whole_start_with_bos_and_are_capped() {
        let t: Vec<i32> = (10..30).collect();
        let c = chunks(&t, 8, 5, Some(1));
        assert_eq!(c.len(), 2, "20 tokens hold 2 whole chunks of 8");
        assert_eq!(c[0], [1, 11, 12, 13, 14, 15, 16, 17]);
        assert_eq!(c[1][0], 1);
        assert_eq!(c[1][1], 19);
        assert_eq!(chunks(&t, 8, 1, None)[0][0], 10);
        assert_eq!(chunks(&t, 8, 1, None).len(), 1);
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
