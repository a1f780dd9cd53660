use super::*;
use crate::engine::endpoint::client::{Chunk, Usage};

fn answer(texts: &[&str], usage: Option<u64>) -> Streamed {
    let t = Instant::now();
    Streamed {
        sent: t,
        chunks: texts
            .iter()
            .map(|x| Chunk {
                at: t,
                text: x.to_string(),
            })
            .collect(),
        usage: usage.map(|n| Usage {
            prompt_tokens: 4,
            completion_tokens: n,
        }),
        drafts: None,
        finish_reason: Some("length".into()),
    }
}

fn asked(max_tokens: u32) -> Request {
    Request {
        prompt: Prompt::Tokens(vec![1, 2, 3, 4]),
        max_tokens,
        temperature: 0.0,
        seed: 1,
    }
}

#[test]
fn tokens_are_counted_from_usage_else_the_tokenizer_else_the_chunks() {
    let words = |s: &str| -> Result<u64, crate::engine::EngineError> {
        Ok(s.split_whitespace().count() as u64)
    };
    let q = asked(8);
    let a = answer(&["one two", " three"], Some(5));
    assert_eq!(count(&a, Some(&words), &q).unwrap(), (5, Counted::Usage));
    let a = answer(&["one two", " three"], None);
    assert_eq!(
        count(&a, Some(&words), &q).unwrap(),
        (3, Counted::Tokenizer)
    );
    assert_eq!(count(&a, None, &q).unwrap(), (2, Counted::Chunks));
    assert!(Counted::Chunks > Counted::Tokenizer && Counted::Tokenizer > Counted::Usage);
}

#[test]
fn a_count_the_answer_cannot_have_is_refused_naming_the_field_and_both_values() {
    let q = asked(8);
    // The lie that once allocated 8 TB: one token streamed, 10^12 claimed.
    let e = count(&answer(&["a"], Some(1_000_000_000_000)), None, &q)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "the server's usage.completion_tokens is 1000000000000, more than the max_tokens 8 asked"
    );
    let e = count(&answer(&["a", "b", "c"], Some(2)), None, &q)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("usage.completion_tokens is 2") && e.contains("3 chunks"),
        "{e}"
    );
    let mut a = answer(&["a"], Some(1));
    a.usage.as_mut().unwrap().prompt_tokens = 1 << 40;
    let e = count(&a, None, &q).unwrap_err().to_string();
    assert!(
        e.contains("usage.prompt_tokens is 1099511627776") && e.contains("at most 20"),
        "{e}"
    );
    let nine: Vec<&str> = vec!["x"; 9];
    let e = count(&answer(&nine, None), None, &q)
        .unwrap_err()
        .to_string();
    assert!(e.contains("9 chunks") && e.contains("max_tokens 8"), "{e}");
    // A tokenizer that counts more than was asked is capped, not believed.
    let many = |_: &str| -> Result<u64, crate::engine::EngineError> { Ok(u64::MAX) };
    assert_eq!(count(&answer(&["a"], None), Some(&many), &q).unwrap().0, 8);
}

#[test]
fn one_token_per_chunk_keeps_the_chunk_times() {
    assert_eq!(token_times(&[10, 20, 35], 3), vec![10, 20, 35]);
}

#[test]
fn a_chunk_of_several_tokens_counts_as_as_many_even_gaps() {
    // 4 tokens in 2 chunks: the second chunk carries 2, spread over its 20 ns gap.
    assert_eq!(token_times(&[10, 30], 4), vec![10, 10, 20, 30]);
    // 5 tokens in 3 chunks: 1, 2, 2 (chunk ⌈(j+1)·3/5⌉ − 1 of token j).
    assert_eq!(token_times(&[0, 10, 40], 5), vec![0, 5, 10, 25, 40]);
}

#[test]
fn fewer_tokens_than_chunks_end_at_the_last_chunk() {
    assert_eq!(token_times(&[10, 20, 30, 40], 2), vec![20, 40]);
    assert!(token_times(&[], 3).is_empty());
}
