//! Bad input, table-driven: each row sets up a directory, runs the real `tpsbench` binary,
//! and checks the exit code, that stderr is one line (or a bounded few) containing the
//! expected text, and that nothing panicked, aborted or died of a signal.
//! docs/bad-input.md lists the same cases with what each prints.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::OnceLock;

use assert_cmd::Command;
use tpsbench::gguf::Value;
use tpsbench::gguf::tiny;
use tpsbench::gguf::writer::{Document, TensorData, write_gguf};

/// One bad-input case.
struct Case {
    what: &'static str,
    /// Prepares files in the directory and returns the arguments after `tpsbench`.
    setup: fn(&Path) -> Vec<OsString>,
    code: i32,
    stderr: &'static str,
    /// How many stderr lines are allowed (1 for our errors; clap's usage errors are longer).
    max_lines: usize,
    /// For a run whose tests fail (exit 1): text the result file records as the error.
    recorded: Option<&'static str>,
}

const fn case(
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
const fn failed_test(
    what: &'static str,
    setup: fn(&Path) -> Vec<OsString>,
    recorded: &'static str,
) -> Case {
    Case {
        recorded: Some(recorded),
        ..case(what, setup, 1, "1 of 1 tests failed")
    }
}

fn tiny_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| gguf_bytes(&tiny::document(1)))
}

fn gguf_bytes(doc: &Document) -> Vec<u8> {
    let mut b = Vec::new();
    write_gguf(&mut b, doc).unwrap();
    b
}

/// The tiny model with one metadata key replaced (or removed).
fn tiny_with(key: &str, v: Option<Value>) -> Vec<u8> {
    let mut d = tiny::document(1);
    d.metadata.retain(|(k, _)| k != key);
    d.metadata.extend(v.map(|v| (key.to_string(), v)));
    gguf_bytes(&d)
}

fn tiny_with_tensor_type(name: &str, ty: u32) -> Vec<u8> {
    let mut d = tiny::document(1);
    let t = d.tensors.iter_mut().find(|t| t.name == name).unwrap();
    t.ggml_type = ty;
    t.data = TensorData::Zeros;
    gguf_bytes(&d)
}

const SWEEP: &str =
    "[sweep]\nn_prompt = 16\nn_gen = 0\nrepetitions = 1\nwarmup = 0\nn_threads = 1\n";

/// `run` with a config over `model` (written as tiny.gguf) and the given sweep.
fn run_with(dir: &Path, sweep: &str, model: &[u8]) -> Vec<OsString> {
    std::fs::write(dir.join("tiny.gguf"), model).unwrap();
    write_config(dir, sweep, "tiny.gguf")
}

fn write_config(dir: &Path, sweep: &str, model_path: &str) -> Vec<OsString> {
    let config = dir.join("models.toml");
    std::fs::write(
        &config,
        format!("{sweep}\n[[model]]\nname = \"tiny\"\npath = \"{model_path}\"\n"),
    )
    .unwrap();
    run_args(dir, &config)
}

fn run_args(dir: &Path, config: &Path) -> Vec<OsString> {
    vec![
        "run".into(),
        "--quiet".into(),
        "--config".into(),
        config.into(),
        "--results-dir".into(),
        dir.join("results").into(),
    ]
}

fn config_text(dir: &Path, text: &str) -> Vec<OsString> {
    let config = dir.join("models.toml");
    std::fs::write(&config, text).unwrap();
    run_args(dir, &config)
}

/// The base sweep with `lines` added; a key in `lines` replaces the base's.
fn sweep(dir: &Path, lines: &str) -> Vec<OsString> {
    let key = |l: &str| l.split('=').next().unwrap_or("").trim().to_string();
    let mut text: Vec<&str> = SWEEP
        .lines()
        .filter(|l| !lines.lines().any(|x| key(x) == key(l)))
        .collect();
    text.extend(lines.lines());
    run_with(dir, &(text.join("\n") + "\n"), tiny_bytes())
}

/// `args` with the results directory replaced.
fn results_dir(mut args: Vec<OsString>, dir: &Path) -> Vec<OsString> {
    let i = args.iter().position(|a| a == "--results-dir").unwrap();
    args[i + 1] = dir.into();
    args
}

fn model(dir: &Path, bytes: &[u8]) -> Vec<OsString> {
    run_with(dir, SWEEP, bytes)
}

