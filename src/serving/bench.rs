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
//!
//! `run_arrivals` serves requests arriving over time with continuous batching: a request
//! joins the running batch when it arrives and a sequence slot is free (its prompt chunked
//! into the step's n_batch budget), leaves when it has its tokens (`seq_rm` frees its cells).
//!
//! Time inside llama.cpp calls is summed; the rest of the wall time (sampling, batch
//! building, bookkeeping) is the overhead.

use std::collections::VecDeque;

use super::metrics::{Phases, Trace};
use super::sampling::Sampler;
use crate::engine::{BatchSession, BatchToken, Engine};
use crate::gguf::writer::SplitMix64;

/// A request: prompt tokens and how many tokens to generate (at least 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub prompt: Vec<i32>,
    pub n_gen: u32,
}

/// A session whose llama.cpp calls are timed on the engine's clock.
struct Timed<'a, 's> {
    session: &'a mut (dyn BatchSession + 's),
    clock: &'a dyn Engine,
    engine_ns: u64,
}

impl Timed<'_, '_> {
    fn call<T>(&mut self, f: impl FnOnce(&mut dyn BatchSession) -> T) -> T {
        let t = self.clock.now_ns();
        let r = f(&mut *self.session);
        self.engine_ns += self.clock.now_ns().saturating_sub(t);
        r
    }

    fn now(&self) -> u64 {
        self.clock.now_ns()
    }
}

