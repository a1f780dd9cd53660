//! The tiny synthetic model: llama architecture, random F32 weights and a small but valid
//! SentencePiece-style vocabulary (byte fallback tokens plus a few words), so that tests and
//! smoke runs exercise the real llama.cpp engine without downloading anything.
//!
//! Shapes are multiples of 256 so that llama.cpp's quantizer can produce K-quants from it.

use super::presets::{general, parse_row};
use super::vocab::{self, Vocab};
use super::writer::{Document, Tensor};

pub(crate) const N_EMBD: u64 = 256;
/// The shape: [`N_EMBD`] wide, 2 layers of 4 heads (2 for K and V); the vocabulary's size
/// is set from [`vocabulary`].
const SHAPE: &str = "tiny llama 256 512 2 4 2 64 0 4096 1e4 1e-5 spm";

const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on", "be",
    "at", "by", "this", "had", "not", "are", "but", "from", "or", "have", "an", "they", "which",
    "one", "you", "were", "her", "all", "she", "there", "would", "their", "we", "him", "been",
    "has", "when", "who", "will", "more", "no", "if", "out", "so", "said", "what", "up", "its",
    "about", "into", "than", "them", "can", "only", "other", "new", "some", "could", "time",
];

/// The vocabulary: `<unk>`, `<s>`, `</s>`, the 256 byte tokens, then words and letters.
pub fn vocabulary() -> (Vec<String>, Vec<f32>, Vec<i32>) {
    let v = vocab();
    (v.tokens, v.scores.unwrap_or_default(), v.types)
}

fn vocab() -> Vocab {
    let (mut tokens, mut types) = vocab::spm_specials_and_bytes();
    let words = WORDS.iter().map(|w| format!("\u{2581}{w}"));
    let letters = ('a'..='z').flat_map(|c| [c.to_string(), format!("\u{2581}{c}")]);
    tokens.extend(words.chain(letters).chain(["\u{2581}".to_string()]));
    types.resize(tokens.len(), vocab::NORMAL);
    vocab::spm_with(tokens, types)
}

/// The document for `tpsbench synth tiny`: random F32 weights (each matrix its own seed,
/// drawn in order from `seed`) and norms of ones.
pub fn document(seed: u64) -> Document {
    let vocab = vocab();
    let shape = super::presets::Shape {
        n_vocab: vocab.tokens.len() as u64,
        ..parse_row(SHAPE)
    };
    let mut metadata = general("llama", "tpsbench-tiny".into(), 0);
    metadata.extend(shape.hparams());
    metadata.extend(vocab.metadata());
    let mut next = seed;
    let tensors = (shape.tensors().into_iter())
        .map(|(name, dims)| {
            if name.ends_with("norm.weight") {
                return Tensor::ones(name, dims);
            }
            next = next.wrapping_add(0x9E37_79B9);
            Tensor::random(name, dims, 0, next)
        })
        .collect();
    Document { metadata, tensors }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabulary_has_special_byte_and_word_tokens_in_parallel_arrays() {
        let (t, s, ty) = vocabulary();
        assert_eq!(t.len(), s.len());
        assert_eq!(t.len(), ty.len());
        assert_eq!(t[1], "<s>");
        assert_eq!(t[3], "<0x00>");
        assert_eq!(t[258], "<0xFF>");
        let mut dedup = t.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(dedup.len(), t.len(), "tokens are unique");
    }

    #[test]
    fn same_seed_gives_same_document_shapes() {
        let a = document(3);
        assert_eq!(a.tensors.len(), 3 + 9 * 2);
        assert!(a.tensors.iter().all(|t| t.dims[0] % 256 == 0));
    }
}
