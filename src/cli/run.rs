//! `tpsbench run`: the sweep, with interruption, resume, isolation and baselines.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::engine::llama::{self, LlamaEngine};
use crate::output::progress::StderrProgress;
use crate::report::export::{Format, exporter};
use crate::runner::{self, RunOptions};
use crate::{config, util::system};

/// Baseline options of `tpsbench run`.
pub struct Baselines {
    pub save: Option<String>,
    pub compare: Option<String>,
    pub dir: PathBuf,
}

/// How `tpsbench run` runs and where it writes.
pub struct RunMode {
    pub results_dir: Option<PathBuf>,
    pub resume: Option<PathBuf>,
    pub isolate: bool,
    pub only_model: Option<String>,
    pub shard: Option<crate::plan::Shard>,
    pub quiet: bool,
    pub verbose: bool,
    /// `--rounds N|auto`: overrides `[sweep] rounds`.
    pub rounds: Option<RoundsArg>,
    /// `--max-rounds`, `--max-rounds-seconds`: the budget of auto rounds.
    pub max_rounds: Option<i64>,
    pub max_rounds_seconds: Option<f64>,
}

/// `--rounds`: a number, or `auto` (rounds until the answer is established).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundsArg {
    Fixed(u32),
    Auto,
}

/// Parses `--rounds`.
pub fn parse_rounds(s: &str) -> Result<RoundsArg, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(RoundsArg::Auto);
    }
    s.parse::<u32>()
        .map(RoundsArg::Fixed)
        .map_err(|_| format!("{s:?} is neither a number of rounds nor \"auto\""))
}

/// Applies `--rounds`, `--max-rounds` and `--max-rounds-seconds` to the configuration's
/// settings, with the checks a bad combination gets.
fn apply_rounds(
    s: &mut config::RunSettings,
    rounds: Option<RoundsArg>,
    max_rounds: Option<i64>,
    max_seconds: Option<f64>,
) -> Result<()> {
    match rounds {
        Some(RoundsArg::Fixed(r)) => {
            anyhow::ensure!(
                r >= 1,
                "--rounds must be at least 1 (1 is llama-bench's methodology: one launch)"
            );
            s.rounds = r;
            s.auto_rounds = None;
        }
        Some(RoundsArg::Auto) if s.auto_rounds.is_none() => {
            s.auto_rounds = Some(config::AutoRounds {
                max_rounds: config::AutoRounds::DEFAULT_MAX_ROUNDS,
                max_seconds: None,
                budget_given: false,
            });
        }
        _ => {}
    }
    if max_rounds.is_some() || max_seconds.is_some() {
        let Some(a) = s.auto_rounds.as_mut() else {
            anyhow::bail!(
                "--max-rounds and --max-rounds-seconds are the budget of --rounds auto: add --rounds auto"
            );
        };
        if let Some(n) = max_rounds {
            anyhow::ensure!(
                (2..=10_000).contains(&n),
                "--max-rounds {n}: must be between 2 and 10000 (a paired comparison needs 2 rounds)"
            );
            a.max_rounds = n as u32;
        }
        if let Some(t) = max_seconds {
            anyhow::ensure!(
                t.is_finite() && t >= 1.0,
                "--max-rounds-seconds {t}: must be at least 1"
            );
            a.max_seconds = Some(t);
        }
        a.budget_given = true;
    }
    if let Some(a) = s.auto_rounds {
        s.rounds = a.max_rounds;
        if !s.repetitions_given {
            s.repetitions = config::AutoRounds::REPETITIONS;
        }
    }
    Ok(())
}

/// Ctrl-C once: stop after the current test, keeping everything; twice: stop now.
pub(super) fn install_interrupt() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
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