fn cases() -> Vec<Case> {
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
            "models.toml: key `model`: no [[model]] entries",
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
            "models.toml:7: key `n_batches`: unknown field",
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
            "n_prompt and n_gen are all 0: nothing to measure",
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
            "cannot create the results directory",
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
    v.push(usage(
        "unknown output format",
        |_| ["run", "--output", "xml"].map(OsString::from).to_vec(),
        "error: invalid value 'xml' for '--output <OUTPUT>'",
    ));
    v
}

/// Sets a tensor's type field in place: the 4 bytes after its name, dimension count and
/// dimensions.
fn patch_tensor_type(b: &mut [u8], name: &str, ty: u32) {
    let mut key = (name.len() as u64).to_le_bytes().to_vec();
    key.extend_from_slice(name.as_bytes());
    let at = b.windows(key.len()).position(|w| w == key).unwrap() + key.len();
    let n_dims = u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let ty_at = at + 4 + 8 * n_dims;
    b[ty_at..ty_at + 4].copy_from_slice(&ty.to_le_bytes());
}

struct Outcome {
    code: Option<i32>,
    signal: Option<i32>,
    stderr: String,
    stdout: String,
    /// The errors the result file records for its tests.
    recorded: Vec<String>,
}

fn run_case(c: &Case) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let args = (c.setup)(dir.path());
    let out = Command::cargo_bin("tpsbench")
        .unwrap()
        .args(&args)
        .current_dir(dir.path())
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let mut recorded = Vec::new();
    for f in std::fs::read_dir(dir.path().join("results"))
        .into_iter()
        .flatten()
    {
        let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for t in v["tests"].as_array().unwrap() {
            recorded.extend(t["error"].as_str().map(str::to_string));
        }
    }
    Outcome {
        code: out.status.code(),
        signal: out.status.signal(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        recorded,
    }
}

/// Everything a bad-input error must be, whatever the input.
fn problems(c: &Case, o: &Outcome) -> Vec<String> {
    let mut p = Vec::new();
    if let Some(s) = o.signal {
        p.push(format!("died of signal {s}"));
    }
    if o.code != Some(c.code) {
        p.push(format!("exit code {:?}, expected {}", o.code, c.code));
    }
    let lines = o.stderr.lines().count();
    if lines == 0 || lines > c.max_lines {
        p.push(format!(
            "{lines} stderr lines, expected 1 to {}",
            c.max_lines
        ));
    }
    if !o.stderr.contains(c.stderr) {
        p.push(format!("stderr lacks {:?}", c.stderr));
    }
    for bad in [
        "panicked",
        "Aborted",
        "RUST_BACKTRACE",
        "stack backtrace",
        "GGML_ASSERT",
    ] {
        if o.stderr.contains(bad) {
            p.push(format!("stderr contains {bad:?}"));
        }
    }
    if c.code == 2 && !o.stdout.is_empty() {
        p.push("stdout is not empty".into());
    }
    if let Some(r) = c.recorded {
        if !o.recorded.iter().any(|e| e.contains(r)) {
            p.push(format!(
                "the result file records {:?}, not {r:?}",
                o.recorded
            ));
        }
    }
    p
}

