//! The bad-input table, continued: the model file, the results directory and the command line.

use std::ffi::OsString;

use tpsbench::gguf::Value;
use tpsbench::gguf::tiny;

use super::cases::*;

pub fn model_results_and_command_line_cases() -> Vec<Case> {
    let mut v = vec![
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
            "synth a draft preset with `--shrink`",
            |d| {
                let out = d.join("x.gguf");
                let a = [
                    "synth",
                    "--preset",
                    "tiny-eagle3",
                    "--shrink",
                    "2",
                    "--output",
                ];
                a.iter().map(OsString::from).chain([out.into()]).collect()
            },
            2,
            "tiny-eagle3: a draft made for tiny-moe: --shrink and --layers do not apply",
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
        // Real-text tests' settings (docs/configuration.md).
        case(
            "tokens = \"text\" without text",
            |d| sweep(d, "tokens = 'text'"),
            2,
            "key `sweep.tokens`: tokens = \"text\" decodes the [sweep] table's `text` file",
        ),
        case(
            "text that no test reads",
            |d| sweep(d, "text = 'p.txt'"),
            2,
            "key `sweep.text`: no test reads `text`",
        ),
        case(
            "a token source that is neither",
            |d| sweep(d, "tokens = 'words'"),
            2,
            "\"words\" is not a token source",
        ),
        case(
            "the text file missing",
            |d| sweep(d, "tokens = 'text'\ntext = 'none.txt'"),
            2,
            "cannot read the prompt file",
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
        |_| vec!["frobnicate".into()],
        "error: unrecognized subcommand 'frobnicate'",
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
    v.push(case(
        "noise floor above one",
        |_| {
            ["compare", "a", "b", "--noise", "1.5"]
                .map(OsString::from)
                .to_vec()
        },
        2,
        "--noise and --fail-threshold are fractions between 0 and 1",
    ));
    v.push(case(
        "noise floor from one launch",
        |d| {
            let f = d.join("one.json");
            std::fs::write(&f, include_str!("../../fixtures/leaderboard/sweep.json")).unwrap();
            vec!["noise".into(), f.into_os_string()]
        },
        2,
        "1 file(s) give 0 degree(s) of freedom between launches",
    ));
    v
}
