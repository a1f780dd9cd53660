//! Serving tests on llama.cpp: multi-sequence batches, logits, KV-cache sequence operations,
//! tokenization and the chat template, through `llama-cpp-sys-2` directly.
//!
//! The context is made as llama-batched-bench makes it (common's context parameters, with
//! `n_seq_max` and `kv_unified` set, and no threadpool attached: llama.cpp's CPU backend then
//! runs each graph on its own OpenMP threads), so the parallel test's figures can be compared
//! with that tool's.

use std::ffi::{CStr, CString, c_char};
use std::ptr::NonNull;

use llama_cpp_sys_2 as sys;

use super::batching::{BatchParams, BatchSession, BatchToken, ServingModel};
use super::llama::{LlamaModel, ggml_type};

pub(super) struct LlamaBatchSession<'m> {
    ctx: NonNull<sys::llama_context>,
    n_vocab: usize,
    /// Batch buffers, reused across decodes; `llama_batch` points into them.
    token: Vec<i32>,
    pos: Vec<i32>,
    n_seq_id: Vec<i32>,
    seq: Vec<i32>,
    seq_ptr: Vec<*mut i32>,
    logits: Vec<i8>,
    /// From the model's load log and this context's creation log.
    placement: Option<crate::engine::placement::Placement>,
    _model: &'m LlamaModel,
}

impl Drop for LlamaBatchSession<'_> {
    fn drop(&mut self) {
        unsafe { sys::llama_free(self.ctx.as_ptr()) };
    }
}

impl ServingModel for LlamaModel {
    fn batch_session(&self, p: &BatchParams) -> Result<Box<dyn BatchSession + '_>, String> {
        let b = &p.base;
        // common_context_params_to_llama() with common's defaults, as llama-batched-bench.
        let mut cp = unsafe { sys::llama_context_default_params() };
        cp.n_ctx = p.n_ctx;
        cp.n_batch = b.n_batch;
        cp.n_ubatch = b.n_ubatch;
        cp.n_seq_max = p.n_seq_max.max(1);
        cp.kv_unified = p.kv_unified;
        cp.n_outputs_max = 0;
        cp.n_outputs_max_per_seq = 1;
        cp.n_threads = b.n_threads as i32;
        cp.n_threads_batch = b.n_threads as i32;
        cp.type_k = ggml_type(&b.type_k)?;
        cp.type_v = ggml_type(&b.type_v)?;
        cp.flash_attn_type = b.flash_attn;
        cp.offload_kqv = !b.no_kv_offload;
        cp.no_perf = false;
        cp.op_offload = true;
        cp.swa_full = false;
        cp.embeddings = false;
        let (ctx, placement) = self.new_context(cp);
        let ctx = ctx.map_err(|why| {
            format!(
                "llama.cpp could not create a context of {} tokens for {} sequences \
                 (n_batch {}, n_ubatch {}): {why}",
                p.n_ctx, p.n_seq_max, b.n_batch, b.n_ubatch
            )
        })?;
        Ok(Box::new(LlamaBatchSession {
            ctx,
            n_vocab: self.info.n_vocab.max(0) as usize,
            token: Vec::new(),
            pos: Vec::new(),
            n_seq_id: Vec::new(),
            seq: Vec::new(),
            seq_ptr: Vec::new(),
            logits: Vec::new(),
            placement,
            _model: self,
        }))
    }

    fn tokenize(
        &self,
        text: &str,
        add_special: bool,
        parse_special: bool,
    ) -> Result<Vec<i32>, String> {
        let len = i32::try_from(text.len()).map_err(|_| "the text is too long to tokenize")?;
        let vocab = unsafe { sys::llama_model_get_vocab(self.ptr.as_ptr()) };
        let mut out = vec![0i32; text.len() + 2];
        for _ in 0..2 {
            let n = unsafe {
                sys::llama_tokenize(
                    vocab,
                    text.as_ptr() as *const c_char,
                    len,
                    out.as_mut_ptr(),
                    out.len() as i32,
                    add_special,
                    parse_special,
                )
            };
            if n >= 0 {
                out.truncate(n as usize);
                return Ok(out);
            }
            if n == i32::MIN {
                break;
            }
            out.resize(n.unsigned_abs() as usize, 0);
        }
        Err("llama.cpp could not tokenize the text".into())
    }

    fn apply_chat_template(&self, user_message: &str) -> Result<String, String> {
        let tmpl = unsafe { sys::llama_model_chat_template(self.ptr.as_ptr(), std::ptr::null()) };
        if tmpl.is_null() {
            return Err("the model has no chat template (tokenizer.chat_template)".into());
        }
        let role = CString::new("user").expect("no NUL");
        let content =
            CString::new(user_message).map_err(|_| "the prompt contains a NUL byte".to_string())?;
        let msg = sys::llama_chat_message {
            role: role.as_ptr(),
            content: content.as_ptr(),
        };
        let mut buf = vec![0u8; 2 * user_message.len() + 512];
        for _ in 0..2 {
            let n = unsafe {
                sys::llama_chat_apply_template(
                    tmpl,
                    &msg,
                    1,
                    true,
                    buf.as_mut_ptr() as *mut c_char,
                    buf.len() as i32,
                )
            };
            if n < 0 {
                let name = unsafe { CStr::from_ptr(tmpl) }.to_string_lossy();
                let short: String = name.chars().take(60).collect();
                return Err(format!(
                    "llama.cpp does not support this model's chat template ({short:?}...)"
                ));
            }
            if (n as usize) <= buf.len() {
                buf.truncate(n as usize);
                return String::from_utf8(buf)
                    .map_err(|_| "the chat template produced invalid UTF-8".to_string());
            }
            buf.resize(n as usize, 0);
        }
        Err("llama_chat_apply_template: inconsistent lengths".into())
    }
}

