use super::*;

fn parse_str(src: &str) -> Result<Config, ConfigError> {
    parse(Path::new("dir/models.toml"), src, 4)
}

const MINIMAL: &str = r#"
[[model]]
name = "tiny"
path = "tiny.gguf"
"#;

#[test]
fn minimal_config_gets_llama_bench_defaults() {
    let c = parse_str(MINIMAL).unwrap();
    assert_eq!(c.models.len(), 1);
    let a = &c.models[0].axes;
    assert_eq!(a.n_prompt, vec![512]);
    assert_eq!(a.n_gen, vec![128]);
    assert_eq!(a.n_batch, vec![2048]);
    assert_eq!(a.n_ubatch, vec![512]);
    assert_eq!(a.n_threads, vec![4]);
    assert_eq!(a.type_k, vec!["f16".to_string()]);
    assert_eq!(c.settings.repetitions, 5);
    assert_eq!(c.settings.warmup, 1);
    assert_eq!(
        c.models[0].path.as_deref(),
        Some(Path::new("dir/tiny.gguf"))
    );
}

#[test]
fn scalars_and_lists_are_both_accepted_and_models_override_the_sweep() {
    let c = parse_str(
        r#"
[sweep]
n_prompt = [64, 128]
n_gen = 16
flash_attn = ["on", false, "auto"]
type_k = "Q8_0"
repetitions = 3
seed = 7

[[model]]
name = "a"
path = "/abs/a.gguf"

[[model]]
name = "b"
path = "b.gguf"
[model.sweep]
n_threads = [1, 2]
"#,
    )
    .unwrap();
    let a = &c.models[0].axes;
    assert_eq!(a.n_prompt, vec![64, 128]);
    assert_eq!(a.n_gen, vec![16]);
    assert_eq!(
        a.flash_attn,
        vec![FlashAttn::On, FlashAttn::Off, FlashAttn::Auto]
    );
    assert_eq!(a.type_k, vec!["q8_0".to_string()]);
    assert_eq!(c.models[0].path.as_deref(), Some(Path::new("/abs/a.gguf")));
    assert_eq!(c.models[1].axes.n_threads, vec![1, 2]);
    assert_eq!(
        c.models[1].axes.n_prompt,
        vec![64, 128],
        "inherits the global sweep"
    );
    assert_eq!(c.settings.repetitions, 3);
    assert_eq!(c.settings.seed, 7);
}

fn err_of(src: &str) -> ConfigError {
    parse_str(src).unwrap_err()
}

#[test]
fn unknown_key_names_file_line_and_key() {
    let e = err_of("[sweep]\nn_promt = 5\n[[model]]\nname='a'\npath='a'\n");
    assert_eq!(e.line, Some(2));
    assert_eq!(e.key.as_deref(), Some("sweep.n_promt"));
    let shown = e.to_string();
    assert!(
        shown.starts_with("dir/models.toml:2: key `sweep.n_promt`: unknown field `n_promt`, did you mean `n_prompt`?"),
        "{shown}"
    );
}

#[test]
fn wrong_type_names_the_line_and_key() {
    let e = err_of("[sweep]\nn_batch = \"big\"\n[[model]]\nname='a'\npath='a'\n");
    assert_eq!(e.line, Some(2));
    assert_eq!(e.key.as_deref(), Some("sweep.n_batch"));
    assert!(
        e.message.contains("expected an integer, got string"),
        "{}",
        e.message
    );
}

#[test]
fn impossible_values_are_rejected() {
    for (src, key) in [
        ("[sweep]\nn_batch = 0\n", "sweep.n_batch"),
        ("[sweep]\nn_ubatch = [512, 0]\n", "sweep.n_ubatch"),
        ("[sweep]\nn_threads = -2\n", "sweep.n_threads"),
        ("[sweep]\nrepetitions = 0\n", "sweep.repetitions"),
        ("[sweep]\nn_prompt = 0\nn_gen = 0\n", "sweep.n_prompt"),
        ("[sweep]\nn_gen = []\n", "sweep.n_gen"),
        ("[sweep]\ntype_v = \"q9_9\"\n", "sweep.type_v"),
        ("[sweep]\nflash_attn = \"maybe\"\n", "sweep.flash_attn"),
        ("[sweep]\nrepetitions = [1, 2]\n", "sweep.repetitions"),
    ] {
        let e = err_of(&format!("{src}[[model]]\nname='a'\npath='a'\n"));
        assert_eq!(e.key.as_deref(), Some(key), "{src}: {e}");
        assert_eq!(e.line, Some(2), "{src}: {e}");
    }
}

