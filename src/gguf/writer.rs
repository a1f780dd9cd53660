//! Writes GGUF v3 files, streaming tensor data so that large synthetic models need no RAM.

use std::io::{self, Write};

use super::{DEFAULT_ALIGNMENT, MAGIC, Value, type_layout};

#[derive(Debug, Clone)]
pub enum TensorData {
    /// Little-endian f32 values from a seeded generator, uniform in [-scale, scale); for a
    /// quantized or half type, random blocks of about that range (see `blocks`).
    RandomF32 { seed: u64, scale: f32 },
    /// Every f32 element equal to this value (norm weights).
    ConstF32(f32),
    /// All-zero bytes, for any ggml type (tests that need a tensor of a quantized type).
    Zeros,
    /// These little-endian i64 values, for an I64 tensor (an Eagle3 draft's `d2t` token map).
    I64(Vec<i64>),
    /// These f32 values, for an F32 tensor (an importance matrix's sums).
    F32(Vec<f32>),
}

#[derive(Debug, Clone)]
pub struct Tensor {
    pub name: String,
    /// ggml order: `dims[0]` is the contiguous (row) dimension.
    pub dims: Vec<u64>,
    pub ggml_type: u32,
    pub data: TensorData,
}

impl Tensor {
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().product()
    }

    pub fn n_bytes(&self) -> u64 {
        let (_, block, bytes) = type_layout(self.ggml_type).expect("known ggml type");
        self.n_elements() / block * bytes
    }

    /// Random weights of `ggml_type`, about as large as a trained model's init (1/√fan_in)
    /// so that activations stay finite.
    pub fn random(name: String, dims: Vec<u64>, ggml_type: u32, seed: u64) -> Tensor {
        let scale = 1.0 / (dims[0] as f32).sqrt();
        Tensor {
            name,
            dims,
            ggml_type,
            data: TensorData::RandomF32 { seed, scale },
        }
    }

    /// F32 ones: a norm's weights.
    pub fn ones(name: String, dims: Vec<u64>) -> Tensor {
        Tensor {
            name,
            dims,
            ggml_type: 0,
            data: TensorData::ConstF32(1.0),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Document {
    pub metadata: Vec<(String, Value)>,
    pub tensors: Vec<Tensor>,
}

fn put_str(w: &mut impl Write, s: &str) -> io::Result<()> {
    w.write_all(&(s.len() as u64).to_le_bytes())?;
    w.write_all(s.as_bytes())
}

fn put_value(w: &mut impl Write, v: &Value) -> io::Result<()> {
    match v {
        Value::U8(x) => w.write_all(&x.to_le_bytes()),
        Value::I8(x) => w.write_all(&x.to_le_bytes()),
        Value::U16(x) => w.write_all(&x.to_le_bytes()),
        Value::I16(x) => w.write_all(&x.to_le_bytes()),
        Value::U32(x) => w.write_all(&x.to_le_bytes()),
        Value::I32(x) => w.write_all(&x.to_le_bytes()),
        Value::F32(x) => w.write_all(&x.to_le_bytes()),
        Value::Bool(x) => w.write_all(&[u8::from(*x)]),
        Value::String(s) => put_str(w, s),
        Value::U64(x) => w.write_all(&x.to_le_bytes()),
        Value::I64(x) => w.write_all(&x.to_le_bytes()),
        Value::F64(x) => w.write_all(&x.to_le_bytes()),
        Value::Array(items) => {
            let elem = items.first().map_or(4, Value::type_id);
            w.write_all(&elem.to_le_bytes())?;
            w.write_all(&(items.len() as u64).to_le_bytes())?;
            items.iter().try_for_each(|x| put_value(w, x))
        }
    }
}

fn pad(w: &mut impl Write, written: u64) -> io::Result<()> {
    let n = written.next_multiple_of(DEFAULT_ALIGNMENT) - written;
    w.write_all(&vec![0u8; n as usize])
}

fn put_tensor_data(w: &mut impl Write, t: &Tensor) -> io::Result<()> {
    match t.data {
        TensorData::Zeros => w.write_all(&vec![0u8; t.n_bytes() as usize]),
        TensorData::I64(ref v) => w.write_all(&le_bytes(v, |x| x.to_le_bytes())),
        TensorData::F32(ref v) => w.write_all(&le_bytes(v, |x| x.to_le_bytes())),
        TensorData::RandomF32 { seed, scale } => {
            super::blocks::write_random(w, t.ggml_type, t.n_elements(), seed, scale)
        }
        TensorData::ConstF32(_) if t.ggml_type != 0 => {
            Err(io::Error::other("constant tensors must be F32"))
        }
        TensorData::ConstF32(c) => {
            const CHUNK: usize = 1 << 14;
            let chunk = c.to_le_bytes().repeat(CHUNK);
            let n = t.n_elements() as usize;
            (0..n)
                .step_by(CHUNK)
                .try_for_each(|i| w.write_all(&chunk[..4 * (n - i).min(CHUNK)]))
        }
    }
}

fn le_bytes<T, const N: usize>(v: &[T], f: impl Fn(&T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(f).collect()
}

/// GGUF v3 with the default 32-byte alignment.
pub fn write_gguf(w: &mut impl Write, doc: &Document) -> io::Result<()> {
    let mut header = Vec::new();
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&3u32.to_le_bytes());
    header.extend_from_slice(&(doc.tensors.len() as u64).to_le_bytes());
    header.extend_from_slice(&(doc.metadata.len() as u64).to_le_bytes());
    for (k, v) in &doc.metadata {
        put_str(&mut header, k)?;
        header.extend_from_slice(&v.type_id().to_le_bytes());
        put_value(&mut header, v)?;
    }
    let mut offset = 0u64;
    for t in &doc.tensors {
        put_str(&mut header, &t.name)?;
        header.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
        header.extend(t.dims.iter().flat_map(|d| d.to_le_bytes()));
        header.extend_from_slice(&t.ggml_type.to_le_bytes());
        header.extend_from_slice(&offset.to_le_bytes());
        offset += t.n_bytes().next_multiple_of(DEFAULT_ALIGNMENT);
    }
    w.write_all(&header)?;
    pad(w, header.len() as u64)?;
    for t in &doc.tensors {
        put_tensor_data(w, t)?;
        pad(w, t.n_bytes())?;
    }
    w.flush()
}
