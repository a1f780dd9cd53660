use std::path::Path;

use super::*;

fn parse(sweep: &str) -> Result<crate::config::Config, crate::config::ConfigError> {
    let src = format!(
        "[sweep]\nn_prompt = 8\nn_gen = 0\n{sweep}\n[[model]]\nname = \"m\"\npath = \"m.gguf\"\n"
    );
    crate::config::parse(Path::new("models.toml"), &src, 2)
}

#[test]
fn the_table_has_llama_bench_s_twenty_eight_test_parameters_once_each() {
    let names: Vec<&str> = PARAMS.iter().map(|k| k.name).collect();
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "no name twice");
    assert_eq!(names.len(), 28);
    assert_eq!(map_params().count(), 15);
    // Flags name one parameter each in test ids.
    let mut flags: Vec<&str> = PARAMS.iter().map(|k| k.flag).collect();
    flags.sort();
    flags.dedup();
    assert_eq!(flags.len(), names.len(), "no flag twice");
    // Defaults are values of their own kind (n_threads' stands for the machine's cores).
    for k in PARAMS.iter().filter(|k| k.name != "n_threads") {
        let d = k.default_value();
        let toml = match &d {
            KnobValue::Bool(b) => toml::Value::Boolean(*b),
            KnobValue::Int(n) => toml::Value::Integer(*n),
            KnobValue::Text(s) => toml::Value::String(s.clone()),
        };
        assert_eq!(k.value(&toml), Ok(d), "{}", k.name);
    }
}

#[test]
fn values_parse_to_one_canonical_spelling() {
    let c = parse(
        "n_cpu_moe = [0, 2]\ntensor_buft_overrides = \" .ffn_.*_exps.=CPU ; blk\\\\.0\\\\.=CPU\"\n\
         devices = \"Vulkan0 / CPU\"\ntensor_split = \"3/1\"\nload_mode = \"MMAP\"\ncpu_mask = \"FF\"\n\
         repack = 0\nno_op_offload = true\n",
    )
    .unwrap();
    let k = &c.models[0].axes.knobs;
    assert_eq!(k["n_cpu_moe"], vec![KnobValue::Int(0), KnobValue::Int(2)]);
    assert_eq!(
        k["tensor_buft_overrides"],
        vec![KnobValue::Text(".ffn_.*_exps.=CPU;blk\\.0\\.=CPU".into())]
    );
    assert_eq!(k["devices"], vec![KnobValue::Text("Vulkan0/CPU".into())]);
    assert_eq!(k["tensor_split"], vec![KnobValue::Text("3.00/1.00".into())]);
    assert_eq!(k["load_mode"], vec![KnobValue::Text("mmap".into())]);
    assert_eq!(k["cpu_mask"], vec![KnobValue::Text("0xff".into())]);
    assert_eq!(k["repack"], vec![KnobValue::Bool(false)]);
    assert_eq!(k["no_op_offload"], vec![KnobValue::Bool(true)]);
    assert_eq!(
        override_pairs(".ffn_.*_exps.=CPU;blk\\.0\\.=CPU"),
        vec![
            (".ffn_.*_exps.".to_string(), "CPU".to_string()),
            ("blk\\.0\\.".to_string(), "CPU".to_string())
        ]
    );
}

#[test]
fn bad_values_name_the_key_and_the_line() {
    for (sweep, key, text) in [
        ("n_cpu_moe = -1", "sweep.n_cpu_moe", "out of range"),
        (
            "tensor_buft_overrides = \"blk.(0=CPU\"",
            "sweep.tensor_buft_overrides",
            "not a valid regular expression",
        ),
        (
            "tensor_buft_overrides = \"exps\"",
            "sweep.tensor_buft_overrides",
            "pattern=buffer",
        ),
        ("tensor_split = \"1/-1\"", "sweep.tensor_split", "0 or more"),
        (
            "tensor_split = \"a/b\"",
            "sweep.tensor_split",
            "not a tensor split",
        ),
        ("load_mode = \"fast\"", "sweep.load_mode", "mmap+mlock"),
        ("poll = 101", "sweep.poll", "out of range"),
        ("devices = \"\"", "sweep.devices", "not a device list"),
        ("cpu_mask = \"0xzz\"", "sweep.cpu_mask", "hex"),
        (
            "n_cpu_moes = 1",
            "sweep.n_cpu_moes",
            "did you mean `n_cpu_moe`",
        ),
    ] {
        let e = parse(sweep).unwrap_err();
        assert_eq!(e.key.as_deref(), Some(key), "{sweep}: {e}");
        assert!(e.message.contains(text), "{sweep}: {e}");
        assert_eq!(e.line, Some(4), "{sweep}: {e}");
    }
    // In a model's sweep too.
    let src =
        "[[model]]\nname = \"m\"\npath = \"m.gguf\"\n[model.sweep]\nn_prompt = 8\nn_cpu_moe = -2\n";
    let e = crate::config::parse(Path::new("models.toml"), src, 2).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("model[0].sweep.n_cpu_moe"), "{e}");
    assert_eq!(e.line, Some(6));
}

#[test]
fn descriptions_name_only_what_differs_from_llama_bench() {
    let mut k = Knobs::default();
    assert_eq!(k.describe(), "");
    k.set("n_cpu_moe", KnobValue::Int(4));
    k.set("repack", KnobValue::Bool(true));
    k.set("tensor_buft_overrides", KnobValue::Text("exps=CPU".into()));
    assert_eq!(k.describe(), "ncmoe 4, ot exps=CPU");
    k.set("n_cpu_moe", KnobValue::Int(0));
    assert_eq!(k.describe(), "ot exps=CPU");
}

#[test]
fn n_cpu_moe_patterns_keep_each_layer_s_experts_and_no_other_layer_s() {
    let p = cpu_moe_patterns(2);
    assert_eq!(p.len(), 2);
    assert!(pattern_matches(&p[1], "blk.1.ffn_down_exps.weight"));
    assert!(!pattern_matches(&p[1], "blk.10.ffn_down_exps.weight"));
    assert!(!pattern_matches(&p[0], "blk.0.ffn_down.weight"));
    assert!(cpu_moe_patterns(0).is_empty());
}

#[test]
fn a_placement_names_the_model_level_settings_that_differ_from_llama_bench() {
    let mut p = TestParams::default();
    for k in PARAMS.iter() {
        k.set(&mut p, &k.default_value());
    }
    assert_eq!(placement_of(&p), "");
    knob("n_gpu_layers")
        .unwrap()
        .set(&mut p, &KnobValue::Int(2));
    knob("n_cpu_moe").unwrap().set(&mut p, &KnobValue::Int(4));
    // Context-level settings and load_mode (recorded beside it) are not a placement.
    knob("n_ubatch").unwrap().set(&mut p, &KnobValue::Int(64));
    knob("load_mode")
        .unwrap()
        .set(&mut p, &KnobValue::Text("mmap".into()));
    assert_eq!(placement_of(&p), "ngl 2, ncmoe 4");
}
