//! Command-line interface: clap definitions and the code behind each subcommand.
//! Exit codes: 0 success, 1 some tests failed, 2 bad input or a fatal error.

mod compare;
mod info;
mod ladder;
mod publish;
mod run;
mod tools;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::report::export::Format;
use crate::report::leaderboard;
pub use run::{Baselines, RunMode};

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
    /// Example: tpsbench run --config models.toml --filter tg --output json
    Run {
        /// The sweep to run.
        #[arg(long, short, default_value = "models.toml")]
        config: PathBuf,
        /// Run only tests whose id contains this text, e.g. `SmolLM2/Q4_1/pp512`; repeated flags
        /// combine as OR (`--filter pp512 --filter tg128` runs both).
        #[arg(long, short)]
        filter: Vec<String>,
        /// What to print on stdout when the run ends.
        #[arg(long, short, value_enum, default_value = "md")]
        output: Format,
        /// Directory for the result file.
        #[arg(long, default_value = "results")]
        results_dir: PathBuf,
        /// Do not write a result file.
        #[arg(long)]
        no_save: bool,
        /// No progress on stderr.
        #[arg(long, short)]
        quiet: bool,
        /// Show llama.cpp's own log on stderr.
        #[arg(long, short)]
        verbose: bool,
        /// Continue an interrupted run in this result file, skipping the tests it holds.
        ///
        /// Example: tpsbench run --resume results/20261130T030424Z-vm.json
        #[arg(long, value_name = "FILE", conflicts_with = "no_save")]
        resume: Option<PathBuf>,
        /// Run each model in a child process, so a crash in llama.cpp loses only that
        /// model's current test.
        #[arg(long, conflicts_with_all = ["resume", "no_save"])]
        isolate: bool,
        /// Run only this model (what --isolate children are given).
        #[arg(long, hide = true)]
        only_model: Option<String>,
        /// Save this run as a named baseline (as criterion's --save-baseline).
        #[arg(long, value_name = "NAME")]
        save_baseline: Option<String>,
        /// Compare this run with a named baseline; exit 1 on a significant regression.
        #[arg(long, value_name = "NAME")]
        baseline: Option<String>,
        /// Where named baselines live.
        #[arg(long, default_value = crate::report::compare::BASELINE_DIR)]
        baseline_dir: PathBuf,
        /// Run only shard INDEX of COUNT (0-based) of the plan, for sweeps over many
        /// machines; join the result files with `tpsbench merge`. Example: --shard 0/4
        #[arg(long, value_name = "INDEX/COUNT")]
        shard: Option<crate::plan::Shard>,
        /// A/B across llama.cpp builds (repeat: two or more directories of shared libraries):
        /// the plan runs on each in its own child process, rounds interleaved; prints each
        /// build's ratio to the first. Needs a `--features dynamic-link` build.
        ///
        /// Example: tpsbench run --library llama-shared/native --library llama-shared/portable
        #[arg(long, value_name = "DIR", conflicts_with_all = ["resume", "isolate", "shard", "save_baseline", "baseline"])]
        library: Vec<PathBuf>,
        /// Rounds: each pp/tg/pg test runs this many times, each in a fresh context (a fresh
        /// process with --isolate), interleaved with the other tests and rotated each round;
        /// intervals and verdicts then cover the variance between launches. Overrides
        /// `[sweep] rounds` (default 1, llama-bench's methodology). With --library: the
        /// interleaved rounds per build (default 3).
        ///
        /// `auto`: rounds are added until every comparison the answer depends on is
        /// established, within --max-rounds (default 10) and --max-rounds-seconds.
        ///
        /// Example: tpsbench run --rounds 3; tpsbench run --rounds auto --max-rounds-seconds 600
        #[arg(long, value_name = "N|auto", value_parser = run::parse_rounds)]
        rounds: Option<run::RoundsArg>,
        /// With `--rounds auto`: the most rounds (overrides `[sweep] max_rounds`).
        #[arg(long, value_name = "N")]
        max_rounds: Option<i64>,
        /// With `--rounds auto`: no round starts after this many seconds of the run
        /// (overrides `[sweep] max_rounds_seconds`).
        #[arg(long, value_name = "S")]
        max_rounds_seconds: Option<f64>,
    },
    /// Compare two result sets: files, directories of result files, or baseline names.
    ///
    /// Tests are joined on the model file and every parameter; a parameter that takes one
    /// value in A and another in B (e.g. n_threads 1 vs 2) is what is compared. Verdicts come
    /// from the medians of rounds (`run --rounds N`). Separate launches (two runs) are judged
    /// against the noise floor between launches (`tpsbench noise`, --noise, or an assumed
    /// 6%) added to their rounds' spread; two sides of one run are paired by round. "no
    /// change" only when the whole
    /// interval lies inside ±--threshold. Exit code 1 on a significant slowdown beyond
    /// --fail-threshold.
    ///
    /// Example: tpsbench compare results/old.json results/new.json --fail-threshold 0.03
    Compare {
        a: String,
        b: String,
        /// Significance level.
        #[arg(long, default_value_t = 0.05)]
        alpha: f64,
        /// "no change" needs the whole interval inside ±this fraction.
        ///
        /// Example: tpsbench compare a.json b.json --threshold 0.03
        #[arg(long, default_value_t = 0.02)]
        threshold: f64,
        /// The sd of ln t/s between launches (0.03 = 3%) for separate launches; default: the
        /// floor `tpsbench noise` stored for B's machine, else 6%.
        ///
        /// Example: tpsbench compare a.json b.json --noise 0.03
        #[arg(long, value_name = "FRACTION")]
        noise: Option<f64>,
        /// A significant slowdown beyond this fraction fails (exit 1).
        #[arg(long, default_value_t = 0.05)]
        fail_threshold: f64,
        /// Also leave these properties out of the join (e.g. n_batch).
        #[arg(long)]
        ignore: Vec<String>,
        /// Where named baselines live.
        #[arg(long, default_value = crate::report::compare::BASELINE_DIR)]
        baseline_dir: PathBuf,
    },
    /// Measure this machine's noise floor from A/A launches: the result files of one
    /// configuration run as separate launches (3 or more), the sd of their levels pooled over
    /// the tests, stored per machine for `compare` and `--baseline` to judge separate
    /// launches by.
    ///
    /// Example: for i in 1 2 3 4; do tpsbench run --results-dir aa; done; tpsbench noise aa
    Noise {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Where measured floors live, one file per machine.
        #[arg(long, default_value = crate::report::compare::NOISE_DIR)]
        noise_dir: PathBuf,
    },
    /// Build LEADERBOARD.md and a self-contained index.html from result files.
    ///
    /// Example: tpsbench leaderboard results/ --exclude-build deadbeef
    Leaderboard {
        /// Result files, or directories searched recursively for *.json.
        #[arg(default_value = "results")]
        paths: Vec<PathBuf>,
        /// Where LEADERBOARD.md and index.html go.
        #[arg(long, default_value = "results")]
        out_dir: PathBuf,
        /// Leave out results whose llama.cpp build (build_commit or llama-cpp-sys-2 version)
        /// contains this text (repeatable).
        #[arg(long, value_name = "TEXT")]
        exclude_build: Vec<String>,
        /// Leave out results whose tpsbench version or git commit contains this text
        /// (repeatable).
        #[arg(long, value_name = "TEXT")]
        exclude_tool_version: Vec<String>,
        /// The KLD budget of the one-line answer, in nats: the fastest quantization whose mean
        /// KLD is within it is named (with the ones it ties with). Example: --kld-budget 0.1
        #[arg(long, value_name = "NATS", default_value_t = leaderboard::answer::DEFAULT_KLD_BUDGET)]
        kld_budget: f64,
        /// Leave out flagged runs and rows (roofline at or above 100%, dirty build, started
        /// above a load average of 1.0, unmarked fixture or synthetic model, duplicates)
        /// instead of warning about them.
        #[arg(long)]
        strict: bool,
        /// Write nothing: exit 1 if LEADERBOARD.md or index.html in --out-dir differ from what
        /// the result files build (for CI). Example: tpsbench leaderboard results/published
        /// --out-dir results/published --check
        #[arg(long)]
        check: bool,
    },
    /// Validate result files and add them to a published set, redacted: absolute paths cut to
    /// file names and the host name replaced by a label (docs/leaderboard.md).
    ///
    /// Example: tpsbench publish results/20261202T104550Z-vm.json --as epyc-2c
    Publish(publish::Args),
    /// Join result files of one sweep run in shards (`run --shard i/n`) into one file.
    ///
    /// The inputs must be one whole sweep: one plan hash, every shard exactly once, every
    /// shard finished. Files from an older tpsbench (no shard recorded) are merged unchecked.
    ///
    /// Example: tpsbench merge results/merged.json shards/*.json
    Merge {
        /// The merged result file to write.
        output: PathBuf,
        /// The result files to join.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Merge even when shards are missing or unfinished (listed in the merged file under
        /// `incomplete_shards`) instead of refusing.
        #[arg(long)]
        allow_partial: bool,
    },
    /// Convert a result file to another format on stdout.
    ///
    /// Example: tpsbench export results/x.json --format llama-bench-json > x-llama-bench.json
    Export {
        /// The result file.
        file: PathBuf,
        /// The output format.
        #[arg(long, short, value_enum)]
        format: Format,
    },
    /// Show the machine, the llama.cpp build and the devices llama.cpp sees.
    ///
    /// Example: tpsbench info --json
    Info {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Re-measure host memory bandwidth instead of using the cached figure.
        #[arg(long)]
        probe: bool,
    },
    /// Write a synthetic GGUF model (random weights, valid vocabulary): no download needed.
    ///
    /// Example: tpsbench synth --preset llama-3-8b --type Q4_K_M --output models/l3.gguf
    Synth {
        /// Where to write the model.
        #[arg(long, short)]
        output: PathBuf,
        /// `tiny` (a 2-layer llama of about 1.4 M parameters, for tests) or the exact
        /// shapes of llama-2-7b, llama-3-8b, mistral-7b, qwen2.5-7b, llama-3-70b, and the
        /// mixtures of experts qwen3-30b-a3b, mixtral-8x7b and tiny-moe (for tests).
        #[arg(long, default_value = "tiny")]
        preset: String,
        /// Quantization type, as llama-quantize names it (default: F32 for tiny and tiny-moe, Q8_0 for
        /// presets).
        #[arg(long = "type", short = 't')]
        quant: Option<String>,
        /// Keep only this many layers (presets).
        #[arg(long)]
        layers: Option<u64>,
        /// Divide heads, widths and vocabulary by this factor (presets; for tests).
        #[arg(long, default_value_t = 1)]
        shrink: u64,
        /// Seed of the random weights.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Build the [[ladder]] variants of a models.toml, measure their quality against the
    /// reference variant, run the speed sweep on them and print one table.
    ///
    /// Example: tpsbench ladder --config ladder.toml
    Ladder {
        /// The configuration with [[ladder]] tables.
        #[arg(long, short, default_value = "models.toml")]
        config: PathBuf,
        /// Run only variants with a test id containing this text (repeatable).
        #[arg(long, short)]
        filter: Vec<String>,
        /// The table's format on stdout.
        #[arg(long, short, value_enum, default_value = "md")]
        output: crate::ladder::table::TableFormat,
        /// Directory for the result file.
        #[arg(long, default_value = "results")]
        results_dir: PathBuf,
        /// Do not write a result file.
        #[arg(long)]
        no_save: bool,
        /// Print the table of an existing result file instead of running.
        #[arg(long)]
        from: Option<PathBuf>,
        /// No progress on stderr.
        #[arg(long, short)]
        quiet: bool,
        /// Show llama.cpp's own log on stderr.
        #[arg(long, short)]
        verbose: bool,
    },
}

