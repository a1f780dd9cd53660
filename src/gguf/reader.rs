//! A bounds-checked GGUF header reader. It reads only what the header declares, checks every
//! length against the file size before allocating, and never trusts a count: a corrupt or
//! hostile file gets an error naming what is wrong, never a panic or a huge allocation.
//! Running it before llama.cpp sees a file keeps llama.cpp from aborting on bad input.

use std::collections::HashSet;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

pub use super::error::GgufError;
pub use super::header::{Header, TensorInfo};
use super::validate::validate;
use super::{DEFAULT_ALIGNMENT, MAGIC, Value, type_layout};

fn bad<T>(msg: impl Into<String>) -> Result<T, GgufError> {
    Err(GgufError::Malformed(msg.into()))
}

// Sanity limits far above any real model, far below what would exhaust memory.
const MAX_KEY_LEN: u64 = 1 << 16;
const MAX_DIMS: u32 = 4;
/// ggml's GGML_MAX_NAME: a tensor name must be shorter, or gguf.cpp refuses the file.
const MAX_TENSOR_NAME: usize = 64;
const CAPACITY_CAP: u64 = 1 << 16;
/// Real models hold well under a million array entries (tokens, scores, types, merges).
const MAX_ARRAY_ENTRIES: u64 = 1 << 24;

struct Cursor<R> {
    r: R,
    pos: u64,
    size: u64,
    /// Array entries read so far, against [`MAX_ARRAY_ENTRIES`].
    entries: u64,
}

impl<R: Read> Cursor<R> {
    fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>, GgufError> {
        if n > self.size.saturating_sub(self.pos) {
            return bad(format!(
                "{what} needs {n} bytes at offset {} but the file has {} bytes: truncated or corrupt",
                self.pos, self.size
            ));
        }
        let mut buf = vec![0u8; n as usize];
        self.r.read_exact(&mut buf).map_err(|e| GgufError::Io {
            kind: e.kind(),
            reason: format!("read error at offset {}: {e}", self.pos),
        })?;
        self.pos += n;
        Ok(buf)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], GgufError> {
        let v = self.bytes(N as u64, what)?;
        Ok(v.try_into().expect("length checked"))
    }

    fn u32(&mut self, what: &str) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn string(&mut self, what: &str, max: u64) -> Result<String, GgufError> {
        let len = self.u64(what)?;
        if len > max {
            return bad(format!("{what} has length {len}, over the limit of {max}"));
        }
        let b = self.bytes(len, what)?;
        String::from_utf8(b).or_else(|_| bad(format!("{what} is not valid UTF-8")))
    }

    fn value(&mut self, ty: u32, what: &str, depth: u32) -> Result<Value, GgufError> {
        Ok(match ty {
            0 => Value::U8(self.array::<1>(what)?[0]),
            1 => Value::I8(self.array::<1>(what)?[0] as i8),
            2 => Value::U16(u16::from_le_bytes(self.array(what)?)),
            3 => Value::I16(i16::from_le_bytes(self.array(what)?)),
            4 => Value::U32(self.u32(what)?),
            5 => Value::I32(i32::from_le_bytes(self.array(what)?)),
            6 => Value::F32(f32::from_le_bytes(self.array(what)?)),
            7 => match self.array::<1>(what)?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return bad(format!("{what}: boolean byte {b} is neither 0 nor 1")),
            },
            8 => Value::String(self.string(what, self.size)?),
            9 => {
                if depth > 0 {
                    return bad(format!("{what}: nested arrays are not supported"));
                }
                let elem = self.u32(what)?;
                let n = self.u64(what)?;
                // Every element takes at least one byte, so a count beyond the bytes left
                // is corrupt; checking first keeps a hostile count from allocating.
                if n > self.size.saturating_sub(self.pos) {
                    return bad(format!(
                        "{what}: array of {n} elements cannot fit in the file"
                    ));
                }
                // An entry in memory is 32 bytes for 1 on disk: a huge array of bytes in a
                // large file would exhaust memory before any other check could fail.
                self.entries += n;
                if self.entries > MAX_ARRAY_ENTRIES {
                    return bad(format!(
                        "{what}: metadata arrays hold more than {MAX_ARRAY_ENTRIES} entries in all, far beyond any real model"
                    ));
                }
                let items = (0..n).map(|_| self.value(elem, what, depth + 1));
                Value::Array(items.collect::<Result<_, _>>()?)
            }
            10 => Value::U64(self.u64(what)?),
            11 => Value::I64(i64::from_le_bytes(self.array(what)?)),
            12 => Value::F64(f64::from_le_bytes(self.array(what)?)),
            t => return bad(format!("{what}: unknown value type {t}")),
        })
    }
}

