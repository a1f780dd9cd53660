//! Requests arriving over time served with continuous batching (the timing points are
//! `bench`'s). A request joins the running batch when it arrives and a sequence slot is free, its prompt
//! chunked into the step's n_batch budget, and leaves when it has its tokens (`seq_rm` frees
//! its cells).

use std::collections::VecDeque;

use super::bench::{Request, Timed};
use super::error::ServingError;
use super::metrics::Trace;
use super::sampling::Sampler;
use crate::engine::{BatchSession, BatchToken, Engine, EngineError};

#[derive(Debug, Clone)]
pub struct ArrivalRun {
    pub start_ns: u64,
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

/// A request being served: its sequence, how much of its prompt is decoded, the position
/// of its next token and its last token (fed back next).
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
) -> Result<ArrivalRun, ServingError> {
    check_arrivals(reqs, offsets, samplers.len(), slots, n_batch)?;
    session.clear();
    let mut s = Timed {
        session,
        clock,
        engine_ns: 0,
    };
    let t0 = s.clock.now_ns();
    let mut traces = super::bench::new_traces(reqs, t0, Some(offsets));
    let mut q = Queue {
        free: (0..slots as i32).rev().collect(),
        waiting: VecDeque::new(),
        active: Vec::new(),
        next: 0,
    };
    let (mut n_decoded, mut max_batch_seqs, mut idle_ns) = (0u64, 0usize, 0u64);
    let mut batch: Vec<BatchToken> = Vec::new();
    let mut owner: Vec<usize> = Vec::new();
    loop {
        let now = s.clock.now_ns();
        q.admit(&mut traces, now);
        if q.active.is_empty() {
            if q.next >= reqs.len() {
                break;
            }
            clock.sleep_until(traces[q.next].arrival_ns);
            idle_ns += s.clock.now_ns().saturating_sub(now);
            continue;
        }
        q.fill_batch(reqs, n_batch, &mut batch, &mut owner);
        max_batch_seqs = max_batch_seqs.max(q.active.len());
        n_decoded += batch.len() as u64;
        s.call(|x| x.decode(&batch))?;
        s.call(|x| x.synchronize());
        sample_outputs(&mut s, &batch, &owner, &mut q.active, samplers, &mut traces)?;
        q.release_finished(&mut s, reqs, &traces);
    }
    Ok(ArrivalRun {
        start_ns: t0,
        t_ns: s.clock.now_ns() - t0,
        engine_ns: s.engine_ns,
        idle_ns,
        n_decoded,
        n_out: traces.iter().map(|t| t.token_ns.len() as u64).sum(),
        max_batch_seqs,
        traces,
    })
}

/// Refuses what `run_arrivals` cannot run, before its clock starts.
fn check_arrivals(
    reqs: &[Request],
    offsets: &[u64],
    n_samplers: usize,
    slots: u32,
    n_batch: usize,
) -> Result<(), ServingError> {
    let n = reqs.len();
    if offsets.len() != n || n_samplers < n {
        return Err(ServingError::Unpaired);
    }
    if reqs.iter().any(|r| r.prompt.is_empty() || r.n_gen == 0) {
        return Err(ServingError::EmptyRequest);
    }
    // Every active sequence decodes a token each step: all must fit one batch.
    if (slots as usize) > n_batch {
        return Err(ServingError::SlotsOverBatch { slots, n_batch });
    }
    Ok(())
}

/// Where the requests stand: `next` is the first not arrived yet; arrived ones wait in
/// order for a free sequence, then are served in a slot until they have their tokens.
struct Queue {
    free: Vec<i32>,
    waiting: VecDeque<usize>,
    active: Vec<Slot>,
    next: usize,
}

impl Queue {
    /// The requests arrived by `now` join the waiting line; waiting ones take free
    /// sequences, admitted at `now`.
    fn admit(&mut self, traces: &mut [Trace], now: u64) {
        while self.next < traces.len() && traces[self.next].arrival_ns <= now {
            self.waiting.push_back(self.next);
            self.next += 1;
        }
        while !self.waiting.is_empty() && !self.free.is_empty() {
            let req = self.waiting.pop_front().expect("not empty");
            traces[req].admitted_ns = now;
            self.active.push(Slot {
                req,
                seq: self.free.pop().expect("not empty"),
                prefilled: 0,
                pos: 0,
                last: 0,
            });
        }
    }

    /// The step's batch: sequences that are generating get one token each; prompts fill
    /// the rest of the n_batch budget, oldest first, in chunks (logits only where a prompt
    /// ends). `owner` gets the slot of each token with logits, in batch order.
    fn fill_batch(
        &mut self,
        reqs: &[Request],
        n_batch: usize,
        batch: &mut Vec<BatchToken>,
        owner: &mut Vec<usize>,
    ) {
        batch.clear();
        owner.clear();
        for (k, a) in self.active.iter().enumerate() {
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
        for (k, a) in self.active.iter_mut().enumerate() {
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
    }

    /// Finished sequences leave and free their cells.
    fn release_finished(&mut self, s: &mut Timed<'_, '_>, reqs: &[Request], traces: &[Trace]) {
        let mut k = 0;
        while k < self.active.len() {
            let a = &self.active[k];
            if traces[a.req].token_ns.len() >= reqs[a.req].n_gen as usize {
                let seq = a.seq;
                s.call(|x| x.seq_rm(seq, -1, -1));
                self.free.push(seq);
                self.active.swap_remove(k);
            } else {
                k += 1;
            }
        }
    }
}

/// Samples a token for each output of the decoded batch (the i-th token with logits is
/// slot `owner[i]`'s) and records it in its request's trace.
fn sample_outputs(
    s: &mut Timed<'_, '_>,
    batch: &[BatchToken],
    owner: &[usize],
    active: &mut [Slot],
    samplers: &mut [Sampler],
    traces: &mut [Trace],
) -> Result<(), EngineError> {
    for (i, &k) in (0..batch.len()).filter(|&i| batch[i].logits).zip(owner) {
        let a = &mut active[k];
        let tok = samplers[a.req].sample(s.session.logits(i)?);
        if batch[i].pos == a.pos {
            a.pos += 1; // a generated token was fed at a.pos
        }
        a.last = tok;
        traces[a.req].token_ns.push(s.clock.now_ns());
        traces[a.req].tokens.push(tok);
    }
    Ok(())
}
