//! A fake engine with a fake clock: each prompt token costs `prompt_ns`, each generated token
//! `gen_ns`. Tests of the measurement loop and the runner get exact, repeatable figures.

use std::cell::{Cell, RefCell};
use std::path::Path;
use std::rc::Rc;

use crate::engine::{Engine, EngineError, LoadParams, Model, ModelInfo, Session};
use crate::plan::TestParams;

#[derive(Debug, Default)]
pub struct Log {
    pub loads: usize,
    pub sessions: usize,
    pub clears: usize,
    pub decoded_tokens: u64,
    pub decode_calls: u64,
    pub syncs: u64,
    pub restores: usize,
    /// Serving tests (`serving`): batch decodes, their tokens, sequence copies and removals.
    pub batch_decodes: u64,
    pub batch_tokens: u64,
    pub seq_cps: u64,
    pub seq_rms: u64,
    /// KV cells in use after the last serving operation, and the most ever in use.
    pub kv_cells: usize,
    pub kv_cells_peak: usize,
    /// The model-level parameters of every load, in order.
    pub load_params: Vec<LoadParams>,
}

pub struct MockEngine {
    pub(super) clock: Rc<Cell<u64>>,
    pub prompt_ns: u64,
    pub gen_ns: u64,
    /// Tests whose n_ctx exceeds this fail to get a context ("out of memory").
    pub max_ctx: u32,
    /// Loads offloading more layers than this fail, as llama.cpp's load fails when the
    /// device's memory runs out (negative `n_gpu_layers`, every layer, is the most).
    pub max_gpu_layers: Option<i32>,
    /// Each decode call costs up to this many extra ns, drawn from a seeded generator.
    pub jitter_ns: u64,
    jitter: RefCell<crate::util::rng::SplitMix64>,
    pub log: Rc<RefCell<Log>>,
}

impl MockEngine {
    pub fn new(prompt_ns: u64, gen_ns: u64) -> Self {
        MockEngine {
            clock: Rc::new(Cell::new(0)),
            prompt_ns,
            gen_ns,
            max_ctx: u32::MAX,
            max_gpu_layers: None,
            jitter_ns: 0,
            jitter: RefCell::new(crate::util::rng::SplitMix64(7)),
            log: Rc::default(),
        }
    }
}

pub(super) struct MockModel<'a> {
    pub(super) engine: &'a MockEngine,
    pub(super) info: ModelInfo,
    last: RefCell<Option<TestParams>>,
}

struct MockSession<'a> {
    engine: &'a MockEngine,
    pos: usize,
}

impl Engine for MockEngine {
    fn load(&self, path: &Path, params: &LoadParams) -> Result<Box<dyn Model + '_>, EngineError> {
        if !path
            .file_name()
            .is_some_and(|f| f.to_string_lossy().starts_with("mock"))
        {
            return Err(EngineError::NotMock {
                path: path.to_path_buf(),
            });
        }
        self.log.borrow_mut().loads += 1;
        self.log.borrow_mut().load_params.push(params.clone());
        let ngl = params.params.n_gpu_layers;
        if let Some(max) = self.max_gpu_layers.filter(|&m| ngl < 0 || ngl > m) {
            return Err(EngineError::Load {
                path: path.to_path_buf(),
                why: Some(format!(
                    "n_gpu_layers {ngl}: out of device memory (the mock holds {max} layers)"
                )),
            });
        }
        Ok(Box::new(MockModel {
            engine: self,
            last: RefCell::new(None),
            info: ModelInfo {
                description: "mock 1M F32".into(),
                size: 4_000_000,
                n_params: 1_000_000,
                n_vocab: 100,
                bos: Some(1),
                n_ctx_train: 4096,
            },
        }))
    }

    fn now_ns(&self) -> u64 {
        self.clock.get()
    }

    /// Waiting costs no real time: the fake clock jumps.
    fn sleep_until(&self, t_ns: u64) {
        self.clock.set(self.clock.get().max(t_ns));
    }
}

