//! The real engine: llama.cpp through `llama-cpp-2` / `llama-cpp-sys-2`. This is the only
//! module that touches llama.cpp.
//!
//! The hot path calls `llama-cpp-sys-2` directly: llama-bench attaches its own ggml
//! threadpool (poll = 50) to each context and clears memory with `llama_memory_clear`, and
//! the safe crate exposes neither, so matching llama-bench's figures needs the raw calls.
//! `llama-cpp-2` is used for what it wraps safely (backend start-up, the device list).

use std::ffi::{CStr, CString, c_char, c_void};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_sys_2 as sys;

use super::DeviceInfo;
use super::{Engine, LoadParams, Model, ModelInfo, Session};
use crate::plan::TestParams;

static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
static LIBRARY: OnceLock<Result<crate::linkage::Library, String>> = OnceLock::new();
static VERBOSE: AtomicBool = AtomicBool::new(false);
/// The first error llama.cpp logged since [`take_first_error`] last ran: why a load failed.
static FIRST_ERROR: Mutex<Option<String>> = Mutex::new(None);
/// While `Some`, llama.cpp's log text is also collected here (see [`capture`]).
static CAPTURED: Mutex<Option<String>> = Mutex::new(None);
/// Serializes captures, so that two threads loading models do not mix their logs.
static CAPTURE_LOCK: Mutex<()> = Mutex::new(());

/// llama.cpp's log callback: its messages go to stderr with `--verbose`, nowhere otherwise.
/// They never reach stdout, which carries only what the user asked for. Errors are kept,
/// so that a failed load can say why without `--verbose`; while a quantization runs, its
/// progress lines are also handed to `quantize::tap`.
unsafe extern "C" fn on_log(level: sys::ggml_log_level, text: *const c_char, _: *mut c_void) {
    if text.is_null() {
        return;
    }
    let s = unsafe { CStr::from_ptr(text) }.to_string_lossy();
    if level == sys::GGML_LOG_LEVEL_ERROR {
        if let Ok(mut first) = FIRST_ERROR.lock() {
            first.get_or_insert_with(|| s.trim().to_string());
        }
    }
    if super::quantize::tapping() {
        super::quantize::tap(&s);
    }
    if let Ok(mut c) = CAPTURED.lock() {
        if let Some(buf) = c.as_mut() {
            buf.push_str(&s);
        }
    }
    if VERBOSE.load(Ordering::Relaxed) {
        eprint!("{s}");
    }
}

/// The first error llama.cpp logged since the last call, without its prefixes:
/// "llama_model_load: error loading model: check_tensor_dims: tensor 'x' not found" gives
/// "tensor 'x' not found".
fn take_first_error() -> Option<String> {
    let e = FIRST_ERROR.lock().ok()?.take()?;
    let mut msg = e.as_str();
    loop {
        let is_function = |h: &str| h.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        match msg.split_once(": ") {
            Some((head, rest)) if is_function(head) || head == "error loading model" => msg = rest,
            _ => break,
        }
    }
    Some(msg.trim().to_string())
}

/// Runs `f` and returns what llama.cpp logged meanwhile (all levels, debug included):
/// where it put layers and buffers is only reported there.
fn capture<T>(f: impl FnOnce() -> T) -> (T, String) {
    let _serial = CAPTURE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    *CAPTURED.lock().unwrap_or_else(|e| e.into_inner()) = Some(String::new());
    let out = f();
    let text = CAPTURED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_default();
    (out, text)
}

#[repr(C)]
struct DlInfo {
    dli_fname: *const c_char,
    dli_fbase: *mut c_void,
    dli_sname: *const c_char,
    dli_saddr: *mut c_void,
}

#[cfg(unix)]
unsafe extern "C" {
    fn dladdr(addr: *const c_void, info: *mut DlInfo) -> std::ffi::c_int;
}

