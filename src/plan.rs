//! Expands a configuration into the ordered list of tests. Pure: no files, no engine.
//!
//! The order is llama-bench's: the model outermost, then the model-level parameters (ngl),
//! then the context-level ones, so that a model is loaded once per distinct model setting.

use serde::{Deserialize, Serialize};

use crate::config::{Axes, Config, FlashAttn};

pub mod shard;
pub use shard::{Shard, shard};

/// Every parameter of one test, under llama-bench's field names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TestParams {
    pub n_prompt: u32,
    pub n_gen: u32,
    pub n_depth: u32,
    pub n_batch: u32,
    pub n_ubatch: u32,
    pub n_gpu_layers: i32,
    pub n_threads: u32,
    /// -1 auto, 0 off, 1 on (llama-bench's encoding).
    pub flash_attn: i32,
    pub type_k: String,
    pub type_v: String,
}

impl TestParams {
    /// llama-bench's test name: `pp512`, `tg128`, `pp512+tg128`, with ` @ d4096` for depth.
    pub fn name(&self) -> String {
        let mut s = match (self.n_prompt, self.n_gen) {
            (p, 0) => format!("pp{p}"),
            (0, g) => format!("tg{g}"),
            (p, g) => format!("pp{p}+tg{g}"),
        };
        if self.n_depth > 0 {
            s.push_str(&format!(" @ d{}", self.n_depth));
        }
        s
    }

    /// Tokens counted per repetition (depth is prefilled untimed and not counted).
    pub fn n_tokens(&self) -> u64 {
        u64::from(self.n_prompt) + u64::from(self.n_gen)
    }

    /// The context size llama-bench allocates: exactly what the test needs.
    pub fn n_ctx(&self) -> u32 {
        self.n_prompt + self.n_gen + self.n_depth
    }

    /// True when the model must be reloaded to go from `self` to `other`.
    pub fn same_model_params(&self, other: &TestParams) -> bool {
        self.n_gpu_layers == other.n_gpu_layers
    }
}

/// One planned test.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedTest {
    /// Index into `Config::models`.
    pub model: usize,
    /// Stable, unique identifier, e.g. `SmolLM2-135M/Q4_1/pp512` (criterion's benchmark id).
    pub id: String,
    pub params: TestParams,
}

/// Expands every model's axes; `quant[i]` labels model `i` in test ids (e.g. "Q4_1").
pub fn expand(config: &Config, quant: &[String]) -> Vec<PlannedTest> {
    let mut out = Vec::new();
    for (mi, m) in config.models.iter().enumerate() {
        let label = quant.get(mi).map(String::as_str).unwrap_or("unknown");
        for params in expand_axes(&m.axes) {
            let id = test_id(&m.name, label, &params, &m.axes);
            out.push(PlannedTest {
                model: mi,
                id,
                params,
            });
        }
    }
    out
}