impl Model for MockModel<'_> {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn serving(&self) -> Option<&dyn crate::engine::ServingModel> {
        self.serving_side()
    }

    /// A CPU-only engine: everything on the CPU, as a CPU build of llama.cpp reports it.
    fn placement(&self, params: &TestParams) -> Option<crate::engine::placement::Placement> {
        if self.last.borrow().as_ref() != Some(params) {
            return None;
        }
        Some(crate::engine::placement::Placement {
            layers_total: 3,
            devices: vec![crate::engine::placement::DevicePlacement {
                name: "CPU".into(),
                layers: 3,
                model_bytes: self.info.size,
                kv_bytes: 1 << 20,
                compute_bytes: 1 << 16,
                expert_bytes: 0,
            }],
            ..Default::default()
        })
    }

    fn session(&self, p: &TestParams) -> Result<Box<dyn Session + '_>, EngineError> {
        if p.n_ctx() > self.engine.max_ctx {
            return Err(EngineError::Context {
                n_ctx: p.n_ctx(),
                message: format!("failed to create a context of {} tokens", p.n_ctx()),
            });
        }
        self.engine.log.borrow_mut().sessions += 1;
        *self.last.borrow_mut() = Some(p.clone());
        Ok(Box::new(MockSession {
            engine: self.engine,
            pos: 0,
        }))
    }
}

impl MockSession<'_> {
    fn advance(&mut self, n: usize, ns_per_token: u64) -> Result<(), EngineError> {
        if self.pos + n > self.engine.max_ctx as usize {
            return Err(EngineError::decode("context full"));
        }
        self.pos += n;
        let c = &self.engine.clock;
        let jitter = match self.engine.jitter_ns {
            0 => 0,
            j => self.engine.jitter.borrow_mut().next_u64() % j,
        };
        c.set(c.get() + n as u64 * ns_per_token + jitter);
        let mut log = self.engine.log.borrow_mut();
        log.decoded_tokens += n as u64;
        log.decode_calls += 1;
        Ok(())
    }
}

impl Session for MockSession<'_> {
    fn clear(&mut self) {
        self.pos = 0;
        self.engine.log.borrow_mut().clears += 1;
    }

    fn decode_chunks(&mut self, tokens: &[i32], n_batch: usize) -> Result<(), EngineError> {
        for chunk in tokens.chunks(n_batch) {
            self.advance(chunk.len(), self.engine.prompt_ns)?;
        }
        Ok(())
    }

    fn decode_one(&mut self, _token: i32) -> Result<(), EngineError> {
        self.advance(1, self.engine.gen_ns)
    }

    fn synchronize(&mut self) {
        self.engine.log.borrow_mut().syncs += 1;
    }

    fn save_state(&mut self) -> Vec<u8> {
        (self.pos as u64).to_le_bytes().to_vec()
    }

    fn restore_state(&mut self, state: &[u8]) -> bool {
        let Ok(b) = <[u8; 8]>::try_from(state) else {
            return false;
        };
        self.pos = u64::from_le_bytes(b) as usize;
        self.engine.log.borrow_mut().restores += 1;
        true
    }
}

pub(crate) mod serving {
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

    use super::{MockEngine, MockModel};
    use crate::engine::EngineError;
    use crate::engine::batching::{BatchParams, BatchSession, BatchToken, ServingModel};

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

    impl MockModel<'_> {
        pub(super) fn serving_side(&self) -> Option<&dyn ServingModel> {
            Some(self)
        }
    }

    impl ServingModel for MockModel<'_> {
        fn batch_session(
            &self,
            p: &BatchParams,
        ) -> Result<Box<dyn BatchSession + '_>, EngineError> {
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
        fn tokenize(
            &self,
            text: &str,
            add_special: bool,
            _: bool,
        ) -> Result<Vec<i32>, EngineError> {
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
                _ => Err(EngineError::Other(format!("batch entry {i} has no logits"))),
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
}
