//! Synthetic vocabularies of any size for the synthetic models: a SentencePiece-style one
//! (llama.cpp's "llama" tokenizer: byte fallback tokens plus pieces with scores) and a
//! byte-level BPE one ("gpt2": the 256 byte characters plus merges, as Llama 3 and Qwen2
//! use). Every token is reachable and every merge joins two tokens into a third, so
//! llama.cpp loads and tokenizes with them.

use std::collections::VecDeque;

use super::Value;

/// llama.cpp's token types.
pub(crate) const NORMAL: i32 = 1;
const UNKNOWN: i32 = 2;
const CONTROL: i32 = 3;
const BYTE: i32 = 6;

#[derive(Debug, Clone, PartialEq)]
pub struct Vocab {
    pub tokens: Vec<String>,
    pub types: Vec<i32>,
    pub scores: Option<Vec<f32>>,
    pub merges: Option<Vec<String>>,
    pub model: &'static str,
    pub pre: Option<&'static str>,
    pub bos: u32,
    pub eos: u32,
    pub unk: Option<u32>,
    pub add_bos: bool,
}

impl Vocab {
    pub fn metadata(&self) -> Vec<(String, Value)> {
        let strings = |v: &[String]| Value::Array(v.iter().cloned().map(Value::String).collect());
        let scores = self
            .scores
            .as_ref()
            .map(|s| s.iter().copied().map(Value::F32).collect());
        let types = self.types.iter().copied().map(Value::I32).collect();
        let keys = [
            ("model", Some(Value::String(self.model.into()))),
            ("pre", self.pre.map(|p| Value::String(p.into()))),
            ("tokens", Some(strings(&self.tokens))),
            ("scores", scores.map(Value::Array)),
            ("token_type", Some(Value::Array(types))),
            ("merges", self.merges.as_deref().map(strings)),
            ("unknown_token_id", self.unk.map(Value::U32)),
            ("bos_token_id", Some(Value::U32(self.bos))),
            ("eos_token_id", Some(Value::U32(self.eos))),
            ("add_bos_token", Some(Value::Bool(self.add_bos))),
            ("add_eos_token", Some(Value::Bool(false))),
        ];
        keys.into_iter()
            .filter_map(|(k, v)| Some((format!("tokenizer.ggml.{k}"), v?)))
            .collect()
    }
}

/// Strings over `first` (allowed only at the start) and a..z in breadth-first order:
/// `(parent, piece)` pairs where `piece = parent + letter`, starting from single symbols.
fn pieces(first: &str, count: usize, mut emit: impl FnMut(&str, &str)) {
    let mut queue: VecDeque<String> = VecDeque::new();
    queue.push_back(first.to_string());
    queue.extend(('a'..='z').map(String::from));
    let mut n = 0;
    while let Some(parent) = queue.pop_front() {
        for c in 'a'..='z' {
            if n == count {
                return;
            }
            let piece = format!("{parent}{c}");
            emit(&parent, &piece);
            queue.push_back(piece);
            n += 1;
        }
    }
}

/// `<unk>`, `<s>`, `</s>` and the 256 byte tokens: how a SentencePiece-style vocabulary
/// starts.
pub(crate) fn spm_specials_and_bytes() -> (Vec<String>, Vec<i32>) {
    let bytes = (0..=255u8).map(|b| format!("<0x{b:02X}>"));
    let tokens = (["<unk>", "<s>", "</s>"].map(String::from).into_iter()).chain(bytes);
    let types = [UNKNOWN, CONTROL, CONTROL].into_iter().chain([BYTE; 256]);
    (tokens.collect(), types.collect())
}

/// A SentencePiece-style vocabulary of these tokens, scored higher the earlier (more frequent)
/// a piece comes, as SentencePiece stores them.
pub(crate) fn spm_with(tokens: Vec<String>, types: Vec<i32>) -> Vocab {
    let scores = (0..tokens.len()).map(|i| -(i as f32)).collect();
    Vocab {
        tokens,
        types,
        scores: Some(scores),
        merges: None,
        model: "llama",
        pre: None,
        bos: 1,
        eos: 2,
        unk: Some(0),
        add_bos: true,
    }
}

/// A SentencePiece-style vocabulary of exactly `n_vocab` tokens: [`spm_specials_and_bytes`],
/// the single symbols, then longer pieces.
pub fn spm(n_vocab: usize) -> Vocab {
    let (mut tokens, mut types) = spm_specials_and_bytes();
    tokens.extend(std::iter::once("\u{2581}".to_string()).chain(('a'..='z').map(String::from)));
    let rest = n_vocab.saturating_sub(tokens.len());
    pieces("\u{2581}", rest, |_, p| tokens.push(p.to_string()));
    tokens.truncate(n_vocab);
    types.resize(tokens.len(), NORMAL);
    spm_with(tokens, types)
}

