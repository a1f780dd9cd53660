//! Prompt files for serving tests: JSONL (`{"prompt": "...", "max_tokens": N}` per line) or
//! plain text (one prompt per line). Parsing is pure; `load` reads and hashes the file.

use super::error::ServingError;
use crate::record::serving::DatasetInfo;
use std::path::Path;

/// Why a prompt file could not be had; no variant names a source (see `kinds::error`).
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("cannot read the prompt file {}: {cause}", path.display())]
    Read {
        path: std::path::PathBuf,
        cause: std::io::Error,
    },
    /// "p.jsonl:3: why", or "p.jsonl: why" for the file as a whole.
    #[error("{name}{}: {why}", line.map_or_else(String::new, |n| format!(":{n}")))]
    Parse {
        name: String,
        line: Option<usize>,
        why: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub text: String,
    /// Tokens to generate; None: the test's `n_gen`.
    pub max_tokens: Option<u32>,
    /// ShareGPT: the reply to the prompt, whose token count is the output length.
    pub reply: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PromptFile {
    pub name: String,
    pub sha256: String,
    pub prompts: Vec<Prompt>,
    /// A ShareGPT conversations file (sampled as vLLM samples it), not a prompt file.
    pub sharegpt: bool,
    /// What a reader of the results must know of the file (a ShareGPT file cut short).
    pub note: Option<String>,
}

/// Parses a prompt file's text. JSONL when the first non-empty line starts with `{`, one
/// prompt per line otherwise; empty lines are skipped. Errors name `name:line`.
pub fn parse(name: &str, text: &str) -> Result<Vec<Prompt>, DatasetError> {
    let lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
        .filter(|(_, l)| !l.trim().is_empty());
    let jsonl = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.trim_start().starts_with('{'));
    let mut out = Vec::new();
    for (n, line) in lines {
        let prompt = if jsonl {
            jsonl_prompt(line).map_err(|why| DatasetError::Parse {
                name: name.to_string(),
                line: Some(n),
                why,
            })?
        } else {
            Prompt {
                text: line.to_string(),
                max_tokens: None,
                reply: None,
            }
        };
        out.push(prompt);
    }
    if out.is_empty() {
        return Err(DatasetError::Parse {
            name: name.to_string(),
            line: None,
            why: "the prompt file has no prompts".into(),
        });
    }
    Ok(out)
}

/// One line of a JSONL prompt file, `max_tokens` optional (null as absent); the caller names
/// the line in the error.
fn jsonl_prompt(line: &str) -> Result<Prompt, String> {
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("invalid JSON: {e}"))?;
    let obj = v
        .as_object()
        .ok_or_else(|| "expected an object {\"prompt\": ...}".to_string())?;
    let text = obj.get("prompt").and_then(|p| p.as_str());
    let text = text.ok_or_else(|| "missing \"prompt\" (a string)".to_string())?;
    let max_tokens = match obj.get("max_tokens") {
        None | Some(serde_json::Value::Null) => None,
        Some(m) => match m.as_u64() {
            Some(k @ 1..=1_048_576) => Some(k as u32),
            _ => return Err(format!("\"max_tokens\" must be an integer ≥ 1, got {m}")),
        },
    };
    Ok(Prompt {
        text: text.to_string(),
        max_tokens,
        reply: None,
    })
}

/// Reads, hashes and parses a prompt file, or a ShareGPT file (`sharegpt`).
pub fn load(path: &Path) -> Result<PromptFile, DatasetError> {
    let read_err = |cause| DatasetError::Read {
        path: path.to_path_buf(),
        cause,
    };
    let name = crate::config::values::file_name(path);
    if super::sharegpt::is_file(path).map_err(read_err)? {
        let f = std::fs::File::open(path).map_err(read_err)?;
        let r = super::sharegpt::read(f).map_err(|why| DatasetError::Parse {
            name: path.display().to_string(),
            line: None,
            why,
        })?;
        return Ok(PromptFile {
            name,
            sha256: r.sha256,
            prompts: r
                .prompts
                .into_iter()
                .map(|p| Prompt {
                    text: p.prompt,
                    max_tokens: None,
                    reply: Some(p.reply),
                })
                .collect(),
            sharegpt: true,
            note: r.truncated,
        });
    }
    let text = std::fs::read_to_string(path).map_err(read_err)?;
    Ok(PromptFile {
        name,
        sha256: crate::util::hash::sha256_hex(text.as_bytes()),
        prompts: parse(&path.display().to_string(), &text)?,
        sharegpt: false,
        note: None,
    })
}

impl PromptFile {
    /// What the record says of the file, its prompts `lengths` tokens long.
    pub(crate) fn info(&self, chat_template: bool, lengths: &[f64]) -> DatasetInfo {
        DatasetInfo {
            name: self.name.clone(),
            sha256: self.sha256.clone(),
            n_prompts: self.prompts.len() as u64,
            chat_template,
            prompt_tokens: super::metrics::dist(lengths),
            format: self.sharegpt.then(|| "sharegpt".to_string()),
            note: self.note.clone(),
        }
    }
}

