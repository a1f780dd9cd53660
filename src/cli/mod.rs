//! Command-line interface. Each subcommand's options are its own `clap::Args` struct, next
//! to the code behind it, with no doc comment: its help is the variant's doc here. Each
//! command returns an [`Outcome`], which the binary's `main` turns into the exit code.

mod bench;
mod compare;
mod info;
mod ladder;
mod outcome;
mod run;
mod tools;
mod tune;

pub use outcome::Outcome;

use std::io::Write;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "tpsbench",
    version,
    about = "Benchmark local LLM inference through llama.cpp: prefill and decode tokens/s over a models.toml sweep"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the sweep in a models.toml and write one result file.
    ///
    /// A configuration with a [tune] table is raced instead, as `tpsbench tune` races it:
    /// stdout ends with the tune's answer (docs/tune.md).
    ///
    /// Example: tpsbench run --config models.toml --filter tg --output json
    Run(run::Args),
    /// Compare two result sets: files, directories of result files, or baseline names.
    ///
    /// Tests are joined on the model file and every parameter; a parameter that takes one
    /// value in A and another in B (e.g. n_threads 1 vs 2) is what is compared. Verdicts come
    /// from the medians of rounds (`run --rounds N`). Separate launches (two runs) are judged
    /// against the noise floor between launches (`tpsbench noise`, --noise, or an assumed
    /// 7%) added to their rounds' spread; two sides of one run are paired by round. "no
    /// change" only when the whole
    /// interval lies inside ±--threshold. Exit code 1 on a significant slowdown beyond
    /// --fail-threshold.
    ///
    /// Example: tpsbench compare results/old.json results/new.json --fail-threshold 0.03
    Compare(compare::Args),
    /// Measure this machine's noise floor from A/A launches: the result files of one
    /// configuration run as separate launches (3 or more), the sd of their levels pooled over
    /// the tests, stored per machine for `compare` and `--baseline` to judge separate
    /// launches by.
    ///
    /// Example: for i in 1 2 3 4; do tpsbench run --results-dir aa; done; tpsbench noise aa
    Noise(compare::NoiseArgs),
    /// Build LEADERBOARD.md and a self-contained index.html from result files.
    ///
    /// Example: tpsbench leaderboard results/ --exclude-build deadbeef
    Leaderboard(crate::report::leaderboard::Options),
    /// Validate result files and add them to a published set, redacted: absolute paths cut to
    /// file names and the host name replaced by a label (docs/leaderboard.md).
    ///
    /// Example: tpsbench publish results/20261202T104550Z-vm.json --as epyc-2c
    Publish(crate::report::publish::Options),
    /// Join result files of one sweep run in shards (`run --shard i/n`) into one file.
    ///
    /// The inputs must be one whole sweep: one plan hash, every shard exactly once, every
    /// shard finished. Files from an older tpsbench (no shard recorded) are merged unchecked.
    ///
    /// Example: tpsbench merge results/merged.json shards/*.json
    Merge(tools::MergeArgs),
    /// Convert a result file to another format on stdout.
    ///
    /// Example: tpsbench export results/x.json --format llama-bench-json > x-llama-bench.json
    Export(tools::ExportArgs),
    /// Show the machine, the llama.cpp build and the devices llama.cpp sees.
    ///
    /// Example: tpsbench info --json
    Info(info::Args),
    /// Write a synthetic GGUF model (random weights, valid vocabulary): no download needed.
    ///
    /// Example: tpsbench synth --preset llama-3-8b --type Q4_K_M --output models/l3.gguf
    Synth(crate::ladder::synth::SynthOptions),
    /// Build the [[ladder]] variants of a models.toml, measure their quality against the
    /// reference variant, run the speed sweep on them and print one table.
    ///
    /// Example: tpsbench ladder --config ladder.toml
    Ladder(ladder::Args),
    /// Race the configurations of the sweep for the [tune] objective within its limits:
    /// every candidate one round, then only the survivors, until one is left, the rest are
    /// established slower or tied within 2%, or the budget ends; prints the answer and the
    /// commands to run it.
    ///
    /// Example: tpsbench tune --config models.toml --max-rounds 20
    Tune(tune::Args),
    /// llama-bench's command line, run as tpsbench runs a models.toml: the same flags, comma
    /// lists and defaults, the tests in interleaved rounds (--rounds, default 3), one result
    /// file, llama-bench's table with the intervals beside it. --print-config writes the
    /// models.toml it stands for; a flag tpsbench does not have is refused.
    ///
    /// Example: tpsbench bench -m a.gguf -m b.gguf -p 512 -n 128 -ngl 99 -fa 0,1
    Bench(bench::Args),
}

/// Parses the arguments and runs the command.
pub fn main() -> Result<Outcome> {
    match Cli::parse().command {
        Command::Run(a) => run::run(&a),
        Command::Compare(a) => {
            compare::compare(&a, std::path::Path::new(crate::report::compare::NOISE_DIR))
        }
        Command::Noise(a) => compare::noise(&a),
        Command::Leaderboard(a) => Ok(Outcome::of_code(crate::report::leaderboard::command(&a))),
        Command::Publish(a) => Ok(Outcome::of_code(crate::report::publish::command(&a))),
        Command::Merge(a) => tools::merge(&a),
        Command::Export(a) => tools::export(&a),
        Command::Info(a) => info::info(&a),
        Command::Synth(a) => tools::synth(a),
        Command::Ladder(a) => ladder::ladder(a),
        Command::Tune(a) => tune::tune(&a),
        Command::Bench(a) => bench::bench(&a),
    }
}

/// `bytes` on stdout, a failed write an error.
fn print(bytes: &[u8]) -> Result<()> {
    std::io::stdout()
        .write_all(bytes)
        .context("writing to stdout")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }

    /// The exclusions are the library's own struct, flattened: `--kld-budget` still comes
    /// between them and `--strict` (its `display_order`).
    #[test]
    fn leaderboard_help_lists_its_options_in_their_order() {
        let mut cli = Cli::command();
        let lb = cli.find_subcommand_mut("leaderboard").unwrap();
        let help = lb.render_long_help().to_string();
        let at = |o: &str| help.find(&format!("\n      {o}")).expect(o);
        let order = [
            "--out-dir",
            "--exclude-build",
            "--exclude-tool-version",
            "--kld-budget",
            "--strict",
            "--check",
        ];
        assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{help}");
    }
}