#[test]
fn model_errors_point_at_the_model() {
    let e = err_of("[[model]]\nname = 'a'\npath = 'x'\n[[model]]\nname = 'a'\npath = 'y'\n");
    assert_eq!(e.key.as_deref(), Some("model[1].name"));
    assert_eq!(e.line, Some(5));
    let e = err_of("[[model]]\nname = 'a'\n");
    assert!(e.message.contains("path"), "{e}");
    let e = err_of("[sweep]\nn_gen = 4\n");
    assert_eq!(e.key.as_deref(), Some("model"));
    let e = err_of("[[model]]\nname='a'\npath='a'\n[model.sweep]\nrepetitions = 2\n");
    assert_eq!(e.key.as_deref(), Some("model[0].sweep.repetitions"));
}

#[test]
fn syntax_errors_carry_a_line() {
    let e = err_of("[[model]]\nname = 'a\npath='a'\n");
    assert_eq!(e.line, Some(2), "{e}");
}

#[test]
fn missing_file_is_a_clear_error() {
    let e = load(Path::new("/nonexistent/models.toml"), 2).unwrap_err();
    assert!(
        e.to_string().contains("cannot read the configuration"),
        "{e}"
    );
}

#[test]
fn adaptive_settings_parse_and_are_checked() {
    let c = parse_str("[sweep]\nci_target = 0.02\nmax_repetitions = 30\nmax_seconds = 20\n[[model]]\nname='a'\npath='a'\n").unwrap();
    assert_eq!(c.settings.ci_target, Some(0.02));
    assert_eq!(c.settings.policy().max_repetitions, 30);
    assert_eq!(c.settings.policy().max_seconds, 20.0);
    assert_eq!(
        parse_str(MINIMAL).unwrap().settings.policy().ci_target,
        None
    );
    let e = err_of("[sweep]\nci_target = 'tight'\n[[model]]\nname='a'\npath='a'\n");
    assert_eq!(e.key.as_deref(), Some("sweep.ci_target"));
    let e = err_of(
        "[sweep]\nci_target = 0.01\nrepetitions = 10\nmax_repetitions = 5\n[[model]]\nname='a'\npath='a'\n",
    );
    assert_eq!(e.key.as_deref(), Some("sweep.max_repetitions"));
    assert_eq!(e.line, Some(4));
}

#[test]
fn gpu_placement_axes_parse_with_llama_bench_defaults() {
    let a = &parse_str(MINIMAL).unwrap().models[0].axes;
    assert_eq!(a.split_mode, vec![SplitMode::Layer]);
    assert_eq!(a.main_gpu, vec![0]);
    assert_eq!(a.no_kv_offload, vec![false]);
    let c = parse_str(
        "[sweep]\nsplit_mode = ['none', 'Layer', 'row']\nmain_gpu = [0, 1]\nno_kv_offload = [false, 1]\n\
         [[model]]\nname='a'\npath='a'\n[[model]]\nname='b'\npath='b'\n[model.sweep]\nsplit_mode = 'tensor'\n",
    )
    .unwrap();
    let a = &c.models[0].axes;
    assert_eq!(
        a.split_mode,
        vec![SplitMode::None, SplitMode::Layer, SplitMode::Row]
    );
    assert_eq!(a.main_gpu, vec![0, 1]);
    assert_eq!(a.no_kv_offload, vec![false, true]);
    assert_eq!(c.models[1].axes.split_mode, vec![SplitMode::Tensor]);
    assert_eq!(
        c.models[1].axes.main_gpu,
        vec![0, 1],
        "inherits the global sweep"
    );
}

