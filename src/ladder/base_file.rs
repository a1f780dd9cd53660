//! The reference's stored log-probabilities, in llama-perplexity's `--kl-divergence-base`
//! file format, so that either tool reads what the other wrote: `_logits_`, then n_ctx,
//! n_vocab and n_chunk (i32, little-endian), the n_chunk × n_ctx evaluation tokens (i32,
//! each chunk's first as tokenized, not replaced by BOS), then per chunk its scored rows
//! (positions n_ctx/2 to n_ctx − 2), `kld::row_len(n_vocab)` u16 each (see `kld::encode`).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::error::{LadderError, input};
use super::kld::row_len;

const MAGIC: &[u8; 8] = b"_logits_";

/// Positions of a chunk of `n_ctx` whose next-token prediction is scored: the second half,
/// but the last (its next token is in the following chunk).
pub fn scored(n_ctx: usize) -> std::ops::Range<usize> {
    n_ctx / 2..n_ctx - 1
}

/// Bytes of a base file of `n_chunks` chunks of `n_ctx` tokens over `n_vocab` tokens
/// (saturating: a header's product that overflows is no file's length).
pub fn bytes(n_ctx: usize, n_chunks: usize, n_vocab: usize) -> u64 {
    let (n_ctx, n_chunks) = (n_ctx as u64, n_chunks as u64);
    let rows =
        (n_chunks * scored(n_ctx as usize).len() as u64).saturating_mul(row_len(n_vocab) as u64);
    (4 * n_ctx * n_chunks)
        .saturating_add(rows.saturating_mul(2))
        .saturating_add(20)
}

/// A base file's header, checked against the file's length.
#[derive(Debug, Clone, PartialEq)]
pub struct BaseFile {
    pub path: PathBuf,
    pub n_ctx: usize,
    pub n_vocab: usize,
    /// n_chunk × n_ctx.
    pub tokens: Vec<i32>,
}

fn i32s(bytes: &[u8]) -> Vec<i32> {
    bytes
        .chunks_exact(4)
        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

impl BaseFile {
    pub fn n_chunks(&self) -> usize {
        self.tokens.len() / self.n_ctx
    }

    pub fn chunk(&self, c: usize) -> &[i32] {
        &self.tokens[c * self.n_ctx..(c + 1) * self.n_ctx]
    }

    /// Reads and checks the header of the base file at `path`: a file that is not one, or
    /// whose length is not what its header says (a truncated copy), is refused.
    pub fn open(path: &Path) -> Result<BaseFile, LadderError> {
        let io = |e: std::io::Error| input(path, e);
        let mut r = BufReader::new(File::open(path).map_err(io)?);
        let len = r.get_ref().metadata().map_err(io)?.len();
        let mut head = [0u8; 20];
        if r.read_exact(&mut head).is_err() || &head[..8] != MAGIC {
            return Err(input(
                path,
                "not a llama-perplexity --kl-divergence-base file",
            ));
        }
        let h = i32s(&head[8..]);
        let (n_ctx, n_vocab, n_chunk) = (h[0], h[1], h[2]);
        if n_ctx < 4 || n_vocab < 1 || n_chunk < 1 {
            let why = format!("a header of ctx {n_ctx}, vocabulary {n_vocab}, {n_chunk} chunks");
            return Err(input(path, why));
        }
        let (n_ctx, n_vocab, n_chunk) = (n_ctx as usize, n_vocab as usize, n_chunk as usize);
        let want = bytes(n_ctx, n_chunk, n_vocab);
        if len != want {
            return Err(input(
                path,
                format!(
                    "{len} bytes where {n_chunk} chunks of {n_ctx} tokens over a vocabulary of \
                     {n_vocab} take {want}: truncated or not a base file"
                ),
            ));
        }
        let mut tokens = vec![0u8; 4 * n_ctx * n_chunk];
        r.read_exact(&mut tokens).map_err(io)?;
        let tokens = i32s(&tokens);
        if let Some(t) = tokens.iter().find(|&&t| t < 0 || t as usize >= n_vocab) {
            return Err(input(path, format!("token {t} is outside the vocabulary")));
        }
        Ok(BaseFile {
            path: path.to_path_buf(),
            n_ctx,
            n_vocab,
            tokens,
        })
    }

    /// The stored rows, one chunk at a time.
    pub fn rows(&self) -> Result<Rows, LadderError> {
        let mut r = BufReader::new(File::open(&self.path).map_err(|e| input(&self.path, e))?);
        let mut skip = vec![0u8; 20 + 4 * self.tokens.len()];
        r.read_exact(&mut skip).map_err(|e| input(&self.path, e))?;
        Ok(Rows {
            r,
            bytes: vec![0; 2 * scored(self.n_ctx).len() * row_len(self.n_vocab)],
            path: self.path.clone(),
        })
    }
}

pub struct Rows {
    r: BufReader<File>,
    bytes: Vec<u8>,
    path: PathBuf,
}

impl Rows {
    /// The next chunk's rows into `out`, `row_len` entries each.
    pub fn next_chunk(&mut self, out: &mut Vec<u16>) -> Result<(), LadderError> {
        self.r
            .read_exact(&mut self.bytes)
            .map_err(|e| input(&self.path, e))?;
        out.clear();
        out.extend(
            self.bytes
                .chunks_exact(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]])),
        );
        Ok(())
    }
}

