//! A fake engine with a fake clock: each prompt token costs `prompt_ns`, each generated token
//! `gen_ns`. Tests of the measurement loop and the runner get exact, repeatable figures.

use std::cell::{Cell, RefCell};
use std::path::Path;
use std::rc::Rc;

use super::{Engine, EngineError, LoadParams, Model, ModelInfo, Session};
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
    /// Serving tests (mock_batch): batch decodes, their tokens, sequence copies and removals.
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

    fn serving(&self) -> Option<&dyn super::ServingModel> {
        Some(self)
    }

    /// A CPU-only engine: everything on the CPU, as a CPU build of llama.cpp reports it.
    fn placement(&self, params: &TestParams) -> Option<crate::engine::placement::Placement> {
        if self.last.borrow().as_ref() != Some(params) {
            return None;
        }
        Some(crate::engine::placement::Placement {
            layers_offloaded: 0,
            layers_total: 3,
            devices: vec![crate::engine::placement::DevicePlacement {
                name: "CPU".into(),
                layers: 3,
                model_bytes: self.info.size,
                kv_bytes: 1 << 20,
                compute_bytes: 1 << 16,
                expert_bytes: 0,
            }],
            buffers: Vec::new(),
            kv_cells: None,
            experts: Vec::new(),
            overrides: Vec::new(),
            mismatch: Vec::new(),
            fit: None,
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