#[test]
fn every_bad_input_gets_one_clear_line_and_a_non_zero_exit() {
    let mut failures = Vec::new();
    for c in cases() {
        let o = run_case(&c);
        let p = problems(&c, &o);
        if !p.is_empty() {
            failures.push(format!(
                "{}: {}\n  stderr: {}",
                c.what,
                p.join("; "),
                o.stderr.trim_end().replace('\n', "\n          ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases().len(),
        failures.join("\n")
    );
}

/// Prints the table of docs/bad-input.md from the real binary:
/// `cargo test --release --test bad_input -- --ignored --nocapture print_the_table`.
#[test]
#[ignore = "prints the documentation table; run by hand"]
fn print_the_table() {
    println!("| input | exit | stderr |\n| --- | ---: | --- |");
    for c in cases() {
        let o = run_case(&c);
        let mut line = o.stderr.lines().next().unwrap_or("").to_string();
        if let Some(e) = o.recorded.first() {
            line = format!("{line}` (recorded: `{e}");
        }
        let line = line.replace('|', "\\|");
        let line = line.replace(&*std::env::temp_dir().to_string_lossy(), "/tmp");
        println!(
            "| {} | {} | `{}` |",
            c.what,
            o.code.map_or("signal".into(), |x| x.to_string()),
            line
        );
    }
}

/// Permission errors, when they can happen: root reads and writes files whatever their
/// mode, so the check is skipped (saying so) when the test runs as root.
#[test]
fn unreadable_files_and_read_only_results_directories_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    std::fs::write(&locked, "x").unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(&locked).is_ok() {
        eprintln!("skipped: running as root, file permissions do not apply");
        return;
    }
    let table = [
        (
            "unreadable config",
            (|d: &Path| {
                let a = write_config(d, SWEEP, "tiny.gguf");
                lock(&d.join("models.toml"));
                a
            }) as fn(&Path) -> Vec<OsString>,
            "cannot read the configuration: Permission denied",
        ),
        (
            "unreadable model",
            |d: &Path| {
                let a = model(d, tiny_bytes());
                lock(&d.join("tiny.gguf"));
                a
            },
            "tiny.gguf: permission denied",
        ),
        (
            "read-only results directory",
            |d: &Path| {
                let a = sweep(d, "");
                std::fs::create_dir(d.join("results")).unwrap();
                std::fs::set_permissions(d.join("results"), PermissionsExt::from_mode(0o555))
                    .unwrap();
                a
            },
            "cannot write to the results directory",
        ),
    ];
    for (what, setup, stderr) in table {
        let c = case(what, setup, 2, stderr);
        let o = run_case(&c);
        let p = problems(&c, &o);
        assert!(p.is_empty(), "{what}: {}\n{}", p.join("; "), o.stderr);
    }
}

fn lock(p: &Path) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o000)).unwrap();
}

#[test]
fn a_panic_is_one_line_and_exit_2_and_rust_backtrace_still_works() {
    let out = Command::cargo_bin("tpsbench")
        .unwrap()
        .arg("info")
        .env("TPSBENCH_TEST_PANIC", "1")
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "error: internal error: panic requested by TPSBENCH_TEST_PANIC (at src/main.rs:"
        ),
        "{err}"
    );
    let out = Command::cargo_bin("tpsbench")
        .unwrap()
        .arg("info")
        .env("TPSBENCH_TEST_PANIC", "1")
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("panicked at") && err.contains("stack backtrace"),
        "{err}"
    );
}

/// `results::read` on damaged result files: an error naming the file, never a panic.
#[test]
fn corrupt_result_files_are_refused_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let deep = "[".repeat(100_000);
    let table: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", b"".to_vec(), "not valid JSON"),
        (
            "truncated",
            br#"{"schema_version": 1, "run": {"#.to_vec(),
            "not valid JSON",
        ),
        (
            "not UTF-8",
            b"\xff\xfe{}".to_vec(),
            "stream did not contain valid UTF-8",
        ),
        ("a JSON array", b"[1, 2]".to_vec(), "no schema_version"),
        ("null", b"null".to_vec(), "no schema_version"),
        (
            "version as a string",
            br#"{"schema_version": "1"}"#.to_vec(),
            "no schema_version",
        ),
        (
            "future version",
            br#"{"schema_version": 2}"#.to_vec(),
            "schema_version 2 is not supported",
        ),
        (
            "fields missing",
            br#"{"schema_version": 1}"#.to_vec(),
            "invalid result file: missing field",
        ),
        (
            "nesting 100000 deep",
            deep.into_bytes(),
            "not valid JSON: recursion limit exceeded",
        ),
    ];
    for (what, bytes, expected) in table {
        let p = dir.path().join(format!("{what}.json"));
        std::fs::write(&p, &bytes).unwrap();
        let e = tpsbench::results::read(&p).expect_err(what);
        assert!(e.starts_with(&p.display().to_string()), "{what}: {e}");
        assert!(e.contains(expected), "{what}: {e}");
        assert_eq!(e.lines().count(), 1, "{what}: {e}");
    }
    for p in [dir.path().to_path_buf(), dir.path().join("missing.json")] {
        let e = tpsbench::results::read(&p).unwrap_err();
        assert!(e.starts_with(&p.display().to_string()), "{e}");
    }
}

/// `tpsbench info | head -0`: the reader is gone before anything is written.
#[test]
fn a_closed_stdout_is_one_error_line_not_a_panic() {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("tpsbench"))
        .arg("info")
        .env("RUST_BACKTRACE", "1") // not a bug: no backtrace even when asked for
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        "error: writing to stdout: Broken pipe (os error 32)"
    );
}
