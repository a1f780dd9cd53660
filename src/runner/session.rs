//! `tpsbench run` around its sweep, in the steps the command line calls in turn: [`check`],
//! [`start`], [`sweep`] and [`finish`]; the exporters, in `report`, run between the last two.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::{self, Config};
use crate::engine::DeviceKind;
use crate::engine::llama::{self, LlamaEngine};
use crate::machine::gpus;
use crate::output::progress::StderrProgress;
use crate::record::RunInfo;
use crate::runner::error::RunnerError;
use crate::runner::{self, RunOptions, RunOutcome, race};
use crate::util::{shell_quote, system};

mod rounds;
pub use rounds::{Rounds, RoundsOverride};
use rounds::{apply_rounds, check_auto_rounds, race_budget};

/// What `tpsbench run` (or `tune`, `ladder`, `cargo bench`) was asked to run, and how.
#[derive(Default)]
pub struct Request {
    pub config: PathBuf,
    pub filters: Vec<String>,
    pub shard: Option<crate::plan::Shard>,
    /// `None`: write no result file (`--no-save`).
    pub results_dir: Option<PathBuf>,
    pub resume: Option<PathBuf>,
    /// Each model in a child process (`--isolate`).
    pub isolate: bool,
    /// Only this model: what `--isolate` children are given.
    pub only_model: Option<String>,
    pub quiet: bool,
    pub verbose: bool,
    pub rounds: RoundsOverride,
    /// The command line as started (recorded in the run; the resume command is made of it).
    pub command: Vec<String>,
    /// Asked by `tpsbench tune`: a race, whose budget `rounds` overrides.
    pub tune: bool,
    /// The part of the plan: all of it, or the ladders only (`tpsbench ladder`).
    pub scope: runner::Scope,
}

impl Request {
    /// An `--isolate` child: its parent reports the file, the answer and the interruption.
    pub fn is_child(&self) -> bool {
        self.only_model.is_some()
    }
}

/// A request whose configuration loaded and whose rounds make sense.
pub struct Checked {
    pub request: Request,
    pub config: Config,
}

impl Checked {
    /// The configuration is raced (`tpsbench tune`, or `run` on a `[tune]` table).
    pub fn is_race(&self) -> bool {
        self.request.tune || self.config.tune.is_some()
    }
}

/// Loads the configuration and applies the rounds, with the checks a bad combination gets.
/// A configuration with a `[tune]` table is raced rather than swept (docs/tune.md, "In
/// `run` and `cargo bench`"): the options then give the race's budget.
pub fn check(request: Request) -> Result<Checked, RunnerError> {
    let mut config = config::load(&request.config, system::physical_cores())?;
    if request.scope == runner::Scope::Ladders {
        if config.ladders.is_empty() {
            let config = request.config.clone();
            return Err(RunnerError::NoLadders { config });
        }
        // The ladders are swept, never raced.
        config.tune = None;
    }
    match config.tune.as_mut() {
        Some(t) => race_budget(&request, t)?,
        None if request.tune => {}
        None => {
            apply_rounds(&mut config.settings, request.rounds)?;
            check_auto_rounds(&request, &config)?;
        }
    }
    Ok(Checked { request, config })
}

/// A run ready to sweep or race: llama.cpp, the run's facts, the flag Ctrl-C sets, and the
/// bandwidths for decode rooflines (where `run` probed them).
pub struct Started {
    checked: Checked,
    engine: LlamaEngine,
    info: RunInfo,
    stop: Arc<AtomicBool>,
    bandwidth: crate::machine::Ceilings,
}

/// The one start of `run`, `tune`, `ladder` and `cargo bench`: llama.cpp, the synthetic
/// models (an `--isolate` child's parent wrote them), the knob checks, the SIMD and GPU
/// warnings, Ctrl-C, and the ceilings. Bad input found here stops the run before it starts.
pub fn start(checked: Checked) -> Result<Started, RunnerError> {
    let (cfg, r) = (&checked.config, &checked.request);
    let engine = LlamaEngine::new(r.verbose)?;
    if !r.is_child() {
        let rep = crate::ladder::Reporter::new(r.quiet);
        crate::ladder::synth::ensure_models(cfg, &r.filters, system::physical_cores(), &rep)?;
    }
    knob_checks(cfg, r.is_child())?;
    warn_missing_simd();
    let mut info = runner::run_info(
        cfg,
        r.command.clone(),
        llama::system_info(),
        llama::devices(),
    );
    warn_gpu_unseen(cfg, &info);
    let pci = Path::new("/sys/bus/pci/devices");
    let unused = gpus::unused_gpu_warning(&info.llama_cpp.gpu_backend, pci);
    if let Some(w) = unused.filter(|_| !r.is_child()) {
        eprintln!("{w}");
    }
    let stop = install_interrupt();
    // Every local model offloads every layer setting: no test runs on the host.
    let all_offloaded = local_axes(cfg).all(|a| a.n_gpu_layers.iter().all(|&n| n != 0));
    // A race ranks its candidates against each other: no roofline to place them against.
    let bandwidth = match checked.is_race() {
        true => Default::default(),
        false => crate::record::machine::roofline_bandwidth(&mut info, all_offloaded, false),
    };
    Ok(Started {
        checked,
        engine,
        info,
        stop,
        bandwidth,
    })
}

