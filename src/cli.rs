//! Command-line interface: clap definitions and the code behind each subcommand.
//! Exit codes: 0 success, 1 some tests failed, 2 bad input or a fatal error.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use crate::engine::llama::{self, LlamaEngine};
use crate::export::{Format, exporter};
use crate::progress::StderrProgress;
use crate::runner::{self, RunOptions};
use crate::{config, system};

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
        /// Run only tests whose id contains this text (repeatable), e.g. `SmolLM2/Q4_1/pp512`.
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
    },
    /// Show the machine, the llama.cpp build and the devices llama.cpp sees.
    ///
    /// Example: tpsbench info --json
    Info {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write a synthetic GGUF model (random weights, valid vocabulary): no download needed.
    ///
    /// Example: tpsbench synth --preset llama-3-8b --type Q4_K_M --output models/l3.gguf
    Synth {
        /// Where to write the model.
        #[arg(long, short)]
        output: PathBuf,
        /// `tiny` (a 2-layer llama of about 1.4 M parameters, for tests) or the exact
        /// shapes of llama-2-7b, llama-3-8b, mistral-7b, qwen2.5-7b, llama-3-70b.
        #[arg(long, default_value = "tiny")]
        preset: String,
        /// Quantization type, as llama-quantize names it (default: F32 for tiny, Q8_0 for
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
        } => run(
            config,
            filter,
            output,
            (!no_save).then_some(results_dir),
            quiet,
            verbose,
        ),
        Command::Info { json } => info(json),
        Command::Synth {
            output,
            preset,
            quant,
            layers,
            shrink,
            seed,
        } => synth(crate::synth::SynthOptions {
            output,
            preset,
            quant,
            layers,
            shrink,
            seed,
            n_threads: system::physical_cores(),
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
        } => crate::ladder::command::ladder(crate::ladder::command::Args {
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

fn run(
    config: PathBuf,
    filters: Vec<String>,
    output: Format,
    results_dir: Option<PathBuf>,
    quiet: bool,
    verbose: bool,
) -> Result<i32> {
    let cfg = config::load(&config, system::physical_cores())?;
    let engine = LlamaEngine::new(verbose).map_err(anyhow::Error::msg)?;
    let mut progress = StderrProgress::new(quiet);
    let missing = system::missing_simd(&llama::cpu_features());
    if !missing.is_empty() {
        eprintln!(
            "warning: llama.cpp was built without {} that this CPU has: figures will be low. \
             Build with RUSTFLAGS=\"-C target-cpu=native\" (the repository's .cargo/config.toml does).",
            missing.join(", ")
        );
    }
    let info = runner::run_info(
        &cfg,
        std::env::args().collect(),
        llama::system_info(),
        llama::devices(),
    );
    let opts = RunOptions {
        config: cfg,
        filters,
        results_dir,
        command: std::env::args().collect(),
    };
    let out = runner::run(&engine, info, &opts, &mut progress).map_err(anyhow::Error::msg)?;
    std::io::stdout()
        .write_all(&exporter(output).render(&out.record))
        .context("writing to stdout")?;
    if let Some(p) = &out.path {
        if !quiet {
            eprintln!("results written to {}", p.display());
        }
    }
    if out.failed > 0 {
        eprintln!(
            "error: {} of {} tests failed (see the errors above and in the result file)",
            out.failed,
            out.record.tests.len()
        );
        return Ok(1);
    }
    Ok(0)
}

fn info(json: bool) -> Result<i32> {
    llama::init(false).map_err(anyhow::Error::msg)?;
    let sys = system::system();
    let build = system::llama_build(llama::system_info());
    let devices = llama::devices();
    let features = llama::cpu_features();
    let missing = system::missing_simd(&features);
    if json {
        let v = serde_json::json!({
            "tool": system::tool(),
            "system": sys,
            "llama_cpp": build,
            "cmake_flags": system::cmake_flags(),
            "cpu_features": features.iter().map(|(n, b)| (n.to_string(), *b)).collect::<std::collections::BTreeMap<_, _>>(),
            "devices": devices,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    let tool = system::tool();
    println!(
        "tpsbench {} ({})",
        tool.version,
        tool.git_commit.as_deref().unwrap_or("no git commit")
    );
    println!(
        "CPU:      {} ({} physical / {} logical cores, {})",
        sys.cpu_model, sys.physical_cores, sys.logical_cores, sys.arch
    );
    println!(
        "RAM:      {:.1} GiB",
        sys.ram_bytes as f64 / (1u64 << 30) as f64
    );
    println!("OS:       {} (kernel {})", sys.os, sys.kernel);
    println!(
        "llama.cpp: llama-cpp-sys-2 {} ({}), GPU backend: {}",
        build.sys_crate_version,
        build.build_commit.as_deref().unwrap_or("commit unknown"),
        build.gpu_backend
    );
    println!("cmake:    {}", system::cmake_flags());
    let on: Vec<&str> = features.iter().filter(|f| f.1).map(|f| f.0).collect();
    println!("SIMD:     {}", on.join(" "));
    if !missing.is_empty() {
        println!(
            "WARNING:  the CPU has {} but llama.cpp was built without it",
            missing.join(", ")
        );
    }
    println!("system:   {}", build.system_info);
    println!("devices:");
    for d in &devices {
        println!(
            "  {} ({}, {}): {} | {:.1} GiB total, {:.1} GiB free",
            d.name,
            d.backend,
            d.kind,
            d.description,
            d.memory_total as f64 / (1u64 << 30) as f64,
            d.memory_free as f64 / (1u64 << 30) as f64
        );
    }
    Ok(0)
}

fn synth(opts: crate::synth::SynthOptions) -> Result<i32> {
    llama::init(false).map_err(anyhow::Error::msg)?;
    let rep = crate::ladder::Reporter::new(false);
    let line = crate::synth::synth(&opts, &rep).map_err(anyhow::Error::msg)?;
    rep.line(&line);
    Ok(0)
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
