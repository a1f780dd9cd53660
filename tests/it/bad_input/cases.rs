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
    let mut v = configuration_cases();
    v.extend(super::more_cases::model_results_and_command_line_cases());
    v.extend(super::untrusted_cases::untrusted_cases());
    v.extend(super::knob_cases::knob_cases());
    v.extend(super::tune_cases::tune_cases());
    v.extend(super::ladder_cases::ladder_cases());
    v.extend(super::gpu_cases::gpu_cases());
    v.extend(super::recipe_cases::recipe_cases());
    v
}

/// The configuration file.
fn configuration_cases() -> Vec<Case> {
    vec![
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
            "rounds 0",
            |d| run_with(d, "[sweep]\nn_prompt = 16\nrounds = 0\n", tiny_bytes()),
            2,
            "key `sweep.rounds`: 0 is out of range",
        ),
        case(
            "rounds on the command line 0",
            |d| {
                let mut a = run_with(d, "[sweep]\nn_prompt = 16\n", tiny_bytes());
                a.extend(["--rounds".into(), "0".into()]);
                a
            },
            2,
            "--rounds must be at least 1",
        ),
        case(
            "rounds auto with nothing to compare and no budget",
            |d| sweep(d, "rounds = \"auto\""),
            2,
            "rounds = \"auto\" has nothing to resolve here",
        ),
        case(
            "max_rounds below 2",
            |d| sweep(d, "rounds = \"auto\"\nmax_rounds = 1"),
            2,
            "key `sweep.max_rounds`: 1 is out of range: must be between 2 and 10000",
        ),
        case(
            "max_rounds without auto rounds",
            |d| sweep(d, "max_rounds = 5"),
            2,
            "key `sweep.max_rounds`: max_rounds is the budget of rounds = \"auto\"",
        ),
        case(
            "--max-rounds below 2",
            |d| {
                let mut a = sweep(d, "");
                a.extend(["--rounds", "auto", "--max-rounds", "1"].map(OsString::from));
                a
            },
            2,
            "--max-rounds 1: must be between 2 and 10000",
        ),
        case(
            "--rounds auto with --isolate",
            |d| {
                let mut a = sweep(d, "n_threads = [1, 2]");
                a.extend(["--rounds", "auto", "--isolate"].map(OsString::from));
                a
            },
            2,
            "--rounds auto does not combine with --isolate",
        ),
        case(
            "--rounds auto resuming a file of fixed rounds",
            |d| {
                let mut a = sweep(d, "n_threads = [1, 2]\nrounds = 2");
                let first = assert_cmd::Command::cargo_bin("tpsbench")
                    .unwrap()
                    .args(&a)
                    .current_dir(d)
                    .output()
                    .unwrap();
                assert!(first.status.success(), "{first:?}");
                let file = std::fs::read_dir(d.join("results"))
                    .unwrap()
                    .next()
                    .unwrap()
                    .unwrap()
                    .path();
                a.extend([
                    "--rounds".into(),
                    "auto".into(),
                    "--resume".into(),
                    file.into(),
                ]);
                a
            },
            2,
            "--rounds auto cannot continue it",
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
        case(
            "model without a path or an endpoint",
            |d| config_text(d, "[[model]]\nname = \"m\"\n"),
            2,
            "models.toml:2: key `model[0].path`: a model needs `path` (a GGUF file) or `endpoint` (a served model)",
        ),
        case(
            "endpoint that is not a URL",
            |d| {
                config_text(
                    d,
                    "[[model]]\nname = \"m\"\nendpoint = \"localhost:8080\"\n",
                )
            },
            2,
            "models.toml:3: key `model[0].endpoint`: \"localhost:8080\" is not an endpoint URL: it must start with http:// or https://",
        ),
        case(
            "served key without an endpoint",
            |d| {
                config_text(
                    d,
                    "[[model]]\nname = \"m\"\npath = \"m.gguf\"\napi = \"chat\"\n",
                )
            },
            2,
            "models.toml:4: key `model[0].api`: `api` applies to a served model: set `endpoint` (or `server`)",
        ),
        case(
            "goodput mode without an SLO",
            |d| {
                run_with(
                    d,
                    &format!("{SWEEP}[serving]\nmodes = [\"goodput\"]\n"),
                    tiny_bytes(),
                )
            },
            2,
            "models.toml:8: key `serving.modes`: the goodput mode needs `slo`",
        ),
        case(
            "SLO percentiles that disagree",
            |d| {
                run_with(
                    d,
                    &format!("{SWEEP}[serving]\nslo = {{ ttft_p90_ms = 500, itl_p99_ms = 50 }}\n"),
                    tiny_bytes(),
                )
            },
            2,
            "models.toml:8: key `serving.slo.ttft_p90_ms`: p90 disagrees with itl_p99_ms (p99)",
        ),
    ]
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
