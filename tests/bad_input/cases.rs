//! The bad-input table: each case prepares a directory and names what `tpsbench` must say.

use std::ffi::OsString;
use std::path::Path;
use std::sync::OnceLock;

use tpsbench::gguf::Value;
use tpsbench::gguf::tiny;
use tpsbench::gguf::writer::{Document, TensorData, write_gguf};

/// One bad-input case.
pub struct Case {
    pub what: &'static str,
    /// Prepares files in the directory and returns the arguments after `tpsbench`.
    pub setup: fn(&Path) -> Vec<OsString>,
    pub code: i32,
    pub stderr: &'static str,
    /// How many stderr lines are allowed (1 for our errors; clap's usage errors are longer).
    pub max_lines: usize,
    /// For a run whose tests fail (exit 1): text the result file records as the error.
    pub recorded: Option<&'static str>,
}

pub const fn case(
    what: &'static str,
    setup: fn(&Path) -> Vec<OsString>,
    code: i32,
    stderr: &'static str,
) -> Case {
    Case {
        what,
        setup,
        code,
        stderr,
        max_lines: 1,
        recorded: None,
    }
}

/// A run that starts but whose test fails: exit 1, the reason recorded in the result file.
pub const fn failed_test(
    what: &'static str,
    setup: fn(&Path) -> Vec<OsString>,
    recorded: &'static str,
) -> Case {
    Case {
        recorded: Some(recorded),
        ..case(what, setup, 1, "1 of 1 tests failed")
    }
}

pub fn tiny_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| gguf_bytes(&tiny::document(1)))
}

pub fn gguf_bytes(doc: &Document) -> Vec<u8> {
    let mut b = Vec::new();
    write_gguf(&mut b, doc).unwrap();
    b
}

/// The tiny model with one metadata key replaced (or removed).
pub fn tiny_with(key: &str, v: Option<Value>) -> Vec<u8> {
    let mut d = tiny::document(1);
    d.metadata.retain(|(k, _)| k != key);
    d.metadata.extend(v.map(|v| (key.to_string(), v)));
    gguf_bytes(&d)
}

pub fn tiny_with_tensor_type(name: &str, ty: u32) -> Vec<u8> {
    let mut d = tiny::document(1);
    let t = d.tensors.iter_mut().find(|t| t.name == name).unwrap();
    t.ggml_type = ty;
    t.data = TensorData::Zeros;
    gguf_bytes(&d)
}

pub const SWEEP: &str =
    "[sweep]\nn_prompt = 16\nn_gen = 0\nrepetitions = 1\nwarmup = 0\nn_threads = 1\n";

/// `run` with a config over `model` (written as tiny.gguf) and the given sweep.
pub fn run_with(dir: &Path, sweep: &str, model: &[u8]) -> Vec<OsString> {
    std::fs::write(dir.join("tiny.gguf"), model).unwrap();
    write_config(dir, sweep, "tiny.gguf")
}

pub fn write_config(dir: &Path, sweep: &str, model_path: &str) -> Vec<OsString> {
    let config = dir.join("models.toml");
    std::fs::write(
        &config,
        format!("{sweep}\n[[model]]\nname = \"tiny\"\npath = \"{model_path}\"\n"),
    )
    .unwrap();
    run_args(dir, &config)
}

pub fn run_args(dir: &Path, config: &Path) -> Vec<OsString> {
    vec![
        "run".into(),
        "--quiet".into(),
        "--config".into(),
        config.into(),
        "--results-dir".into(),
        dir.join("results").into(),
    ]
}

pub fn config_text(dir: &Path, text: &str) -> Vec<OsString> {
    let config = dir.join("models.toml");
    std::fs::write(&config, text).unwrap();
    run_args(dir, &config)
}

