//! How many tokens one streamed answer carried, and when each arrived: the server's own
//! count checked against what was asked and what came (a server's numbers are untrusted
//! input), and the spreading of a chunk's tokens over its gap. Apart from the measurement
//! loops in `http.rs`, so the fuzz target reaches the accounting alone.

use crate::engine::EngineError;
use crate::engine::endpoint::{Prompt, Request, Streamed};
use crate::serving::error::ServingError;

/// Token times (ns from `start`) of one answer of `n` tokens: chunk k carries the tokens
/// j with ⌈(j+1)·C/n⌉ − 1 = k, spread evenly over the gap since chunk k − 1.
pub fn token_times(chunk_ns: &[u64], n: usize) -> Vec<u64> {
    let c = chunk_ns.len();
    if c == 0 || n == 0 {
        return Vec::new();
    }
    let chunk_of = |j: usize| ((j + 1) * c).div_ceil(n) - 1;
    let mut out = Vec::with_capacity(n);
    let mut j = 0;
    for k in 0..c {
        let first = j;
        while j < n && chunk_of(j) == k {
            j += 1;
        }
        let m = (j - first) as u64;
        let (prev, cur) = (chunk_ns[k.saturating_sub(1)], chunk_ns[k]);
        for i in 1..=m {
            out.push(prev + (cur - prev) * i / m);
        }
    }
    out
}

/// Where an answer's token count came from, best first: the record's `token_counts` is the
/// worst of a test's answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Counted {
    #[default]
    Usage,
    Tokenizer,
    Chunks,
}

crate::config::names::names!(Counted::name {
    Usage = "usage",
    Tokenizer = "tokenizer",
    Chunks = "chunks",
});

pub type Tokenize<'a> = &'a dyn Fn(&str) -> Result<u64, EngineError>;

/// One answer's generated tokens: the server's usage, else the text through `tokenize`, else
/// its chunks. A count above `max_tokens`, below the chunks that carried text, or a prompt
/// count the prompt cannot have fails the request naming the field and both values: every
/// count that sizes a trace is at most `max_tokens`, never a number from the server.
pub fn count(
    s: &Streamed,
    tokenize: Option<Tokenize>,
    q: &Request,
) -> Result<(u64, Counted), ServingError> {
    let max = u64::from(q.max_tokens);
    let chunks = s.chunks.len() as u64;
    if chunks > max {
        return Err(ServingError::Refused(format!(
            "the server sent {chunks} chunks of text for max_tokens {max}: more tokens than asked"
        )));
    }
    if let Some(u) = s.usage {
        let c = u.completion_tokens;
        if c > max {
            return Err(ServingError::Refused(format!(
                "the server's usage.completion_tokens is {c}, more than the max_tokens {max} asked"
            )));
        }
        if c < chunks {
            return Err(ServingError::Refused(format!(
                "the server's usage.completion_tokens is {c}, fewer than the {chunks} chunks of text that arrived"
            )));
        }
        let most = most_prompt_tokens(&q.prompt);
        if u.prompt_tokens > most {
            return Err(ServingError::Refused(format!(
                "the server's usage.prompt_tokens is {}, more than the prompt can hold (at most {most})",
                u.prompt_tokens
            )));
        }
        return Ok((c, Counted::Usage));
    }
    match tokenize {
        Some(f) => {
            let text: String = s.chunks.iter().map(|c| c.text.as_str()).collect();
            // Tokenizing the text again may merge or split differently from how it was
            // generated: more than max_tokens is then the tokenizer's, not the server's.
            Ok((f(&text)?.min(max), Counted::Tokenizer))
        }
        None => Ok((chunks, Counted::Chunks)),
    }
}

/// The most prompt tokens a server can truthfully report for `p`: the ids sent, or a token
/// per byte of text, with room for the special tokens it adds (BOS, a chat template's).
fn most_prompt_tokens(p: &Prompt) -> u64 {
    const ADDED: u64 = 4096;
    match p {
        Prompt::Tokens(t) => t.len() as u64 + 16,
        Prompt::Text(s) => s.len() as u64 + ADDED,
    }
}