/// Reads the header of the GGUF file at `path` and checks it with [`validate`]: a file
/// that passes is one llama.cpp can be handed without aborting the process.
pub fn read_header(path: &Path) -> Result<Header, GgufError> {
    let meta = std::fs::metadata(path).map_err(|e| GgufError::io(&e))?;
    if meta.is_dir() {
        return Err(GgufError::Directory);
    }
    if !meta.is_file() {
        return Err(GgufError::NotAFile);
    }
    let file = std::fs::File::open(path).map_err(|e| GgufError::io(&e))?;
    let header = parse_header(io::BufReader::new(file), meta.len())?;
    validate(&header)?;
    Ok(header)
}

/// Parses a header from a reader over a file of `size` bytes: the structure only (the
/// layout rules of ggml's `gguf.cpp`, so a file that passes is one gguf.cpp also reads).
/// [`validate`] checks the content.
pub fn parse_header<R: Read + Seek>(mut r: R, size: u64) -> Result<Header, GgufError> {
    r.seek(SeekFrom::Start(0)).map_err(|e| GgufError::io(&e))?;
    let mut c = Cursor {
        r,
        pos: 0,
        size,
        entries: 0,
    };
    let (version, n_tensors, n_kv) = preamble(&mut c)?;
    let metadata = metadata(&mut c, n_kv)?;
    let alignment = alignment(&metadata)?;
    let mut names = HashSet::new();
    let tensors = (0..n_tensors).map(|i| tensor_info(&mut c, i, alignment, &mut names));
    let tensors = tensors.collect::<Result<Vec<_>, _>>()?;
    check_layout(&tensors, alignment)?;
    let data_offset = c.pos.div_ceil(alignment) * alignment;
    check_data_fits(&tensors, data_offset, size)?;
    Ok(Header {
        version,
        metadata,
        tensors,
        alignment,
        data_offset,
        file_size: size,
    })
}

/// The magic number, the version and the two counts: (version, tensors, metadata entries).
/// Counts that cannot fit in the file are refused here, before anything is sized by them.
fn preamble<R: Read>(c: &mut Cursor<R>) -> Result<(u32, u64, u64), GgufError> {
    let size = c.size;
    if size == 0 {
        return bad("the file is empty");
    }
    let magic = c.bytes(4.min(size), "the magic number")?;
    if magic != MAGIC {
        return bad(format!(
            "not a GGUF file: the magic bytes are {magic:02x?}, expected \"GGUF\""
        ));
    }
    let version = c.u32("the version")?;
    if !(2..=3).contains(&version) {
        return bad(format!(
            "unsupported GGUF version {version} (2 and 3 are supported)"
        ));
    }
    let n_tensors = c.u64("the tensor count")?;
    let n_kv = c.u64("the metadata count")?;
    // Each entry needs well over 8 bytes; larger counts cannot fit and are corrupt.
    if n_tensors > size / 8 || n_kv > size / 8 {
        return bad(format!(
            "declares {n_tensors} tensors and {n_kv} metadata entries, more than a {size}-byte file can hold"
        ));
    }
    Ok((version, n_tensors, n_kv))
}

/// The `n_kv` metadata entries, in file order: keys non-empty and unique.
fn metadata<R: Read>(c: &mut Cursor<R>, n_kv: u64) -> Result<Vec<(String, Value)>, GgufError> {
    // Capped capacity: a count that passed the preamble's check can still be hundreds of
    // millions in a large file, and only the entries actually read should cost memory.
    let mut metadata = Vec::with_capacity(n_kv.min(CAPACITY_CAP) as usize);
    let mut keys = HashSet::new();
    for i in 0..n_kv {
        let key = c.string(&format!("metadata key #{i}"), MAX_KEY_LEN)?;
        if key.is_empty() {
            return bad(format!("metadata key #{i} is empty"));
        }
        if !keys.insert(key.clone()) {
            return bad(format!("metadata key `{key}` appears twice"));
        }
        let ty = c.u32(&format!("the type of `{key}`"))?;
        let value = c.value(ty, &format!("metadata `{key}`"), 0)?;
        metadata.push((key, value));
    }
    Ok(metadata)
}

