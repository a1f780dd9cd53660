//! Importance matrices as llama-imatrix makes them: for each weight matrix a model
//! multiplies, the sum over the calibration tokens of each input column's square
//! (`in_sum2`) and the number of tokens (`counts`). Computed through the eval callback
//! llama-imatrix installs, read and written in its GGUF format (read from its legacy `.dat`
//! too), and handed to the quantizer as the per-column means llama-quantize hands it.
//!
//! A file is untrusted input: every size in it is checked against the bytes it holds before
//! anything is allocated from it, and the entries are checked against the model's tensors
//! (an imatrix of another model is refused, as llama.cpp would abort on it).

use std::collections::BTreeMap;
use std::ffi::{CStr, c_void};
use std::io::Cursor;
use std::path::Path;

use llama_cpp_sys_2 as sys;

use super::llama::LlamaModel;
use super::{EngineError, LoadParams, ServingModel};
use crate::gguf::reader::{Header, parse_header};
use crate::gguf::writer::{Document, Tensor, TensorData, write_gguf};
use crate::gguf::{MAGIC, Value};

/// One weight's statistics: `sums` holds `counts.len()` slices (one per expert, or one)
/// of the weight's input width.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Entry {
    pub sums: Vec<f32>,
    pub counts: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Imatrix {
    pub entries: BTreeMap<String, Entry>,
    /// The calibration texts it was computed from, as llama-imatrix records them.
    pub datasets: Vec<String>,
    pub chunk_count: u32,
    pub chunk_size: u32,
    /// Read from a legacy `.dat` file: `sums` are means times `counts[0]` (calls).
    pub legacy: bool,
}

fn bad(path: &Path, why: impl std::fmt::Display) -> EngineError {
    EngineError::Other(format!("{}: {why}", path.display()))
}

fn why(s: impl Into<String>) -> EngineError {
    EngineError::Other(s.into())
}

impl Imatrix {
    pub fn read(path: &Path) -> Result<Imatrix, EngineError> {
        let bytes = std::fs::read(path).map_err(|e| bad(path, format!("cannot read: {e}")))?;
        let m = if bytes.starts_with(MAGIC) {
            read_gguf(&bytes)
        } else {
            read_legacy(&bytes)
        };
        let m = m.map_err(|why| bad(path, format!("not an imatrix llama.cpp reads: {why}")))?;
        if m.entries.is_empty() {
            return Err(bad(path, "the imatrix has no entries"));
        }
        Ok(m)
    }

    /// Writes llama-imatrix's GGUF format (`in_sum2` and `counts` of each entry, in name
    /// order, with its metadata), which llama-quantize and llama-imatrix read. Shapes drop a
    /// trailing 1 as ggml's writer does, so a file of one matrix per weight has the shapes of
    /// llama-imatrix's own.
    pub fn write(&self, path: &Path) -> Result<(), EngineError> {
        let mut doc = Document::default();
        let datasets = self.datasets.iter().map(|d| Value::String(d.clone()));
        doc.metadata = vec![
            ("general.type".into(), Value::String("imatrix".into())),
            ("imatrix.datasets".into(), Value::Array(datasets.collect())),
            ("imatrix.chunk_count".into(), Value::U32(self.chunk_count)),
            ("imatrix.chunk_size".into(), Value::U32(self.chunk_size)),
        ];
        for (name, e) in &self.entries {
            let n_mat = e.counts.len().max(1) as u64;
            let f32_tensor = |suffix: &str, dims: Vec<u64>, v: Vec<f32>| Tensor {
                name: format!("{name}.{suffix}"),
                dims,
                ggml_type: 0,
                data: TensorData::F32(v),
            };
            let dims = |w: u64| if n_mat == 1 { vec![w] } else { vec![w, n_mat] };
            let width = e.sums.len() as u64 / n_mat;
            doc.tensors
                .push(f32_tensor("in_sum2", dims(width), e.sums.clone()));
            let counts = e.counts.iter().map(|&c| c as f32).collect();
            doc.tensors.push(f32_tensor("counts", dims(1), counts));
        }
        let write = || -> std::io::Result<()> {
            let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
            write_gguf(&mut w, &doc)
        };
        write().map_err(|e| bad(path, format!("cannot write: {e}")))
    }

