//! The arrival measurement loop, `run_arrivals`: requests arriving over time served with
//! continuous batching (see `bench` for the timing points it shares with `run_together`).
//! A request joins the running batch when it arrives and a sequence slot is free, its prompt
//! chunked into the step's n_batch budget, and leaves when it has its tokens (`seq_rm` frees
//! its cells).

use std::collections::VecDeque;

use super::bench::{Request, Timed};
use super::metrics::Trace;
use super::sampling::Sampler;
use crate::engine::{BatchSession, BatchToken, Engine};

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

impl ArrivalRun {
    /// The run's figures: rates over the whole time.
    pub fn figures(&self) -> crate::record::serving::RepFigures {
        super::metrics::arrival_figures(
            self.t_ns,
            self.n_out,
            self.n_decoded,
            self.engine_ns,
            self.idle_ns,
        )
    }
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
