//! The timing loop, with llama-bench's methodology (docs/methodology.md): the random token
//! ids of a repetition are drawn before its timer starts, so the timed region holds only
//! llama.cpp work; `tokens = "text"` reads them from a tokenized text stream instead.

use std::sync::Arc;

use crate::engine::{Engine, EngineError, ModelInfo, Session};
use crate::plan::TestParams;
use crate::util::rng::SplitMix64;

/// The tokens a test decodes, with BOS first in every prompt when the vocabulary adds one:
/// seeded random ids, as llama-bench's `rand() % n_vocab` (random rather than constant ids
/// matter for MoE routing), or a text stream read in order.
pub struct TokenSource {
    ids: Ids,
    bos: Option<i32>,
}

enum Ids {
    Random {
        rng: SplitMix64,
        n_vocab: u64,
    },
    /// A tokenized text, never empty; `next` wraps around at its end.
    Text {
        tokens: Arc<[i32]>,
        next: usize,
    },
}

impl TokenSource {
    /// llama-bench's seeded random ids.
    pub fn new(seed: u64, info: &ModelInfo) -> Self {
        Self::random_ids(seed, info.n_vocab, info.bos)
    }

    pub fn random_ids(seed: u64, n_vocab: i32, bos: Option<i32>) -> Self {
        let (rng, n_vocab) = (SplitMix64(seed), n_vocab.max(1) as u64);
        TokenSource {
            ids: Ids::Random { rng, n_vocab },
            bos,
        }
    }

    /// The tokens of `text` in order from `start` (modulo its length), wrapping at its end;
    /// None when `text` is empty.
    pub fn text(text: Arc<[i32]>, start: usize, info: &ModelInfo) -> Option<Self> {
        (!text.is_empty()).then(|| TokenSource {
            ids: Ids::Text {
                next: start % text.len(),
                tokens: text,
            },
            bos: info.bos,
        })
    }

    pub fn random(&mut self) -> i32 {
        match &mut self.ids {
            Ids::Random { rng, n_vocab } => (rng.next_u64() % *n_vocab) as i32,
            Ids::Text { tokens, next } => {
                let t = tokens[*next];
                *next = (*next + 1) % tokens.len();
                t
            }
        }
    }

    pub fn prompt(&mut self, n: usize) -> Vec<i32> {
        (0..n)
            .map(|i| match (i, self.bos) {
                (0, Some(bos)) => bos,
                _ => self.random(),
            })
            .collect()
    }
}

/// A test whose context is ready: warmed up, with its depth state saved when it has one.
pub struct PreparedTest<'s> {
    session: Box<dyn Session + 's>,
    params: TestParams,
    tokens: TokenSource,
    depth_state: Option<Vec<u8>>,
}

impl<'s> PreparedTest<'s> {
    /// Runs `warmup` untimed passes (a full prompt pass when the test has a prompt, one
    /// generated token when it generates), as llama-bench does.
    /// `tokens`: what the test decodes (`TokenSource::new` for llama-bench's random ids).
    pub fn new(
        mut session: Box<dyn Session + 's>,
        params: &TestParams,
        mut tokens: TokenSource,
        warmup: u32,
    ) -> Result<Self, EngineError> {
        session.clear();
        for _ in 0..warmup {
            if params.n_prompt > 0 {
                let p = tokens.prompt(params.n_prompt as usize);
                session.decode_chunks(&p, params.n_batch as usize)?;
                session.synchronize();
            }
            if params.n_gen > 0 {
                let t = tokens.prompt(1)[0];
                session.decode_one(t)?;
                session.synchronize();
            }
        }
        Ok(PreparedTest {
            session,
            params: params.clone(),
            tokens,
            depth_state: None,
        })
    }

