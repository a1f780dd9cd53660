//! Arbitrary UTF-8 as a models.toml: the parser must return a config or an error naming
//! the file, never panic; expanding an accepted config into tests must not panic either.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use tpsbench::config::Axes;
use tpsbench::{config, plan};

/// How many tests `plan::expand` may make of one model's axes: one per n_prompt and n_gen
/// value for every combination of the other axes (saturating: a sweep can be huge). The
/// parameters of the knobs table (`cpu_mask`, ...) are axes too: a bound without them was
/// the first finding (issue 47, regressions/models_toml/).
fn bound(a: &Axes) -> usize {
    let knobs = a
        .knobs
        .values()
        .fold(1usize, |p, v| p.saturating_mul(v.len()));
    [
        a.n_depth.len(),
        a.n_batch.len(),
        a.n_ubatch.len(),
        a.n_gpu_layers.len(),
        a.split_mode.len(),
        a.main_gpu.len(),
        a.n_threads.len(),
        a.flash_attn.len(),
        a.type_k.len(),
        a.type_v.len(),
        a.no_kv_offload.len(),
    ]
    .iter()
    .fold(a.n_prompt.len() + a.n_gen.len(), |p, &n| {
        p.saturating_mul(n)
    })
    .saturating_mul(knobs)
}

fuzz_target!(|text: &str| {
    match config::parse(Path::new("fuzz/models.toml"), text, 2) {
        Ok(cfg) => {
            let size = cfg
                .models
                .iter()
                .fold(0usize, |sum, m| sum.saturating_add(bound(&m.axes)));
            // Expand only small sweeps: a huge Cartesian product is legal, not a finding.
            if size < 10_000 {
                let labels = vec!["Q4_0".to_string(); cfg.models.len()];
                let tests = plan::expand(&cfg, &labels);
                assert!(tests.len() <= size);
            }
        }
        Err(e) => assert!(e.to_string().starts_with("fuzz/models.toml")),
    }
});
