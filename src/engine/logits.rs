//! Logits for quality measurement: tokenize a text, decode token sequences, and hand back
//! the logit rows of chosen positions one at a time (never the whole matrix: a 512-token
//! chunk of a 128k-vocabulary model is 256 MB of logits), plus single-step decoding for
//! text generation. Like `llama.rs`, this module touches llama.cpp; nothing else does.

use std::ffi::{CString, c_char};
use std::path::Path;
use std::ptr::NonNull;

use llama_cpp_sys_2 as sys;

use super::llama;

/// Receives one logit row: (the number identifying the row, its logits).
pub type RowSink<'a> = dyn FnMut(usize, &[f32]) -> Result<(), String> + 'a;

/// A model loaded for evaluation.
pub struct EvalModel {
    ptr: NonNull<sys::llama_model>,
    vocab: *const sys::llama_vocab,
    n_vocab: usize,
    bos: Option<i32>,
    n_ctx_train: u32,
}

impl Drop for EvalModel {
    fn drop(&mut self) {
        unsafe { sys::llama_model_free(self.ptr.as_ptr()) };
    }
}

impl EvalModel {
    /// Loads a GGUF (llama.cpp is initialized on first use).
    pub fn load(path: &Path) -> Result<Self, String> {
        llama::ensure_init()?;
        let c_path = CString::new(path.to_string_lossy().as_bytes())
            .map_err(|_| "the model path contains a NUL byte".to_string())?;
        let mut mp = unsafe { sys::llama_model_default_params() };
        mp.n_gpu_layers = 99;
        let raw = unsafe { sys::llama_model_load_from_file(c_path.as_ptr(), mp) };
        let ptr = NonNull::new(raw).ok_or_else(|| {
            format!(
                "llama.cpp could not load {} (run with --verbose for its log)",
                path.display()
            )
        })?;
        unsafe {
            let vocab = sys::llama_model_get_vocab(ptr.as_ptr());
            Ok(EvalModel {
                ptr,
                vocab,
                n_vocab: sys::llama_vocab_n_tokens(vocab).max(0) as usize,
                bos: sys::llama_vocab_get_add_bos(vocab).then(|| sys::llama_vocab_bos(vocab)),
                n_ctx_train: sys::llama_model_n_ctx_train(ptr.as_ptr()).max(0) as u32,
            })
        }
    }

    pub fn n_vocab(&self) -> usize {
        self.n_vocab
    }

    /// The BOS token when the vocabulary adds one (llama-perplexity starts chunks with it).
    pub fn bos(&self) -> Option<i32> {
        self.bos
    }

    pub fn n_ctx_train(&self) -> u32 {
        self.n_ctx_train
    }

    /// Tokenizes `text`; `add_special` adds BOS (as llama-perplexity does). Special-token
    /// text inside `text` is not parsed as special tokens.
    pub fn tokenize(&self, text: &str, add_special: bool) -> Result<Vec<i32>, String> {
        let len = i32::try_from(text.len()).map_err(|_| "the text is over 2 GiB".to_string())?;
        let mut out = vec![0i32; text.len() + 2];
        let n = unsafe {
            sys::llama_tokenize(
                self.vocab,
                text.as_ptr() as *const c_char,
                len,
                out.as_mut_ptr(),
                out.len() as i32,
                add_special,
                false,
            )
        };
        if n < 0 {
            return Err(format!(
                "tokenization needs {} tokens, more than expected",
                -n
            ));
        }
        out.truncate(n as usize);
        Ok(out)
    }

    /// The text of `tokens`, special tokens left out.
    pub fn detokenize(&self, tokens: &[i32]) -> Result<String, String> {
        let mut cap = tokens.len() * 8 + 16;
        for _ in 0..2 {
            let mut buf = vec![0u8; cap];
            let n = unsafe {
                sys::llama_detokenize(
                    self.vocab,
                    tokens.as_ptr(),
                    tokens.len() as i32,
                    buf.as_mut_ptr() as *mut c_char,
                    buf.len() as i32,
                    true,
                    false,
                )
            };
            if n >= 0 {
                buf.truncate(n as usize);
                return Ok(String::from_utf8_lossy(&buf).into_owned());
            }
            cap = (-n) as usize + 16;
        }
        Err("detokenization failed".into())
    }

