//! The quantizer's progress, read from llama.cpp's log. llama.cpp reports it only as log
//! lines ("[  12/ 272] blk.0.attn_q.weight ..."); while a quantization runs, the log
//! callback (`backend.rs`) hands each line to [`tap`], which keeps the latest tensor counter.
//!
//! Here, inside `llama`, rather than in `engine::quantize`: the log callback and the
//! quantizer both import it downwards, so `llama` never calls back up into `quantize`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static TAPPING: AtomicBool = AtomicBool::new(false);
static DONE: AtomicUsize = AtomicUsize::new(0);
static TOTAL: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn tapping() -> bool {
    TAPPING.load(Ordering::Relaxed)
}

/// Starts (counter reset) or stops handing log lines to [`tap`].
pub(crate) fn set_tapping(on: bool) {
    if on {
        DONE.store(0, Ordering::Relaxed);
        TOTAL.store(0, Ordering::Relaxed);
    }
    TAPPING.store(on, Ordering::Relaxed);
}

pub(crate) fn counter() -> (usize, usize) {
    (DONE.load(Ordering::Relaxed), TOTAL.load(Ordering::Relaxed))
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