/// One sampled prompt: its tokens (or what the tokenizer gave of them) and the tokens to
/// generate after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled<T = Vec<i32>> {
    pub index: usize,
    pub tokens: T,
    pub n_gen: u32,
}

/// `n` prompts sampled as vLLM samples ShareGPT: a seeded shuffle, then the first pairs
/// within the limits; each generates its reply's token count, at most `max_gen`.
/// `tokenize` is the target model's tokenizer. Fewer than `n` when the file has fewer.
pub fn sample<E>(
    prompts: &[Prompt],
    n: usize,
    seed: u64,
    max_gen: u32,
    tokenize: impl FnMut(&str) -> Result<Vec<i32>, E>,
) -> Result<Vec<Sampled>, E> {
    pick(prompts, n, seed, max_gen, tokenize, Vec::len)
}

/// The requests' prompts of a serving test, as (index into the file, tokens to generate):
/// a ShareGPT file's `n` pairs sampled as vLLM samples them (the raw prompt's token count,
/// `count`, decides the limits, as there), each generating its reply's token count; a prompt
/// file's prompts in order, each its `max_tokens` or `n_gen`; cycled to `n`.
pub fn serving_picks<E: std::fmt::Display>(
    file: &PromptFile,
    n: usize,
    seed: u64,
    n_gen: u32,
    count: impl FnMut(&str) -> Result<usize, E>,
) -> Result<Vec<(usize, u32)>, ServingError> {
    let picked: Vec<(usize, u32)> = if file.sharegpt {
        pick(&file.prompts, n, seed, u32::MAX, count, |c| *c)
            .map_err(|e| ServingError::Refused(e.to_string()))?
            .into_iter()
            .map(|s| (s.index, s.n_gen))
            .collect()
    } else {
        (0..file.prompts.len())
            .map(|i| (i, file.prompts[i].max_tokens.unwrap_or(n_gen)))
            .collect()
    };
    if picked.is_empty() {
        return Err(ServingError::Refused(format!(
            "{}: no conversation within vLLM's limits (4 to 1024 prompt tokens, 2048 in all)",
            file.name
        )));
    }
    Ok((0..n).map(|k| picked[k % picked.len()]).collect())
}

/// [`sample`] over any tokenizer output `T` of length `len(&T)` (a served model's tokenizer
/// may only count).
fn pick<T, E>(
    prompts: &[Prompt],
    n: usize,
    seed: u64,
    max_gen: u32,
    mut tokenize: impl FnMut(&str) -> Result<T, E>,
    len: impl Fn(&T) -> usize,
) -> Result<Vec<Sampled<T>>, E> {
    let mut out = Vec::new();
    for i in shuffled(prompts.len(), seed) {
        if out.len() >= n {
            break;
        }
        let p = &prompts[i];
        let tokens = tokenize(&p.text)?;
        let reply_len = match &p.reply {
            Some(r) => len(&tokenize(r)?),
            None => p.max_tokens.unwrap_or(max_gen) as usize,
        };
        let (pl, ol) = (len(&tokens), reply_len);
        use super::sharegpt::{MAX_PROMPT, MAX_TOTAL, MIN_LEN};
        if pl < MIN_LEN || ol < MIN_LEN || pl > MAX_PROMPT || pl + ol > MAX_TOTAL {
            continue;
        }
        out.push(Sampled {
            index: i,
            tokens,
            n_gen: (ol as u32).min(max_gen),
        });
    }
    Ok(out)
}