/// GPT-2's byte-to-character map: printable bytes stand for themselves, the others for
/// the characters from U+0100 on.
pub fn byte_char(b: u8) -> char {
    let printable = |x: u8| matches!(x, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    if printable(b) {
        return char::from(b);
    }
    let rank = (0..b).filter(|&x| !printable(x)).count() as u32;
    char::from_u32(256 + rank).expect("valid char")
}

/// Which special tokens a BPE vocabulary ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BpeFlavor {
    /// `<|begin_of_text|>` (BOS, added) and `<|end_of_text|>`.
    Llama3,
    /// `<|endoftext|>`, `<|im_start|>`, `<|im_end|>`; no BOS added.
    Qwen2,
}

/// A byte-level BPE vocabulary of exactly `n_vocab` tokens: the 256 byte characters, merged
/// pieces, and the flavor's special tokens at the end.
pub fn bpe(n_vocab: usize, flavor: BpeFlavor) -> Vocab {
    let specials: &[&str] = match flavor {
        BpeFlavor::Llama3 => &["<|begin_of_text|>", "<|end_of_text|>"],
        BpeFlavor::Qwen2 => &["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
    };
    let mut tokens: Vec<String> = (0..=255u8).map(|b| byte_char(b).to_string()).collect();
    let mut merges = Vec::new();
    let n_pieces = n_vocab.saturating_sub(256 + specials.len());
    let space = byte_char(b' ').to_string();
    pieces(&space, n_pieces, |parent, piece| {
        let last = &piece[parent.len()..];
        merges.push(format!("{parent} {last}"));
        tokens.push(piece.to_string());
    });
    let mut types = vec![NORMAL; tokens.len()];
    let first_special = tokens.len() as u32;
    tokens.extend(specials.iter().map(|s| s.to_string()));
    types.resize(tokens.len(), CONTROL);
    let (bos, eos, add_bos, pre) = match flavor {
        BpeFlavor::Llama3 => (first_special, first_special + 1, true, "llama-bpe"),
        BpeFlavor::Qwen2 => (first_special, first_special + 2, false, "qwen2"),
    };
    Vocab {
        tokens,
        types,
        scores: None,
        merges: Some(merges),
        model: "gpt2",
        pre: Some(pre),
        bos,
        eos,
        unk: None,
        add_bos,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn spm_has_the_exact_size_unique_tokens_and_byte_fallback() {
        let v = spm(32000);
        assert_eq!(v.tokens.len(), 32000);
        assert_eq!(v.types.len(), 32000);
        assert_eq!(v.scores.as_ref().unwrap().len(), 32000);
        assert_eq!(v.tokens[3], "<0x00>");
        assert_eq!(v.tokens.iter().collect::<HashSet<_>>().len(), 32000);
    }

    #[test]
    fn gpt2_byte_map_is_a_bijection_with_the_known_space_and_newline() {
        assert_eq!(byte_char(b' '), '\u{120}'); // "Ġ"
        assert_eq!(byte_char(b'\n'), '\u{10A}'); // "Ċ"
        assert_eq!(byte_char(b'a'), 'a');
        let all: HashSet<char> = (0..=255u8).map(byte_char).collect();
        assert_eq!(all.len(), 256);
    }

    #[test]
    fn bpe_merges_join_two_existing_tokens_into_a_third() {
        let v = bpe(5000, BpeFlavor::Llama3);
        assert_eq!(v.tokens.len(), 5000);
        let set: HashSet<&str> = v.tokens.iter().map(String::as_str).collect();
        assert_eq!(set.len(), 5000);
        for m in v.merges.as_ref().unwrap() {
            let (a, b) = m.split_once(' ').unwrap();
            assert!(set.contains(a) && set.contains(b), "{m}");
            assert!(set.contains(format!("{a}{b}").as_str()), "{m}");
        }
        assert_eq!(v.tokens[v.bos as usize], "<|begin_of_text|>");
        assert!(v.add_bos);
        let q = bpe(6000, BpeFlavor::Qwen2);
        assert_eq!(q.tokens[q.eos as usize], "<|im_end|>");
        assert!(!q.add_bos);
        assert_eq!(q.pre, Some("qwen2"));
    }
}
