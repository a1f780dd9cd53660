//! The serving measurement loops, on a `BatchSession` and the engine's clock.
//!
//! `run_together` decodes a set of requests that start at once, in one batch per step, with
//! llama-batched-bench's batch construction and timing points: the KV memory cleared before
//! the clock starts; every prompt in one batch (logits on the last token of each), decoded
//! in n_batch chunks and synchronized (T_PP); with a shared prompt, one prompt decoded and
//! copied to every sequence (`seq_cp`, plus one dummy token when the cache is split); then
//! one token per sequence per step, synchronized after each step (T_TG). Unlike
//! llama-batched-bench, tokens are sampled from the logits (greedy or seeded) and fed back,
//! and each token's time is kept, so each request has a TTFT and inter-token latencies.
//! (`arrivals::run_arrivals` serves requests arriving over time.)
//!
//! Time inside llama.cpp calls is summed; the rest of the wall time (sampling, batch
//! building, bookkeeping) is the overhead.

use super::error::ServingError;
use super::metrics::{Phases, Trace};
use super::sampling::Sampler;
use crate::engine::{BatchSession, BatchToken, Engine, EngineError};
use crate::util::rng::SplitMix64;

/// A request: prompt tokens and how many tokens to generate (at least 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub prompt: Vec<i32>,
    pub n_gen: u32,
}

/// A session whose llama.cpp calls are timed on the engine's clock.
pub(super) struct Timed<'a, 's> {
    pub(super) session: &'a mut (dyn BatchSession + 's),
    pub(super) clock: &'a dyn Engine,
    pub(super) engine_ns: u64,
}

impl Timed<'_, '_> {
    pub(super) fn call<T>(&mut self, f: impl FnOnce(&mut dyn BatchSession) -> T) -> T {
        let t = self.clock.now_ns();
        let r = f(&mut *self.session);
        self.engine_ns += self.clock.now_ns().saturating_sub(t);
        r
    }
}

/// llama-batched-bench's warmup: 16 random tokens on sequence 0 (fewer if a sequence has
/// less room), then an empty cache.
pub fn warmup(
    session: &mut dyn BatchSession,
    n_vocab: i32,
    seed: u64,
    room: u32,
) -> Result<(), ServingError> {
    let mut rng = SplitMix64(seed);
    let batch: Vec<BatchToken> = (0..16.min(room.max(1) as i32))
        .map(|i| BatchToken {
            token: (rng.next_u64() % n_vocab.max(1) as u64) as i32,
            pos: i,
            seq: 0,
            logits: false,
        })
        .collect();
    session.decode(&batch)?;
    session.synchronize();
    session.clear();
    Ok(())
}

#[derive(Debug, Clone)]
pub struct TogetherRun {
    pub start_ns: u64,
    pub phases: Phases,
    pub traces: Vec<Trace>,
}

/// Decodes `reqs` together, request j as sequence j; `samplers[j]` samples its tokens. With
/// `shared`, every request must have the same prompt, which is decoded once.
pub fn run_together(
    session: &mut dyn BatchSession,
    clock: &dyn Engine,
    reqs: &[Request],
    shared: bool,
    kv_unified: bool,
    n_batch: usize,
    samplers: &mut [Sampler],
) -> Result<TogetherRun, ServingError> {
    check_requests(reqs, samplers.len(), shared)?;
    let b = reqs.len();
    let n_batch = n_batch.max(1);
    session.clear();
    let mut s = Timed {
        session,
        clock,
        engine_ns: 0,
    };
    let t0 = s.clock.now_ns();
    let mut q = Seqs {
        traces: new_traces(reqs, t0, None),
        last: vec![0i32; b],
        samplers,
    };
    let mut batch = prompt_batch(reqs, shared);
    let n_pp = batch.len() as u64;
    let t_pp_end = prefill(&mut s, &batch, n_batch, shared, &mut q)?.unwrap_or(t0);
    if shared {
        let pp = reqs[0].prompt.len() as i32;
        copy_shared_prompt(&mut s, pp, b, kv_unified, q.last[0])?;
    }
    let t_tg_start = s.clock.now_ns();
    let n_tg = generate(&mut s, reqs, n_batch, &mut q, &mut batch)?;
    let t_end = s.clock.now_ns();
    Ok(TogetherRun {
        start_ns: t0,
        phases: Phases {
            t_pp_ns: t_pp_end - t0,
            t_tg_ns: t_end - t_tg_start,
            t_ns: t_end - t0,
            n_pp,
            n_tg,
            n_out: q.traces.iter().map(|t| t.token_ns.len() as u64).sum(),
            engine_ns: s.engine_ns,
        },
        traces: q.traces,
    })
}

/// The sequences of a run as it goes: traces, last tokens (fed back next) and samplers.
struct Seqs<'a> {
    traces: Vec<Trace>,
    last: Vec<i32>,
    samplers: &'a mut [Sampler],
}

/// Refuses what `run_together` cannot run, before its clock starts.
fn check_requests(reqs: &[Request], n_samplers: usize, shared: bool) -> Result<(), ServingError> {
    let b = reqs.len();
    if b == 0 || n_samplers < b || reqs.iter().any(|r| r.prompt.is_empty() || r.n_gen == 0) {
        return Err(ServingError::EmptyRequest);
    }
    if shared && reqs.iter().any(|r| r.prompt != reqs[0].prompt) {
        return Err(ServingError::SharedPromptDiffers);
    }
    Ok(())
}