/// llama-batched-bench's warmup: 16 random tokens on sequence 0 (fewer if a sequence has
/// less room), then an empty cache.
pub fn warmup(
    session: &mut dyn BatchSession,
    n_vocab: i32,
    seed: u64,
    room: u32,
) -> Result<(), String> {
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

/// One run of requests decoded together.
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
) -> Result<TogetherRun, String> {
    let b = reqs.len();
    if b == 0 || samplers.len() < b || reqs.iter().any(|r| r.prompt.is_empty() || r.n_gen == 0) {
        return Err("a serving run needs requests with a prompt and at least one token".into());
    }
    if shared && reqs.iter().any(|r| r.prompt != reqs[0].prompt) {
        return Err("a shared prompt must be the same for every sequence".into());
    }
    let n_batch = n_batch.max(1);
    session.clear();
    let mut s = Timed {
        session,
        clock,
        engine_ns: 0,
    };
    let t0 = s.now();
    let mut traces: Vec<Trace> = reqs
        .iter()
        .map(|r| Trace {
            arrival_ns: t0,
            admitted_ns: t0,
            n_prompt: r.prompt.len() as u32,
            token_ns: Vec::with_capacity(r.n_gen as usize),
            tokens: Vec::with_capacity(r.n_gen as usize),
        })
        .collect();
    let mut last = vec![0i32; b];

    // Prefill: every prompt (or the shared one) in one batch, logits on each prompt's end.
    let mut batch: Vec<BatchToken> = Vec::new();
    for (j, r) in reqs.iter().enumerate().take(if shared { 1 } else { b }) {
        let n = r.prompt.len();
        batch.extend(r.prompt.iter().enumerate().map(|(i, &token)| BatchToken {
            token,
            pos: i as i32,
            seq: j as i32,
            logits: i == n - 1,
        }));
    }
    let n_pp = batch.len() as u64;
    let mut t_pp_end = t0;
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
            t_pp_end = s.now();
        }
        for (i, t) in chunk.iter().enumerate().filter(|(_, t)| t.logits) {
            // A shared prompt's logits give every sequence its first token.
            let j = t.seq as usize;
            let seqs = if shared { 0..b } else { j..j + 1 };
            let logits = s.session.logits(i)?;
            for k in seqs.clone() {
                last[k] = samplers[k].sample(logits);
            }
            let now = s.clock.now_ns();
            for k in seqs {
                traces[k].token_ns.push(now);
                traces[k].tokens.push(last[k]);
            }
        }
    }

    if shared {
        let pp = reqs[0].prompt.len() as i32;
        for j in 1..b {
            s.call(|x| x.seq_cp(0, j as i32));
        }
        if !kv_unified {
            // As llama-batched-bench: one dummy token makes the split cache apply the copies.
            let dummy = [BatchToken {
                token: last[0],
                pos: pp,
                seq: 0,
                logits: true,
            }];
            s.call(|x| x.decode(&dummy))?;
            s.call(|x| x.synchronize());
            s.call(|x| x.seq_rm(0, pp, -1));
        }
    }

    // Generation: one token per unfinished sequence per step.
    let t_tg_start = s.now();
    let mut pos: Vec<i32> = reqs.iter().map(|r| r.prompt.len() as i32).collect();
    let mut n_tg = 0u64;
    loop {
        batch.clear();
        for j in 0..b {
            if traces[j].token_ns.len() < reqs[j].n_gen as usize {
                batch.push(BatchToken {
                    token: last[j],
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
                last[j] = samplers[j].sample(s.session.logits(i)?);
                pos[j] += 1;
                traces[j].token_ns.push(s.clock.now_ns());
                traces[j].tokens.push(last[j]);
            }
        }
    }
    let t_end = s.now();
    Ok(TogetherRun {
        start_ns: t0,
        phases: Phases {
            t_pp_ns: t_pp_end - t0,
            t_tg_ns: t_end - t_tg_start,
            t_ns: t_end - t0,
            n_pp,
            n_tg,
            n_out: traces.iter().map(|t| t.token_ns.len() as u64).sum(),
            engine_ns: s.engine_ns,
        },
        traces,
    })
}

/// One arrival run.
#[derive(Debug, Clone)]
pub struct ArrivalRun {
    pub start_ns: u64,
    /// From the start to the last token.
    pub t_ns: u64,
    pub engine_ns: u64,
    /// Time with no request to serve (waiting for the next arrival).
    pub idle_ns: u64,
    /// Tokens decoded (prompts and generated tokens fed back).
    pub n_decoded: u64,
    pub n_out: u64,
    /// Most sequences decoded in one step.
    pub max_batch_seqs: usize,
    pub traces: Vec<Trace>,
}

struct Slot {
    req: usize,
    seq: i32,
    prefilled: usize,
    pos: i32,
    last: i32,
}

/// Serves `reqs` arriving `offsets` ns after the start, at most `slots` at a time;
/// `samplers[i]` samples request i's tokens.
pub fn run_arrivals(
    session: &mut dyn BatchSession,
    clock: &dyn Engine,
    reqs: &[Request],
    offsets: &[u64],
    slots: u32,
    n_batch: usize,
    samplers: &mut [Sampler],
) -> Result<ArrivalRun, String> {
    let n = reqs.len();
    if offsets.len() != n || samplers.len() < n {
        return Err("one arrival time and one sampler per request".into());
    }
    if reqs.iter().any(|r| r.prompt.is_empty() || r.n_gen == 0) {
        return Err("every request needs a prompt and at least one token".into());
    }
    if (slots as usize) > n_batch {
        return Err(format!(
            "{slots} sequences cannot decode together in batches of {n_batch} (n_batch)"
        ));
    }
    session.clear();
    let mut s = Timed {
        session,
        clock,
        engine_ns: 0,
    };
    let t0 = s.now();
    let mut traces: Vec<Trace> = reqs
        .iter()
        .zip(offsets)
        .map(|(r, &o)| Trace {
            arrival_ns: t0 + o,
            admitted_ns: 0,
            n_prompt: r.prompt.len() as u32,
            token_ns: Vec::with_capacity(r.n_gen as usize),
            tokens: Vec::with_capacity(r.n_gen as usize),
        })
        .collect();
    let mut free: Vec<i32> = (0..slots as i32).rev().collect();
    let mut waiting: VecDeque<usize> = VecDeque::new();
    let mut active: Vec<Slot> = Vec::new();
    let (mut next, mut n_decoded, mut max_batch_seqs, mut idle_ns) = (0usize, 0u64, 0usize, 0u64);
    let mut batch: Vec<BatchToken> = Vec::new();
    let mut owner: Vec<usize> = Vec::new();
    loop {
        let now = s.now();
        while next < n && traces[next].arrival_ns <= now {
            waiting.push_back(next);
            next += 1;
        }
        while !waiting.is_empty() && !free.is_empty() {
            let req = waiting.pop_front().expect("not empty");
            traces[req].admitted_ns = now;
            active.push(Slot {
                req,
                seq: free.pop().expect("not empty"),
                prefilled: 0,
                pos: 0,
                last: 0,
            });
        }
        if active.is_empty() {
            if next >= n {
                break;
            }
            clock.sleep_until(traces[next].arrival_ns);
            idle_ns += s.now().saturating_sub(now);
            continue;
        }
        // Sequences that are generating get one token each; prompts fill the rest of the
        // n_batch budget, oldest first, in chunks (logits only where a prompt ends).
        batch.clear();
        owner.clear();
        for (k, a) in active.iter().enumerate() {
            if a.prefilled == reqs[a.req].prompt.len() {
                batch.push(BatchToken {
                    token: a.last,
                    pos: a.pos,
                    seq: a.seq,
                    logits: true,
                });
                owner.push(k);
            }
        }
        for (k, a) in active.iter_mut().enumerate() {
            let prompt = &reqs[a.req].prompt;
            let room = n_batch - batch.len();
            if a.prefilled == prompt.len() || room == 0 {
                continue;
            }
            let m = room.min(prompt.len() - a.prefilled);
            for i in a.prefilled..a.prefilled + m {
                let ends = i + 1 == prompt.len();
                batch.push(BatchToken {
                    token: prompt[i],
                    pos: i as i32,
                    seq: a.seq,
                    logits: ends,
                });
                if ends {
                    owner.push(k);
                }
            }
            a.prefilled += m;
            a.pos = a.prefilled as i32;
        }
        max_batch_seqs = max_batch_seqs.max(active.len());
        n_decoded += batch.len() as u64;
        s.call(|x| x.decode(&batch))?;
        s.call(|x| x.synchronize());
        let outputs: Vec<usize> = (0..batch.len()).filter(|&i| batch[i].logits).collect();
        for (i, &k) in outputs.iter().zip(&owner) {
            let a = &mut active[k];
            let tok = samplers[a.req].sample(s.session.logits(*i)?);
            if batch[*i].pos == a.pos {
                a.pos += 1; // a generated token was fed at a.pos
            }
            a.last = tok;
            traces[a.req].token_ns.push(s.clock.now_ns());
            traces[a.req].tokens.push(tok);
        }
        // Finished sequences leave and free their cells.
        let mut k = 0;
        while k < active.len() {
            let a = &active[k];
            if traces[a.req].token_ns.len() >= reqs[a.req].n_gen as usize {
                let seq = a.seq;
                s.call(|x| x.seq_rm(seq, -1, -1));
                free.push(seq);
                active.swap_remove(k);
            } else {
                k += 1;
            }
        }
    }
    let t_end = s.now();
    Ok(ArrivalRun {
        start_ns: t0,
        t_ns: t_end - t0,
        engine_ns: s.engine_ns,
        idle_ns,
        n_decoded,
        n_out: traces.iter().map(|t| t.token_ns.len() as u64).sum(),
        max_batch_seqs,
        traces,
    })
}

#[cfg(test)]
#[path = "bench_tests.rs"]
mod tests;
