//! Prompt files for serving tests: JSONL (`{"prompt": "...", "max_tokens": N}` per line) or
//! plain text (one prompt per line). Parsing is pure; `load` reads and hashes the file.

use std::path::Path;

/// Why a prompt file could not be had. Each displays the one line users have always read;
/// no variant names a source (see `kinds::error`).
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The file cannot be read (missing, a directory, not UTF-8).
    #[error("cannot read the prompt file {}: {cause}", path.display())]
    Read {
        path: std::path::PathBuf,
        cause: std::io::Error,
    },
    /// The file does not parse: `name` is the file as shown, `line` the 1-based line at
    /// fault (None: the file as a whole, e.g. no prompts at all).
    #[error("{}", parse_line(name, *line, why))]
    Parse {
        name: String,
        line: Option<usize>,
        why: String,
    },
}

/// "p.jsonl:3: why", or "p.jsonl: why" for the file as a whole.
fn parse_line(name: &str, line: Option<usize>, why: &str) -> String {
    match line {
        Some(n) => format!("{name}:{n}: {why}"),
        None => format!("{name}: {why}"),
    }
}

/// One prompt of a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub text: String,
    /// Tokens to generate; None: the test's `n_gen`.
    pub max_tokens: Option<u32>,
    /// ShareGPT: the reply to the prompt, whose token count is the output length.
    pub reply: Option<String>,
}

/// A prompt file, read and hashed.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptFile {
    /// File name.
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

/// One line of a JSONL prompt file: `{"prompt": "...", "max_tokens": N}`, `max_tokens`
/// optional (null as absent). The error says what is wrong; the caller names the line.
fn jsonl_prompt(line: &str) -> Result<Prompt, String> {
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("invalid JSON: {e}"))?;
    let obj = v
        .as_object()
        .ok_or_else(|| "expected an object {\"prompt\": ...}".to_string())?;
    let text = obj
        .get("prompt")
        .and_then(|p| p.as_str())
        .ok_or_else(|| "missing \"prompt\" (a string)".to_string())?;
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

/// Reads, hashes and parses a prompt file, or a ShareGPT file (a JSON array, read as a
/// stream: `sharegpt`).
pub fn load(path: &Path) -> Result<PromptFile, DatasetError> {
    let read_err = |cause| DatasetError::Read {
        path: path.to_path_buf(),
        cause,
    };
    let name = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut head = [0u8; 256];
    let n = {
        use std::io::Read;
        let mut f = std::fs::File::open(path).map_err(read_err)?;
        f.read(&mut head).map_err(read_err)?
    };
    if super::sharegpt::looks_like(&head[..n]) {
        let f = std::fs::File::open(path).map_err(read_err)?;
        let r = super::sharegpt::read(f).map_err(|why| DatasetError::Parse {
            name: path.display().to_string(),
            line: None,
            why,
        })?;
        return Ok(PromptFile {
            name,
            sha256: r.sha256,
            prompts: r.prompts,
            sharegpt: true,
            note: r.truncated,
        });
    }
    let text = std::fs::read_to_string(path).map_err(|cause| DatasetError::Read {
        path: path.to_path_buf(),
        cause,
    })?;

    let sha256 = crate::util::hash::sha256_hex(text.as_bytes());
    let shown = path.display().to_string();
    Ok(PromptFile {
        name: path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
        sha256,
        prompts: parse(&shown, &text)?,
        sharegpt: false,
        note: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