pub(super) fn run(
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
        shard,
        quiet,
        verbose,
        rounds,
        max_rounds,
        max_rounds_seconds,
    } = how;
    let mut cfg = config::load(&config, system::physical_cores())?;
    apply_rounds(&mut cfg.settings, rounds, max_rounds, max_rounds_seconds)?;
    if let Some(a) = cfg.settings.auto_rounds {
        anyhow::ensure!(
            !isolate,
            "--rounds auto does not combine with --isolate (its children run fixed rounds): give --rounds N"
        );
        if !a.budget_given && only_model.is_none() {
            let prep = runner::prepare::prepare(&cfg, &filters).map_err(anyhow::Error::msg)?;
            anyhow::ensure!(
                runner::auto::has_comparison(&prep.plan),
                "{}: rounds = \"auto\" has nothing to resolve here (no two variants or settings \
                 of one test to compare) and no budget: give max_rounds or max_rounds_seconds \
                 (--max-rounds, --max-rounds-seconds), or a number of rounds",
                config.display()
            );
        }
    }
    // A missing baseline is found before hours of measurement, not after.
    let base = match &baselines.compare {
        Some(name) => Some(
            crate::report::compare::load_side(name, &baselines.dir).map_err(anyhow::Error::msg)?,
        ),
        None => None,
    };
    let engine = LlamaEngine::new(verbose).map_err(anyhow::Error::msg)?;
    // Synthetic models (`synth = ...`) are written before the sweep: no download needed.
    if only_model.is_none() {
        let rep = crate::ladder::Reporter::new(quiet);
        crate::ladder::synth::ensure_models(&cfg, &filters, system::physical_cores(), &rep)
            .map_err(anyhow::Error::msg)?;
    }
    knob_checks(&cfg, only_model.is_some())?;
    let mut progress = StderrProgress::new(quiet);
    let missing = system::missing_simd(&llama::cpu_features());
    if !missing.is_empty() {
        eprintln!(
            "warning: llama.cpp was built without {} that this CPU has: figures will be low. \
             Build with RUSTFLAGS=\"-C target-cpu=native\" (the repository's .cargo/config.toml does).",
            missing.join(", ")
        );
    }
    let mut info = runner::run_info(
        &cfg,
        std::env::args().collect(),
        llama::system_info(),
        llama::devices(),
    );
    // Models with a file: a served-only entry has no layers here to place.
    let offload = cfg
        .models
        .iter()
        .filter(|m| m.path.is_some())
        .all(|m| m.axes.n_gpu_layers.iter().all(|&n| n != 0));
    let wants_gpu = cfg
        .models
        .iter()
        .filter(|m| m.path.is_some())
        .any(|m| m.axes.n_gpu_layers.iter().any(|&n| n != 0));
    if wants_gpu
        && info.llama_cpp.gpu_backend != "cpu"
        && !info.devices.iter().any(|d| d.kind == "gpu")
    {
        // Not an error: the placement records say where the layers went. But a GPU sweep
        // that silently ran on the CPU is worth one line.
        eprintln!(
            "warning: llama.cpp has the {} backend but sees no GPU: every layer runs on the CPU \
             (--verbose shows llama.cpp's reason)",
            info.llama_cpp.gpu_backend
        );
    }
    let bandwidth = crate::record::machine::roofline_bandwidth(&mut info, offload, false);
    let stop = install_interrupt();
    let out = if isolate {
        let dir = results_dir.unwrap_or_else(|| PathBuf::from("results"));
        let mut child_args: Vec<String> =
            [quiet.then_some("--quiet"), verbose.then_some("--verbose")]
                .into_iter()
                .flatten()
                .map(String::from)
                .collect();
        if let Some(s) = shard {
            child_args.extend(["--shard".to_string(), s.to_string()]);
        }
        let plan = crate::runner::isolate::Plan {
            config: &cfg,
            config_path: &config,
            filters: &filters,
            shard,
            resume: resume.as_deref(),
        };
        let (record, path) = crate::runner::isolate::run(&plan, info, &dir, &stop, &child_args)
            .map_err(anyhow::Error::msg)?;
        let failed = record
            .tests
            .iter()
            .filter(|t| t.status == crate::record::Status::Failed)
            .count();
        let interrupted = stop.load(std::sync::atomic::Ordering::SeqCst);
        runner::RunOutcome {
            record,
            path,
            failed,
            interrupted,
        }
    } else {
        let opts = RunOptions {
            config: cfg,
            filters,
            shard,
            scope: runner::Scope::All,
            results_dir,
            command: std::env::args().collect(),
            resume,
            only_model: only_model.clone(),
            stop: Some(stop.clone()),
            bandwidth,
            power: true,
            quiet,
            continuation: false,
        };
        runner::run(&engine, info, &opts, &mut progress).map_err(anyhow::Error::msg)?
    };
    if let (Some(s), true) = (shard, out.record.tests.is_empty() && out.path.is_none()) {
        eprintln!("shard {s} has no tests (more shards than tests): nothing to run");
        return Ok(0);
    }
    let export = exporter(output);
    if let Some(note) = export.skipped(&out.record) {
        eprintln!("note: {note}");
    }
    // The answer last, under the other tables, in the default (Markdown) output only: the
    // other formats are read by programs.
    let mut text = export.render(&out.record);
    if output == Format::Md && !child_of(&only_model) {
        let path = out
            .path
            .clone()
            .unwrap_or_else(|| PathBuf::from("(not saved)"));
        if let Some(a) = crate::report::leaderboard::answer_run::of_run(&out.record, &path) {
            text.extend_from_slice(a.as_bytes());
        }
    }
    // A reader gone from stdout (`tpsbench run | head -1`) loses only the printout: the run
    // is in its file, and failed tests must still make the exit code 1.
    match std::io::stdout().write_all(&text) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other.context("writing to stdout")?,
    }
    // An `--isolate` child (`--only-model`) writes into its parent's file: the parent
    // reports it, once.
    let child = only_model.is_some();
    if let Some(p) = &out.path {
        if !quiet && !child {
            eprintln!("results written to {}", p.display());
        }
    }
    if let Some(name) = &baselines.save {
        let p = crate::report::compare::save_baseline(&out.record, name, &baselines.dir)
            .map_err(anyhow::Error::msg)?;
        eprintln!("baseline {name:?} saved to {}", p.display());
    }
    let mut code = 0;
    if out.interrupted {
        if let (Some(p), false) = (&out.path, child) {
            let args: Vec<String> = std::env::args().collect();
            eprintln!("interrupted: continue with {}", resume_command(&args, p));
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
        let this = crate::report::compare::side_of_run("this run", &out.record);
        let settings = crate::report::compare::baseline_settings(&this);
        let report = crate::report::compare::compare_sides(&base, &this, &[], &settings);
        eprint!(
            "\n{}",
            report.to_markdown(&format!("baseline {name}"), "this run")
        );
        if let Some(line) = report.regression_line(0.05) {
            eprintln!("error: {line} against baseline {name:?}");
            code = 1;
        }
    }
    Ok(code)
}

