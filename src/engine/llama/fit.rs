//! llama-bench's `-fitt` / `-fitc`: llama.cpp's own fit (`common_fit_params`, in its common
//! library), run as docs/configuration.md says (`fit_target`): once per model load, with the
//! context of its first test, where llama-bench fits before every test.

use std::ffi::CStr;

use llama_cpp_sys_2 as sys;

use super::c_text;

use crate::engine::EngineError;
use crate::engine::placement::FitChoice;
use crate::plan::TestParams;

const MIB: u64 = 1024 * 1024;

/// What fit's output points to (alive until the model is loaded).
pub(super) struct FitBuffers {
    split: Vec<f32>,
    overrides: Vec<sys::llama_model_tensor_buft_override>,
}

/// Runs llama.cpp's fit for `path` on `mp` (edited in place: `mp` then points into the
/// returned buffers). `weight_bytes` (the tensors of the file) and the devices' free memory
/// name what did not fit when nothing does.
pub(super) fn fit(
    path: &CStr,
    mp: &mut sys::llama_model_params,
    target_mib: u64,
    min_ctx: u32,
    context: Option<&TestParams>,
    weight_bytes: u64,
) -> Result<(FitBuffers, FitChoice), EngineError> {
    let max_devices = unsafe { sys::llama_max_devices() };
    let max_overrides = unsafe { sys::llama_max_tensor_buft_overrides() };
    let mut buffers = FitBuffers {
        split: vec![0.0; max_devices],
        overrides: vec![
            sys::llama_model_tensor_buft_override {
                pattern: std::ptr::null(),
                buft: std::ptr::null_mut(),
            };
            max_overrides + 1
        ],
    };
    // Fit only moves what still holds llama.cpp's default (llama-bench resets the same three).
    mp.n_gpu_layers = unsafe { sys::llama_model_default_params() }.n_gpu_layers;
    mp.tensor_split = buffers.split.as_ptr();
    mp.tensor_buft_overrides = buffers.overrides.as_ptr();
    let mut cp = match context {
        Some(p) => super::knobs::llama_bench(p)?.0,
        None => unsafe { sys::llama_context_default_params() },
    };
    // llama-bench: n_ctx = max(0, n_prompt + n_gen + n_depth), so fit sizes the test's cache.
    cp.n_ctx = context.map_or(0, |p| p.n_ctx());
    let mut margins = vec![(target_mib * MIB) as usize; max_devices];
    let (status, _log) = super::backend::capture(|| unsafe {
        sys::llama_rs_fit_params(
            path.as_ptr(),
            mp,
            &mut cp,
            buffers.split.as_mut_ptr(),
            buffers.overrides.as_mut_ptr(),
            margins.as_mut_ptr(),
            min_ctx,
            std::ptr::null(),
            sys::GGML_LOG_LEVEL_ERROR,
        )
    });
    // common_params_fit_status: 0 success, 1 no allocation fits, 2 an error.
    match status {
        0 => {}
        1 => return Err(no_fit(target_mib, weight_bytes)),
        _ => return Err(EngineError::Fit { target_mib }),
    }
    mp.tensor_split = buffers.split.as_ptr();
    mp.tensor_buft_overrides = buffers.overrides.as_ptr();
    let choice = FitChoice {
        target_mib,
        min_ctx,
        n_gpu_layers: mp.n_gpu_layers,
        tensor_split: trimmed(&buffers.split),
        overrides: chosen_overrides(&buffers.overrides),
        n_ctx: cp.n_ctx,
    };
    Ok((buffers, choice))
}

/// The split without its trailing zeros (devices fit gave nothing).
fn trimmed(split: &[f32]) -> Vec<f32> {
    let n = split.iter().rposition(|&x| x != 0.0).map_or(0, |i| i + 1);
    split[..n].to_vec()
}

/// `pattern=buffer` for each override fit wrote, up to the terminating null pattern. The
/// patterns are fit's own strings, alive for the process (common/fit.cpp).
fn chosen_overrides(overrides: &[sys::llama_model_tensor_buft_override]) -> Vec<String> {
    (overrides.iter())
        .take_while(|o| !o.pattern.is_null())
        .map(|o| {
            let pattern = unsafe { c_text(o.pattern) };
            let buffer = if o.buft.is_null() {
                "?".to_string()
            } else {
                unsafe { c_text(sys::ggml_backend_buft_name(o.buft)) }
            };
            format!("{pattern}={buffer}")
        })
        .collect()
}

/// The failure: what the weights need and what each device has free.
fn no_fit(target_mib: u64, weight_bytes: u64) -> EngineError {
    let free = super::backend::devices().into_iter().map(|d| {
        let (free, total) = (d.memory_free / MIB, d.memory_total / MIB);
        format!("{} {free} of {total} MiB", d.name)
    });
    let free = free.collect::<Vec<_>>().join(", ");
    EngineError::NoFit {
        target_mib,
        weights_mib: weight_bytes.div_ceil(MIB),
        free: if free.is_empty() {
            "no device reported".to_string()
        } else {
            free
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_loses_only_its_trailing_zeros() {
        assert_eq!(trimmed(&[0.0, 0.0]), Vec::<f32>::new());
        assert_eq!(trimmed(&[3.0, 0.0, 1.0, 0.0]), vec![3.0, 0.0, 1.0]);
    }

    #[test]
    fn no_overrides_read_as_none() {
        let none = [sys::llama_model_tensor_buft_override {
            pattern: std::ptr::null(),
            buft: std::ptr::null_mut(),
        }];
        assert!(chosen_overrides(&none).is_empty());
    }
}
