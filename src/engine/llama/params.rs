//! llama-bench's context parameters for a test (its `to_llama_cparams()`), apart from the
//! session that uses them so that llama.cpp's fit (`fit.rs`) sizes the same context.

use llama_cpp_sys_2 as sys;

use super::context::ggml_type;
use crate::engine::EngineError;
use crate::plan::TestParams;

/// llama-bench's to_llama_cparams(), field for field.
pub(super) fn context_params(p: &TestParams) -> Result<sys::llama_context_params, EngineError> {
    let mut cp = unsafe { sys::llama_context_default_params() };
    cp.n_ctx = p.n_ctx();
    cp.n_batch = p.n_batch;
    cp.n_ubatch = p.n_ubatch;
    cp.type_k = ggml_type(&p.type_k)?;
    cp.type_v = ggml_type(&p.type_v)?;
    cp.offload_kqv = !p.no_kv_offload;
    cp.flash_attn_type = p.flash_attn;
    cp.embeddings = false;
    cp.op_offload = true;
    cp.swa_full = false;
    cp.n_threads = p.n_threads as i32;
    cp.n_threads_batch = p.n_threads as i32;
    // embeddings, no_op_offload (the knob hook; the thread pool's part is applied in `new`).
    let mut tpp = unsafe { sys::ggml_threadpool_params_default(1) };
    super::knobs::apply_context(&mut cp, &mut tpp, &p.knobs)?;
    Ok(cp)
}

/// llama-bench's thread pool for a test: default parameters for n_threads, poll 50, not
/// strict, then the cpu_mask / cpu_strict / poll of the test (the knob hook).
pub(super) fn threadpool_params(
    p: &TestParams,
) -> Result<sys::ggml_threadpool_params, EngineError> {
    let mut tpp = unsafe { sys::ggml_threadpool_params_default(p.n_threads as i32) };
    tpp.poll = 50;
    tpp.strict_cpu = false;
    let mut unused = unsafe { sys::llama_context_default_params() };
    super::knobs::apply_context(&mut unused, &mut tpp, &p.knobs)?;
    Ok(tpp)
}