/// A llama.cpp built without SIMD this CPU has measures low: one line says so.
fn warn_missing_simd() {
    let missing = system::missing_simd(&llama::cpu_features());
    if !missing.is_empty() {
        eprintln!(
            "warning: llama.cpp was built without {} that this CPU has: figures will be low. \
             Build with RUSTFLAGS=\"-C target-cpu=native\" (the repository's .cargo/config.toml does).",
            missing.join(", ")
        );
    }
}

/// The models with a file (a served-only entry has no layers here to place).
fn local_axes(cfg: &Config) -> impl Iterator<Item = &config::Axes> {
    (cfg.models.iter())
        .filter(|m| m.path.is_some())
        .map(|m| &m.axes)
}

/// Not an error: the placement records say where the layers went. But a GPU sweep that
/// silently ran on the CPU is worth one line.
fn warn_gpu_unseen(cfg: &Config, info: &RunInfo) {
    let wants_gpu = local_axes(cfg).any(|a| a.n_gpu_layers.iter().any(|&n| n != 0));
    if wants_gpu
        && info.llama_cpp.gpu_backend != "cpu"
        && !info.devices.iter().any(|d| d.kind == DeviceKind::Gpu)
    {
        eprintln!(
            "warning: llama.cpp has the {} backend but sees no GPU: every layer runs on the CPU \
             (--verbose shows llama.cpp's reason)",
            info.llama_cpp.gpu_backend
        );
    }
}

/// The build and the machine disagree (`cargo bench` stops on it before anything runs): a
/// CPU build on a machine with an NVIDIA or AMD GPU, unless `TPSBENCH_BACKEND=cpu` asks for
/// the CPU, or a GPU build that sees no GPU.
pub fn hardware_mismatch() -> Option<String> {
    let backend = system::gpu_backend();
    if backend == "cpu" {
        if std::env::var("TPSBENCH_BACKEND").as_deref() == Ok("cpu") {
            return None;
        }
        let pci = Path::new("/sys/bus/pci/devices");
        let w = gpus::unused_gpu_warning(backend, pci)?;
        let w = w.trim_start_matches("warning: ");
        return Some(format!(
            "{w} (TPSBENCH_BACKEND=cpu measures its CPU on purpose)"
        ));
    }
    let seen = llama::devices().iter().any(|d| d.kind == DeviceKind::Gpu);
    (!seen).then(|| {
        format!(
            "built for {backend} but llama.cpp sees no GPU: build without --features, or check \
             the driver (tpsbench info --verbose shows llama.cpp's reason)"
        )
    })
}

/// Ctrl-C once: stop after the current test, keeping everything; twice: stop now.
fn install_interrupt() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
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