/// Writes a base file under a temporary name; `finish` renames it into place.
pub struct Writer {
    w: BufWriter<File>,
    tmp: PathBuf,
    path: PathBuf,
}

impl Writer {
    pub fn create(
        path: &Path,
        n_ctx: usize,
        n_vocab: usize,
        tokens: &[i32],
    ) -> Result<Writer, LadderError> {
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let io = |e: std::io::Error| input(&tmp, e);
        let mut w = BufWriter::new(File::create(&tmp).map_err(io)?);
        let n_chunk = tokens.len() / n_ctx;
        let mut head = MAGIC.to_vec();
        for x in [n_ctx, n_vocab, n_chunk] {
            head.extend((x as i32).to_le_bytes());
        }
        head.extend(tokens.iter().flat_map(|t| t.to_le_bytes()));
        w.write_all(&head).map_err(io)?;
        Ok(Writer {
            w,
            tmp,
            path: path.to_path_buf(),
        })
    }

    pub fn row(&mut self, row: &[u16]) -> Result<(), LadderError> {
        let bytes: Vec<u8> = row.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.w.write_all(&bytes).map_err(|e| input(&self.tmp, e))
    }

    pub fn finish(mut self) -> Result<(), LadderError> {
        let io = |e: std::io::Error| input(&self.tmp, e);
        self.w.flush().map_err(io)?;
        std::fs::rename(&self.tmp, &self.path).map_err(io)
    }
}

impl Drop for Writer {
    /// An unfinished file is removed.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, n_ctx: usize, n_vocab: usize, n_chunk: usize) {
        let tokens: Vec<i32> = (0..n_ctx * n_chunk).map(|i| (i % n_vocab) as i32).collect();
        let mut w = Writer::create(path, n_ctx, n_vocab, &tokens).unwrap();
        let row = vec![7u16; row_len(n_vocab)];
        for _ in 0..n_chunk * scored(n_ctx).len() {
            w.row(&row).unwrap();
        }
        w.finish().unwrap();
    }

    #[test]
    fn the_second_half_but_the_last_position_is_scored() {
        assert_eq!(scored(8), 4..7);
        // llama-perplexity: n_ctx - 1 - n_ctx/2 per chunk
        assert_eq!(scored(512).len(), 255);
    }

    #[test]
    fn a_written_file_reads_back_and_has_the_size_stated_before() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.logits");
        write(&p, 8, 5, 2);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), bytes(8, 2, 5));
        let b = BaseFile::open(&p).unwrap();
        assert_eq!((b.n_ctx, b.n_vocab, b.n_chunks()), (8, 5, 2));
        assert_eq!(b.chunk(1)[0], 3);
        let mut rows = b.rows().unwrap();
        let mut out = Vec::new();
        rows.next_chunk(&mut out).unwrap();
        assert_eq!(out.len(), 3 * 10);
        rows.next_chunk(&mut out).unwrap();
        assert!(rows.next_chunk(&mut out).is_err());
    }

    #[test]
    fn a_truncated_or_foreign_file_is_refused_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.logits");
        write(&p, 8, 5, 2);
        let full = std::fs::read(&p).unwrap();
        std::fs::write(&p, &full[..full.len() - 1]).unwrap();
        let e = BaseFile::open(&p).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
        std::fs::write(&p, b"GGUF and more bytes than the header").unwrap();
        let e = BaseFile::open(&p).unwrap_err().to_string();
        assert!(
            e.ends_with("not a llama-perplexity --kl-divergence-base file"),
            "{e}"
        );
    }
}