/// The Cartesian product of one model's axes, in llama-bench's loop order.
pub fn expand_axes(a: &Axes) -> Vec<TestParams> {
    let mut out = Vec::new();
    for &ngl in &a.n_gpu_layers {
        for &nb in &a.n_batch {
            for &nub in &a.n_ubatch {
                for tk in &a.type_k {
                    for tv in &a.type_v {
                        for &fa in &a.flash_attn {
                            for &nt in &a.n_threads {
                                for &nd in &a.n_depth {
                                    let base = TestParams {
                                        n_prompt: 0,
                                        n_gen: 0,
                                        n_depth: nd,
                                        n_batch: nb,
                                        n_ubatch: nub,
                                        n_gpu_layers: ngl,
                                        n_threads: nt,
                                        flash_attn: FlashAttn::as_i32(fa),
                                        type_k: tk.clone(),
                                        type_v: tv.clone(),
                                    };
                                    for &p in a.n_prompt.iter().filter(|&&p| p > 0) {
                                        out.push(TestParams {
                                            n_prompt: p,
                                            ..base.clone()
                                        });
                                    }
                                    for &g in a.n_gen.iter().filter(|&&g| g > 0) {
                                        out.push(TestParams {
                                            n_gen: g,
                                            ..base.clone()
                                        });
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// `model/quant/test`, plus a `/name=value` part for each axis that takes several values in
/// this model's sweep, so ids stay unique and readable.
fn test_id(model: &str, quant: &str, p: &TestParams, a: &Axes) -> String {
    let mut id = format!("{model}/{quant}/{}", p.name().replace(" @ ", "@"));
    let mut part = |varies: bool, name: &str, value: String| {
        if varies {
            id.push_str(&format!("/{name}={value}"));
        }
    };
    part(a.n_gpu_layers.len() > 1, "ngl", p.n_gpu_layers.to_string());
    part(a.n_batch.len() > 1, "b", p.n_batch.to_string());
    part(a.n_ubatch.len() > 1, "ub", p.n_ubatch.to_string());
    part(a.type_k.len() > 1, "ctk", p.type_k.clone());
    part(a.type_v.len() > 1, "ctv", p.type_v.clone());
    part(a.flash_attn.len() > 1, "fa", p.flash_attn.to_string());
    part(a.n_threads.len() > 1, "t", p.n_threads.to_string());
    id
}

/// Keeps the tests whose id contains any of the filters (all tests when there is none).
pub fn filter(tests: Vec<PlannedTest>, filters: &[String]) -> Vec<PlannedTest> {
    if filters.is_empty() {
        return tests;
    }
    tests
        .into_iter()
        .filter(|t| filters.iter().any(|f| t.id.contains(f.as_str())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;
    use std::path::Path;

    fn config(src: &str) -> Config {
        parse(Path::new("m.toml"), src, 2).unwrap()
    }

    #[test]
    fn cartesian_product_has_one_test_per_prompt_and_gen_value() {
        let c = config(
            "[sweep]\nn_prompt=[64,128]\nn_gen=[16,0]\nn_threads=[1,2]\nn_depth=[0,256]\n\
             [[model]]\nname='m'\npath='m.gguf'\n",
        );
        let t = expand(&c, &["Q4_1".into()]);
        // 2 threads × 2 depths × (2 pp + 1 tg; n_gen 0 is skipped)
        assert_eq!(t.len(), 12);
        assert!(
            t.iter()
                .all(|x| (x.params.n_prompt == 0) != (x.params.n_gen == 0))
        );
        let mut ids: Vec<_> = t.iter().map(|x| x.id.clone()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 12, "ids are unique");
        assert_eq!(t[0].id, "m/Q4_1/pp64/t=1");
        assert_eq!(t[3].id, "m/Q4_1/pp64@d256/t=1");
    }

    #[test]
    fn model_is_outermost_and_gpu_layers_next_so_each_model_setting_loads_once() {
        let c = config(
            "[sweep]\nn_gpu_layers=[0,99]\nn_batch=[256,512]\n\
             [[model]]\nname='a'\npath='a'\n[[model]]\nname='b'\npath='b'\n",
        );
        let t = expand(&c, &[]);
        let mut loads = 0;
        for (i, x) in t.iter().enumerate() {
            if i == 0 || t[i - 1].model != x.model || !t[i - 1].params.same_model_params(&x.params)
            {
                loads += 1;
            }
        }
        assert_eq!(loads, 4, "2 models × 2 ngl values");
        assert!(t.windows(2).all(|w| w[0].model <= w[1].model));
    }

    #[test]
    fn names_follow_llama_bench() {
        let mut p = expand_axes(&Axes::llama_bench_defaults(2));
        assert_eq!(p[0].name(), "pp512");
        assert_eq!(p[1].name(), "tg128");
        p[0].n_depth = 4096;
        p[0].n_gen = 32;
        assert_eq!(p[0].name(), "pp512+tg32 @ d4096");
        assert_eq!(p[0].n_ctx(), 512 + 32 + 4096);
        assert_eq!(p[0].n_tokens(), 544);
    }

    #[test]
    fn filter_keeps_matching_ids_only() {
        let c = config("[[model]]\nname='m'\npath='m'\n");
        let t = expand(&c, &["Q8_0".into()]);
        assert_eq!(filter(t.clone(), &["tg".into()]).len(), 1);
        assert_eq!(filter(t.clone(), &[]).len(), 2);
        assert_eq!(filter(t, &["nope".into()]).len(), 0);
    }
}
