//! llama.cpp's own quantizer (`llama_model_quantize`) behind a safe wrapper.
//!
//! llama.cpp reports its progress only through its log ("[  12/ 272] blk.0.attn_q.weight
//! ..."); while a quantization runs, the log callback hands each line to `llama::progress`,
//! which keeps the latest tensor counter for the caller to show.

use std::ffi::CString;
use std::path::Path;
use std::time::Duration;

use llama_cpp_sys_2 as sys;

use super::EngineError;
use super::llama::progress as log_tap;

/// What to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantizeParams {
    /// `enum llama_ftype` of the output, e.g. 15 for Q4_K_M.
    pub ftype: u32,
    /// Needed when the input is already quantized (llama-quantize's `--allow-requantize`).
    pub allow_requantize: bool,
    pub n_threads: u32,
}

/// Quantizes `input` into `output` (overwritten). `progress(done, total)` is called about
/// five times a second with llama.cpp's tensor counter. One quantization at a time per
/// process (the progress tap is global).
pub fn quantize(
    input: &Path,
    output: &Path,
    params: &QuantizeParams,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(), EngineError> {
    super::llama::ensure_init()?;
    let c_in = CString::new(input.to_string_lossy().as_bytes())
        .map_err(|_| EngineError::Param("the input path contains a NUL byte".into()))?;
    let c_out = CString::new(output.to_string_lossy().as_bytes())
        .map_err(|_| EngineError::Param("the output path contains a NUL byte".into()))?;
    let mut qp = unsafe { sys::llama_model_quantize_default_params() };
    qp.nthread = params.n_threads.max(1) as i32;
    qp.ftype = params.ftype as sys::llama_ftype;
    qp.allow_requantize = params.allow_requantize;

    // The default parameters hold only null pointers (no imatrix, no overrides), so handing
    // them to the quantizer thread is sound.
    struct Params(sys::llama_model_quantize_params);
    unsafe impl Sync for Params {}
    impl Params {
        fn get(&self) -> *const sys::llama_model_quantize_params {
            &self.0
        }
    }
    let qp = Params(qp);

    log_tap::set_tapping(true);
    let rc = std::thread::scope(|s| {
        let worker = s.spawn(|| unsafe {
            sys::llama_model_quantize(c_in.as_ptr(), c_out.as_ptr(), qp.get())
        });
        while !worker.is_finished() {
            let (done, total) = log_tap::counter();
            progress(done, total);
            std::thread::sleep(Duration::from_millis(200));
        }
        worker.join()
    });
    log_tap::set_tapping(false);
    match rc {
        Ok(0) => {
            let (_, total) = log_tap::counter();
            progress(total, total);
            Ok(())
        }
        Ok(_) => Err(EngineError::Quantize(format!(
            "llama.cpp could not quantize {} (run with --verbose for its log)",
            input.display()
        ))),
        Err(_) => Err(EngineError::Quantize(
            "the quantizer thread panicked".into(),
        )),
    }
}