    /// Refuses an imatrix that is not of the model `h` describes: an entry for a tensor the
    /// model lacks, or of another width, or a value that is not finite.
    pub fn check_model(&self, h: &Header) -> Result<(), EngineError> {
        for (name, e) in &self.entries {
            let Some(t) = h.tensors.iter().find(|t| &t.name == name) else {
                return Err(why(format!(
                    "it has an entry for {name}, a tensor the model lacks: an imatrix of another model"
                )));
            };
            let n_mat: u64 = t.dims.iter().skip(2).product();
            let want = t.dims.first().copied().unwrap_or(0) * n_mat;
            if e.sums.len() as u64 != want {
                return Err(why(format!(
                    "its entry for {name} holds {} values, the model's tensor takes {want}: an imatrix of another model",
                    e.sums.len()
                )));
            }
            if e.sums.iter().any(|x| !x.is_finite()) {
                return Err(why(format!(
                    "its entry for {name} holds a value that is not finite"
                )));
            }
        }
        Ok(())
    }

    /// The per-column means llama-quantize hands the quantizer: each slice divided by its
    /// count (1 where a slice saw no token); a legacy file's sums divided by its calls.
    pub fn means(&self) -> Vec<(&str, Vec<f32>)> {
        let mean = |e: &Entry| -> Vec<f32> {
            let n_mat = e.counts.len().max(1);
            let width = e.sums.len() / n_mat;
            (e.sums.iter().enumerate())
                .map(|(i, &s)| {
                    let c = e.counts.get(i / width.max(1)).copied().unwrap_or(0);
                    match (self.legacy, c > 0) {
                        (_, true) => s / c as f32,
                        (true, false) => s,
                        (false, false) => 1.0,
                    }
                })
                .collect()
        };
        (self.entries.iter())
            .map(|(n, e)| (n.as_str(), mean(e)))
            .collect()
    }
}

/// llama-imatrix's GGUF: `<name>.in_sum2` and `<name>.counts`, F32 (`<name>.in_sum` and
/// `<name>.stats` are statistics the quantizer does not read).
fn read_gguf(bytes: &[u8]) -> Result<Imatrix, EngineError> {
    let h = parse_header(Cursor::new(bytes), bytes.len() as u64).map_err(|e| why(e.to_string()))?;
    let data = |name: &str| -> Result<Option<Vec<f32>>, EngineError> {
        let Some(t) = h.tensors.iter().find(|t| t.name == name) else {
            return Ok(None);
        };
        if t.ggml_type != 0 {
            return Err(why(format!("{name} is not F32")));
        }
        // The reader checked that every tensor's bytes lie inside the file.
        let start = (h.data_offset + t.offset) as usize;
        let raw = &bytes[start..start + t.n_bytes as usize];
        Ok(Some(f32s(raw)))
    };
    let mut m = Imatrix::default();
    for t in &h.tensors {
        let Some(name) = t.name.strip_suffix(".in_sum2") else {
            continue;
        };
        let sums = data(&t.name)?.unwrap_or_default();
        let counts = data(&format!("{name}.counts"))?
            .ok_or_else(|| why(format!("{name} has sums but no counts")))?;
        if counts.is_empty() || sums.len() % counts.len() != 0 {
            return Err(why(format!(
                "{name}: {} sums do not split into {} counts",
                sums.len(),
                counts.len()
            )));
        }
        let counts = counts.iter().map(|&c| c.round() as i64).collect();
        m.entries.insert(name.to_string(), Entry { sums, counts });
    }
    let u32_of = |k: &str| h.get(k).and_then(Value::as_u64).unwrap_or(0) as u32;
    m.chunk_count = u32_of("imatrix.chunk_count");
    m.chunk_size = u32_of("imatrix.chunk_size");
    if let Some(Value::Array(items)) = h.get("imatrix.datasets") {
        m.datasets = (items.iter())
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
    }
    Ok(m)
}

