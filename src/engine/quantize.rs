//! llama.cpp's own quantizer (`llama_model_quantize`) behind a safe wrapper, its progress
//! read from its log (`llama::progress`). llama-quantize's per-tensor options go in as `llama_model_quantize_params` takes them:
//! the imatrix as `llama_model_imatrix_data` rows (name, means, size) and `--tensor-type` as
//! `llama_model_tensor_override` rows (pattern, type), each list ended by a null row.

use std::ffi::CString;
use std::path::Path;
use std::time::Duration;

use llama_cpp_sys_2 as sys;

use super::EngineError;
use super::imatrix::Imatrix;
use super::llama::{c_string, progress as log_tap};
use crate::config::quant_types::is_quantized_ggml_type;
use crate::config::recipe::Recipe;
use crate::gguf::reader::Header;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantizeParams {
    /// `enum llama_ftype` of the output, e.g. 15 for Q4_K_M.
    pub ftype: u32,
    /// Needed when the input is already quantized (llama-quantize's `--allow-requantize`).
    pub allow_requantize: bool,
    pub n_threads: u32,
}

/// llama-quantize's options beyond the file type; the default is none of them.
#[derive(Debug, Clone, Default)]
pub struct Overrides<'a> {
    pub imatrix: Option<&'a Imatrix>,
    /// `--tensor-type pattern=type`, as (pattern, ggml type id); the first match wins.
    pub tensor_types: Vec<(String, u32)>,
    /// `--output-tensor-type` and `--token-embedding-type` (ggml type ids).
    pub output: Option<u32>,
    pub token_embd: Option<u32>,
    /// `--pure`: every quantized tensor of the file type's default type.
    pub pure: bool,
}

/// Quantizes `input` into `output` (overwritten) with llama-quantize's per-tensor options
/// `o`. `progress(done, total)` is called about five times a second with llama.cpp's tensor
/// counter. One quantization at a time per process (the progress tap is global).
pub fn quantize(
    input: &Path,
    output: &Path,
    params: &QuantizeParams,
    o: &Overrides,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(), EngineError> {
    super::llama::ensure_init()?;
    let c_in = c_string(&input.to_string_lossy(), "the input path")?;
    let c_out = c_string(&output.to_string_lossy(), "the output path")?;
    let mut qp = unsafe { sys::llama_model_quantize_default_params() };
    qp.nthread = params.n_threads.max(1) as i32;
    qp.ftype = params.ftype as sys::llama_ftype;
    qp.allow_requantize = params.allow_requantize;
    qp.output_tensor_type = o.output.unwrap_or(sys::GGML_TYPE_COUNT);
    qp.token_embedding_type = o.token_embd.unwrap_or(sys::GGML_TYPE_COUNT);
    qp.pure_ = o.pure;
    let rows = CRows::new(o)?;
    if rows.imatrix.len() > 1 {
        qp.imatrix = rows.imatrix.as_ptr();
    }
    if rows.tt.len() > 1 {
        qp.tt_overrides = rows.tt.as_ptr();
    }

    // The parameters point only into `rows`, read and never written while the quantizer
    // thread runs, so handing them to it is sound.
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
        Ok(_) => Err(EngineError::Other(format!(
            "llama.cpp could not quantize {} (run with --verbose for its log)",
            input.display()
        ))),
        Err(_) => Err(EngineError::Other("the quantizer thread panicked".into())),
    }
}

/// The rows `llama_model_quantize_params` points to, each list ended by a null row, and
/// the names, means and patterns they point into (moving a Vec or CString keeps its heap).
struct CRows {
    _names: Vec<CString>,
    _means: Vec<Vec<f32>>,
    _patterns: Vec<CString>,
    imatrix: Vec<sys::llama_model_imatrix_data>,
    tt: Vec<sys::llama_model_tensor_override>,
}

impl CRows {
    fn new(o: &Overrides) -> Result<CRows, EngineError> {
        let means = o.imatrix.map(Imatrix::means).unwrap_or_default();
        let (names, means): (Vec<&str>, Vec<Vec<f32>>) = means.into_iter().unzip();
        let names = names.iter().map(|n| c_string(n, "an imatrix entry name"));
        let names = names.collect::<Result<Vec<_>, _>>()?;
        let patterns = o.tensor_types.iter().map(|(p, _)| c_string(p, "a pattern"));
        let patterns = patterns.collect::<Result<Vec<_>, _>>()?;
        let row = |name: *const std::ffi::c_char, m: &[f32]| sys::llama_model_imatrix_data {
            name,
            data: m.as_ptr(),
            size: m.len(),
        };
        let mut imatrix: Vec<_> = (names.iter().zip(&means))
            .map(|(n, m)| row(n.as_ptr(), m))
            .collect();
        imatrix.push(row(std::ptr::null(), &[]));
        let pairs = patterns
            .iter()
            .map(|p| p.as_ptr())
            .zip(o.tensor_types.iter().map(|t| t.1));
        let tt = (pairs.chain([(std::ptr::null(), sys::GGML_TYPE_COUNT)]))
            .map(|(pattern, type_)| sys::llama_model_tensor_override { pattern, type_ })
            .collect();
        Ok(CRows {
            _names: names,
            _means: means,
            _patterns: patterns,
            imatrix,
            tt,
        })
    }
}

/// The overrides of recipe `r` on the model `base` describes (the imatrix left to the
/// caller): its own patterns first, then its template's tensor types, one exact pattern a
/// tensor, as gguf-clone copies them. Refuses a pattern that matches no tensor of the model,
/// and a template whose tensors are not the model's.
pub fn overrides_for(r: &Recipe, base: &Header) -> Result<Overrides<'static>, EngineError> {
    for (p, _) in &r.tensor_types {
        let re =
            fancy_regex::Regex::new(p).map_err(|e| EngineError::Other(format!("{p:?}: {e}")))?;
        let hit = |t: &crate::gguf::reader::TensorInfo| re.is_match(&t.name).unwrap_or(false);
        if !base.tensors.iter().any(hit) {
            return Err(EngineError::Other(format!(
                "tensor_types pattern {p:?} matches no tensor of the model"
            )));
        }
    }
    let mut o = Overrides {
        tensor_types: r.tensor_types.clone(),
        output: r.output,
        token_embd: r.token_embd,
        pure: r.pure,
        imatrix: None,
    };
    let Some(path) = &r.template else {
        return Ok(o);
    };
    let tpl = crate::gguf::reader::read_header(path)
        .map_err(|e| EngineError::Other(format!("template {}: {e}", path.display())))?;
    for t in &base.tensors {
        let same = tpl.tensors.iter().find(|x| x.name == t.name);
        let Some(x) = same.filter(|x| x.dims == t.dims) else {
            return Err(EngineError::Other(format!(
                "the template {} is not of this model: its tensor {} is missing or of another shape",
                path.display(),
                t.name
            )));
        };
        if !is_quantized_ggml_type(x.ggml_type) && x.ggml_type == t.ggml_type {
            continue;
        }
        match x.name.as_str() {
            "token_embd.weight" => o.token_embd = o.token_embd.or(Some(x.ggml_type)),
            "output.weight" => o.output = o.output.or(Some(x.ggml_type)),
            name => {
                let exact = name.replace('.', "\\.");
                o.tensor_types.push((format!("^{exact}$"), x.ggml_type));
            }
        }
    }
    Ok(o)
}
