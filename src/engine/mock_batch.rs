//! The mock engine's serving side: a fake clock and a simulated KV cache, so the serving
//! pipeline's figures are exact in unit tests and its cache use can be checked.
//!
//! Cost model: a `decode` of n tokens costs `gen_ns + (n - 1) * prompt_ns` on the fake clock;
//! everything else is free. The cache follows llama.cpp's rules: positions of a sequence must
//! continue from its last one; a unified cache is one stream of `n_ctx` cells shared by all
//! sequences (`seq_cp` adds the sequence to the same cells), a split cache gives each
//! sequence a stream of `n_ctx / n_seq_max` cells (`seq_cp` copies cells). Logits are zero
//! except one peak, a function of the entry's token and position, so greedy output is
//! deterministic.

use std::collections::BTreeSet;

use super::EngineError;
use super::batching::{BatchParams, BatchSession, BatchToken, ServingModel};
use super::mock::{MockEngine, MockModel};

#[derive(Debug, Clone)]
struct KvCell {
    pos: i32,
    seqs: BTreeSet<i32>,
}

pub struct MockBatchSession<'a> {
    engine: &'a MockEngine,
    n_vocab: usize,
    n_ctx: u32,
    n_seq_max: u32,
    unified: bool,
    /// One stream (unified) or one per sequence.
    streams: Vec<Vec<KvCell>>,
    /// Logits of the last decode, per batch entry (None: not requested).
    last_logits: Vec<Option<Vec<f32>>>,
}

/// The token the mock's logits favour after `token` at `pos`.
pub fn mock_next_token(token: i32, pos: i32, n_vocab: usize) -> i32 {
    ((token as i64 * 31 + pos as i64 * 7 + 3).rem_euclid(n_vocab as i64)) as i32
}

impl ServingModel for MockModel<'_> {
    fn batch_session(&self, p: &BatchParams) -> Result<Box<dyn BatchSession + '_>, EngineError> {
        if p.n_ctx > self.engine.max_ctx {
            return Err(EngineError::Context {
                n_ctx: p.n_ctx,
                message: format!("failed to create a context of {} tokens", p.n_ctx),
            });
        }
        self.engine.log.borrow_mut().sessions += 1;
        let n_streams = if p.kv_unified { 1 } else { p.n_seq_max.max(1) };
        Ok(Box::new(MockBatchSession {
            engine: self.engine,
            n_vocab: self.info.n_vocab as usize,
            n_ctx: p.n_ctx,
            n_seq_max: p.n_seq_max.max(1),
            unified: p.kv_unified,
            streams: vec![Vec::new(); n_streams as usize],
            last_logits: Vec::new(),
        }))
    }

    /// One token per whitespace-separated word (2 + a hash of it), BOS (1) first.
    fn tokenize(&self, text: &str, add_special: bool, _: bool) -> Result<Vec<i32>, EngineError> {
        let n = self.info.n_vocab as u64 - 2;
        let words = text.split_whitespace().map(|w| {
            let h = w
                .bytes()
                .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
            (2 + h % n) as i32
        });
        Ok(add_special.then_some(1).into_iter().chain(words).collect())
    }

    fn apply_chat_template(&self, user_message: &str) -> Result<String, EngineError> {
        Ok(format!("<|user|> {user_message} <|assistant|>"))
    }
}

impl MockBatchSession<'_> {
    fn stream_of(&self, seq: i32) -> usize {
        if self.unified { 0 } else { seq as usize }
    }

    fn capacity(&self) -> usize {
        if self.unified {
            self.n_ctx as usize
        } else {
            (self.n_ctx / self.n_seq_max) as usize
        }
    }

    fn check_seq(&self, seq: i32) -> Result<(), EngineError> {
        if seq < 0 || seq as u32 >= self.n_seq_max {
            return Err(EngineError::decode(format!(
                "seq_id {seq} is out of range (n_seq_max {})",
                self.n_seq_max
            )));
        }
        Ok(())
    }

    /// Logs the cells in use, over all streams (what llama-batched-bench's N_KV counts).
    fn log_cells(&self) {
        let used = self.streams.iter().map(Vec::len).sum();
        let mut log = self.engine.log.borrow_mut();
        log.kv_cells = used;
        log.kv_cells_peak = log.kv_cells_peak.max(used);
    }
}