/// `general.alignment`, or the default when the file has none.
fn alignment(metadata: &[(String, Value)]) -> Result<u64, GgufError> {
    match metadata.iter().find(|(k, _)| k == "general.alignment") {
        None => Ok(DEFAULT_ALIGNMENT),
        // gguf.cpp accepts only uint32 here.
        Some((_, Value::U32(a))) if a.is_power_of_two() => Ok(u64::from(*a)),
        Some((_, v)) => bad(format!(
            "general.alignment must be a uint32 power of two, not {} {v:?}",
            v.type_name()
        )),
    }
}

/// Tensor #`i`'s entry: a unique name ggml accepts (recorded in `names`), 1 to 4 dimensions
/// whose element count fits ggml's int64 and whose first is a multiple of the block size, a
/// known type, an aligned offset.
fn tensor_info<R: Read>(
    c: &mut Cursor<R>,
    i: u64,
    alignment: u64,
    names: &mut HashSet<String>,
) -> Result<TensorInfo, GgufError> {
    let name = c.string(&format!("the name of tensor #{i}"), MAX_KEY_LEN)?;
    if name.len() >= MAX_TENSOR_NAME {
        return bad(format!(
            "the name of tensor #{i} is {} bytes long; ggml allows at most {}",
            name.len(),
            MAX_TENSOR_NAME - 1
        ));
    }
    let what = format!("tensor `{name}`");
    if !names.insert(name.clone()) {
        return bad(format!("{what} appears twice"));
    }
    let n_dims = c.u32(&what)?;
    if n_dims == 0 || n_dims > MAX_DIMS {
        return bad(format!(
            "{what} has {n_dims} dimensions (1 to {MAX_DIMS} allowed)"
        ));
    }
    let dims = (0..n_dims).map(|_| c.u64(&what));
    let dims = dims.collect::<Result<Vec<_>, _>>()?;
    let ggml_type = c.u32(&what)?;
    let offset = c.u64(&what)?;
    let Some((tname, block, block_bytes)) = type_layout(ggml_type) else {
        return bad(format!("{what} has unknown ggml type {ggml_type}"));
    };
    // ggml counts elements in int64.
    let n_el = (dims.iter())
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n > 0 && n <= i64::MAX as u64)
        .ok_or_else(|| GgufError::Malformed(format!("{what} has invalid dimensions {dims:?}")))?;
    if dims[0] % block != 0 {
        return bad(format!(
            "{what}: first dimension {} is not a multiple of the {tname} block size {block}",
            dims[0]
        ));
    }
    let n_bytes = (n_el / block)
        .checked_mul(block_bytes)
        .ok_or_else(|| GgufError::Malformed(format!("{what} is too large")))?;
    if offset % alignment != 0 {
        return bad(format!(
            "{what}: data offset {offset} is not aligned to {alignment}"
        ));
    }
    Ok(TensorInfo {
        name,
        dims,
        ggml_type,
        offset,
        n_bytes,
    })
}

/// Every tensor's data, from `data_offset`, ends within the file of `size` bytes.
fn check_data_fits(tensors: &[TensorInfo], data_offset: u64, size: u64) -> Result<(), GgufError> {
    for t in tensors {
        let end = data_offset
            .checked_add(t.offset)
            .and_then(|x| x.checked_add(t.n_bytes));
        if end.is_none_or(|e| e > size) {
            return bad(format!(
                "tensor `{}` ({} bytes at data offset {}) extends past the end of the {size}-byte file: truncated",
                t.name, t.n_bytes, t.offset
            ));
        }
    }
    Ok(())
}

/// gguf.cpp requires tensor data in header order, each tensor padded to the alignment and
/// the next one starting right after: anything else (overlap, gaps, reordering) is refused.
fn check_layout(tensors: &[TensorInfo], alignment: u64) -> Result<(), GgufError> {
    let mut expected = 0u64;
    let mut previous: Option<&TensorInfo> = None;
    for t in tensors {
        if t.offset != expected {
            let how = match previous {
                Some(p) if t.offset < expected => format!(
                    "overlaps tensor `{}`, which ends at {}",
                    p.name,
                    p.offset + p.n_bytes
                ),
                Some(p) => format!(
                    "should follow tensor `{}` at data offset {expected}",
                    p.name
                ),
                None => "should be at data offset 0".into(),
            };
            return bad(format!(
                "tensor `{}` is at data offset {}, but {how}: tensors must be stored in order without gaps",
                t.name, t.offset
            ));
        }
        expected = t
            .n_bytes
            .div_ceil(alignment)
            .checked_mul(alignment)
            .and_then(|n| n.checked_add(expected))
            .ok_or_else(|| GgufError::Malformed(format!("tensor `{}` is too large", t.name)))?;
        previous = Some(t);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
