//! llama-bench's context parameters for a test (its `to_llama_cparams()`) and its thread
//! pool, apart from the session that uses them so that llama.cpp's fit (`fit.rs`) sizes the
//! same context. The test's parameters are applied by the knob hook (`knobs.rs`); what is
//! set here is what llama-bench fixes for every test.

use llama_cpp_sys_2 as sys;

use crate::engine::EngineError;
use crate::plan::TestParams;

/// llama-bench's to_llama_cparams(), field for field.
pub(super) fn context_params(p: &TestParams) -> Result<sys::llama_context_params, EngineError> {
    let mut cp = unsafe { sys::llama_context_default_params() };
    cp.n_ctx = p.n_ctx();
    cp.embeddings = false;
    cp.op_offload = true;
    cp.swa_full = false;
    // n_batch, n_ubatch, the KV cache's types and place, flash attention, threads,
    // embeddings, no_op_offload: the hook (the thread pool's part is `threadpool_params`).
    let mut tpp = unsafe { sys::ggml_threadpool_params_default(1) };
    super::knobs::apply_context(&mut cp, &mut tpp, p)?;
    Ok(cp)
}

/// llama-bench's thread pool for a test: poll 50, not strict, then the test's n_threads,
/// cpu_mask, cpu_strict and poll (the hook).
pub(super) fn threadpool_params(
    p: &TestParams,
) -> Result<sys::ggml_threadpool_params, EngineError> {
    // The thread count is the hook's (`ggml_threadpool_params_default` sets nothing else
    // from it).
    let mut tpp = unsafe { sys::ggml_threadpool_params_default(1) };
    tpp.poll = 50;
    tpp.strict_cpu = false;
    let mut unused = unsafe { sys::llama_context_default_params() };
    super::knobs::apply_context(&mut unused, &mut tpp, p)?;
    Ok(tpp)
}
