//! Applies the model- and context-level entries of `config::knobs`' table to llama.cpp's
//! parameters, as llama-bench's `cmd_params_instance` does. What this build cannot honour is
//! said in a note (recorded and printed as a warning): a parameter is never dropped silently.

use std::ffi::CString;

use llama_cpp_sys_2 as sys;

use super::c_string;
use super::context::ggml_type;
use crate::config::SplitMode;
use crate::config::knobs::{
    KnobValue, Knobs, Level, PARAMS, cpu_moe_patterns, of_level, override_pairs,
};
use crate::engine::EngineError;
use crate::plan::TestParams;

/// What a model load's parameters point to (alive until the load returns).
#[derive(Default)]
pub(super) struct ModelParts {
    devices: Option<Vec<sys::ggml_backend_dev_t>>,
    split: Option<Vec<f32>>,
    patterns: Vec<CString>,
    bufts: Vec<sys::ggml_backend_buffer_type_t>,
    overrides: Vec<sys::llama_model_tensor_buft_override>,
    pub notes: Vec<String>,
    /// `fit_target` (MiB) and `fit_min_ctx`, for the load path's fit.
    pub fit_target: u64,
    pub fit_min_ctx: u32,
}

/// Applies the model-level parameters of `p` to `mp`; the parts own what `mp` points to.
pub(super) fn apply_model(
    mp: &mut sys::llama_model_params,
    p: &TestParams,
) -> Result<Box<ModelParts>, EngineError> {
    let mut parts = Box::<ModelParts>::default();
    for k in of_level(Level::Model) {
        apply_to_model(k.name, &k.get(p), mp, &p.knobs, &mut parts)?;
    }
    // The pointers last: the vectors no longer move.
    if let Some(d) = &parts.devices {
        mp.devices = d.as_ptr().cast_mut();
    }
    if let Some(s) = &parts.split {
        mp.tensor_split = s.as_ptr();
    }
    if !parts.patterns.is_empty() {
        let patterns = parts.patterns.iter().map(|p| p.as_ptr());
        let pairs = patterns.zip(parts.bufts.iter().copied());
        parts.overrides = (pairs.chain([(std::ptr::null(), std::ptr::null_mut())]))
            .map(|(pattern, buft)| sys::llama_model_tensor_buft_override { pattern, buft })
            .collect();
        mp.tensor_buft_overrides = parts.overrides.as_ptr();
    }
    Ok(parts)
}

/// Applies the context-level parameters of `p`; returns the notes of what was not honoured.
pub(super) fn apply_context(
    cp: &mut sys::llama_context_params,
    tpp: &mut sys::ggml_threadpool_params,
    p: &TestParams,
) -> Result<Vec<String>, EngineError> {
    let mut notes = Vec::new();
    for k in of_level(Level::Context) {
        apply_to_context(k.name, &k.get(p), cp, tpp, &mut notes)?;
    }
    Ok(notes)
}

/// llama-bench's to_llama_cparams(), field for field, and its thread pool: poll 50, not
/// strict, then the test's parameters (n_threads, cpu_mask, ...) through [`apply_context`].
/// Apart from the session so that llama.cpp's fit (`fit.rs`) sizes the same context.
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
    apply_context(&mut cp, &mut tpp, p)?;
    Ok((cp, tpp))
}

/// A test with llama-bench's defaults but for `knobs`: what the notes are asked of.
fn with_knobs(knobs: &Knobs) -> TestParams {
    let mut p = TestParams::default();
    for k in PARAMS {
        k.set(&mut p, &k.default_value());
    }
    p.knobs = knobs.clone();
    p
}

/// The notes a context made with `knobs` gets, without making one (for contexts that are not
/// llama-bench's).
pub(super) fn context_notes(knobs: &Knobs) -> Vec<String> {
    let mut cp = unsafe { sys::llama_context_default_params() };
    let mut tpp = unsafe { sys::ggml_threadpool_params_default(1) };
    apply_context(&mut cp, &mut tpp, &with_knobs(knobs)).unwrap_or_else(|e| vec![e.to_string()])
}

/// Everything this build would not honour of `knobs`, without loading anything.
pub fn notes(knobs: &Knobs) -> Vec<String> {
    let mut mp = unsafe { sys::llama_model_default_params() };
    let model = apply_model(&mut mp, &with_knobs(knobs));
    let model = model.map_or_else(|e| vec![e.to_string()], |parts| parts.notes);
    model.into_iter().chain(context_notes(knobs)).collect()
}