/// Each request's trace, with room for its tokens so that recording them does not
/// allocate: arriving `offsets` after `t0`, admitted when a slot takes it; without offsets,
/// arrived and admitted at `t0` (they start together).
pub(super) fn new_traces(reqs: &[Request], t0: u64, offsets: Option<&[u64]>) -> Vec<Trace> {
    let at = |i: usize| offsets.map_or((t0, t0), |o| (t0 + o[i], 0));
    (reqs.iter().enumerate())
        .map(|(i, r)| Trace {
            arrival_ns: at(i).0,
            admitted_ns: at(i).1,
            n_prompt: r.prompt.len() as u32,
            token_ns: Vec::with_capacity(r.n_gen as usize),
            tokens: Vec::with_capacity(r.n_gen as usize),
        })
        .collect()
}

fn prompt_batch(reqs: &[Request], shared: bool) -> Vec<BatchToken> {
    let mut batch: Vec<BatchToken> = Vec::new();
    let n_seqs = if shared { 1 } else { reqs.len() };
    for (j, r) in reqs.iter().enumerate().take(n_seqs) {
        let n = r.prompt.len();
        batch.extend(r.prompt.iter().enumerate().map(|(i, &token)| BatchToken {
            token,
            pos: i as i32,
            seq: j as i32,
            logits: i == n - 1,
        }));
    }
    batch
}

/// Decodes the prefill batch in n_batch chunks and samples each sequence's first token
/// from its prompt's last logits (every sequence's from the shared prompt's). Returns when
/// the last chunk was synchronized: the end of T_PP.
fn prefill(
    s: &mut Timed<'_, '_>,
    batch: &[BatchToken],
    n_batch: usize,
    shared: bool,
    q: &mut Seqs<'_>,
) -> Result<Option<u64>, EngineError> {
    let b = q.last.len();
    let mut t_pp_end = None;
    let n_chunks = batch.len().div_ceil(n_batch);
    for (c, chunk) in batch.chunks(n_batch).enumerate() {
        s.call(|x| x.decode(chunk))?;
        // Logits are read before the next chunk overwrites them; chunks without outputs
        // are not synchronized, as llama-batched-bench.
        if !chunk.iter().any(|t| t.logits) {
            continue;
        }
        s.call(|x| x.synchronize());
        if c + 1 == n_chunks {
            t_pp_end = Some(s.clock.now_ns());
        }
        for (i, t) in chunk.iter().enumerate().filter(|(_, t)| t.logits) {
            // A shared prompt's logits give every sequence its first token.
            let j = t.seq as usize;
            let seqs = if shared { 0..b } else { j..j + 1 };
            let logits = s.session.logits(i)?;
            for k in seqs.clone() {
                q.last[k] = q.samplers[k].sample(logits);
            }
            let now = s.clock.now_ns();
            for k in seqs {
                q.traces[k].token_ns.push(now);
                q.traces[k].tokens.push(q.last[k]);
            }
        }
    }
    Ok(t_pp_end)
}

/// Copies the shared prompt, decoded once as sequence 0 of `pp` tokens, to the other
/// `b - 1` sequences; `first` is the first token sampled from it.
fn copy_shared_prompt(
    s: &mut Timed<'_, '_>,
    pp: i32,
    b: usize,
    kv_unified: bool,
    first: i32,
) -> Result<(), EngineError> {
    for j in 1..b {
        s.call(|x| x.seq_cp(0, j as i32));
    }
    if !kv_unified {
        // As llama-batched-bench: one dummy token makes the split cache apply the copies.
        let dummy = [BatchToken {
            token: first,
            pos: pp,
            seq: 0,
            logits: true,
        }];
        s.call(|x| x.decode(&dummy))?;
        s.call(|x| x.synchronize());
        s.call(|x| x.seq_rm(0, pp, -1));
    }
    Ok(())
}

/// The generation loop (T_TG): each step, one token for every sequence short of its
/// tokens, decoded in n_batch chunks synchronized one by one, sampled and fed back. Returns
/// the tokens decoded. `batch` is the prefill's, reused so the loop does not allocate.
fn generate(
    s: &mut Timed<'_, '_>,
    reqs: &[Request],
    n_batch: usize,
    q: &mut Seqs<'_>,
    batch: &mut Vec<BatchToken>,
) -> Result<u64, EngineError> {
    let b = reqs.len();
    let mut pos: Vec<i32> = reqs.iter().map(|r| r.prompt.len() as i32).collect();
    let mut n_tg = 0u64;
    loop {
        batch.clear();
        for j in 0..b {
            if q.traces[j].token_ns.len() < reqs[j].n_gen as usize {
                batch.push(BatchToken {
                    token: q.last[j],
                    pos: pos[j],
                    seq: j as i32,
                    logits: true,
                });
            }
        }
        if batch.is_empty() {
            break;
        }
        n_tg += batch.len() as u64;
        for chunk in batch.chunks(n_batch) {
            s.call(|x| x.decode(chunk))?;
            s.call(|x| x.synchronize());
            for (i, t) in chunk.iter().enumerate() {
                let j = t.seq as usize;
                q.last[j] = q.samplers[j].sample(s.session.logits(i)?);
                pos[j] += 1;
                q.traces[j].token_ns.push(s.clock.now_ns());
                q.traces[j].tokens.push(q.last[j]);
            }
        }
    }
    Ok(n_tg)
}

#[cfg(test)]
mod tests;