impl LlamaBatchSession<'_> {
    fn memory(&self) -> sys::llama_memory_t {
        unsafe { sys::llama_get_memory(self.ctx.as_ptr()) }
    }
}

impl BatchSession for LlamaBatchSession<'_> {
    fn n_ctx(&self) -> u32 {
        unsafe { sys::llama_n_ctx(self.ctx.as_ptr()) }
    }

    fn clear(&mut self) {
        unsafe { sys::llama_memory_clear(self.memory(), false) };
    }

    fn decode(&mut self, tokens: &[BatchToken]) -> Result<(), String> {
        if tokens.is_empty() {
            return Err("llama_decode: empty batch".into());
        }
        let n = tokens.len();
        self.token.clear();
        self.pos.clear();
        self.seq.clear();
        self.logits.clear();
        for t in tokens {
            self.token.push(t.token);
            self.pos.push(t.pos);
            self.seq.push(t.seq);
            self.logits.push(i8::from(t.logits));
        }
        self.n_seq_id.clear();
        self.n_seq_id.resize(n, 1);
        // One sequence per entry: entry i's seq_id array is &seq[i].
        let base = self.seq.as_mut_ptr();
        self.seq_ptr.clear();
        self.seq_ptr.extend((0..n).map(|i| unsafe { base.add(i) }));
        let batch = sys::llama_batch {
            n_tokens: n as i32,
            token: self.token.as_mut_ptr(),
            embd: std::ptr::null_mut(),
            pos: self.pos.as_mut_ptr(),
            n_seq_id: self.n_seq_id.as_mut_ptr(),
            seq_id: self.seq_ptr.as_mut_ptr(),
            logits: self.logits.as_mut_ptr(),
        };
        match unsafe { sys::llama_decode(self.ctx.as_ptr(), batch) } {
            0 => Ok(()),
            1 => Err("llama_decode: no KV cache slot for the batch (context full)".into()),
            2 => Err("llama_decode: aborted".into()),
            -1 => Err("llama_decode: invalid batch".into()),
            r => Err(format!("llama_decode failed with code {r}")),
        }
    }

    fn synchronize(&mut self) {
        unsafe { sys::llama_synchronize(self.ctx.as_ptr()) };
    }

    fn logits(&mut self, i: usize) -> Result<&[f32], String> {
        if self.logits.get(i) != Some(&1) {
            return Err(format!("batch entry {i} has no logits"));
        }
        let p = unsafe { sys::llama_get_logits_ith(self.ctx.as_ptr(), i as i32) };
        if p.is_null() {
            return Err(format!("llama.cpp returned no logits for batch entry {i}"));
        }
        Ok(unsafe { std::slice::from_raw_parts(p, self.n_vocab) })
    }

    fn seq_cp(&mut self, src: i32, dst: i32) {
        unsafe { sys::llama_memory_seq_cp(self.memory(), src, dst, -1, -1) };
    }

    fn seq_rm(&mut self, seq: i32, p0: i32, p1: i32) -> bool {
        unsafe { sys::llama_memory_seq_rm(self.memory(), seq, p0, p1) }
    }

    fn seq_pos_range(&self, seq: i32) -> Option<(i32, i32)> {
        let mem = self.memory();
        let (lo, hi) = unsafe {
            (
                sys::llama_memory_seq_pos_min(mem, seq),
                sys::llama_memory_seq_pos_max(mem, seq),
            )
        };
        (hi >= 0).then_some((lo, hi))
    }

    fn placement(&self) -> Option<crate::engine::placement::Placement> {
        self.placement.clone()
    }
}
