//! Arbitrary UTF-8 as a models.toml: the parser must return a config or an error naming
//! the file, never panic; expanding an accepted config into tests must not panic either.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use tpsbench_fuzz::{config, plan};

fuzz_target!(|text: &str| {
    match config::parse(Path::new("fuzz/models.toml"), text, 2) {
        Ok(cfg) => {
            // An accepted sweep can be a huge Cartesian product: expand only small ones.
            let size = cfg.models.iter().fold(0usize, |sum, m| {
                let a = &m.axes;
                let lens = [
                    a.n_prompt.len() + a.n_gen.len(),
                    a.n_depth.len(),
                    a.n_batch.len(),
                    a.n_ubatch.len(),
                    a.n_gpu_layers.len(),
                    a.n_threads.len(),
                    a.flash_attn.len(),
                    a.type_k.len(),
                    a.type_v.len(),
                ];
                sum.saturating_add(lens.iter().fold(1usize, |p, &n| p.saturating_mul(n)))
            });
            if size < 10_000 {
                let labels = vec!["Q4_0".to_string(); cfg.models.len()];
                let tests = plan::expand(&cfg, &labels);
                assert!(tests.len() <= size);
            }
        }
        Err(e) => assert!(e.to_string().starts_with("fuzz/models.toml")),
    }
});