/// Parses arguments and runs; returns the process exit code.
pub fn main() -> Result<i32> {
    let cli = Cli::parse();
    match cli.command {
        Command::Run {
            config,
            filter,
            output,
            results_dir,
            no_save,
            quiet,
            verbose,
            resume,
            isolate,
            only_model,
            save_baseline,
            baseline,
            baseline_dir,
            shard,
            library,
            rounds,
            max_rounds,
            max_rounds_seconds,
        } => {
            if !library.is_empty() {
                let ab = crate::report::library_ab::AbOptions {
                    libraries: library,
                    rounds: match rounds {
                        Some(run::RoundsArg::Fixed(n)) => n,
                        Some(run::RoundsArg::Auto) => {
                            anyhow::bail!(
                                "--rounds auto does not apply to --library: give a number"
                            )
                        }
                        None => 3,
                    },
                    config,
                    filters: filter,
                    results_dir: (!no_save).then_some(results_dir),
                    quiet,
                };
                return crate::report::library_ab::command(&ab).map_err(anyhow::Error::msg);
            }
            let baselines = Baselines {
                save: save_baseline,
                compare: baseline,
                dir: baseline_dir,
            };
            let how = RunMode {
                results_dir: (!no_save).then_some(results_dir),
                resume,
                isolate,
                only_model,
                shard,
                quiet,
                verbose,
                rounds,
                max_rounds,
                max_rounds_seconds,
            };
            run::run(config, filter, output, how, baselines)
        }
        Command::Compare {
            a,
            b,
            alpha,
            threshold,
            noise,
            fail_threshold,
            ignore,
            baseline_dir,
        } => compare::compare(&compare::CompareArgs {
            a: &a,
            b: &b,
            alpha,
            threshold,
            noise,
            fail: fail_threshold,
            ignore: &ignore,
            dir: &baseline_dir,
            noise_dir: std::path::Path::new(crate::report::compare::NOISE_DIR),
        }),
        Command::Noise { files, noise_dir } => compare::noise(&files, &noise_dir),
        Command::Leaderboard {
            paths,
            out_dir,
            exclude_build,
            exclude_tool_version,
            kld_budget,
            strict,
            check,
        } => Ok(leaderboard::command(&leaderboard::Options {
            paths,
            out_dir,
            exclude: leaderboard::Exclude {
                build: exclude_build,
                tool_version: exclude_tool_version,
                strict,
            },
            kld_budget,
            check,
        })),
        Command::Publish(a) => Ok(publish::publish(a)),
        Command::Merge {
            output,
            inputs,
            allow_partial,
        } => tools::merge(&output, &inputs, allow_partial),
        Command::Export { file, format } => tools::export(&file, format),
        Command::Info { json, probe } => info::info(json, probe),
        Command::Synth {
            output,
            preset,
            quant,
            layers,
            shrink,
            seed,
        } => tools::synth(crate::ladder::synth::SynthOptions {
            output,
            preset,
            quant,
            layers,
            shrink,
            seed,
            n_threads: crate::util::system::physical_cores(),
        }),
        Command::Ladder {
            config,
            filter,
            output,
            results_dir,
            no_save,
            from,
            quiet,
            verbose,
        } => ladder::ladder(ladder::Args {
            config,
            filters: filter,
            format: output,
            results_dir: (!no_save).then_some(results_dir),
            from,
            quiet,
            verbose,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }
}
