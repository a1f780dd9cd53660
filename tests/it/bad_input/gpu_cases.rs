//! Bad input to the GPU box's commands: `tpsbench bench` with flags or values llama-bench
//! would refuse (or tpsbench lacks), a dry run of a configuration that cannot be planned, and
//! a dataset set-up fetches that is not fetched yet.

use std::ffi::OsString;
use std::path::Path;

use super::cases::{Case, SWEEP, case, run_with, tiny_bytes};

fn bench(d: &Path, args: &[&str]) -> Vec<OsString> {
    std::fs::write(d.join("tiny.gguf"), tiny_bytes()).unwrap();
    let mut v: Vec<OsString> = vec!["bench".into(), "-m".into(), d.join("tiny.gguf").into()];
    v.extend(args.iter().map(OsString::from));
    v
}

pub fn gpu_cases() -> Vec<Case> {
    vec![
        case(
            "bench: a flash attention value llama-bench refuses",
            |d| bench(d, &["-fa", "maybe"]),
            2,
            "bench: -fa maybe: \"maybe\" is not a flash attention policy",
        ),
        case(
            "bench: a physical batch of 0",
            |d| bench(d, &["-ub", "0"]),
            2,
            "bench: -ub 0: 0 is out of range",
        ),
        case(
            "bench: a range that does not grow",
            |d| bench(d, &["-p", "64-512*1"]),
            2,
            "bench: -p 64-512*1: \"64-512*1\" is not a range that grows",
        ),
        case(
            "bench: a llama-bench flag tpsbench lacks",
            |d| bench(d, &["-pg", "512,128"]),
            2,
            "bench: -pg is a llama-bench option tpsbench does not have",
        ),
        case(
            "bench: an output llama-bench has and tpsbench not",
            |d| bench(d, &["-o", "sql"]),
            2,
            "bench: -o sql: tpsbench writes md, json, jsonl or csv",
        ),
        case(
            "bench: no model",
            |_| vec!["bench".into(), "-p".into(), "512".into()],
            2,
            "bench: no model: give one with -m FILE",
        ),
        case(
            "dry run of a configuration that cannot be planned",
            |d| {
                let mut a = run_with(d, &format!("{SWEEP}n_batch = 0\n"), tiny_bytes());
                a.push("--dry-run".into());
                a
            },
            2,
            "key `sweep.n_batch`: 0 is out of range",
        ),
        case(
            "a dataset set-up fetches, not fetched yet",
            |d| {
                run_with(
                    d,
                    &format!(
                        "{SWEEP}tokens = \"text\"\ntext = \"datasets/ShareGPT_V3_unfiltered_cleaned_split.json\"\n"
                    ),
                    tiny_bytes(),
                )
            },
            2,
            "ShareGPT_V3_unfiltered_cleaned_split.json: not fetched yet: run `scripts/setup --dataset sharegpt`",
        ),
    ]
}