    /// One timed repetition: its wall time on `engine`'s clock.
    pub fn repetition(&mut self, engine: &dyn Engine) -> Result<u64, EngineError> {
        let p = &self.params;
        self.session.clear();
        if p.n_depth > 0 {
            let restored = self
                .depth_state
                .as_ref()
                .is_some_and(|s| self.session.restore_state(s));
            if !restored {
                let d = self.tokens.prompt(p.n_depth as usize);
                self.session.decode_chunks(&d, p.n_batch as usize)?;
                self.session.synchronize();
                self.depth_state = Some(self.session.save_state());
            }
        }
        let prompt = self.tokens.prompt(p.n_prompt as usize);
        let generated = self.tokens.prompt(p.n_gen as usize);

        let start = engine.now_ns();
        if !prompt.is_empty() {
            self.session.decode_chunks(&prompt, p.n_batch as usize)?;
            self.session.synchronize();
        }
        for &t in &generated {
            self.session.decode_one(t)?;
            self.session.synchronize();
        }
        Ok(engine.now_ns().saturating_sub(start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Axes;
    use crate::engine::LoadParams;
    use crate::engine::tests::mock::MockEngine;
    use crate::plan::expand_axes;
    use std::path::Path;

    fn source(info: &ModelInfo) -> TokenSource {
        TokenSource::new(1, info)
    }

    fn params() -> (TestParams, TestParams) {
        let mut a = Axes::llama_bench_defaults(2);
        a.n_prompt = vec![512];
        a.n_gen = vec![128];
        a.n_batch = vec![128];
        let v = expand_axes(&a);
        (v[0].clone(), v[1].clone())
    }

    #[test]
    fn prompt_test_decodes_in_batches_with_one_sync_and_exact_time() {
        let e = MockEngine::new(1_000, 10_000);
        let m = e
            .load(Path::new("mock"), &LoadParams::of(&params().0))
            .unwrap();
        let (pp, _) = params();
        let mut t = PreparedTest::new(m.session(&pp).unwrap(), &pp, source(m.info()), 1).unwrap();
        let before = (e.log.borrow().decode_calls, e.log.borrow().syncs);
        let ns = t.repetition(&e).unwrap();
        assert_eq!(ns, 512 * 1_000);
        let log = e.log.borrow();
        assert_eq!(
            log.decode_calls - before.0,
            4,
            "512 tokens in chunks of 128"
        );
        assert_eq!(log.syncs - before.1, 1);
    }

    #[test]
    fn gen_test_decodes_one_token_per_call_and_syncs_each() {
        let e = MockEngine::new(1_000, 10_000);
        let m = e
            .load(Path::new("mock"), &LoadParams::of(&params().0))
            .unwrap();
        let (_, tg) = params();
        let mut t = PreparedTest::new(m.session(&tg).unwrap(), &tg, source(m.info()), 1).unwrap();
        assert_eq!(
            e.log.borrow().decoded_tokens,
            1,
            "warmup generates one token"
        );
        let ns = t.repetition(&e).unwrap();
        assert_eq!(ns, 128 * 10_000);
        let log = e.log.borrow();
        assert_eq!(log.decode_calls, 1 + 128);
        assert_eq!(log.syncs, 1 + 128);
    }

    #[test]
    fn depth_is_prefilled_untimed_once_then_restored() {
        let e = MockEngine::new(1_000, 10_000);
        let m = e
            .load(Path::new("mock"), &LoadParams::of(&params().0))
            .unwrap();
        let (_, mut tg) = params();
        tg.n_depth = 256;
        let mut t = PreparedTest::new(m.session(&tg).unwrap(), &tg, source(m.info()), 0).unwrap();
        for _ in 0..3 {
            assert_eq!(
                t.repetition(&e).unwrap(),
                128 * 10_000,
                "depth is not timed"
            );
        }
        let log = e.log.borrow();
        assert_eq!(log.decoded_tokens, 256 + 3 * 128, "depth decoded once");
        assert_eq!(log.restores, 2);
        assert_eq!(log.clears, 1 + 3, "memory cleared before every repetition");
    }

    #[test]
    fn tokens_are_seeded_in_range_and_start_with_bos() {
        let info = ModelInfo {
            description: String::new(),
            size: 0,
            n_params: 0,
            n_vocab: 50,
            bos: Some(7),
            n_ctx_train: 0,
        };
        let a = TokenSource::new(9, &info).prompt(100);
        let b = TokenSource::new(9, &info).prompt(100);
        assert_eq!(a, b);
        assert_eq!(a[0], 7);
        assert!(a.iter().all(|&t| (0..50).contains(&t)));
        assert_ne!(a, TokenSource::new(10, &info).prompt(100));
    }

    #[test]
    fn text_is_read_in_order_from_its_start_wrapping_with_bos_first_in_each_prompt() {
        let info = ModelInfo {
            description: String::new(),
            size: 0,
            n_params: 0,
            n_vocab: 50,
            bos: Some(1),
            n_ctx_train: 0,
        };
        let text: Arc<[i32]> = vec![10, 11, 12, 13, 14].into();
        let mut t = TokenSource::text(text.clone(), 7, &info).unwrap();
        assert_eq!(t.prompt(3), vec![1, 12, 13], "start 7 is 2 modulo 5");
        assert_eq!(t.prompt(4), vec![1, 14, 10, 11], "wraps at the end");
        assert_eq!(t.random(), 12, "generated tokens continue the text");
        assert!(TokenSource::text(Vec::new().into(), 0, &info).is_none());
    }
}
