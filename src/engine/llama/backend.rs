//! llama.cpp's start-up, its log (to stderr with `--verbose`, captured for placements and
//! errors), which libllama the process runs, and the machine as llama.cpp sees it: the
//! part of the real engine that is not a model or a context.

use std::ffi::{CStr, c_char, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_sys_2 as sys;

use crate::engine::{DeviceInfo, EngineError};

static BACKEND: OnceLock<Result<LlamaBackend, EngineError>> = OnceLock::new();
static LIBRARY: OnceLock<Result<crate::engine::linkage::Library, EngineError>> = OnceLock::new();
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
/// progress lines are also handed to `progress::tap`.
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
    if super::progress::tapping() {
        super::progress::tap(&s);
    }
    if let Some(buf) = CAPTURED.lock().as_deref_mut().ok().and_then(Option::as_mut) {
        buf.push_str(&s);
    }
    if VERBOSE.load(Ordering::Relaxed) {
        eprint!("{s}");
    }
}

/// The first error llama.cpp logged since the last call, without its prefixes:
/// "llama_model_load: error loading model: check_tensor_dims: tensor 'x' not found" gives
/// "tensor 'x' not found".
pub(super) fn take_first_error() -> Option<String> {
    let e = FIRST_ERROR.lock().ok()?.take()?;
    let mut msg = e.as_str();
    let is_function = |h: &str| h.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let prefix = |(head, _): &(&str, &str)| is_function(head) || *head == "error loading model";
    while let Some((_, rest)) = msg.split_once(": ").filter(prefix) {
        msg = rest;
    }
    Some(msg.trim().to_string())
}

/// Runs `f` and returns what llama.cpp logged meanwhile (all levels, debug included):
/// where it put layers and buffers is only reported there.
pub(super) fn capture<T>(f: impl FnOnce() -> T) -> (T, String) {
    let _serial = CAPTURE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    *CAPTURED.lock().unwrap_or_else(|e| e.into_inner()) = Some(String::new());
    let out = f();
    let mut text = CAPTURED.lock().unwrap_or_else(|e| e.into_inner());
    (out, text.take().unwrap_or_default())
}

/// The file that holds libllama's code: a shared libllama as the loader found it, or
/// (statically linked) the executable.
#[cfg(unix)]
fn library_path() -> Option<std::path::PathBuf> {
    let f: unsafe extern "C" fn() = sys::llama_backend_init;
    // SAFETY: dladdr only fills `info`, and an all-zero Dl_info is valid (null pointers).
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if unsafe { libc::dladdr(f as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
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
fn inspect_library() -> Result<crate::engine::linkage::Library, EngineError> {
    use crate::engine::linkage::{BuiltFor, Library, check, read_stamp};
    let ggml_version = unsafe { super::c_text(sys::ggml_version()) };
    let found = library_path();
    let dynamic = found.as_ref().is_some_and(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("libllama"))
    });
    let exe = std::env::current_exe().ok();
    let path = (found.clone().filter(|_| dynamic))
        .or(exe)
        .or(found)
        .unwrap_or_default();
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
            crate::engine::linkage::STAMP_FILE
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
pub fn init(verbose: bool) -> Result<(), EngineError> {
    VERBOSE.store(verbose, Ordering::Relaxed);
    ensure_init()
}

/// [`init`], leaving the log routing as it is.
pub fn ensure_init() -> Result<(), EngineError> {
    let lib = LIBRARY.get_or_init(inspect_library).clone()?;
    crate::engine::linkage::set_current(lib);
    // Install the callback before the backend starts, so start-up logs are caught too.
    unsafe { sys::llama_log_set(Some(on_log), std::ptr::null_mut()) };
    BACKEND
        .get_or_init(|| {
            LlamaBackend::init().map_err(|e| EngineError::Other(format!("llama.cpp backend: {e}")))
        })
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
    unsafe { super::c_text(p) }.trim().to_string()
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

pub fn devices() -> Vec<DeviceInfo> {
    use crate::engine::DeviceKind as K;
    use llama_cpp_2::LlamaBackendDeviceType as T;
    (llama_cpp_2::list_llama_ggml_backend_devices().into_iter())
        .map(|d| DeviceInfo {
            name: d.name,
            description: d.description,
            backend: d.backend,
            kind: match d.device_type {
                T::Cpu => K::Cpu,
                T::Gpu => K::Gpu,
                T::IntegratedGpu => K::Igpu,
                T::Accelerator => K::Accel,
                T::Unknown => K::Unknown,
            },
            memory_total: d.memory_total as u64,
            memory_free: d.memory_free as u64,
        })
        .collect()
}