/// The knob table's values against this build and the model files: bad input stops the run;
/// what this build will not honour is a warning (not repeated by an `--isolate` child).
fn knob_checks(cfg: &Config, child: bool) -> Result<(), runner::KnobError> {
    let devices: Vec<String> = llama::devices().into_iter().map(|d| d.name).collect();
    let offload_devices = llama::devices()
        .iter()
        .filter(|d| !matches!(d.kind, DeviceKind::Cpu | DeviceKind::Accel))
        .count();
    let buffer_types = llama::knobs::buffer_type_names();
    let offer = runner::knobs_check::Offer {
        devices: &devices,
        buffer_types: &buffer_types,
        offload_devices,
    };
    let mut warnings = runner::knobs_check::check(cfg, &offer)?;
    for (_, axes, _) in runner::knobs_check::sweeps(cfg) {
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

pub struct Swept {
    pub request: Request,
    pub run: RunOutcome,
}

pub fn sweep(s: Started) -> Result<Swept, RunnerError> {
    if s.checked.request.isolate {
        return sweep_isolated(s);
    }
    let race = s.checked.is_race();
    let Checked { request, config } = s.checked;
    let opts = RunOptions {
        filters: request.filters.clone(),
        shard: request.shard,
        scope: request.scope,
        resume: request.resume.clone(),
        only_model: request.only_model.clone(),
        stop: Some(s.stop.clone()),
        bandwidth: s.bandwidth,
        power: true,
        quiet: request.quiet,
        ..RunOptions::new(config, request.results_dir.clone())
    };
    let mut progress = StderrProgress::new(request.quiet);
    let (engine, info) = (&s.engine, s.info);
    let run = match race {
        true => race::tune(engine, info, &opts, &mut progress)?,
        false => runner::run(engine, info, &opts, &mut progress)?,
    };
    Ok(Swept { request, run })
}

/// The sweep in one child process per model (`--isolate`), this process owning the file.
fn sweep_isolated(s: Started) -> Result<Swept, RunnerError> {
    let Checked { request: r, config } = s.checked;
    let dir = r.results_dir.as_deref().unwrap_or(Path::new("results"));
    let plan = runner::isolate::IsolatedSweep {
        config: &config,
        config_path: &r.config,
        filters: &r.filters,
        shard: r.shard,
        resume: r.resume.as_deref(),
    };
    let (record, path) = runner::isolate::run(&plan, s.info, dir, &s.stop, &child_args(&r))?;
    let run = RunOutcome::new(record, path, s.stop.load(Ordering::SeqCst));
    Ok(Swept { request: r, run })
}

/// What every `--isolate` child is given besides its model and file.
fn child_args(r: &Request) -> Vec<String> {
    let flags = [(r.quiet, "--quiet"), (r.verbose, "--verbose")];
    let mut args: Vec<String> = flags.iter().filter(|f| f.0).map(|f| f.1.into()).collect();
    args.extend(
        r.shard
            .iter()
            .flat_map(|s| ["--shard".into(), s.to_string()]),
    );
    args
}

pub enum Ending {
    /// A shard with no tests (more shards than tests): this line, and nothing else to do.
    EmptyShard(String),
    Ran(Verdict),
}

/// The lines a finished run ends with, and what its exit code depends on.
pub struct Verdict {
    /// "results written to FILE" (not with --quiet, not in an `--isolate` child).
    pub written: Option<String>,
    /// After the baseline is saved: how to continue an interrupted run, the failed tests.
    pub lines: Vec<String>,
    pub interrupted: bool,
    pub failed: bool,
}

pub fn finish(s: &Swept) -> Ending {
    let (r, out) = (&s.request, &s.run);
    if let (Some(shard), true) = (r.shard, out.record.tests.is_empty() && out.path.is_none()) {
        return Ending::EmptyShard(format!(
            "shard {shard} has no tests (more shards than tests): nothing to run"
        ));
    }
    // An `--isolate` child (`--only-model`) writes into its parent's file: the parent
    // reports it, once.
    let child = r.is_child();
    let written = (out.path.as_ref().filter(|_| !r.quiet && !child))
        .map(|p| format!("results written to {}", p.display()));
    let mut lines = Vec::new();
    match (out.interrupted, &out.path, child) {
        // A race has no file to resume: what its rounds established is its answer so far.
        (true, Some(p), false) if out.record.run.tune.is_some() => lines.push(format!(
            "interrupted: {} holds the race so far, and the answer above is what its rounds \
             established; to race again: {}",
            p.display(),
            quoted_line(&r.command)
        )),
        (true, Some(p), false) => lines.push(format!(
            "interrupted: continue with {}",
            resume_command(&r.command, p)
        )),
        _ => {}
    }
    // A race's failed candidates (a placement that did not load) are part of its answer.
    let failed = out.failed > 0 && out.record.run.tune.is_none();
    if failed {
        lines.push(failed_line(out));
    }
    Ending::Ran(Verdict {
        written,
        lines,
        interrupted: out.interrupted,
        failed,
    })
}

pub fn failed_line(out: &RunOutcome) -> String {
    format!(
        "error: {} of {} tests failed (see the errors above and in the result file)",
        out.failed,
        out.record.tests.len()
    )
}

/// The command that continues an interrupted run: as it was started, with `--resume FILE`.
pub fn resume_command(args: &[String], file: &Path) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut args = args.iter();
    while let Some(a) = args.next() {
        if a == "--resume" {
            args.next();
        } else if !a.starts_with("--resume=") {
            out.push(a.clone());
        }
    }
    out.push("--resume".into());
    out.push(file.display().to_string());
    quoted_line(&out)
}

pub(crate) fn quoted_line(args: &[String]) -> String {
    let v: Vec<String> = args.iter().map(|a| shell_quote(a)).collect();
    v.join(" ")
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
        let c = resume_command(&args, Path::new("results/x.json"));
        assert_eq!(
            c,
            "target/release/tpsbench run --config 'my models.toml' --filter tg --shard 0/2 \
             --resume results/x.json"
        );
    }
}
