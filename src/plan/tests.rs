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
        if i == 0
            || t[i - 1].model != x.model
            || t[i - 1].params.model_level() != x.params.model_level()
        {
            loads += 1;
        }
    }
    assert_eq!(loads, 4, "2 models × 2 ngl values");
    assert!(t.windows(2).all(|w| w[0].model <= w[1].model));
}

#[test]
fn split_mode_and_main_gpu_reload_the_model_but_kv_offload_does_not() {
    let c = config(
        "[sweep]\nn_prompt=[64]\nn_gen=[0]\nsplit_mode=['layer','row']\nmain_gpu=[0,1]\n\
         no_kv_offload=[false,true]\nn_batch=[256,512]\n[[model]]\nname='m'\npath='m'\n",
    );
    let t = expand(&c, &["Q4_1".into()]);
    assert_eq!(t.len(), 2 * 2 * 2 * 2);
    let loads = (0..t.len())
        .filter(|&i| i == 0 || t[i - 1].params.model_level() != t[i].params.model_level())
        .count();
    assert_eq!(loads, 4, "one load per (split_mode, main_gpu)");
    // llama-bench's order: split_mode, main_gpu outside n_batch, no_kv_offload inside.
    let order: Vec<(&str, i32, u32, bool)> = t
        .iter()
        .take(4)
        .map(|x| {
            let p = &x.params;
            (
                p.split_mode.as_str(),
                p.main_gpu,
                p.n_batch,
                p.no_kv_offload,
            )
        })
        .collect();
    assert_eq!(
        order,
        vec![
            ("layer", 0, 256, false),
            ("layer", 0, 256, true),
            ("layer", 0, 512, false),
            ("layer", 0, 512, true)
        ]
    );
    assert_eq!(t[0].id, "m/Q4_1/pp64/sm=layer/mg=0/b=256/nkvo=0");
    assert_eq!(t[15].id, "m/Q4_1/pp64/sm=row/mg=1/b=512/nkvo=1");
    let mut ids: Vec<_> = t.iter().map(|x| x.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 16);
}