/// An `--isolate` child (`--only-model`): its parent prints the answer.
fn child_of(only_model: &Option<String>) -> bool {
    only_model.is_some()
}

/// The command that continues an interrupted run, as it was started (same configuration,
/// filters, shard, results directory, isolation) with `--resume FILE`: it works as printed.
pub(crate) fn resume_command(args: &[String], file: &std::path::Path) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
            continue;
        }
        if a == "--resume" {
            skip = true;
            continue;
        }
        if a.starts_with("--resume=") {
            continue;
        }
        out.push(a.clone());
    }
    out.push("--resume".into());
    out.push(file.display().to_string());
    out.iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `a` as one shell word: unchanged when it holds only safe characters, else single-quoted.
fn shell_quote(a: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !a.is_empty() && a.chars().all(safe) {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

/// The knob table's values against this build and the model files, before any test: bad
/// input stops the run (exit 2); what is only worth knowing, or what this build will not
/// honour, is a warning (once, not in an `--isolate` child).
fn knob_checks(cfg: &config::Config, child: bool) -> anyhow::Result<()> {
    let devices: Vec<String> = llama::devices().into_iter().map(|d| d.name).collect();
    let offload_devices = llama::devices()
        .iter()
        .filter(|d| d.kind != "cpu" && d.kind != "accel")
        .count();
    let buffer_types = llama::knobs::buffer_type_names();
    let offer = crate::runner::knobs_check::Offer {
        devices: &devices,
        buffer_types: &buffer_types,
        offload_devices,
    };
    let mut warnings =
        crate::runner::knobs_check::check(cfg, &offer).map_err(anyhow::Error::msg)?;
    let sweeps = cfg
        .models
        .iter()
        .filter(|m| m.path.is_some())
        .map(|m| &m.axes)
        .chain(cfg.ladders.iter().map(|l| &l.axes));
    for axes in sweeps {
        for (name, values) in &axes.knobs {
            for v in values {
                let mut k = config::knobs::Knobs::default();
                k.set(name, v.clone());
                warnings.extend(llama::knobs::notes(&k));
            }
        }
    }
    if !child {
        let mut seen = std::collections::BTreeSet::new();
        for w in warnings.into_iter().filter(|w| seen.insert(w.clone())) {
            eprintln!("warning: {w}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resume_command_keeps_every_option_and_replaces_an_earlier_resume() {
        let args: Vec<String> = [
            "target/release/tpsbench",
            "run",
            "--config",
            "my models.toml",
            "--filter",
            "tg",
            "--shard",
            "0/2",
            "--resume",
            "old.json",
        ]
        .map(String::from)
        .to_vec();
        let c = resume_command(&args, std::path::Path::new("results/x.json"));
        assert_eq!(
            c,
            "target/release/tpsbench run --config 'my models.toml' --filter tg --shard 0/2 \
             --resume results/x.json"
        );
    }
}
