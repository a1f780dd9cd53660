//! The variant cache and the base file's provenance: cache names from the base's SHA-256
//! and the type, what the base is (type, quantized, synthetic), and free disk space.

use std::path::{Path, PathBuf};

use crate::config::quant_types::{QuantType, is_quantized_ggml_type};
use crate::gguf::Value;
use crate::gguf::reader::{self, Header};
use crate::ladder::error::{LadderError, input, io};
use crate::record::{ModelRecord, Provenance};

use crate::gguf::{KEY_PRESET, KEY_SYNTHETIC};

/// `<dir>/<first 16 hex digits of the base's SHA-256>-<TYPE>.gguf`.
pub(crate) fn variant_path(dir: &Path, base_sha256: &str, t: QuantType) -> PathBuf {
    let short: String = base_sha256.chars().take(16).collect();
    dir.join(format!("{short}-{}.gguf", t.name))
}

#[derive(Debug, Clone, PartialEq)]
pub struct BaseInfo {
    pub path: PathBuf,
    pub sha256: String,
    /// `general.file_type` as a label, or "unknown".
    pub base_type: String,
    /// Some weight tensor is quantized: variants are requantized.
    pub quantized: bool,
    pub synthetic: bool,
    pub preset: Option<String>,
    /// Elements of all tensors (to bound a variant's size).
    pub n_elements: u64,
    /// Tokens in its vocabulary (to size the reference's stored rows).
    pub n_vocab: usize,
    pub header: Header,
}

impl BaseInfo {
    pub fn from_header(path: &Path, sha256: String, h: Header) -> BaseInfo {
        BaseInfo {
            path: path.to_path_buf(),
            sha256,
            base_type: h.file_type().unwrap_or("unknown").to_string(),
            quantized: h
                .tensors
                .iter()
                .any(|t| is_quantized_ggml_type(t.ggml_type)),
            synthetic: is_synthetic(&h),
            preset: h
                .get(KEY_PRESET)
                .and_then(Value::as_str)
                .map(str::to_string),
            n_elements: h.n_elements(),
            n_vocab: match h.get("tokenizer.ggml.tokens") {
                Some(Value::Array(a)) => a.len(),
                _ => 0,
            },
            header: h,
        }
    }

    /// The provenance of the variant of type `t` built from this base.
    pub fn provenance(&self, t: QuantType) -> Provenance {
        Provenance {
            base_file: self.path.display().to_string(),
            base_sha256: self.sha256.clone(),
            quant_type: t.name.to_string(),
            base_type: self.base_type.clone(),
            requantized: self.quantized,
            synthetic: self.synthetic,
            preset: self.preset.clone(),
            recipe: None,
            given: false,
        }
    }

    /// The provenance of a file variant whose tensor mix reads `label`.
    pub fn given_provenance(&self, label: &str) -> Provenance {
        Provenance {
            quant_type: label.to_string(),
            requantized: false,
            given: true,
            ..self.provenance(QuantType::parse("F16").expect("a ladder type"))
        }
    }
}

/// What [`file_difference`] compares, hashed: the model's identity in the record.
pub fn model_identity(h: &Header) -> String {
    // Hashed as plain text (never Debug output), so that every version agrees; tensors by
    // name, since llama.cpp's quantizer writes them in its own order (by layer).
    let mut key = format!("{}\n", h.architecture().unwrap_or(""));
    let mut tensors: Vec<String> = (h.tensors.iter())
        .map(|t| {
            let dims: Vec<String> = t.dims.iter().map(u64::to_string).collect();
            format!("{} {}\n", t.name, dims.join("x"))
        })
        .collect();
    tensors.sort();
    key.extend(tensors);
    key.push_str(
        h.get("tokenizer.ggml.model")
            .and_then(Value::as_str)
            .unwrap_or(""),
    );
    if let Some(Value::Array(tokens)) = h.get("tokenizer.ggml.tokens") {
        for t in tokens {
            key.push('\0');
            key.push_str(t.as_str().unwrap_or(""));
        }
    }
    crate::util::hash::sha256_hex(key.as_bytes())[..16].to_string()
}

/// How the file variant at `path` differs from the ladder's base `b` (architecture,
/// tokenizer, tensor names and shapes): a variant of another model has no KLD against it.
/// None when its header does not read (the variant's own record says why).
pub fn file_difference(path: &Path, b: &Header) -> Option<String> {
    let h = reader::read_header(path).ok()?;
    if h.architecture() != b.architecture() {
        let (a, r) = (h.architecture(), b.architecture());
        let (a, r) = (a.unwrap_or("none"), r.unwrap_or("none"));
        return Some(format!("architecture {a}, the reference's is {r}"));
    }
    for key in ["tokenizer.ggml.model", "tokenizer.ggml.tokens"] {
        if h.get(key) != b.get(key) {
            return Some(format!(
                "another tokenizer ({key} differs from the reference's)"
            ));
        }
    }
    let dims = |h: &Header, name: &str| {
        h.tensors
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.dims.clone())
    };
    for t in &b.tensors {
        let (name, want) = (&t.name, &t.dims);
        return Some(match dims(&h, name) {
            None => format!("no tensor {name}, which the reference has"),
            Some(d) if d != *want => format!("tensor {name} is {d:?}, the reference's is {want:?}"),
            Some(_) => continue,
        });
    }
    let extra = h.tensors.iter().find(|t| dims(b, &t.name).is_none());
    extra.map(|t| format!("tensor {}, which the reference lacks", t.name))
}

/// Reads and hashes a base file; the error names the file.
pub fn inspect_base(path: &Path) -> Result<BaseInfo, LadderError> {
    let h = reader::read_header(path).map_err(|e| input(path, e))?;
    let sha = crate::util::system::sha256_file(path).map_err(|e| input(path, e))?;
    Ok(BaseInfo::from_header(path, sha, h))
}