#[test]
fn gpu_axes_at_their_defaults_change_neither_ids_nor_json() {
    let c = config("[sweep]\nsplit_mode='row'\n[[model]]\nname='m'\npath='m'\n");
    let t = expand(&c, &["Q4_1".into()]);
    assert_eq!(t[0].id, "m/Q4_1/pp512", "a single value adds no id part");
    let p = expand_axes(&Axes::llama_bench_defaults(2));
    let json = serde_json::to_value(&p[0]).unwrap();
    for key in ["split_mode", "main_gpu", "no_kv_offload"] {
        assert!(json.get(key).is_none(), "{key} at its default is left out");
    }
    let back: TestParams = serde_json::from_value(json).unwrap();
    assert_eq!(back, p[0], "absent fields read back as the defaults");
    let row = serde_json::to_value(&t[0].params).unwrap();
    assert_eq!(row["split_mode"], "row");
    let mut q = p[0].clone();
    q.no_kv_offload = true;
    q.main_gpu = 1;
    let j = serde_json::to_value(&q).unwrap();
    assert_eq!(
        (j["no_kv_offload"].as_bool(), j["main_gpu"].as_i64()),
        (Some(true), Some(1))
    );
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

/// The parameters of `config::knobs`' table in plans and records.
mod knobs {
    use std::path::Path;

    use crate::config::knobs::{KnobValue, Knobs};
    use crate::plan::{expand, expand_axes};

    fn parse(sweep: &str) -> Result<crate::config::Config, crate::config::ConfigError> {
        let src = format!(
            "[sweep]\nn_prompt = 8\nn_gen = 0\n{sweep}\n[[model]]\nname = \"m\"\npath = \"m.gguf\"\n"
        );
        crate::config::parse(Path::new("models.toml"), &src, 2)
    }

    #[test]
    fn sweeps_expand_the_knobs_with_ids_identities_and_load_keys() {
        let c = parse("n_cpu_moe = [0, 1, 2]\nembeddings = [false, true]\n").unwrap();
        let tests = expand(&c, &["Q4_0".to_string()]);
        let ids: Vec<&str> = tests.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            vec![
                "m/Q4_0/pp8/ncmoe=0/embd=0",
                "m/Q4_0/pp8/ncmoe=0/embd=1",
                "m/Q4_0/pp8/ncmoe=1/embd=0",
                "m/Q4_0/pp8/ncmoe=1/embd=1",
                "m/Q4_0/pp8/ncmoe=2/embd=0",
                "m/Q4_0/pp8/ncmoe=2/embd=1",
            ]
        );
        // n_cpu_moe is model level: a load per value; embeddings is not.
        assert_eq!(tests[0].load_key(), tests[1].load_key());
        assert_ne!(tests[1].load_key(), tests[2].load_key());
        // Defaults are left out of the parameters' JSON, so identities of older tests hold.
        let plain = expand_axes(&crate::config::Axes::llama_bench_defaults(2));
        let j = serde_json::to_value(&plain[0]).unwrap();
        assert!(j.get("n_cpu_moe").is_none());
        let j = serde_json::to_value(&tests[2].params).unwrap();
        assert_eq!(j["n_cpu_moe"], 1);
        assert!(j.get("embeddings").is_none());
        let a = crate::plan::build::test_identity("sha", &tests[0].params);
        let b = crate::plan::build::test_identity("sha", &tests[2].params);
        assert_ne!(a, b, "n_cpu_moe is in the identity");
        // Every field, defaults included, for comparisons.
        let all = tests[0].params.all_fields();
        assert_eq!(all["repack"], serde_json::json!(true));
        assert_eq!(all["tensor_buft_overrides"], serde_json::json!("none"));
    }

    #[test]
    fn records_read_back_their_knobs_and_ignore_what_is_not_one() {
        let c = parse("n_cpu_moe = 3\ntensor_buft_overrides = \"exps=CPU\"\n").unwrap();
        let p = expand(&c, &["F32".to_string()]).remove(0).params;
        let mut j = serde_json::to_value(&p).unwrap();
        let back: crate::plan::TestParams = serde_json::from_value(j.clone()).unwrap();
        assert_eq!(back, p);
        // Unknown keys and values of the wrong type are not knobs, and do not fail the read.
        j["something_else"] = serde_json::json!({"a": 1});
        j["poll"] = serde_json::json!("fast");
        let back: crate::plan::TestParams = serde_json::from_value(j).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn a_knob_left_at_its_default_is_the_test_of_before() {
        let mut k = Knobs::default();
        k.set("repack", KnobValue::Bool(true));
        assert!(k.0.is_empty());
    }
}

/// The first fuzzing finding (fuzz/regressions/models_toml/): the fuzz target
/// bounded a sweep's tests by the named axes alone, and a knob of the parameter table
/// (`cpu_mask = [1, 2]`) is an axis as well. The plan was right: here it is held to it.
#[test]
fn a_knob_of_the_table_multiplies_the_tests_like_a_named_axis() {
    let text = include_str!(
        "../../fuzz/regressions/models_toml/crash-27b05e5ffab821165a622c36c196e7e74a76ac56"
    );
    let c = parse(Path::new("fuzz/models.toml"), text, 2).unwrap();
    let t = expand(&c, &["Q4_0".into(), "Q4_0".into()]);
    let of = |m: usize| t.iter().filter(|x| x.model == m).collect::<Vec<_>>();
    // pp512 and tg128, for 2 cpu masks × 3 flash-attention modes × 2 K cache types.
    assert_eq!(of(0).len(), 2 * 2 * 3 * 2);
    let masks: std::collections::BTreeSet<String> = (of(0).iter())
        .map(|x| format!("{:?}", x.params.knobs))
        .collect();
    assert_eq!(masks.len(), 2, "{masks:?}");
    // Every test is a distinct one.
    let ids: std::collections::BTreeSet<&str> = t.iter().map(|x| x.id.as_str()).collect();
    assert_eq!(ids.len(), t.len());
}

/// A run holds several lists of its planned tests (the plan, its part, what remains, each
/// round's): a serving test's settings, which most tests lack, stay boxed.
#[test]
fn a_planned_test_stays_small_in_memory() {
    let size = std::mem::size_of::<PlannedTest>();
    assert!(size <= 256, "{size} bytes");
}
