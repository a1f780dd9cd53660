//! Command-line interface: clap definitions and the code behind each subcommand.
//! Exit codes: 0 success, 1 some tests failed, 2 bad input or a fatal error.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

use crate::engine::llama::{self, LlamaEngine};
use crate::export::{Format, exporter};
use crate::gguf::{tiny, writer::write_gguf};
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
        /// Run only shard INDEX of COUNT (0-based) of the plan, for sweeps over many
        /// machines; join the result files with `tpsbench merge`. Example: --shard 0/4
        #[arg(long, value_name = "INDEX/COUNT")]
        shard: Option<crate::plan::Shard>,
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
    },
    /// Join result files of one sweep run in shards (`run --shard i/n`) into one file.
    ///
    /// Example: tpsbench merge results/merged.json shards/*.json
    Merge {
        /// The merged result file to write.
        output: PathBuf,
        /// The result files to join.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
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
    },
    /// Write a synthetic GGUF model (random weights, valid vocabulary): no download needed.
    ///
    /// Example: tpsbench synth --output models/tiny.gguf
    Synth {
        /// Where to write the model.
        #[arg(long, short)]
        output: PathBuf,
        /// The architecture preset; `tiny` is a 2-layer llama of about 1.4 M parameters.
        #[arg(long, default_value = "tiny")]
        preset: String,
        /// Seed of the random weights.
        #[arg(long, default_value_t = 1)]
        seed: u64,
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
            shard,
        } => run(
            config,
            filter,
            output,
            (!no_save).then_some(results_dir),
            quiet,
            verbose,
            shard,
        ),
        Command::Leaderboard {
            paths,
            out_dir,
            exclude_build,
            exclude_tool_version,
        } => Ok(crate::leaderboard::command(&crate::leaderboard::Options {
            paths,
            out_dir,
            exclude: crate::leaderboard::Exclude {
                build: exclude_build,
                tool_version: exclude_tool_version,
            },
        })),
        Command::Merge { output, inputs } => merge(&output, &inputs),
        Command::Export { file, format } => export(&file, format),
        Command::Info { json } => info(json),
        Command::Synth {
            output,
            preset,
            seed,
        } => synth(output, &preset, seed),
    }
}

fn run(
    config: PathBuf,
    filters: Vec<String>,
    output: Format,
    results_dir: Option<PathBuf>,
    quiet: bool,
    verbose: bool,
    shard: Option<crate::plan::Shard>,
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
        shard,
        results_dir,
        command: std::env::args().collect(),
    };
    let out = runner::run(&engine, info, &opts, &mut progress).map_err(anyhow::Error::msg)?;
    if let (Some(s), true) = (shard, out.record.tests.is_empty()) {
        eprintln!("shard {s} has no tests (more shards than tests): nothing to run");
        return Ok(0);
    }
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

fn merge(output: &std::path::Path, inputs: &[PathBuf]) -> Result<i32> {
    match crate::merge::merge_files(output, inputs, std::env::args().collect()) {
        Ok(warnings) => {
            for w in warnings {
                eprintln!("{w}");
            }
            eprintln!("merged {} file(s) into {}", inputs.len(), output.display());
            Ok(0)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(2)
        }
    }
}

fn export(file: &std::path::Path, format: Format) -> Result<i32> {
    match crate::results::read(file) {
        Ok(run) => {
            std::io::stdout()
                .write_all(&exporter(format).render(&run))
                .context("writing to stdout")?;
            Ok(0)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(2)
        }
    }
}

fn synth(output: PathBuf, preset: &str, seed: u64) -> Result<i32> {
    let doc = match preset {
        "tiny" => tiny::document(seed),
        other => bail!("unknown preset {other:?}: available presets: tiny"),
    };
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = output.with_extension("gguf.tmp");
    let file =
        std::fs::File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
    let mut w = std::io::BufWriter::new(file);
    write_gguf(&mut w, &doc).with_context(|| format!("cannot write {}", tmp.display()))?;
    drop(w);
    std::fs::rename(&tmp, &output).with_context(|| format!("cannot write {}", output.display()))?;
    eprintln!(
        "wrote {} ({} tensors, preset {preset})",
        output.display(),
        doc.tensors.len()
    );
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