fn f32s(raw: &[u8]) -> Vec<f32> {
    raw.chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// The legacy `.dat` layout: i32 entry count; per entry i32 name length, the name, i32
/// calls, i32 value count, the f32 values; then, optionally, i32 chunks and the dataset.
fn read_legacy(bytes: &[u8]) -> Result<Imatrix, EngineError> {
    let mut pos = 0usize;
    let mut take = |n: usize, what: &str| -> Result<&[u8], EngineError> {
        let end = pos.checked_add(n).filter(|&e| e <= bytes.len());
        let end = end.ok_or_else(|| why(format!("the file ends inside {what}")))?;
        let s = &bytes[pos..end];
        pos = end;
        Ok(s)
    };
    fn i32_at(b: &[u8]) -> i32 {
        i32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    let n_entries = i32_at(take(4, "the entry count")?);
    if n_entries < 1 {
        return Err(why(format!("{n_entries} entries")));
    }
    let mut m = Imatrix {
        legacy: true,
        ..Imatrix::default()
    };
    for i in 0..n_entries {
        let len = i32_at(take(4, "a name length")?);
        let len = usize::try_from(len).map_err(|_| why(format!("entry {i}: name length {len}")))?;
        let name = String::from_utf8(take(len, "a name")?.to_vec())
            .map_err(|_| why(format!("entry {i}: the name is not UTF-8")))?;
        let ncall = i32_at(take(4, "a call count")?);
        let nval = i32_at(take(4, "a value count")?);
        let nval = usize::try_from(nval)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| why(format!("entry {name}: {nval} values")))?;
        let sums = f32s(take(nval.saturating_mul(4), "the values")?);
        let counts = vec![i64::from(ncall)];
        m.entries.insert(name, Entry { sums, counts });
    }
    if let Ok(b) = take(4, "the chunk count") {
        m.chunk_count = i32_at(b).max(0) as u32;
        if let Ok(b) = take(4, "the dataset length") {
            let len = usize::try_from(i32_at(b)).unwrap_or(0);
            if let Ok(d) = take(len, "the dataset") {
                m.datasets.push(String::from_utf8_lossy(d).into_owned());
            }
        }
    }
    Ok(m)
}

/// llama-imatrix's `-f`, `-c` and `--chunks`.
#[derive(Debug, Clone, PartialEq)]
pub struct ComputeParams {
    /// The calibration text (a trailing newline is dropped, as llama-imatrix's `-f` does).
    pub text: String,
    /// Recorded as the dataset (llama-imatrix records the `-f` path).
    pub dataset: String,
    pub n_ctx: u32,
    /// None: every whole chunk of the text.
    pub n_chunks: Option<u32>,
    pub n_threads: u32,
}

/// Computes the imatrix of the model at `path` over `p.text` as llama-imatrix does: the
/// tokens (BOS added) cut into chunks of `n_ctx`, each decoded from an empty cache with BOS
/// first and every position's output asked for. `progress(done, total)` after each chunk.
pub fn compute(
    path: &Path,
    load: &LoadParams,
    p: &ComputeParams,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Imatrix, EngineError> {
    let model = LlamaModel::load(path, load)?;
    let text = p.text.strip_suffix('\n').unwrap_or(&p.text);
    let tokens = model.tokenize(text, true, false)?;
    let n_ctx = p.n_ctx as usize;
    if tokens.len() < 2 * n_ctx {
        return Err(EngineError::Other(format!(
            "the calibration text {} is {} tokens; an imatrix at ctx {n_ctx} needs at least {}",
            p.dataset,
            tokens.len(),
            2 * n_ctx
        )));
    }
    let n_chunks = (tokens.len() / n_ctx).min(p.n_chunks.map_or(usize::MAX, |c| c as usize));
    let mut col = Box::new(Collector::default());
    let user = &mut *col as *mut Collector as *mut c_void;
    // SAFETY: `col` outlives the context, which is dropped at the end of this block.
    {
        let mut ctx = unsafe { model.observed_context(p.n_ctx, p.n_threads, Some(collect), user) }?;
        for (i, chunk) in tokens.chunks_exact(n_ctx).take(n_chunks).enumerate() {
            ctx.chunk(chunk, &|_| true)?;
            progress(i + 1, n_chunks);
        }
    }
    if let Some(why) = col.error.take() {
        return Err(EngineError::Other(why));
    }
    let max_count = col.entries.values().flat_map(|e| e.counts.iter()).max();
    Ok(Imatrix {
        // llama-imatrix's rows_to_chunks: the largest count in chunks, rounded.
        chunk_count: ((max_count.copied().unwrap_or(0) + n_ctx as i64 / 2) / n_ctx as i64) as u32,
        chunk_size: p.n_ctx,
        entries: std::mem::take(&mut col.entries),
        datasets: vec![p.dataset.clone()],
        legacy: false,
    })
}

/// The eval callback's state, with the first error (a callback cannot return one).
#[derive(Default)]
struct Collector {
    entries: BTreeMap<String, Entry>,
    buf: Vec<u8>,
    ids: Vec<u8>,
    error: Option<String>,
}

/// The weight's name without a backend's decoration: `CUDA0#blk.0.attn_k.weight#0`.
fn weight_name(raw: &str) -> &str {
    raw.split('#').nth(1).unwrap_or(raw)
}

/// The eval callback llama-imatrix installs (`collect_imatrix`), for dense and
/// expert-routed matrix products.
unsafe extern "C" fn collect(t: *mut sys::ggml_tensor, ask: bool, user: *mut c_void) -> bool {
    // SAFETY: llama.cpp hands a live graph node whose sources are set for these ops, and
    // `user` is the Collector `compute` keeps alive.
    let t = unsafe { &*t };
    let is_id = t.op == sys::GGML_OP_MUL_MAT_ID;
    if !is_id && t.op != sys::GGML_OP_MUL_MAT {
        return !ask;
    }
    let (src0, src1) = unsafe { (&*t.src[0], &*t.src[1]) };
    let name = unsafe { CStr::from_ptr(src0.name.as_ptr()) }.to_string_lossy();
    let name = weight_name(&name);
    if ask {
        return is_id
            || (src1.ne[1] >= 16 && src1.type_ == sys::GGML_TYPE_F32 && name.starts_with("blk."));
    }
    let col = unsafe { &mut *(user as *mut Collector) };
    if col.error.is_some() {
        return true;
    }
    let data = host_bytes(src1, &mut col.buf).unwrap_or(col.buf.as_ptr());
    let e = col.entries.entry(name.to_string()).or_default();
    let done = if is_id {
        let ids = unsafe { &*t.src[2] };
        col.ids.resize(unsafe { sys::ggml_nbytes(ids) }, 0);
        unsafe { sys::ggml_backend_tensor_get(ids, col.ids.as_mut_ptr().cast(), 0, col.ids.len()) };
        add_routed(e, src0, src1, data, ids, &col.ids)
    } else {
        add_dense(e, src0, src1, data)
    };
    if let Err(why) = done {
        col.error = Some(format!("{name}: {why}"));
    }
    true
}

/// `src1`'s data when it is in host memory; else copies it into `buf` and returns None.
fn host_bytes(src1: &sys::ggml_tensor, buf: &mut Vec<u8>) -> Option<*const u8> {
    if unsafe { sys::ggml_backend_buffer_is_host(src1.buffer) } {
        return Some(src1.data as *const u8);
    }
    buf.resize(unsafe { sys::ggml_nbytes(src1) }, 0);
    unsafe { sys::ggml_backend_tensor_get(src1, buf.as_mut_ptr().cast(), 0, buf.len()) };
    None
}

/// Makes `e` `n_mat` slices of `width` (with `n_counts` counts) on first sight; refuses a
/// weight seen before at another size.
fn sized(e: &mut Entry, width: usize, n_mat: usize, n_counts: usize) -> Result<(), EngineError> {
    if e.sums.is_empty() {
        e.sums = vec![0.0; width * n_mat];
        e.counts = vec![0; n_counts];
    }
    if e.sums.len() != width * n_mat {
        return Err(why(format!(
            "inconsistent size ({} vs {})",
            e.sums.len(),
            width * n_mat
        )));
    }
    Ok(())
}

fn add_squares(acc: &mut [f32], x: *const u8) {
    for (j, a) in acc.iter_mut().enumerate() {
        // SAFETY: `x` starts a row of `src1` at least `acc.len()` f32 wide.
        let v = unsafe { (x as *const f32).add(j).read_unaligned() };
        *a += v * v;
    }
}

fn finite(e: &Entry) -> Result<(), EngineError> {
    match e.sums.iter().all(|a| a.is_finite()) {
        true => Ok(()),
        false => Err(why("non-finite values in the activations")),
    }
}

/// A dense product: each row of `src1` added to the slice of its matrix (3-D weights
/// broadcast over `src1`'s higher dimensions); one count per entry.
fn add_dense(
    e: &mut Entry,
    src0: &sys::ggml_tensor,
    src1: &sys::ggml_tensor,
    data: *const u8,
) -> Result<(), EngineError> {
    let width = src1.ne[0] as usize;
    let n_mat = (src0.ne[2] * src0.ne[3]) as usize;
    sized(e, width, n_mat, 1)?;
    for i3 in 0..src1.ne[3] as usize {
        for i2 in 0..src1.ne[2] as usize {
            let mat = (i3 % src0.ne[3] as usize) * src0.ne[2] as usize + i2 % src0.ne[2] as usize;
            for row in 0..src1.ne[1] as usize {
                let off = row * src1.nb[1] + i2 * src1.nb[2] + i3 * src1.nb[3];
                add_squares(&mut e.sums[mat * width..][..width], data.wrapping_add(off));
            }
        }
    }
    let rows = unsafe { sys::ggml_nrows(src1) } / n_mat as i64;
    e.counts.iter_mut().for_each(|c| *c += rows);
    finite(e)
}

/// An expert-routed product: each token's row added to (and counted in) its experts' slices.
fn add_routed(
    e: &mut Entry,
    src0: &sys::ggml_tensor,
    src1: &sys::ggml_tensor,
    data: *const u8,
    ids: &sys::ggml_tensor,
    id_bytes: &[u8],
) -> Result<(), EngineError> {
    let (width, n_as) = (src1.ne[0] as usize, src0.ne[2] as usize);
    sized(e, width, n_as, n_as)?;
    for idx in 0..ids.ne[0] as usize {
        for row in 0..src1.ne[2] as usize {
            let at = row * ids.nb[1] + idx * ids.nb[0];
            let ex = id_bytes
                .get(at..at + 4)
                .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .filter(|&x| x >= 0 && (x as usize) < n_as)
                .ok_or_else(|| why("an expert id out of range"))? as usize;
            let x = data.wrapping_add((idx % src1.ne[1] as usize) * src1.nb[1] + row * src1.nb[2]);
            e.counts[ex] += 1;
            add_squares(&mut e.sums[ex * width..(ex + 1) * width], x);
        }
    }
    finite(e)
}

#[cfg(test)]
mod tests;