impl BatchSession for MockBatchSession<'_> {
    fn n_ctx(&self) -> u32 {
        self.n_ctx
    }

    fn clear(&mut self) {
        self.streams.iter_mut().for_each(Vec::clear);
        self.engine.log.borrow_mut().clears += 1;
        self.log_cells();
    }

    fn decode(&mut self, tokens: &[BatchToken]) -> Result<(), EngineError> {
        if tokens.is_empty() {
            return Err(EngineError::decode("empty batch"));
        }
        // Validate everything first: a failed decode leaves the cache as it was.
        let mut next: std::collections::BTreeMap<i32, i32> = Default::default();
        let mut added = vec![0usize; self.streams.len()];
        for t in tokens {
            self.check_seq(t.seq)?;
            let expect = match next.get(&t.seq) {
                Some(&p) => p,
                None => self.seq_pos_range(t.seq).map_or(0, |r| r.1 + 1),
            };
            if t.pos != expect {
                return Err(EngineError::decode(format!(
                    "seq {} expects position {expect}, got {}",
                    t.seq, t.pos
                )));
            }
            if t.token < 0 || t.token as usize >= self.n_vocab {
                return Err(EngineError::decode(format!("invalid token {}", t.token)));
            }
            next.insert(t.seq, t.pos + 1);
            added[self.stream_of(t.seq)] += 1;
        }
        for (s, n) in added.iter().enumerate() {
            if self.streams[s].len() + n > self.capacity() {
                return Err(EngineError::decode("context full"));
            }
        }
        self.last_logits.clear();
        for t in tokens {
            let s = self.stream_of(t.seq);
            self.streams[s].push(KvCell {
                pos: t.pos,
                seqs: BTreeSet::from([t.seq]),
            });
            self.last_logits.push(t.logits.then(|| {
                let mut l = vec![0.0f32; self.n_vocab];
                l[mock_next_token(t.token, t.pos, self.n_vocab) as usize] = 1.0;
                l
            }));
        }
        let e = self.engine;
        let cost = e.gen_ns + (tokens.len() as u64 - 1) * e.prompt_ns;
        e.clock.set(e.clock.get() + cost);
        {
            let mut log = e.log.borrow_mut();
            log.batch_decodes += 1;
            log.batch_tokens += tokens.len() as u64;
        }
        self.log_cells();
        Ok(())
    }

    fn synchronize(&mut self) {
        self.engine.log.borrow_mut().syncs += 1;
    }

    fn logits(&mut self, i: usize) -> Result<&[f32], EngineError> {
        match self.last_logits.get(i) {
            Some(Some(l)) => Ok(l),
            _ => Err(EngineError::Logits(format!(
                "batch entry {i} has no logits"
            ))),
        }
    }

    fn seq_cp(&mut self, src: i32, dst: i32) {
        self.engine.log.borrow_mut().seq_cps += 1;
        let (s, d) = (self.stream_of(src), self.stream_of(dst));
        if s == d {
            for c in &mut self.streams[s] {
                if c.seqs.contains(&src) {
                    c.seqs.insert(dst);
                }
            }
        } else {
            let copied: Vec<KvCell> = self.streams[s]
                .iter()
                .filter(|c| c.seqs.contains(&src))
                .map(|c| KvCell {
                    pos: c.pos,
                    seqs: BTreeSet::from([dst]),
                })
                .collect();
            self.streams[d].extend(copied);
        }
        self.log_cells();
    }

    fn seq_rm(&mut self, seq: i32, p0: i32, p1: i32) -> bool {
        self.engine.log.borrow_mut().seq_rms += 1;
        let p1 = if p1 < 0 { i32::MAX } else { p1 };
        let s = self.stream_of(seq);
        for c in &mut self.streams[s] {
            if c.pos >= p0.max(0) && c.pos < p1 {
                c.seqs.remove(&seq);
            }
        }
        self.streams[s].retain(|c| !c.seqs.is_empty());
        self.log_cells();
        true
    }

    fn seq_pos_range(&self, seq: i32) -> Option<(i32, i32)> {
        let stream = self.streams.get(self.stream_of(seq))?;
        let pos = stream
            .iter()
            .filter(|c| c.seqs.contains(&seq))
            .map(|c| c.pos);
        let (lo, hi) = pos.fold((i32::MAX, -1), |(lo, hi), p| (lo.min(p), hi.max(p)));
        (hi >= 0).then_some((lo, hi))
    }
}