#[test]
fn bad_gpu_placement_values_name_file_line_and_key() {
    for (src, key, needle) in [
        (
            "[sweep]\nsplit_mode = 'rows'\n",
            "sweep.split_mode",
            "not a split mode",
        ),
        (
            "[sweep]\nsplit_mode = 2\n",
            "sweep.split_mode",
            "got integer",
        ),
        ("[sweep]\nmain_gpu = -1\n", "sweep.main_gpu", "out of range"),
        (
            "[sweep]\nmain_gpu = [0, 'one']\n",
            "sweep.main_gpu",
            "expected an integer",
        ),
        (
            "[sweep]\nno_kv_offload = 'yes'\n",
            "sweep.no_kv_offload",
            "true or false",
        ),
        (
            "[sweep]\nno_kv_offload = 2\n",
            "sweep.no_kv_offload",
            "got 2",
        ),
        (
            "[sweep]\nno_kv_offload = []\n",
            "sweep.no_kv_offload",
            "empty",
        ),
    ] {
        let e = err_of(&format!("{src}[[model]]\nname='a'\npath='a'\n"));
        assert_eq!(e.key.as_deref(), Some(key), "{src}: {e}");
        assert_eq!(e.line, Some(2), "{src}: {e}");
        assert!(e.message.contains(needle), "{src}: {e}");
        assert!(
            e.to_string()
                .starts_with(&format!("dir/models.toml:2: key `{key}`")),
            "{e}"
        );
    }
    let e = err_of("[[model]]\nname='a'\npath='a'\n[model.sweep]\nsplit_mode = 'x'\n");
    assert_eq!(e.key.as_deref(), Some("model[0].sweep.split_mode"));
    assert_eq!(e.line, Some(5));
}

#[test]
fn the_shipped_gpu_sweep_parses_to_full_offload_with_flash_attention_on_and_off() {
    let c = parse(Path::new("gpu.toml"), include_str!("../../gpu.toml"), 4).unwrap();
    let a = &c.models[0].axes;
    assert_eq!(a.n_gpu_layers, vec![99]);
    assert_eq!(a.flash_attn, vec![FlashAttn::On, FlashAttn::Off]);
    assert_eq!(
        (a.n_prompt.clone(), a.n_gen.clone()),
        (vec![512], vec![128])
    );
    assert_eq!(a.no_kv_offload, vec![false]);
}

#[test]
fn a_misspelled_key_anywhere_gets_its_path_and_the_nearest_known_key() {
    const M: &str = "[[model]]\nname = 'a'\npath = 'a'\n";
    for (src, start) in [
        (
            format!("{M}[[model]]\nname = 'b'\npath = 'b'\n[model.sweep]\nn_thread = 2\n"),
            "dir/models.toml:8: key `model[1].sweep.n_thread`: unknown field `n_thread`, did you \
             mean `n_threads`?",
        ),
        (
            format!("{M}endpiont = 'http://h:1'\n"),
            "dir/models.toml:4: key `model[0].endpiont`: unknown field `endpiont`, did you mean \
             `endpoint`?",
        ),
        (
            format!("{M}server = {{ comand = ['p'] }}\n"),
            "dir/models.toml:4: key `model[0].server.comand`: unknown field `comand`, did you \
             mean `command`?",
        ),
        (
            format!("{M}[serving]\ngoodput = {{ max_rates = 3 }}\n"),
            "dir/models.toml:5: key `serving.goodput.max_rates`: unknown field `max_rates`, did \
             you mean `max_rate`?",
        ),
        (
            format!("{M}[serving]\ntargets = {{ ttft = 3 }}\n"),
            "dir/models.toml:5: key `serving.targets.ttft`: unknown field `ttft`, did you mean \
             `ttft_ms`?",
        ),
        (
            "[[ladder]]\nname = 'l'\nbase = 'b'\ntypes = ['Q8_0']\n[ladder.eval]\nchunk = 2\n"
                .to_string(),
            "dir/models.toml:6: key `ladder[0].eval.chunk`: unknown field `chunk`, did you mean \
             `chunks`?",
        ),
        (
            format!("{M}[servng]\n"),
            "dir/models.toml:4: key `servng`: unknown field `servng`, did you mean `serving`?",
        ),
        (
            format!("{M}[serving]\nzzz = 1\n"),
            "dir/models.toml:5: key `serving.zzz`: unknown field `zzz`, expected one of `modes`",
        ),
    ] {
        let e = err_of(&src).to_string();
        assert!(e.starts_with(start), "{src}\n{e}\nwanted\n{start}");
    }
}

#[test]
fn a_wrong_type_in_a_typed_key_names_its_path_and_line() {
    const M: &str = "[[model]]\nname = 'a'\npath = 'a'\n";
    for (src, start) in [
        (
            format!("{M}endpoint = 'http://h:1'\napi = 'chatt'\n"),
            "dir/models.toml:5: key `model[0].api`: unknown variant `chatt`, expected \
             `completions` or `chat`",
        ),
        (
            format!("{M}server = 3\n"),
            "dir/models.toml:4: key `model[0].server`: invalid type: integer `3`, expected \
             \"llama-server\" or a table",
        ),
        (
            format!("{M}[serving]\nkv_unified = 'yes'\n"),
            "dir/models.toml:5: key `serving.kv_unified`: invalid type: string \"yes\", expected \
             a boolean",
        ),
        (
            format!("{M}[serving]\nslo = {{ ttft_ms = 'fast' }}\n"),
            "dir/models.toml:5: key `serving.slo.ttft_ms`: invalid type: string \"fast\"",
        ),
        (
            "[[model]]\npath = 'a'\n".to_string(),
            "dir/models.toml:1: key `model[0]`: missing field `name`",
        ),
    ] {
        let e = err_of(&src).to_string();
        assert!(e.starts_with(start), "{src}\n{e}\nwanted\n{start}");
    }
}

