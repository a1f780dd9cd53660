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
use crate::{compare, config, system};

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
        #[arg(long, default_value = crate::compare::BASELINE_DIR)]
        baseline_dir: PathBuf,
    },
    /// Compare two result sets: files, directories of result files, or baseline names.
    ///
    /// Tests are joined on the model file and every parameter; a parameter that takes one
    /// value in A and another in B (e.g. n_threads 1 vs 2) is what is compared. Each pair
    /// gets median(B)/median(A) with a bootstrap 95% interval and a Mann-Whitney test.
    /// Exit code 1 when a regression beyond --fail-threshold is significant.
    ///
    /// Example: tpsbench compare results/old.json results/new.json --fail-threshold 0.03
    Compare {
        a: String,
        b: String,
        /// Significance level.
        #[arg(long, default_value_t = 0.05)]
        alpha: f64,
        /// Changes smaller than this fraction are "no change" even when significant.
        #[arg(long, default_value_t = 0.01)]
        noise: f64,
        /// A significant slowdown beyond this fraction fails (exit 1).
        #[arg(long, default_value_t = 0.05)]
        fail_threshold: f64,
        /// Also leave these properties out of the join (e.g. n_batch).
        #[arg(long)]
        ignore: Vec<String>,
        /// Where named baselines live.
        #[arg(long, default_value = crate::compare::BASELINE_DIR)]
        baseline_dir: PathBuf,
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
            resume,
            isolate,
            only_model,
            save_baseline,
            baseline,
            baseline_dir,
        } => {
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
                quiet,
                verbose,
            };
            run(config, filter, output, how, baselines)
        }
        Command::Compare {
            a,
            b,
            alpha,
            noise,
            fail_threshold,
            ignore,
            baseline_dir,
        } => compare_cmd(&a, &b, alpha, noise, fail_threshold, &ignore, &baseline_dir),
        Command::Info { json } => info(json),
        Command::Synth {
            output,
            preset,
            seed,
        } => synth(output, &preset, seed),
    }
}

/// Baseline options of `tpsbench run`.
pub struct Baselines {
    pub save: Option<String>,
    pub compare: Option<String>,
    pub dir: PathBuf,
}

fn compare_cmd(
    a: &str,
    b: &str,
    alpha: f64,
    noise: f64,
    fail: f64,
    ignore: &[String],
    dir: &std::path::Path,
) -> Result<i32> {
    if ![alpha, noise, fail].iter().all(|x| (0.0..1.0).contains(x)) {
        bail!("--alpha, --noise and --fail-threshold are fractions between 0 and 1");
    }
    let sa = compare::load_side(a, dir).map_err(anyhow::Error::msg)?;
    let sb = compare::load_side(b, dir).map_err(anyhow::Error::msg)?;
    let settings = crate::stats::compare::Settings {
        alpha,
        noise,
        ..Default::default()
    };
    let report = compare::compare_sides(&sa, &sb, ignore, settings);
    if report.rows.is_empty() {
        bail!("no test of {a} matches a test of {b} (try --ignore with the property that differs)");
    }
    print!("{}", report.to_markdown(a, b));
    let regressions = report.regressions(fail);
    if !regressions.is_empty() {
        eprintln!(
            "error: {} significant regression(s) beyond {:.1}%",
            regressions.len(),
            fail * 100.0
        );
        return Ok(1);
    }
    Ok(0)
}

/// How `tpsbench run` runs and where it writes.
pub struct RunMode {
    pub results_dir: Option<PathBuf>,
    pub resume: Option<PathBuf>,
    pub isolate: bool,
    pub only_model: Option<String>,
    pub quiet: bool,
    pub verbose: bool,
}

/// Ctrl-C once: stop after the current test, keeping everything; twice: stop now.
fn install_interrupt() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            eprintln!("\ninterrupted again: exiting now");
            std::process::exit(130);
        }
        eprintln!("\ninterrupt: stopping after the current test (Ctrl-C again to stop now)");
    });
    stop
}

fn run(
    config: PathBuf,
    filters: Vec<String>,
    output: Format,
    how: RunMode,
    baselines: Baselines,
) -> Result<i32> {
    let RunMode {
        results_dir,
        resume,
        isolate,
        only_model,
        quiet,
        verbose,
    } = how;
    let cfg = config::load(&config, system::physical_cores())?;
    // A missing baseline is found before hours of measurement, not after.
    let base = match &baselines.compare {
        Some(name) => Some(compare::load_side(name, &baselines.dir).map_err(anyhow::Error::msg)?),
        None => None,
    };
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
    let stop = install_interrupt();
    let out = if isolate {
        let dir = results_dir.unwrap_or_else(|| PathBuf::from("results"));
        let child_args: Vec<String> = [quiet.then_some("--quiet"), verbose.then_some("--verbose")]
            .into_iter()
            .flatten()
            .map(String::from)
            .collect();
        let (record, path) =
            crate::isolate::run(&cfg, &config, &filters, info, &dir, &stop, &child_args)
                .map_err(anyhow::Error::msg)?;
        let failed = record
            .tests
            .iter()
            .filter(|t| t.status == crate::record::Status::Failed)
            .count();
        let interrupted = stop.load(std::sync::atomic::Ordering::SeqCst);
        runner::RunOutcome {
            record,
            path: Some(path),
            failed,
            interrupted,
        }
    } else {
        let opts = RunOptions {
            config: cfg,
            filters,
            results_dir,
            command: std::env::args().collect(),
            resume,
            only_model,
            stop: Some(stop.clone()),
        };
        runner::run(&engine, info, &opts, &mut progress).map_err(anyhow::Error::msg)?
    };
    std::io::stdout()
        .write_all(&exporter(output).render(&out.record))
        .context("writing to stdout")?;
    if let Some(p) = &out.path {
        if !quiet {
            eprintln!("results written to {}", p.display());
        }
    }
    if let Some(name) = &baselines.save {
        let p = compare::save_baseline(&out.record, name, &baselines.dir)
            .map_err(anyhow::Error::msg)?;
        eprintln!("baseline {name:?} saved to {}", p.display());
    }
    let mut code = 0;
    if out.interrupted {
        if let Some(p) = &out.path {
            eprintln!(
                "interrupted: continue with tpsbench run --resume {}",
                p.display()
            );
        }
        code = 130;
    }
    if out.failed > 0 {
        eprintln!(
            "error: {} of {} tests failed (see the errors above and in the result file)",
            out.failed,
            out.record.tests.len()
        );
        code = 1;
    }
    if let (Some(base), Some(name)) = (base, &baselines.compare) {
        // As criterion: the change against the baseline, on stderr (stdout has --output).
        let this = compare::side_of_run("this run", &out.record);
        let report = compare::compare_sides(&base, &this, &[], Default::default());
        eprint!(
            "\n{}",
            report.to_markdown(&format!("baseline {name}"), "this run")
        );
        if !report.regressions(0.05).is_empty() {
            eprintln!("error: significant regression against baseline {name:?}");
            code = 1;
        }
    }
    Ok(code)
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
    if let Some(lib) = &build.library {
        println!(
            "library:  {} {} (ggml {})",
            lib.linkage, lib.path, lib.ggml_version
        );
        if let Some(s) = &lib.stamp {
            let get = |k: &str| s.get(k).map(String::as_str).unwrap_or("?");
            println!(
                "stamp:    llama-cpp-sys-2 {}, llama-cpp-rs@{:.12}, backend {}, built {} on {}",
                get("llama_cpp_sys_2"),
                get("llama_cpp_rs_commit"),
                get("backend"),
                get("built_at"),
                get("host")
            );
        }
    }
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
