//! Arbitrary bytes as a streamed answer's body, cut where the input says (as the network may
//! cut it), through the client's SSE parsing and its reading of each event
//! (`engine::endpoint::client::replay`), then the token accounting of `serving::http`: `count` checks
//! the server's usage against what was asked and what arrived, and `token_times` spreads the
//! tokens over the chunks. All must return Ok or Err, never panic, and never allocate by a
//! number the body claims.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tpsbench::config::endpoint::Api;
use tpsbench::engine::endpoint::client::{Prompt, Request, replay};
use tpsbench::serving::http::{count, token_times};

fuzz_target!(|data: &[u8]| {
    // First byte: the API and max_tokens; then pieces split at 0xFF bytes.
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    let api = if head & 1 == 0 {
        Api::Completions
    } else {
        Api::Chat
    };
    let max_tokens = u32::from(head >> 1);
    let pieces: Vec<&[u8]> = body.split(|&b| b == 0xFF).collect();
    let Ok(s) = replay(api, "m", &pieces) else {
        return;
    };
    let q = Request {
        prompt: Prompt::Tokens(vec![1, 2, 3]),
        max_tokens,
        temperature: 0.0,
        seed: 0,
    };
    if let Ok((n, _)) = count(&s, None, &q) {
        assert!(n <= u64::from(max_tokens), "a count above max_tokens got through");
        let chunk_ns: Vec<u64> = (0..s.chunks.len() as u64).map(|k| k * 10).collect();
        let times = token_times(&chunk_ns, n as usize);
        assert!(times.len() as u64 <= n);
    }
});
