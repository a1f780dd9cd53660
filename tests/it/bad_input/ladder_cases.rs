//! Bad input of a ladder's quality: a base file (`reference_logits`) that is cut short or
//! was made for another ctx, vocabulary or text, and a reference store the disk cannot hold.

use std::ffi::OsString;
use std::path::Path;

use super::cases::{Case, case, config_text, gguf_bytes, tiny_bytes};

/// A ladder over the tiny model with `extra` keys and `[ladder.eval]` lines.
fn ladder(dir: &Path, extra: &str, eval: &str) -> Vec<OsString> {
    std::fs::write(dir.join("tiny.gguf"), tiny_bytes()).unwrap();
    config_text(
        dir,
        &format!(
            "[sweep]\nn_prompt = 8\nn_gen = 0\nrepetitions = 1\nn_threads = 1\n[[ladder]]\n\
             name = \"t\"\nbase = \"tiny.gguf\"\ntypes = [\"F32\"]\n{extra}\n[ladder.eval]\n{eval}\n"
        ),
    )
}

/// A base file with llama-perplexity's layout: ctx `n_ctx`, one chunk of token 1, zero rows;
/// `cut` bytes removed from its end.
fn base_file(dir: &Path, n_ctx: usize, n_vocab: usize, cut: usize) -> Vec<OsString> {
    base_file_with(dir, n_ctx, n_vocab, cut, "")
}

fn base_file_with(
    dir: &Path,
    n_ctx: usize,
    n_vocab: usize,
    cut: usize,
    eval: &str,
) -> Vec<OsString> {
    let mut b = b"_logits_".to_vec();
    for x in [n_ctx, n_vocab, 1] {
        b.extend((x as i32).to_le_bytes());
    }
    b.extend(std::iter::repeat_n(1i32.to_le_bytes(), n_ctx).flatten());
    let row = 2 * n_vocab.div_ceil(2) + 4;
    b.resize(b.len() + 2 * row * (n_ctx - 1 - n_ctx / 2) - cut, 0);
    std::fs::write(dir.join("ref.logits"), b).unwrap();
    ladder(
        dir,
        "reference_logits = \"ref.logits\"",
        &format!("ctx = 64\n{eval}"),
    )
}

/// A base file of token 1 beside a text named for the ladder, whose tokens are others.
fn other_text(dir: &Path) -> Vec<OsString> {
    std::fs::write(
        dir.join("e.txt"),
        "the quick brown fox jumps over the lazy dog. ".repeat(40),
    )
    .unwrap();
    base_file_with(dir, 64, TINY_VOCAB, 0, "text = \"e.txt\"")
}

/// A file variant whose vocabulary differs from the base's in one token.
fn another_model(dir: &Path) -> Vec<OsString> {
    let mut doc = tpsbench::gguf::tiny::document(1);
    for (k, v) in &mut doc.metadata {
        if let (true, tpsbench::gguf::Value::Array(a)) = (k == "tokenizer.ggml.tokens", v) {
            a[300] = tpsbench::gguf::Value::String("zzz".into());
        }
    }
    std::fs::write(dir.join("other.gguf"), gguf_bytes(&doc)).unwrap();
    ladder(dir, "files = [\"other.gguf\"]", "")
}

pub fn ladder_cases() -> Vec<Case> {
    let n_vocab = tpsbench::gguf::tiny::vocabulary().0.len();
    assert_eq!(n_vocab, TINY_VOCAB, "the tiny model's vocabulary");
    vec![
        case(
            "ladder: reference_logits cut short",
            |d| base_file(d, 64, TINY_VOCAB, 3),
            2,
            "ref.logits: 23833 bytes where 1 chunks of 64 tokens over a vocabulary of 375 take 23836: truncated or not a base file",
        ),
        case(
            "ladder: reference_logits made for another ctx",
            |d| base_file(d, 32, TINY_VOCAB, 0),
            2,
            "ref.logits: made with ctx 32, the ladder evaluates ctx 64: set [ladder.eval] ctx = 32",
        ),
        case(
            "ladder: reference_logits made for another vocabulary",
            |d| base_file(d, 64, 7, 0),
            2,
            "ref.logits: made for a vocabulary of 7 tokens, the ladder's base has 375",
        ),
        case(
            "ladder: reference_logits made for another text",
            other_text,
            2,
            "ref.logits: made for other tokens than [ladder.eval] text",
        ),
        case(
            "ladder: a reference store the disk cannot hold",
            |d| ladder(d, "", "ctx = 65536\nchunks = 100000"),
            2,
            "not enough disk space for",
        ),
        case(
            "ladder: a file variant of another model",
            another_model,
            2,
            "other.gguf: not the model of ladder t: another tokenizer (tokenizer.ggml.tokens differs from the reference's)",
        ),
    ]
}

const TINY_VOCAB: usize = 375;