/// 0..n in vLLM's seeded order (a Fisher-Yates shuffle, as its `random.shuffle`).
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = crate::util::rng::SplitMix64(seed);
    for i in (1..order.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// The token stream of `tokens = "text"` tests: a ShareGPT file's conversations in the
/// seeded order its sampling uses, each its first prompt then its reply; a prompt file's
/// prompts in order. Pieces are tokenized apart (`tokenize` adds no BOS) and joined, until
/// the stream holds `min_tokens` or the file ends (the test then wraps around). Empty when
/// the file's text tokenizes to nothing.
pub fn text_stream<E>(
    file: &PromptFile,
    seed: u64,
    min_tokens: usize,
    mut tokenize: impl FnMut(&str) -> Result<Vec<i32>, E>,
) -> Result<Vec<i32>, E> {
    let order = if file.sharegpt {
        shuffled(file.prompts.len(), seed)
    } else {
        (0..file.prompts.len()).collect()
    };
    let mut out = Vec::new();
    for i in order {
        if out.len() >= min_tokens {
            break;
        }
        let p = &file.prompts[i];
        // A blank line between pieces, as a chat transcript or a document would have.
        out.extend(tokenize(&format!("{}\n\n", p.text))?);
        if let Some(r) = &p.reply {
            out.extend(tokenize(&format!("{r}\n\n"))?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAREGPT: &str = r#"[
      {"id": "a", "conversations": [
        {"from": "human", "value": "one two three four five"},
        {"from": "gpt", "value": "six seven eight nine ten eleven"}]},
      {"id": "c", "conversations": [
        {"from": "human", "value": "too short"},
        {"from": "gpt", "value": "a b c d e"}]}
    ]"#;

    #[test]
    fn a_text_stream_takes_sharegpt_pairs_in_sampling_order_until_it_is_long_enough() {
        let pf = PromptFile {
            name: "sg.json".into(),
            sha256: String::new(),
            prompts: (0..50)
                .map(|i| Prompt {
                    text: format!("p{i}"),
                    max_tokens: None,
                    reply: Some(format!("r{i}")),
                })
                .collect(),
            sharegpt: true,
            note: None,
        };
        // One token per piece: the piece's number, prompts positive, replies negative.
        let tok = |s: &str| -> Result<Vec<i32>, String> {
            let n: i32 = s[1..].trim().parse().unwrap();
            Ok(vec![if s.starts_with('p') { n } else { -n - 1 }])
        };
        let a = text_stream(&pf, 7, 6, tok).unwrap();
        assert_eq!(a.len(), 6, "three conversations, prompt then reply");
        let order = shuffled(50, 7);
        for (k, pair) in a.chunks(2).enumerate() {
            assert_eq!(pair, [order[k] as i32, -(order[k] as i32) - 1]);
        }
        assert_ne!(a, text_stream(&pf, 8, 6, tok).unwrap(), "seeded");
        let all = text_stream(&pf, 7, usize::MAX, tok).unwrap();
        assert_eq!(
            all.len(),
            100,
            "the whole file when it is shorter than asked"
        );
        let plain = PromptFile {
            sharegpt: false,
            ..pf
        };
        assert_eq!(text_stream(&plain, 7, 4, tok).unwrap(), vec![0, -1, 1, -2]);
    }

    fn words(s: &str) -> Result<Vec<i32>, String> {
        Ok(s.split_whitespace().map(|w| w.len() as i32).collect())
    }

    fn sharegpt_prompts() -> Vec<Prompt> {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("sg.json");
        std::fs::write(&f, SHAREGPT).unwrap();
        let pf = load(&f).unwrap();
        assert!(pf.sharegpt && pf.note.is_none());
        pf.prompts
    }

    #[test]
    fn sampling_drops_pairs_under_four_tokens_and_caps_the_output_length() {
        let p = sharegpt_prompts();
        let s = sample(&p, 10, 1, 3, words).unwrap();
        assert_eq!(s.len(), 1, "the 2-token prompt is dropped");
        assert_eq!(s[0].index, 0);
        assert_eq!(s[0].n_gen, 3, "6 reply tokens capped at max_gen 3");
        let s = sample(&p, 10, 1, 100, words).unwrap();
        assert_eq!(s[0].n_gen, 6);
    }

    #[test]
    fn sampling_is_seeded() {
        let prompts: Vec<Prompt> = (0..50)
            .map(|i| Prompt {
                text: format!("prompt number {i} with words"),
                max_tokens: None,
                reply: Some("a reply of five words".into()),
            })
            .collect();
        let pick = |seed| {
            sample(&prompts, 5, seed, 64, words)
                .unwrap()
                .iter()
                .map(|s| s.index)
                .collect::<Vec<_>>()
        };
        assert_eq!(pick(7), pick(7));
        assert_ne!(pick(7), pick(8));
    }

    #[test]
    fn jsonl_prompts_with_and_without_max_tokens() {
        let p = parse(
            "p.jsonl",
            "{\"prompt\": \"Hello\", \"max_tokens\": 5}\n\n{\"prompt\": \"a\\nb\", \"id\": 3}\n",
        )
        .unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].max_tokens, Some(5));
        assert_eq!(p[1].text, "a\nb");
        assert_eq!(p[1].max_tokens, None);
    }

    #[test]
    fn plain_text_is_one_prompt_per_line() {
        let p = parse("p.txt", "What is 2+2?\r\n\nName a colour.\n").unwrap();
        let texts: Vec<_> = p.iter().map(|x| x.text.as_str()).collect();
        assert_eq!(texts, ["What is 2+2?", "Name a colour."]);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse("p.jsonl", "{\"prompt\": \"x\"}\n{\"prompt\": 3}\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.jsonl:2: missing \"prompt\""), "{e}");
        let e = parse("p.jsonl", "{\"prompt\": \"x\"}\n{oops\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.jsonl:2: invalid JSON"), "{e}");
        let e = parse("p.jsonl", "{\"prompt\": \"x\", \"max_tokens\": 0}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_tokens"), "{e}");
        assert!(
            parse("e.txt", "\n  \n")
                .unwrap_err()
                .to_string()
                .contains("no prompts")
        );
    }

    #[test]
    fn load_hashes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("abc.txt");
        std::fs::write(&f, "abc").unwrap();
        let pf = load(&f).unwrap();
        assert_eq!(pf.name, "abc.txt");
        assert_eq!(
            pf.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(
            load(&dir.path().join("none"))
                .unwrap_err()
                .to_string()
                .contains("cannot read")
        );
    }
}
