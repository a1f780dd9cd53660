//! Arbitrary bytes as a prompt dataset: through the ShareGPT reader (`serving::sharegpt::read`,
//! a streamed JSON reader that keeps each conversation's first human turn and reply and
//! tolerates a file cut short), the prompt-file parser (`serving::dataset::parse`, JSONL or
//! one prompt per line) and vLLM's sampling of either (`serving::dataset::sample`, with a
//! word-count tokenizer: no model). All must return Ok or Err, never panic; what they keep
//! must fit in the input, a whole file must read as a JSON parser reads it, and the samples
//! must meet vLLM's limits.
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tpsbench::serving::dataset::{Prompt, parse, sample};
use tpsbench::serving::sharegpt::{self, MAX_PROMPT, MAX_TOTAL, MIN_LEN, Pair};

/// The pairs of a parsed file, read the plain way (the whole document as a value); None when
/// the document holds something the streamed reader refuses (it is stricter on types).
fn reference(v: &Value) -> Option<Vec<Pair>> {
    let mut out = Vec::new();
    for c in v.as_array()? {
        let Some(turns) = c.as_object()?.get("conversations") else {
            continue;
        };
        let (mut prompt, mut kept): (Option<String>, Option<Pair>) = (None, None);
        for t in turns.as_array()? {
            let t = t.as_object()?;
            let field = |k: &str| match t.get(k) {
                None => Some(String::new()),
                Some(x) => x.as_str().map(str::to_string),
            };
            let (from, value) = (field("from")?, field("value")?);
            match (&prompt, &kept) {
                (None, None) if from == "human" => prompt = Some(value),
                (Some(_), None) => {
                    kept = prompt.take().map(|prompt| Pair {
                        prompt,
                        reply: value,
                    })
                }
                _ => {}
            }
        }
        out.extend(kept);
    }
    Some(out)
}

fn words(s: &str) -> Result<Vec<i32>, ()> {
    Ok(s.split_whitespace().map(|w| w.len() as i32).collect())
}

/// Samples `prompts` and checks the result against vLLM's limits.
fn check_sample(prompts: &[Prompt], n: usize, seed: u64, max_gen: u32) {
    let s = sample(prompts, n, seed, max_gen, words).unwrap();
    assert!(s.len() <= n.min(prompts.len()));
    let mut seen = HashSet::new();
    for x in &s {
        assert!(
            x.index < prompts.len() && seen.insert(x.index),
            "{}",
            x.index
        );
        let p = &prompts[x.index];
        assert_eq!(x.tokens, words(&p.text).unwrap());
        let pl = x.tokens.len();
        assert!((MIN_LEN..=MAX_PROMPT).contains(&pl), "{pl}");
        assert!(x.n_gen <= max_gen && pl + x.n_gen as usize <= MAX_TOTAL);
        assert!(x.n_gen as usize >= MIN_LEN.min(max_gen as usize));
    }
    // Seeded: the same draw again.
    assert_eq!(s, sample(prompts, n, seed, max_gen, words).unwrap());
    // A tokenizer's error is the sampling's error, never a panic.
    let fails = |_: &str| -> Result<Vec<i32>, &'static str> { Err("no") };
    if n > 0 && !prompts.is_empty() {
        assert!(sample(prompts, n, seed, max_gen, fails).is_err());
    }
}

fuzz_target!(|data: &[u8]| {
    // The sampling's settings from the input's length, so that seeds stay real files.
    let n = data.len() % 17;
    let seed = data.len() as u64 ^ 0x5eed;
    let max_gen = 1 + (data.len() % 300) as u32;

    match sharegpt::read(data) {
        Ok(r) => {
            // Every kept byte came from the input (JSON escapes only shrink).
            let kept: usize = r
                .prompts
                .iter()
                .map(|p| p.prompt.len() + p.reply.len())
                .sum();
            assert!(!r.prompts.is_empty() && kept <= data.len());
            assert_eq!(r.sha256, format!("{:x}", Sha256::digest(data)));
            if r.truncated.is_none() {
                // serde_json's value parser is stricter on what the reader skips (numbers out
                // of range, lone surrogates): compare only when it reads the file.
                if let Ok(v) = serde_json::from_slice::<Value>(data) {
                    if let Some(want) = reference(&v) {
                        assert_eq!(r.prompts, want);
                    }
                }
            }
            let prompts: Vec<Prompt> = r
                .prompts
                .into_iter()
                .map(|p| Prompt {
                    text: p.prompt,
                    max_tokens: None,
                    reply: Some(p.reply),
                })
                .collect();
            check_sample(&prompts, n, seed, max_gen);
        }
        Err(e) => assert!(!e.contains('\n'), "{e}"),
    }

    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse("fuzz.jsonl", text) {
        Ok(prompts) => {
            assert!(!prompts.is_empty() && prompts.len() <= text.lines().count());
            for p in &prompts {
                assert!(p.max_tokens.is_none_or(|m| (1..=1 << 20).contains(&m)));
                assert!(p.reply.is_none() && p.text.len() <= text.len());
            }
            check_sample(&prompts, n, seed, max_gen);
        }
        Err(e) => assert!(e.to_string().starts_with("fuzz.jsonl"), "{e}"),
    }
});
