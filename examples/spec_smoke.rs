use tpsbench::engine::llama::LlamaEngine;
use tpsbench::engine::speculative::DrafterParams;
use tpsbench::engine::{Engine, LoadParams};
use tpsbench::plan::TestParams;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let e = LlamaEngine::new(false).unwrap();
    let mut p = TestParams::default();
    p.n_batch = 2048;
    p.n_ubatch = 512;
    p.type_k = "f16".into();
    p.type_v = "f16".into();
    p.flash_attn = 1;
    p.n_threads = 2;
    let m = e
        .load(std::path::Path::new(&a[1]), &LoadParams::of(&p))
        .unwrap();
    let d = DrafterParams {
        kind: a[2].clone(),
        draft: a.get(3).filter(|s| !s.is_empty()).map(Into::into),
        draft_n_gpu_layers: -1,
        n_max: 4,
        n_min: 0,
        p_min: 0.0,
        ngram_n: 0,
        ngram_m: 0,
        ngram_min_hits: 0,
    };
    let mut s = m.speculative(&p, &d, 1024).unwrap();
    let sm = m.serving().unwrap();
    let prompt = sm.tokenize("The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog. The quick brown fox", true, false).unwrap();
    println!("prompt {:?}", prompt);
    let mut prev: Vec<i32> = vec![];
    for spec in [false, true] {
        let g = s.generate(&prompt, 64, spec).unwrap();
        if !prev.is_empty() {
            let d = prev.iter().zip(&g.tokens).position(|(a, b)| a != b);
            println!("first diff {d:?} lens {} {}", prev.len(), g.tokens.len());
        }
        prev = g.tokens.clone();
        println!(
            "nprompt {} spec {spec} gen {} steps {} drafts {} drafted {} acc {} t {:.3}s draft {:.3} verify {:.3} pos {:?} tokens {:?}",
            g.n_prompt,
            g.n_generated,
            g.n_steps,
            g.n_drafts,
            g.n_drafted,
            g.n_accepted,
            g.t_gen_ns as f64 / 1e9,
            g.t_draft_ns as f64 / 1e9,
            g.t_verify_ns as f64 / 1e9,
            g.by_position,
            &g.tokens[..8]
        );
    }
    println!("draft bytes {}", s.draft_bytes());
}
