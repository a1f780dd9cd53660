//! Arbitrary UTF-8 as a models.toml: the parser must return a config or an error naming
//! the file, never panic; planning an accepted config must not panic either: the
//! llama-bench tests (`plan::expand`), the whole plan (`plan::build`: ladder variants,
//! serving, quality and the `[speculative]` drafter settings) and, with a `[tune]` table, the
//! race's space (`runner::race::at_objective`, then the plan again).
#![no_main]

use std::collections::HashSet;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use tpsbench::config::{Axes, Config};
use tpsbench::plan::{self, Facts, ModelFacts};
use tpsbench::{config, runner};

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
        a.tokens.len(),
    ]
    .iter()
    .fold(a.n_prompt.len() + a.n_gen.len(), |p, &n| {
        p.saturating_mul(n)
    })
    .saturating_mul(knobs)
}

fn product(xs: &[usize]) -> usize {
    xs.iter().fold(1usize, |p, &n| p.saturating_mul(n.max(1)))
}

/// How many tests `plan::build` may make: every model's and ladder variant's llama-bench
/// tests, a quality test per variant, the serving tests (per model and transport, each
/// mode's) and the speculative ones (per candidate, every drafter setting).
fn plan_bound(c: &Config) -> usize {
    let variants: usize = c.ladders.iter().map(|l| l.types.len()).sum();
    let mut n = c
        .models
        .iter()
        .fold(0usize, |s, m| s.saturating_add(bound(&m.axes)));
    for l in &c.ladders {
        n = n.saturating_add(
            l.types
                .len()
                .saturating_mul(bound(&l.axes).saturating_add(1)),
        );
    }
    if let Some(sc) = &c.serving {
        let per_model = sc.modes.iter().fold(0usize, |s, m| {
            s.saturating_add(match m.name() {
                "parallel" => product(&[sc.n_parallel.len(), sc.shared_prompt.len()]),
                "arrival" => sc.arrival_rate.len(),
                _ => 1,
            })
        });
        n = n.saturating_add(product(&[c.models.len(), 2, per_model]));
    }
    if let Some(sc) = &c.speculative {
        n = n.saturating_add(product(&[
            c.models.len() + variants,
            sc.drafters.len(),
            sc.draft.len(),
            sc.draft_max.len(),
            sc.draft_min.len(),
            sc.p_min.len(),
            sc.draft_n_gpu_layers.len(),
        ]));
    }
    n
}

/// `plan::build` with made-up facts; checks what every plan must hold.
fn check_plan(cfg: &Config, size: usize) -> plan::Plan {
    let facts = Facts {
        models: (0..cfg.models.len())
            .map(|i| ModelFacts {
                label: "Q4_0".into(),
                sha256: format!("{i:064x}"),
            })
            .collect(),
        ladders: Vec::new(),
        dataset_sha256: Some("d".repeat(64)),
        speculative_sha256: Some("s".repeat(64)),
        text_sha256: Some("t".repeat(64)),
    };
    let p = plan::build(cfg, &facts, &[]);
    assert!(
        p.tests.len() <= size,
        "{} tests > bound {size}",
        p.tests.len()
    );
    let mut ids = HashSet::new();
    for t in &p.tests {
        assert!(t.model < p.models.len());
        assert!(!t.identity.is_empty(), "{}", t.id);
        // Resuming, merging shards and comparing key on the id: one test each.
        assert!(ids.insert((t.model, &t.id)), "two tests with id {}", t.id);
        let _ = t.params.n_ctx();
    }
    let _ = p.hash(&cfg.settings);
    p
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
            let size = plan_bound(&cfg);
            if size < 10_000 {
                check_plan(&cfg, size);
            }
            if let Some(t) = &cfg.tune {
                // The race's space: the sweep at the objective's sizes, one test each.
                let _ = t.objective.n_ctx();
                assert!(t.max_rounds >= 2);
                let _ = t.objective.to_string();
                let at = runner::race::at_objective(&cfg, t);
                let size = plan_bound(&at);
                if size < 10_000 {
                    let p = check_plan(&at, size);
                    for x in p
                        .tests
                        .iter()
                        .filter(|x| matches!(x.detail, plan::Detail::Bench))
                    {
                        assert_eq!(x.params.n_depth, t.objective.n_depth, "{}", x.id);
                    }
                }
            }
        }
        Err(e) => assert!(e.to_string().starts_with("fuzz/models.toml")),
    }
});