    /// Tokens a text generator must not produce: end-of-generation and control tokens.
    pub fn non_text_tokens(&self) -> Vec<bool> {
        (0..self.n_vocab as i32)
            .map(|t| unsafe {
                sys::llama_vocab_is_eog(self.vocab, t) || sys::llama_vocab_is_control(self.vocab, t)
            })
            .collect()
    }

    /// A context of `n_ctx` tokens for one sequence, decoding up to `n_ctx` tokens per call.
    pub fn context(&self, n_ctx: u32, n_threads: u32) -> Result<EvalContext<'_>, String> {
        let mut cp = unsafe { sys::llama_context_default_params() };
        cp.n_ctx = n_ctx;
        cp.n_batch = n_ctx;
        cp.n_ubatch = n_ctx.min(512);
        cp.n_seq_max = 1;
        cp.n_threads = n_threads.max(1) as i32;
        cp.n_threads_batch = n_threads.max(1) as i32;
        cp.embeddings = false;
        let ctx = NonNull::new(unsafe { sys::llama_init_from_model(self.ptr.as_ptr(), cp) })
            .ok_or_else(|| format!("llama.cpp could not create a context of {n_ctx} tokens"))?;
        let batch = unsafe { sys::llama_batch_init(n_ctx as i32, 0, 1) };
        Ok(EvalContext {
            ctx,
            batch,
            capacity: n_ctx as usize,
            n_vocab: self.n_vocab,
            _model: self,
        })
    }
}

/// One llama.cpp context with its batch.
pub struct EvalContext<'m> {
    ctx: NonNull<sys::llama_context>,
    batch: sys::llama_batch,
    capacity: usize,
    n_vocab: usize,
    _model: &'m EvalModel,
}

impl Drop for EvalContext<'_> {
    fn drop(&mut self) {
        unsafe {
            sys::llama_batch_free(self.batch);
            sys::llama_free(self.ctx.as_ptr());
        }
    }
}

impl EvalContext<'_> {
    /// Clears the KV memory.
    pub fn clear(&mut self) {
        unsafe { sys::llama_memory_clear(sys::llama_get_memory(self.ctx.as_ptr()), true) };
    }

    /// Decodes `tokens` at positions `pos0..`, asking for logits where `output(i)` is true
    /// (`i` indexes `tokens`); then calls `on_row(i, logits)` for each, in order.
    pub fn decode(
        &mut self,
        tokens: &[i32],
        pos0: usize,
        output: &dyn Fn(usize) -> bool,
        on_row: &mut RowSink,
    ) -> Result<(), String> {
        if tokens.is_empty() {
            return Ok(());
        }
        if tokens.len() > self.capacity || pos0 + tokens.len() > self.capacity {
            return Err(format!(
                "{} tokens at position {pos0} do not fit a context of {}",
                tokens.len(),
                self.capacity
            ));
        }
        let b = &mut self.batch;
        unsafe {
            for (i, &t) in tokens.iter().enumerate() {
                *b.token.add(i) = t;
                *b.pos.add(i) = (pos0 + i) as i32;
                *b.n_seq_id.add(i) = 1;
                *(*b.seq_id.add(i)) = 0;
                *b.logits.add(i) = i8::from(output(i));
            }
        }
        b.n_tokens = tokens.len() as i32;
        match unsafe { sys::llama_decode(self.ctx.as_ptr(), *b) } {
            0 => {}
            r => return Err(format!("llama_decode failed with code {r}")),
        }
        for i in (0..tokens.len()).filter(|&i| output(i)) {
            let p = unsafe { sys::llama_get_logits_ith(self.ctx.as_ptr(), i as i32) };
            if p.is_null() {
                return Err(format!("llama.cpp returned no logits for position {i}"));
            }
            let row = unsafe { std::slice::from_raw_parts(p, self.n_vocab) };
            on_row(i, row)?;
        }
        Ok(())
    }

    /// Decodes `tokens` at `pos0..` and returns the logits after the last one.
    pub fn decode_last(&mut self, tokens: &[i32], pos0: usize) -> Result<Vec<f32>, String> {
        let last = tokens.len().saturating_sub(1);
        let mut out = Vec::new();
        self.decode(tokens, pos0, &|i| i == last, &mut |_, row| {
            out = row.to_vec();
            Ok(())
        })?;
        Ok(out)
    }
}