#[test]
fn an_absurd_figure_is_refused_in_a_short_line() {
    // `1e300` was written out as 301 digits.
    let e = err_of("[sweep]\nci_target = 1e300\n[[model]]\nname='a'\npath='a'\n");
    assert_eq!(
        e.message, "1e300 is out of range: must be between 0.0001 and 0.5",
        "{e}"
    );
    let e = err_of("[sweep]\nmax_seconds = 1e300\n[[model]]\nname='a'\npath='a'\n");
    assert_eq!(
        e.message, "1e300 is out of range: must be between 0.001 and 10000000",
        "{e}"
    );
}

/// The fuzzer's hand-written seeds for `[speculative]` and `[tune]` stay valid, so that it
/// starts inside those tables rather than at their errors.
#[test]
fn the_fuzz_seeds_of_the_speculative_and_tune_tables_parse() {
    let seeds = [
        include_str!("../../fuzz/seeds/models_toml/speculative.toml"),
        include_str!("../../fuzz/seeds/models_toml/speculative-minimal.toml"),
        include_str!("../../fuzz/seeds/models_toml/tune.toml"),
        include_str!("../../fuzz/seeds/models_toml/tune-margin.toml"),
    ];
    for (i, s) in seeds.iter().enumerate() {
        let c = parse_str(s).unwrap_or_else(|e| panic!("seed {i}: {e}"));
        assert_eq!(c.speculative.is_some(), i < 2, "seed {i}");
        assert_eq!(c.tune.is_some(), i >= 2, "seed {i}");
    }
}

#[test]
fn the_tokens_axis_defaults_to_random_and_takes_the_sweeps_text_file() {
    let c = parse_str(MINIMAL).unwrap();
    assert_eq!(c.models[0].axes.tokens, vec![PromptTokens::Random]);
    assert_eq!(c.text, None);
    let c = parse_str(&format!(
        "[sweep]\ntokens = ['random', 'text']\ntext = 'prompts.txt'\n{MINIMAL}\
         [[model]]\nname = 'b'\npath = 'b'\n[model.sweep]\ntokens = 'text'\n"
    ))
    .unwrap();
    assert_eq!(
        c.models[0].axes.tokens,
        vec![PromptTokens::Random, PromptTokens::Text]
    );
    assert_eq!(c.models[1].axes.tokens, vec![PromptTokens::Text]);
    assert_eq!(c.text.as_deref(), Some(Path::new("dir/prompts.txt")));
}

#[test]
fn a_text_axis_without_its_file_or_a_file_no_test_reads_is_one_line() {
    for (src, want) in [
        (
            format!("[sweep]\ntokens = 'text'\n{MINIMAL}"),
            "dir/models.toml:2: key `sweep.tokens`: tokens = \"text\" decodes the [sweep] \
             table's `text` file: set text = \"...\"",
        ),
        (
            format!("[sweep]\ntext = 'p.txt'\n{MINIMAL}"),
            "dir/models.toml:2: key `sweep.text`: no test reads `text`: add tokens = [\"text\"]",
        ),
        (
            format!("[sweep]\ntokens = 'words'\n{MINIMAL}"),
            "dir/models.toml:2: key `sweep.tokens`: \"words\" is not a token source: use \
             \"random\"",
        ),
        (
            format!("{MINIMAL}[model.sweep]\ntext = 'p.txt'\n"),
            "dir/models.toml:6: key `model[0].sweep.text`: `text` is read once for the whole \
             run: set it in the top-level [sweep] table",
        ),
        (
            format!("[sweep]\ntokens = 'text'\ntext = ' '\n{MINIMAL}"),
            "dir/models.toml:3: key `sweep.text`: the text file's path is empty",
        ),
    ] {
        let e = err_of(&src).to_string();
        assert!(e.starts_with(want), "{e}\n  does not start with\n{want}");
    }
}