/// The file that holds libllama's code: a shared libllama as the loader found it, or
/// (statically linked) the executable.
#[cfg(unix)]
fn library_path() -> Option<std::path::PathBuf> {
    let f: unsafe extern "C" fn() = sys::llama_backend_init;
    let mut info = DlInfo {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    if unsafe { dladdr(f as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    let name = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    (!name.is_empty()).then(|| std::path::PathBuf::from(name.as_ref()))
}

#[cfg(not(unix))]
fn library_path() -> Option<std::path::PathBuf> {
    None
}

/// Which llama.cpp this process runs, checked against the one tpsbench was built for.
/// Reads only the file system and `ggml_version()`, a constant string, so that it is safe
/// to call before anything depends on struct layouts.
fn inspect_library() -> Result<crate::linkage::Library, String> {
    use crate::linkage::{BuiltFor, Library, check, read_stamp};
    let ggml_version = unsafe { CStr::from_ptr(sys::ggml_version()) }
        .to_string_lossy()
        .into_owned();
    let exe = std::env::current_exe().ok();
    let found = library_path();
    let dynamic = found.as_ref().is_some_and(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("libllama"))
    });
    let path = match (dynamic, found, exe) {
        (true, Some(p), _) => p,
        (_, _, Some(e)) => e,
        (_, Some(p), None) => p,
        (_, None, None) => std::path::PathBuf::new(),
    };
    let stamp = if dynamic { read_stamp(&path) } else { None };
    let shown = path.display().to_string();
    check(
        &BuiltFor::this_build(),
        &shown,
        &ggml_version,
        stamp.as_ref(),
    )?;
    if dynamic && stamp.is_none() {
        eprintln!(
            "warning: {shown} has no {} beside it (not built by scripts/build-llama-shared): \
             its ggml {ggml_version} matches, but its llama.cpp sources cannot be checked",
            crate::linkage::STAMP_FILE
        );
    }
    Ok(Library {
        linkage: if dynamic { "dynamic" } else { "static" }.into(),
        path: shown,
        ggml_version,
        stamp,
    })
}

/// Starts llama.cpp once per process. `verbose` routes its logs to stderr. Refuses a shared
/// llama.cpp library that does not match the sources tpsbench was built from.
pub fn init(verbose: bool) -> Result<(), String> {
    VERBOSE.store(verbose, Ordering::Relaxed);
    ensure_init()
}

/// Starts llama.cpp if no one has, leaving the log routing as it is.
pub fn ensure_init() -> Result<(), String> {
    let lib = LIBRARY.get_or_init(inspect_library).clone()?;
    crate::linkage::set_current(lib);
    // Install the callback before the backend starts, so start-up logs are caught too.
    unsafe { sys::llama_log_set(Some(on_log), std::ptr::null_mut()) };
    BACKEND
        .get_or_init(|| LlamaBackend::init().map_err(|e| format!("llama.cpp backend: {e}")))
        .as_ref()
        .map(|_| ())
        .map_err(Clone::clone)
}

/// `llama_print_system_info()`: the features llama.cpp was compiled with (e.g. "AVX2 = 1").
pub fn system_info() -> String {
    let p = unsafe { sys::llama_print_system_info() };
    if p.is_null() {
        return String::new();
    }
    unsafe { CStr::from_ptr(p) }
        .to_string_lossy()
        .trim()
        .to_string()
}

/// SIMD features the CPU backend was compiled with, by name.
pub fn cpu_features() -> Vec<(&'static str, bool)> {
    unsafe {
        vec![
            ("SSE3", sys::ggml_cpu_has_sse3() != 0),
            ("AVX", sys::ggml_cpu_has_avx() != 0),
            ("AVX2", sys::ggml_cpu_has_avx2() != 0),
            ("FMA", sys::ggml_cpu_has_fma() != 0),
            ("F16C", sys::ggml_cpu_has_f16c() != 0),
            ("AVX512", sys::ggml_cpu_has_avx512() != 0),
            ("AVX_VNNI", sys::ggml_cpu_has_avx_vnni() != 0),
            ("NEON", sys::ggml_cpu_has_neon() != 0),
        ]
    }
}

/// Names of the SIMD features the CPU backend was compiled with.
pub fn cpu_features_on() -> Vec<String> {
    cpu_features()
        .into_iter()
        .filter(|f| f.1)
        .map(|f| f.0.to_string())
        .collect()
}

/// The devices llama.cpp's backend registry lists.
pub fn devices() -> Vec<DeviceInfo> {
    use llama_cpp_2::LlamaBackendDeviceType as T;
    llama_cpp_2::list_llama_ggml_backend_devices()
        .into_iter()
        .map(|d| DeviceInfo {
            name: d.name,
            description: d.description,
            backend: d.backend,
            kind: match d.device_type {
                T::Cpu => "cpu",
                T::Gpu => "gpu",
                T::IntegratedGpu => "igpu",
                T::Accelerator => "accel",
                T::Unknown => "unknown",
            }
            .into(),
            memory_total: d.memory_total as u64,
            memory_free: d.memory_free as u64,
        })
        .collect()
}

/// The real engine; create it after [`init`].
pub struct LlamaEngine {
    epoch: Instant,
}

impl LlamaEngine {
    pub fn new(verbose: bool) -> Result<Self, String> {
        init(verbose)?;
        Ok(LlamaEngine {
            epoch: Instant::now(),
        })
    }
}

pub(super) struct LlamaModel {
    pub(super) ptr: NonNull<sys::llama_model>,
    pub(super) info: ModelInfo,
    /// What llama.cpp logged while loading: where it put the layers and weights.
    load_log: String,
    /// The placement of the last session and its parameters: load log plus context log.
    placement: Mutex<Option<(TestParams, Option<crate::placement::Placement>)>>,
}

impl LlamaModel {
    /// A context for `cp`, or why llama.cpp refused it; with where llama.cpp put the model
    /// and this context (its load log plus the context's log), when it said.
    pub(super) fn new_context(
        &self,
        cp: sys::llama_context_params,
    ) -> (
        Result<NonNull<sys::llama_context>, String>,
        Option<crate::placement::Placement>,
    ) {
        take_first_error();
        let (raw, ctx_log) =
            capture(|| unsafe { sys::llama_init_from_model(self.ptr.as_ptr(), cp) });
        let placement = crate::placement::parse(&format!("{}\n{ctx_log}", self.load_log));
        let ctx = NonNull::new(raw).ok_or_else(|| {
            take_first_error()
                .unwrap_or_else(|| "too large for memory or invalid parameters".into())
        });
        (ctx, placement)
    }
}

impl Drop for LlamaModel {
    fn drop(&mut self) {
        unsafe { sys::llama_model_free(self.ptr.as_ptr()) };
    }
}

struct LlamaSession<'m> {
    ctx: NonNull<sys::llama_context>,
    threadpool: NonNull<sys::ggml_threadpool>,
    _model: &'m LlamaModel,
}

