//! llama-bench's context parameters for a test (its `to_llama_cparams()`) and its thread
//! pool, apart from the session that uses them so that llama.cpp's fit (`fit.rs`) sizes the
//! same context. The test's parameters are applied by the knob hook (`knobs.rs`); what is
//! set here is what llama-bench fixes for every test.

use llama_cpp_sys_2 as sys;

use crate::engine::EngineError;
use crate::plan::TestParams;

/// llama-bench's to_llama_cparams(), field for field, and its thread pool: poll 50, not
/// strict, then the test's n_threads, cpu_mask, cpu_strict and poll (the hook).
pub(super) fn llama_bench(
    p: &TestParams,
) -> Result<(sys::llama_context_params, sys::ggml_threadpool_params), EngineError> {
    let mut cp = unsafe { sys::llama_context_default_params() };
    cp.n_ctx = p.n_ctx();
    cp.embeddings = false;
    cp.op_offload = true;
    cp.swa_full = false;
    // The thread count is the hook's (`ggml_threadpool_params_default` sets nothing else
    // from it).
    let mut tpp = unsafe { sys::ggml_threadpool_params_default(1) };
    tpp.poll = 50;
    tpp.strict_cpu = false;
    super::knobs::apply_context(&mut cp, &mut tpp, p)?;
    Ok((cp, tpp))
}