/// Whether `h` is a `tpsbench synth` file (random weights).
pub fn is_synthetic(h: &Header) -> bool {
    matches!(h.get(KEY_SYNTHETIC), Some(Value::Bool(true)))
}

/// Provenance of a synthetic file seen by the runner (`tpsbench run` on a `synth` output):
/// its own base, not requantized, flagged synthetic. `None` for ordinary models.
pub fn synthetic_provenance(h: &Header, rec: &ModelRecord) -> Option<Provenance> {
    if !is_synthetic(h) {
        return None;
    }
    let b = BaseInfo::from_header(Path::new(&rec.path), rec.sha256.clone(), h.clone());
    Some(Provenance {
        given: false,
        ..b.given_provenance(&b.base_type)
    })
}

/// An upper bound of a variant's file size: bytes per element of the type's widest tensor
/// type, plus headroom for metadata.
pub(crate) fn size_bound(t: QuantType, n_elements: u64) -> u64 {
    let bytes_per_1000 = match t.name {
        "F32" => 4000,
        "F16" | "BF16" => 2000,
        // Q8_0, and mixes (some tensors at Q6_K/Q8_0): 1.063 bytes/element bounds them all.
        _ => 1063,
    };
    n_elements.saturating_mul(bytes_per_1000) / 1000 + (64 << 20)
}

/// Free bytes on the file system holding `path` (or its nearest existing ancestor).
#[cfg(unix)]
pub(crate) fn free_bytes(path: &Path) -> Option<u64> {
    use std::ffi::CString;
    // A bare relative name's ancestors end at "", which does not exist: from the working
    // directory, so that `v.gguf` is checked like `./v.gguf`.
    let abs = std::path::absolute(path).ok()?;
    let mut p = abs.as_path();
    while !p.exists() {
        p = p.parent()?;
    }
    let c = CString::new(p.to_string_lossy().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

#[cfg(not(unix))]
pub(crate) fn free_bytes(_path: &Path) -> Option<u64> {
    None
}

pub(crate) fn create_dir(dir: &Path) -> Result<(), LadderError> {
    std::fs::create_dir_all(dir).map_err(io("create", dir))
}

/// Makes the file at `path` as `make` writes it under the temporary name `tmp`: renamed into
/// place when complete, removed when not, so that a failed or interrupted build never leaves
/// a partial file behind.
pub(crate) fn via_tmp<T>(
    path: &Path,
    tmp: &Path,
    make: impl FnOnce(&Path) -> Result<T, LadderError>,
) -> Result<T, LadderError> {
    let made = make(tmp).and_then(|x| {
        std::fs::rename(tmp, path).map_err(io("write", path))?;
        Ok(x)
    });
    if made.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    made
}

/// An error when fewer than `need` bytes are free where `path` will be written.
pub(crate) fn check_space(path: &Path, need: u64) -> Result<(), LadderError> {
    match free_bytes(path) {
        Some(free) if free < need => Err(LadderError::NoSpace {
            path: path.to_path_buf(),
            need,
            free,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_names_use_the_short_hash_and_the_type() {
        let t = QuantType::parse("Q4_K_M").unwrap();
        let p = variant_path(Path::new("c"), &"ab".repeat(32), t);
        assert_eq!(p, Path::new("c/abababababababab-Q4_K_M.gguf"));
    }

    #[test]
    fn free_space_is_known_here_and_absurd_needs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let free = free_bytes(&dir.path().join("not/yet/there.gguf")).unwrap();
        assert!(free > 0);
        assert!(free_bytes(Path::new("a-bare-name-not-yet-written.gguf")).is_some());
        let e = check_space(dir.path(), u64::MAX).unwrap_err().to_string();
        assert!(e.contains("not enough disk space"), "{e}");
        assert!(check_space(dir.path(), 1).is_ok());
    }

    #[test]
    fn the_identity_holds_whatever_order_the_tensors_are_written_in() {
        let header = |doc: &crate::gguf::writer::Document| {
            let mut bytes = Vec::new();
            crate::gguf::writer::write_gguf(&mut bytes, doc).unwrap();
            let n = bytes.len() as u64;
            reader::parse_header(std::io::Cursor::new(bytes), n).unwrap()
        };
        let mut doc = crate::gguf::tiny::document(1);
        let first = model_identity(&header(&doc));
        doc.tensors.reverse();
        assert_eq!(model_identity(&header(&doc)), first);
        doc.tensors.pop();
        assert_ne!(model_identity(&header(&doc)), first);
    }

    #[test]
    fn a_file_made_under_a_temporary_name_appears_only_when_complete() {
        let dir = tempfile::tempdir().unwrap();
        let (path, tmp) = (dir.path().join("v.gguf"), dir.path().join("v.tmp"));
        let failed = via_tmp(&path, &tmp, |t| {
            std::fs::write(t, b"half").unwrap();
            Err::<(), _>(LadderError::QuantType("interrupted".into()))
        });
        assert!(failed.is_err() && !tmp.exists() && !path.exists());
        via_tmp(&path, &tmp, |t| {
            std::fs::write(t, b"whole").unwrap();
            Ok(())
        })
        .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"whole");
        assert!(!tmp.exists());
    }

    #[test]
    fn size_bounds_grow_with_precision() {
        let f32_ = size_bound(QuantType::parse("F32").unwrap(), 1 << 30);
        let q4 = size_bound(QuantType::parse("Q4_0").unwrap(), 1 << 30);
        assert!(f32_ > 3 * q4);
    }
}
