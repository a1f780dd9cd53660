//! llama.cpp's own quantizer (`llama_model_quantize`) behind a safe wrapper.
//!
//! llama.cpp reports its progress only through its log ("[  12/ 272] blk.0.attn_q.weight
//! ..."); while a quantization runs, the log callback in `llama/backend.rs` hands each line to
//! [`tap`], which keeps the latest tensor counter for the caller to show.

use std::ffi::CString;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use llama_cpp_sys_2 as sys;

static TAPPING: AtomicBool = AtomicBool::new(false);
static DONE: AtomicUsize = AtomicUsize::new(0);
static TOTAL: AtomicUsize = AtomicUsize::new(0);

/// True while a quantization wants llama.cpp's log lines.
pub(crate) fn tapping() -> bool {
    TAPPING.load(Ordering::Relaxed)
}

/// Reads llama.cpp's per-tensor progress line "[  12/ 272] name ...".
pub(crate) fn tap(line: &str) {
    if let Some((done, total)) = parse_progress(line) {
        DONE.store(done, Ordering::Relaxed);
        TOTAL.store(total, Ordering::Relaxed);
    }
}

/// "[  12/ 272] ..." → (12, 272).
pub fn parse_progress(line: &str) -> Option<(usize, usize)> {
    let inner = line.trim_start().strip_prefix('[')?.split(']').next()?;
    let (a, b) = inner.split_once('/')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

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
) -> Result<(), String> {
    super::llama::ensure_init()?;
    let c_in = CString::new(input.to_string_lossy().as_bytes())
        .map_err(|_| "the input path contains a NUL byte".to_string())?;
    let c_out = CString::new(output.to_string_lossy().as_bytes())
        .map_err(|_| "the output path contains a NUL byte".to_string())?;
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

    DONE.store(0, Ordering::Relaxed);
    TOTAL.store(0, Ordering::Relaxed);
    TAPPING.store(true, Ordering::Relaxed);
    let rc = std::thread::scope(|s| {
        let worker = s.spawn(|| unsafe {
            sys::llama_model_quantize(c_in.as_ptr(), c_out.as_ptr(), qp.get())
        });
        while !worker.is_finished() {
            progress(DONE.load(Ordering::Relaxed), TOTAL.load(Ordering::Relaxed));
            std::thread::sleep(Duration::from_millis(200));
        }
        worker.join()
    });
    TAPPING.store(false, Ordering::Relaxed);
    match rc {
        Ok(0) => {
            progress(TOTAL.load(Ordering::Relaxed), TOTAL.load(Ordering::Relaxed));
            Ok(())
        }
        Ok(_) => Err(format!(
            "llama.cpp could not quantize {} (run with --verbose for its log)",
            input.display()
        )),
        Err(_) => Err("the quantizer thread panicked".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_are_parsed_and_others_ignored() {
        assert_eq!(
            parse_progress(
                "[  12/ 272]                 blk.0.attn_q.weight - [  576,   576], type = q4_1"
            ),
            Some((12, 272))
        );
        assert_eq!(
            parse_progress("llama_model_quantize_impl: model size = 12 MB"),
            None
        );
        assert_eq!(parse_progress("[x/y]"), None);
    }
}