impl Drop for LlamaSession<'_> {
    fn drop(&mut self) {
        unsafe {
            sys::llama_free(self.ctx.as_ptr());
            sys::ggml_threadpool_free(self.threadpool.as_ptr());
        }
    }
}

impl Engine for LlamaEngine {
    fn load(&self, path: &Path, params: &LoadParams) -> Result<Box<dyn Model + '_>, String> {
        // Some malformed files make llama.cpp abort the process rather than fail: every
        // path to llama.cpp goes through the validator first (see gguf::validate).
        crate::gguf::reader::read_header(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let c_path = CString::new(path.to_string_lossy().as_bytes())
            .map_err(|_| "the model path contains a NUL byte".to_string())?;
        let mut mp = unsafe { sys::llama_model_default_params() };
        mp.n_gpu_layers = params.n_gpu_layers;
        mp.split_mode = params.split_mode.as_llama() as sys::llama_split_mode;
        mp.main_gpu = params.main_gpu;
        take_first_error();
        let (raw, load_log) =
            capture(|| unsafe { sys::llama_model_load_from_file(c_path.as_ptr(), mp) });
        let ptr = NonNull::new(raw).ok_or_else(|| match take_first_error() {
            Some(why) => format!("llama.cpp could not load {}: {why}", path.display()),
            None => format!(
                "llama.cpp could not load {} (run with --verbose for its log)",
                path.display()
            ),
        })?;
        let info = unsafe { model_info(ptr.as_ptr()) };
        Ok(Box::new(LlamaModel {
            ptr,
            info,
            load_log: crate::placement::relevant_lines(&load_log),
            placement: Mutex::new(None),
        }))
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}

unsafe fn model_info(m: *const sys::llama_model) -> ModelInfo {
    unsafe {
        let mut buf = [0 as c_char; 256];
        sys::llama_model_desc(m, buf.as_mut_ptr(), buf.len());
        let description = CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned();
        let vocab = sys::llama_model_get_vocab(m);
        let bos = sys::llama_vocab_get_add_bos(vocab).then(|| sys::llama_vocab_bos(vocab));
        ModelInfo {
            description,
            size: sys::llama_model_size(m),
            n_params: sys::llama_model_n_params(m),
            n_vocab: sys::llama_vocab_n_tokens(vocab),
            bos,
            n_ctx_train: sys::llama_model_n_ctx_train(m).max(0) as u32,
        }
    }
}

/// KV-cache type names to ggml types.
pub(super) fn ggml_type(name: &str) -> Result<sys::ggml_type, String> {
    Ok(match name {
        "f32" => sys::GGML_TYPE_F32,
        "f16" => sys::GGML_TYPE_F16,
        "bf16" => sys::GGML_TYPE_BF16,
        "q8_0" => sys::GGML_TYPE_Q8_0,
        "q4_0" => sys::GGML_TYPE_Q4_0,
        "q4_1" => sys::GGML_TYPE_Q4_1,
        "iq4_nl" => sys::GGML_TYPE_IQ4_NL,
        "q5_0" => sys::GGML_TYPE_Q5_0,
        "q5_1" => sys::GGML_TYPE_Q5_1,
        other => return Err(format!("unknown KV cache type {other:?}")),
    })
}

impl Model for LlamaModel {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn serving(&self) -> Option<&dyn super::ServingModel> {
        Some(self)
    }