fn apply_to_model(
    name: &str,
    v: &KnobValue,
    mp: &mut sys::llama_model_params,
    all: &Knobs,
    m: &mut ModelParts,
) -> Result<(), EngineError> {
    match name {
        "n_gpu_layers" => mp.n_gpu_layers = v.as_i64() as i32,
        "split_mode" => {
            let mode = SplitMode::parse(v.as_str()).unwrap_or_default();
            mp.split_mode = mode.as_llama() as sys::llama_split_mode;
        }
        "main_gpu" => mp.main_gpu = v.as_i64() as i32,
        "n_cpu_moe" => cpu_moe(m, v.as_i64(), all)?,
        "tensor_buft_overrides" => add_overrides(m, v.as_str())?,
        "devices" => m.devices = devices(v.as_str())?,
        "tensor_split" => m.split = tensor_split(v.as_str())?,
        "load_mode" => mp.load_mode = load_mode(v.as_str()),
        "lazy_mode" => mp.lazy_mode = lazy_mode(v.as_str()),
        "no_host" => mp.no_host = v.as_bool(),
        "repack" => mp.use_extra_bufts = v.as_bool(),
        // Run by the model's load path (`fit`), which needs the file and the test's context.
        "fit_target" => m.fit_target = v.as_i64().max(0) as u64,
        "fit_min_ctx" => m.fit_min_ctx = v.as_i64().clamp(0, u32::MAX as i64) as u32,
        other => m.notes.push(format!("{other}: not applied by this engine")),
    }
    Ok(())
}

fn apply_to_context(
    name: &str,
    v: &KnobValue,
    cp: &mut sys::llama_context_params,
    tpp: &mut sys::ggml_threadpool_params,
    notes: &mut Vec<String>,
) -> Result<(), EngineError> {
    match name {
        "n_batch" => cp.n_batch = v.as_i64() as u32,
        "n_ubatch" => cp.n_ubatch = v.as_i64() as u32,
        "type_k" => cp.type_k = ggml_type(v.as_str())?,
        "type_v" => cp.type_v = ggml_type(v.as_str())?,
        "no_kv_offload" => cp.offload_kqv = !v.as_bool(),
        // llama-bench's encoding (-1 auto, 0 off, 1 on) is llama.cpp's.
        "flash_attn" => cp.flash_attn_type = v.as_i64() as i32,
        "n_threads" => {
            let n = v.as_i64() as i32;
            (cp.n_threads, cp.n_threads_batch, tpp.n_threads) = (n, n, n);
        }
        "cpu_mask" => {
            let mask = cpu_mask(v.as_str());
            if mask.iter().any(|&b| b) {
                tpp.cpumask = mask;
            }
        }
        "cpu_strict" => tpp.strict_cpu = v.as_bool(),
        "poll" => {
            tpp.poll = v.as_i64().clamp(0, 100) as u32;
            // ggml's OpenMP path waits in OpenMP's own barrier: its polling level is unused.
            if v.as_i64() != 50 && openmp() {
                notes.push(format!(
                    "poll = {}: not honoured, this build's CPU backend uses OpenMP, whose \
                     threads do not read the thread pool's polling level",
                    v.as_i64()
                ));
            }
        }
        "embeddings" => cp.embeddings = v.as_bool(),
        "no_op_offload" => cp.op_offload = !v.as_bool(),
        other => notes.push(format!("{other}: not applied by this engine")),
    }
    Ok(())
}

/// `n_cpu_moe` = `n` > 0: the first `n` layers' experts on the CPU, after the user's own
/// overrides of tensor_buft_overrides (first match wins), as llama-bench orders them.
fn cpu_moe(m: &mut ModelParts, n: i64, all: &Knobs) -> Result<(), EngineError> {
    if n > 0 {
        let cpu = unsafe { sys::ggml_backend_cpu_buffer_type() };
        if let Some(user) = all.get("tensor_buft_overrides") {
            add_overrides(m, user.as_str())?;
        }
        for p in cpu_moe_patterns(n) {
            m.patterns.push(c_string(&p, &format!("{p:?}"))?);
            m.bufts.push(cpu);
        }
    }
    Ok(())
}

/// `devices`: the named devices, null-terminated as llama.cpp reads the list; `None` for
/// "auto" (llama.cpp's choice).
fn devices(list: &str) -> Result<Option<Vec<sys::ggml_backend_dev_t>>, EngineError> {
    if list == "auto" {
        return Ok(None);
    }
    let mut devs = Vec::new();
    for name in list.split('/').filter(|n| !n.is_empty() && *n != "none") {
        let c = c_string(name, &format!("{name:?}"))?;
        let d = unsafe { sys::ggml_backend_dev_by_name(c.as_ptr()) };
        if d.is_null() {
            let names = super::backend::devices().into_iter().map(|d| d.name);
            let names = names.collect::<Vec<_>>().join(", ");
            return Err(EngineError::Other(format!(
                "devices: no device {name:?}; this build has {names}"
            )));
        }
        devs.push(d);
    }
    devs.push(std::ptr::null_mut());
    Ok(Some(devs))
}

