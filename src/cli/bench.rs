//! `tpsbench bench`: llama-bench's command line. The arguments become the models.toml they
//! stand for (`config::bench_args`), written to the results directory and run as
//! `tpsbench run --config FILE` runs it: one plan, one result file, one Markdown table.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;

use super::outcome::Outcome;
use crate::config::bench_args;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// llama-bench's options: -m FILE (repeat or comma list), -p, -n, -d, -b, -ub, -ngl,
    /// -sm, -mg, -fa, -ctk, -ctv, -nkvo, -t, -C, --cpu-strict, --poll, -ncmoe, -dev, -ts,
    /// -ot, -lm, -lzm, -embd, -nopo, --no-host, --repack, -fitt, -fitc (comma lists and
    /// ranges as llama-bench: 1-8*2), -r N, -o md|json|jsonl|csv, -v, --no-warmup; and
    /// tpsbench's --rounds N|auto (default 3), --print-config, --dry-run.
    #[arg(
        allow_hyphen_values = true,
        trailing_var_arg = true,
        num_args = 0..,
        value_name = "OPTIONS"
    )]
    args: Vec<String>,
}

/// Runs llama-bench's command line as a sweep, or prints its models.toml.
pub(super) fn bench(a: &Args) -> Result<Outcome> {
    let b = bench_args::parse(&a.args)?;
    if b.print_config {
        print!("{}", b.to_toml(None));
        return Ok(Outcome::Done);
    }
    let text = b.to_toml(Some(&std::env::current_dir()?));
    // A run keeps the configuration it ran beside its results; a dry run writes nothing
    // there (its file lives in the temporary directory until the plan is shown).
    let dir = match b.dry_run {
        true => std::env::temp_dir(),
        false => PathBuf::from("results"),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let hash = crate::util::hash::sha256_hex(&text);
    let file = dir.join(format!("bench-{}.toml", &hash[..12]));
    std::fs::write(&file, &text).with_context(|| format!("writing {}", file.display()))?;
    let _remove = b.dry_run.then(|| RemoveOnDrop(file.clone()));
    let output = match b.output.as_str() {
        "json" => "llama-bench-json",
        "jsonl" => "llama-bench-jsonl",
        other => other,
    };
    let mut argv = vec!["tpsbench", "run", "--output", output, "--config"];
    let file = file.display().to_string();
    argv.push(&file);
    argv.extend(b.verbose.then_some("--verbose"));
    argv.extend(b.dry_run.then_some("--dry-run"));
    match super::Cli::try_parse_from(argv)?.command {
        super::Command::Run(r) => super::run::run(&r),
        _ => unreachable!("parsed as run"),
    }
}

struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