    fn placement(&self, params: &TestParams) -> Option<crate::placement::Placement> {
        match &*self.placement.lock().ok()? {
            Some((p, placement)) if p == params => placement.clone(),
            _ => None,
        }
    }

    fn session(&self, p: &TestParams) -> Result<Box<dyn Session + '_>, String> {
        // llama-bench's to_llama_cparams(), field for field.
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
        let (ctx, placement) = self.new_context(cp);
        if let Ok(mut slot) = self.placement.lock() {
            *slot = Some((p.clone(), placement));
        }
        let ctx = ctx.map_err(|why| {
            format!(
                "llama.cpp could not create a context of {} tokens (n_batch {}, n_ubatch {}): {why}",
                p.n_ctx(),
                p.n_batch,
                p.n_ubatch
            )
        })?;
        // llama-bench's threadpool: default params for n_threads, poll 50, not strict.
        let mut tpp = unsafe { sys::ggml_threadpool_params_default(p.n_threads as i32) };
        tpp.poll = 50;
        tpp.strict_cpu = false;
        let Some(threadpool) = NonNull::new(unsafe { sys::ggml_threadpool_new(&mut tpp) }) else {
            unsafe { sys::llama_free(ctx.as_ptr()) };
            return Err(format!(
                "could not create a threadpool of {} threads",
                p.n_threads
            ));
        };
        unsafe {
            sys::llama_attach_threadpool(ctx.as_ptr(), threadpool.as_ptr(), std::ptr::null_mut());
            sys::llama_set_n_threads(ctx.as_ptr(), p.n_threads as i32, p.n_threads as i32);
        }
        Ok(Box::new(LlamaSession {
            ctx,
            threadpool,
            _model: self,
        }))
    }
}

impl LlamaSession<'_> {
    fn decode(&mut self, tokens: &[i32]) -> Result<(), String> {
        // llama_batch_get_one takes a mutable pointer but llama_decode only reads the tokens,
        // so the caller's slice is passed as is: no copy inside the timed region.
        let ptr = tokens.as_ptr().cast_mut();
        let batch = unsafe { sys::llama_batch_get_one(ptr, tokens.len() as i32) };
        match unsafe { sys::llama_decode(self.ctx.as_ptr(), batch) } {
            0 => Ok(()),
            1 => Err("llama_decode: no KV cache slot for the batch (context full)".into()),
            2 => Err("llama_decode: aborted".into()),
            -1 => Err("llama_decode: invalid batch".into()),
            r => Err(format!("llama_decode failed with code {r}")),
        }
    }
}

impl Session for LlamaSession<'_> {
    fn clear(&mut self) {
        unsafe { sys::llama_memory_clear(sys::llama_get_memory(self.ctx.as_ptr()), false) };
    }

    fn decode_chunks(&mut self, tokens: &[i32], n_batch: usize) -> Result<(), String> {
        for chunk in tokens.chunks(n_batch.max(1)) {
            self.decode(chunk)?;
        }
        Ok(())
    }

    fn decode_one(&mut self, token: i32) -> Result<(), String> {
        self.decode(&[token])
    }

    fn synchronize(&mut self) {
        unsafe { sys::llama_synchronize(self.ctx.as_ptr()) };
    }

    fn save_state(&mut self) -> Vec<u8> {
        let ctx = self.ctx.as_ptr();
        let n = unsafe { sys::llama_state_seq_get_size(ctx, 0) };
        let mut buf = vec![0u8; n];
        let written = unsafe { sys::llama_state_seq_get_data(ctx, buf.as_mut_ptr(), n, 0) };
        buf.truncate(written);
        buf
    }

    fn restore_state(&mut self, state: &[u8]) -> bool {
        let ctx = self.ctx.as_ptr();
        unsafe { sys::llama_state_seq_set_data(ctx, state.as_ptr(), state.len(), 0) != 0 }
    }
}