/// The base sweep with `lines` added; a key in `lines` replaces the base's.
pub fn sweep(dir: &Path, lines: &str) -> Vec<OsString> {
    let key = |l: &str| l.split('=').next().unwrap_or("").trim().to_string();
    let mut text: Vec<&str> = SWEEP
        .lines()
        .filter(|l| !lines.lines().any(|x| key(x) == key(l)))
        .collect();
    text.extend(lines.lines());
    run_with(dir, &(text.join("\n") + "\n"), tiny_bytes())
}

/// `args` with the results directory replaced.
pub fn results_dir(mut args: Vec<OsString>, dir: &Path) -> Vec<OsString> {
    let i = args.iter().position(|a| a == "--results-dir").unwrap();
    args[i + 1] = dir.into();
    args
}

pub fn model(dir: &Path, bytes: &[u8]) -> Vec<OsString> {
    run_with(dir, SWEEP, bytes)
}

pub fn cases() -> Vec<Case> {
    let mut v = vec![
        // The configuration file.
        case(
            "config file missing",
            |d| run_args(d, &d.join("nope.toml")),
            2,
            "nope.toml: cannot read the configuration: No such file",
        ),
        case(
            "config path is a directory",
            |d| run_args(d, d),
            2,
            "cannot read the configuration: Is a directory",
        ),
        case(
            "config is not UTF-8",
            |d| {
                std::fs::write(d.join("models.toml"), b"\xff\xfe[sweep]").unwrap();
                run_args(d, &d.join("models.toml"))
            },
            2,
            "cannot read the configuration: stream did not contain valid UTF-8",
        ),
        case(
            "config empty",
            |d| config_text(d, ""),
            2,
            "models.toml: key `model`: nothing to measure: no [[model]] entries",
        ),
        case(
            "TOML syntax error",
            |d| config_text(d, "[sweep\nn_batch = 1\n"),
            2,
            "models.toml:1: invalid table header",
        ),
        case(
            "integer too large for TOML",
            |d| sweep(d, "seed = 99999999999999999999"),
            2,
            "models.toml:7:",
        ),
        case(
            "unknown key",
            |d| sweep(d, "n_batches = 4"),
            2,
            "models.toml:7: key `sweep.n_batches`: unknown field `n_batches`, did you mean `n_batch`?",
        ),
        case(
            "unknown key in a model's sweep",
            |d| {
                config_text(
                    d,
                    "[[model]]\nname = \"m\"\npath = \"m.gguf\"\n[model.sweep]\nn_thread = 2\n",
                )
            },
            2,
            "models.toml:5: key `model[0].sweep.n_thread`: unknown field `n_thread`, did you mean `n_threads`?",
        ),
        case(
            "unknown table",
            |d| config_text(d, "[sweeps]\nn_gen = 4\n"),
            2,
            "models.toml:1: key `sweeps`: unknown field `sweeps`, did you mean `sweep`?",
        ),
        case(
            "unknown serving key",
            |d| {
                run_with(
                    d,
                    &format!("{SWEEP}[serving]\nn_paralel = 2\n"),
                    tiny_bytes(),
                )
            },
            2,
            "key `serving.n_paralel`: unknown field `n_paralel`, did you mean `n_parallel`?",
        ),
        case(
            "unknown key with nothing close",
            |d| sweep(d, "frobnicate = 1"),
            2,
            "models.toml:7: key `sweep.frobnicate`: unknown field `frobnicate`, expected one of",
        ),
        case(
            "wrong type",
            |d| sweep(d, "n_batch = \"big\""),
            2,
            "key `sweep.n_batch`: expected an integer, got string",
        ),
        case(
            "n_batch 0",
            |d| sweep(d, "n_batch = 0"),
            2,
            "key `sweep.n_batch`: 0 is out of range: must be between 1 and 1048576",
        ),
        case(
            "n_ubatch 0",
            |d| sweep(d, "n_ubatch = [512, 0]"),
            2,
            "key `sweep.n_ubatch`: 0 is out of range",
        ),
        case(
            "empty list",
            |d| sweep(d, "n_threads = []"),
            2,
            "key `sweep.n_threads`: the list is empty",
        ),
        case(
            "nothing to measure",
            |d| run_with(d, "[sweep]\nn_prompt = 0\nn_gen = 0\n", tiny_bytes()),
            2,
            "nothing to measure: n_prompt and n_gen are all 0",
        ),
        case(
            "unknown KV cache type",
            |d| sweep(d, "type_k = \"q9_9\""),
            2,
            "key `sweep.type_k`: unknown KV cache type \"q9_9\"",
        ),
        case(
            "unknown flash attention policy",
            |d| sweep(d, "flash_attn = \"maybe\""),
            2,
            "\"maybe\" is not a flash attention policy",
        ),
        case(
            "repetitions 0",
            |d| run_with(d, "[sweep]\nn_prompt = 16\nrepetitions = 0\n", tiny_bytes()),
            2,
            "key `sweep.repetitions`: 0 is out of range",
        ),
        case(
            "negative thread count",
            |d| sweep(d, "n_threads = -1"),
            2,
            "key `sweep.n_threads`: -1 is out of range",
        ),
        case(
            "absurd thread count",
            |d| sweep(d, "n_threads = 5000"),
            2,
            "key `sweep.n_threads`: 5000 is out of range: must be between 1 and 4096",
        ),
        case(
            "run setting in a model's sweep",
            |d| {
                config_text(
                    d,
                    "[[model]]\nname = \"m\"\npath = \"m.gguf\"\n[model.sweep]\nwarmup = 2\n",
                )
            },
            2,
            "key `model[0].sweep.warmup`: run settings belong in the top-level [sweep] table",
        ),
        case(
            "model name with a slash",
            |d| config_text(d, "[[model]]\nname = \"a/b\"\npath = \"m.gguf\"\n"),
            2,
            "key `model[0].name`: a model name must be non-empty and contain no '/'",
        ),
        case(
            "duplicate model names",
            |d| {
                config_text(
                    d,
                    "[[model]]\nname = \"m\"\npath = \"a.gguf\"\n[[model]]\nname = \"m\"\npath = \"b.gguf\"\n",
                )
            },
            2,
            "duplicate model name \"m\"",
        ),
        case(
            "empty model path",
            |d| config_text(d, "[[model]]\nname = \"m\"\npath = \"\"\n"),
            2,
            "key `model[0].path`: the model path is empty",
        ),
        // The model file.
        case(
            "model file missing",
            |d| write_config(d, SWEEP, "missing.gguf"),
            2,
            "missing.gguf: no such file",
        ),
        case(
            "model path is a directory",
            |d| write_config(d, SWEEP, "."),
            2,
            "is a directory, not a GGUF file",
        ),
        case(
            "model path is a device",
            |d| write_config(d, SWEEP, "/dev/null"),
            2,
            "/dev/null: is not a regular file",
        ),
        case(
            "model file empty",
            |d| model(d, b""),
            2,
            "tiny.gguf: the file is empty",
        ),
        case(
            "model file is text",
            |d| model(d, b"this is not a model\n"),
            2,
            "not a GGUF file: the magic bytes are [74, 68, 69, 73]",
        ),
        case(
            "model truncated in the header",
            |d| model(d, &tiny_bytes()[..3000]),
            2,
            "truncated or corrupt",
        ),
        case(
            "model truncated in the data",
            |d| model(d, &tiny_bytes()[..tiny_bytes().len() / 2]),
            2,
            "extends past the end of the",
        ),
        case(
            "unsupported GGUF version",
            |d| {
                let mut b = tiny_bytes().to_vec();
                b[4] = 1;
                model(d, &b)
            },
            2,
            "unsupported GGUF version 1",
        ),
        case(
            "huge tensor count",
            |d| {
                let mut b = tiny_bytes().to_vec();
                b[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
                model(d, &b)
            },
            2,
            "more than a 5501952-byte file can hold",
        ),
        case(
            "unknown tensor type",
            |d| {
                // The writer cannot size an unknown type: write F32, then patch the type.
                let mut b = tiny_bytes().to_vec();
                patch_tensor_type(&mut b, "output_norm.weight", 99);
                model(d, &b)
            },
            2,
            "tensor `output_norm.weight` has unknown ggml type 99",
        ),
        case(
            "general.architecture missing",
            |d| model(d, &tiny_with("general.architecture", None)),
            2,
            "metadata `general.architecture` is missing",
        ),
        case(
            "hyperparameter of the wrong type",
            |d| {
                model(
                    d,
                    &tiny_with("llama.embedding_length", Some(Value::F32(256.0))),
                )
            },
            2,
            "metadata `llama.embedding_length` must be a uint32, not float32 256",
        ),
        // Each of these crashed llama.cpp (SIGABRT/SIGSEGV) before the validator.
        case(
            "block_count 0 (GGML_ASSERT)",
            |d| model(d, &tiny_with("llama.block_count", Some(Value::U32(0)))),
            2,
            "`llama.block_count` is 0; llama.cpp supports 1 to 512 layers",
        ),
        case(
            "head_count_kv overflowing 32 bits (GGML_ASSERT)",
            |d| {
                let v = Some(Value::U32(0x8000_0002));
                model(d, &tiny_with("llama.attention.head_count_kv", v))
            },
            2,
            "overflow llama.cpp's 32-bit sizes",
        ),
        case(
            "NaN norm epsilon (GGML_ASSERT)",
            |d| {
                let v = Some(Value::F32(f32::NAN));
                model(d, &tiny_with("llama.attention.layer_norm_rms_epsilon", v))
            },
            2,
            "must be a finite, non-negative float32, not float32 NaN",
        ),
        case(
            "experts without expert_used_count (GGML_ASSERT)",
            |d| model(d, &tiny_with("llama.expert_count", Some(Value::U32(4)))),
            2,
            "inconsistent mixture-of-experts metadata",
        ),
        case(
            "unknown rope scaling type (GGML_ASSERT)",
            |d| {
                let v = Some(Value::String("warp".into()));
                model(d, &tiny_with("llama.rope.scaling.type", v))
            },
            2,
            "`llama.rope.scaling.type` is the string \"warp\"",
        ),
        case(
            "duplicate tokens (GGML_ASSERT)",
            |d| {
                let mut doc = tiny::document(1);
                for (k, v) in &mut doc.metadata {
                    if let (true, Value::Array(a)) = (k == "tokenizer.ggml.tokens", v) {
                        a[10] = a[11].clone();
                    }
                }
                model(d, &gguf_bytes(&doc))
            },
            2,
            "token 11 \"<0x08>\" appears twice",
        ),
        case(
            "bert vocabulary with byte tokens (GGML_ABORT)",
            |d| {
                let v = Some(Value::String("bert".into()));
                model(d, &tiny_with("tokenizer.ggml.model", v))
            },
            2,
            "cannot have",
        ),
        case(
            "Q8_K weight (SIGSEGV)",
            |d| model(d, &tiny_with_tensor_type("blk.0.attn_q.weight", 15)),
            2,
            "type Q8_K, which ggml uses only for activations",
        ),
        case(
            "I32 token embedding (GGML_ABORT)",
            |d| model(d, &tiny_with_tensor_type("token_embd.weight", 26)),
            2,
            "cannot compute with integer or F64 weights",
        ),
        case(
            "F16 norm weight (SIGABRT)",
            |d| model(d, &tiny_with_tensor_type("output_norm.weight", 1)),
            2,
            "is one-dimensional (a norm or bias) but has type F16",
        ),
        // Files llama.cpp refuses itself: a run-time failure, recorded, exit 1.
        failed_test(
            "missing tensor (llama.cpp refuses)",
            |d| {
                let mut doc = tiny::document(1);
                doc.tensors.retain(|t| t.name != "blk.0.attn_q.weight");
                model(d, &gguf_bytes(&doc))
            },
            "tiny.gguf: tensor 'blk.0.attn_q.weight' not found",
        ),
        failed_test(
            "quantized V cache without flash attention (llama.cpp refuses)",
            |d| sweep(d, "type_v = \"q4_0\"\nflash_attn = \"off\""),
            "quantized V cache requires flash_attn to be enabled",
        ),
        failed_test(
            "context beyond the model's training context",
            |d| sweep(d, "n_prompt = 8192"),
            "the test needs a context of 8192 tokens but the model was trained for 4096",
        ),
        // The results directory.
        case(
            "results directory is a file",
            |d| {
                std::fs::write(d.join("results"), "").unwrap();
                results_dir(sweep(d, ""), &d.join("results"))
            },
            2,
            "results path is a file: ",
        ),
        case(
            "results directory below a file",
            |d| {
                std::fs::write(d.join("file"), "").unwrap();
                results_dir(sweep(d, ""), &d.join("file/results"))
            },
            2,
            "file/results: Not a directory",
        ),
        // The command line.
        case(
            "filter matching nothing",
            |d| {
                let mut a = sweep(d, "");
                a.extend(["--filter".into(), "nothing-matches".into()]);
                a
            },
            2,
            "no test matches the filter [\"nothing-matches\"]",
        ),
        case(
            "synth into a path below a file",
            |d| {
                std::fs::write(d.join("file"), "").unwrap();
                let out = d.join("file/tiny.gguf");
                vec!["synth".into(), "--output".into(), out.into()]
            },
            2,
            "cannot create",
        ),
        case(
            "synth unknown preset",
            |d| {
                let out = d.join("x.gguf");
                let a = ["synth", "--preset", "gpt-9", "--output"];
                a.iter().map(OsString::from).chain([out.into()]).collect()
            },
            2,
            "unknown preset \"gpt-9\"",
        ),
    ];
    let usage = |what, setup, stderr| Case {
        what,
        setup,
        code: 2,
        stderr,
        max_lines: 6,
        recorded: None,
    };
    v.push(usage(
        "unknown subcommand",
        |_| vec!["bench".into()],
        "error: unrecognized subcommand 'bench'",
    ));
    // Values clap rejects: one line, naming the option and the value.
    v.push(case(
        "unknown output format",
        |_| ["run", "--output", "xml"].map(OsString::from).to_vec(),
        2,
        "error: --output xml: use one of md, json, jsonl, csv",
    ));
    v.push(case(
        "shard index out of range",
        |_| ["run", "--shard", "2/2"].map(OsString::from).to_vec(),
        2,
        "error: --shard 2/2: invalid shard \"2/2\": expected INDEX/COUNT",
    ));
    v.push(case(
        "shard without a value",
        |_| ["run", "--shard"].map(OsString::from).to_vec(),
        2,
        "error: --shard: a value is required",
    ));
    v.push(case(
        "alpha not a number",
        |_| {
            ["compare", "a", "b", "--alpha", "x"]
                .map(OsString::from)
                .to_vec()
        },
        2,
        "error: --alpha x: invalid float literal",
    ));
    v
}

/// Sets a tensor's type field in place: the 4 bytes after its name, dimension count and
/// dimensions.
pub fn patch_tensor_type(b: &mut [u8], name: &str, ty: u32) {
    let mut key = (name.len() as u64).to_le_bytes().to_vec();
    key.extend_from_slice(name.as_bytes());
    let at = b.windows(key.len()).position(|w| w == key).unwrap() + key.len();
    let n_dims = u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let ty_at = at + 4 + 8 * n_dims;
    b[ty_at..ty_at + 4].copy_from_slice(&ty.to_le_bytes());
}