/// `tensor_split`: the proportions, padded to llama.cpp's device count; `None` when none is
/// positive (llama.cpp's default split).
fn tensor_split(value: &str) -> Result<Option<Vec<f32>>, EngineError> {
    let mut xs: Vec<f32> = value.split('/').filter_map(|x| x.parse().ok()).collect();
    if !xs.iter().any(|&x| x > 0.0) {
        return Ok(None);
    }
    let max = unsafe { sys::llama_max_devices() };
    if xs.len() > max {
        return Err(EngineError::Other(format!(
            "tensor_split: {} proportions, but this build takes at most {max}",
            xs.len()
        )));
    }
    xs.resize(max, 0.0);
    Ok(Some(xs))
}

/// `load_mode` and `lazy_mode` by name; anything else is llama.cpp's auto.
fn load_mode(name: &str) -> sys::llama_load_mode {
    match name {
        "none" => sys::LLAMA_LOAD_MODE_NONE,
        "mmap" => sys::LLAMA_LOAD_MODE_MMAP,
        "mlock" => sys::LLAMA_LOAD_MODE_MLOCK,
        "mmap+mlock" => sys::LLAMA_LOAD_MODE_MMAP_MLOCK,
        "dio" => sys::LLAMA_LOAD_MODE_DIRECT_IO,
        _ => sys::LLAMA_LOAD_MODE_AUTO,
    }
}

fn lazy_mode(name: &str) -> sys::llama_lazy_mode {
    match name {
        "on" => sys::LLAMA_LAZY_MODE_ON,
        "off" => sys::LLAMA_LAZY_MODE_OFF,
        _ => sys::LLAMA_LAZY_MODE_AUTO,
    }
}

/// The user's overrides, once: n_cpu_moe may have added them already (table order).
fn add_overrides(m: &mut ModelParts, value: &str) -> Result<(), EngineError> {
    if value == "none" || !m.patterns.is_empty() {
        return Ok(());
    }
    for (pattern, buft) in override_pairs(value) {
        let b = (buffer_types().into_iter()).find_map(|(n, b)| (n == buft).then_some(b));
        let b = b.ok_or_else(|| {
            EngineError::Other(format!(
                "tensor_buft_overrides: unknown buffer type {buft:?}; this build has {}",
                buffer_type_names().join(", ")
            ))
        })?;
        m.patterns
            .push(c_string(&pattern, &format!("{pattern:?}"))?);
        m.bufts.push(b);
    }
    Ok(())
}

/// llama-bench's cpu mask: hex, the last digit for CPUs 0-3.
fn cpu_mask(hex: &str) -> [bool; 512] {
    let digits = hex.strip_prefix("0x").unwrap_or(hex);
    let nibbles = digits.chars().rev().map(|c| c.to_digit(16).unwrap_or(0));
    let nibbles: Vec<u32> = nibbles.collect();
    std::array::from_fn(|cpu| {
        nibbles
            .get(cpu / 4)
            .is_some_and(|d| d >> (cpu % 4) & 1 == 1)
    })
}

fn openmp() -> bool {
    super::backend::system_info().contains("OPENMP = 1")
}

/// Every device's buffer type and host buffer type, by name (as llama-bench resolves `-ot`).
fn buffer_types() -> Vec<(String, sys::ggml_backend_buffer_type_t)> {
    let mut out: Vec<(String, sys::ggml_backend_buffer_type_t)> = Vec::new();
    for i in 0..unsafe { sys::ggml_backend_dev_count() } {
        let dev = unsafe { sys::ggml_backend_dev_get(i) };
        if dev.is_null() {
            continue;
        }
        let own = unsafe { sys::ggml_backend_dev_buffer_type(dev) };
        let host = unsafe { sys::ggml_backend_dev_host_buffer_type(dev) };
        for b in [own, host].into_iter().filter(|b| !b.is_null()) {
            let name = unsafe { super::c_text(sys::ggml_backend_buft_name(b)) };
            if !out.iter().any(|(n, _)| *n == name) {
                out.push((name, b));
            }
        }
    }
    out
}

pub fn buffer_type_names() -> Vec<String> {
    buffer_types().into_iter().map(|(n, _)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_masks_read_as_llama_bench_reads_them() {
        let m = cpu_mask("0x5");
        assert!(m[0] && !m[1] && m[2] && !m[3]);
        let m = cpu_mask("0x10");
        assert!(!m[0] && m[4]);
        assert!(!cpu_mask("0x0").iter().any(|&b| b));
    }
}
