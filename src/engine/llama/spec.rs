//! Speculative tests' sessions: a target context with llama-bench's parameters and room for
//! the draft's outputs, and llama.cpp's own drafter on it through `spec/loop.cpp`, the C
//! surface tpsbench compiles over llama.cpp's common library (build.rs says why it is C++).

use std::ffi::c_char;

use llama_cpp_sys_2 as sys;

use super::context::Context;
use super::knobs::llama_bench;
use super::model::LlamaModel;
use crate::engine::EngineError;
use crate::engine::speculative::{Generation, Position, SpecSession};
use crate::plan::TestParams;
use crate::plan::speculative::SpecTest;

#[repr(C)]
struct Opts {
    kind: i32,
    draft_path: *const c_char,
    draft_n_gpu_layers: i32,
    n_max: i32,
    n_min: i32,
    p_min: f32,
    n_threads: i32,
    n_batch: i32,
    n_ubatch: i32,
    flash_attn: i32,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct Stats {
    n_generated: i64,
    n_steps: i64,
    n_drafts: i64,
    n_drafted: i64,
    n_accepted: i64,
    n_restores: i64,
    t_gen_s: f64,
    t_draft_s: f64,
    t_verify_s: f64,
}

#[repr(C)]
struct Out {
    tokens: *mut i32,
    cap: usize,
    n_tokens: usize,
    pos_drafted: *mut i64,
    pos_accepted: *mut i64,
    n_pos: usize,
    stats: Stats,
    err: *mut c_char,
    n_err: usize,
}

type Raw = std::ffi::c_void;

unsafe extern "C" {
    fn tpsb_spec_outputs(n_batch: i32, n_max: i32) -> i32;
    fn tpsb_spec_new(
        model: *mut sys::llama_model,
        ctx: *mut sys::llama_context,
        o: *const Opts,
        err: *mut c_char,
        n_err: usize,
    ) -> *mut Raw;
    fn tpsb_spec_free(s: *mut Raw);
    fn tpsb_spec_draft_bytes(s: *const Raw) -> u64;
    fn tpsb_spec_generate(
        s: *mut Raw,
        prompt: *const i32,
        n_prompt: usize,
        n_gen: i32,
        speculative: i32,
        o: *mut Out,
    ) -> i32;
}

fn text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The drafter, freed before the target context it points to.
struct Drafter(*mut Raw);

impl Drop for Drafter {
    fn drop(&mut self) {
        unsafe { tpsb_spec_free(self.0) };
    }
}

pub(super) struct LlamaSpecSession<'m> {
    /// Declared first: dropped before the context.
    drafter: Drafter,
    _ctx: Context<'m>,
    n_max: u32,
}

impl<'m> LlamaSpecSession<'m> {
    pub(super) fn new(
        model: &'m LlamaModel,
        p: &TestParams,
        s: &SpecTest,
        draft: Option<&std::path::Path>,
        n_ctx: u32,
    ) -> Result<Self, EngineError> {
        let mut cp = llama_bench(p)?.0;
        cp.n_ctx = n_ctx;
        cp.n_seq_max = 1;
        cp.n_outputs_max =
            unsafe { tpsb_spec_outputs(cp.n_batch as i32, s.n_max as i32) }.max(1) as u32;
        // No ggml thread pool of our own (the hook set the context's n_threads), unlike a tg
        // test's session: the draft context gets llama.cpp's default one, as in
        // llama-speculative-simple, and a spinning pool of the target's would take the cores
        // the draft model runs on.
        let what = format!("a speculative test's target context of {n_ctx} tokens");
        let ctx = model.new_context(cp, &what).0?;
        let path = draft
            .map(|p| super::c_string(&p.to_string_lossy(), "the draft path"))
            .transpose()?;
        let o = Opts {
            // llama.cpp's `common_speculative_type` value.
            kind: s.drafter as i32,
            draft_path: path.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            draft_n_gpu_layers: s.draft_n_gpu_layers,
            n_max: s.n_max as i32,
            n_min: s.n_min as i32,
            p_min: s.p_min as f32,
            n_threads: p.n_threads as i32,
            n_batch: cp.n_batch as i32,
            n_ubatch: cp.n_ubatch as i32,
            flash_attn: cp.flash_attn_type,
        };
        let mut err = vec![0u8; 512];
        super::backend::take_first_error();
        let (m, c, e) = (model.as_ptr(), ctx.as_ptr(), err.as_mut_ptr().cast());
        let (raw, _log) =
            super::backend::capture(|| unsafe { tpsb_spec_new(m, c, &o, e, err.len()) });
        if raw.is_null() {
            let first = super::backend::take_first_error();
            let first = first.map_or(String::new(), |f| format!(": {f}"));
            return Err(EngineError::Other(format!("{}{first}", text(&err))));
        }
        Ok(LlamaSpecSession {
            drafter: Drafter(raw),
            _ctx: ctx,
            n_max: s.n_max,
        })
    }
}

impl SpecSession for LlamaSpecSession<'_> {
    fn generate(
        &mut self,
        prompt: &[i32],
        n_gen: u32,
        speculative: bool,
    ) -> Result<Generation, EngineError> {
        // speculative-simple stops once it has more than n_gen tokens; a last step may
        // accept a whole draft: room for n_gen + K + 1.
        let cap = n_gen as usize + self.n_max as usize + 2;
        let mut out = vec![0i32; cap];
        let n_pos = self.n_max.max(1) as usize;
        let mut drafted = vec![0i64; n_pos];
        let mut accepted = vec![0i64; n_pos];
        let mut err = vec![0u8; 512];
        let mut o = Out {
            tokens: out.as_mut_ptr(),
            cap,
            n_tokens: 0,
            pos_drafted: drafted.as_mut_ptr(),
            pos_accepted: accepted.as_mut_ptr(),
            n_pos,
            stats: Stats::default(),
            err: err.as_mut_ptr().cast(),
            n_err: err.len(),
        };
        let rc = unsafe {
            tpsb_spec_generate(
                self.drafter.0,
                prompt.as_ptr(),
                prompt.len(),
                n_gen.min(i32::MAX as u32) as i32,
                speculative as i32,
                &mut o,
            )
        };
        if rc != 0 {
            return Err(EngineError::Other(text(&err)));
        }
        let (n_out, st) = (o.n_tokens, o.stats);
        out.truncate(n_out.min(cap));
        let ns = |s: f64| (s.max(0.0) * 1e9) as u64;
        let n = |x: i64| x.max(0) as u64;
        Ok(Generation {
            tokens: out,
            n_generated: n(st.n_generated),
            n_steps: n(st.n_steps),
            n_drafts: n(st.n_drafts),
            n_drafted: n(st.n_drafted),
            n_accepted: n(st.n_accepted),
            n_restores: n(st.n_restores),
            by_position: (drafted.iter().zip(&accepted))
                .map(|(&d, &a)| Position {
                    drafted: n(d),
                    accepted: n(a),
                })
                .collect(),
            t_gen_ns: ns(st.t_gen_s),
            t_draft_ns: ns(st.t_draft_s),
            t_verify_ns: ns(st.t_verify_s),
        })
    }

    fn draft_bytes(&self) -> u64 {
        unsafe { tpsb_spec_draft_bytes(self.drafter.0) }
    }
}
