//! Runs a plan, whatever its kinds of test: each model loaded once per load key, each test
//! handed to its kind (`kinds`) and on disk before the next starts. Filter, scope, shard,
//! resume, `--isolate`, progress, Ctrl-C and fault injection are handled here, once for
//! every kind; a test or model that fails is recorded with its error and the sweep goes on.

pub mod auto;
pub mod dry_run;
pub mod error;
pub(crate) mod isolate;
pub(crate) mod knobs_check;
pub(crate) mod library_ab;
pub mod prepare;
pub mod race;
mod rounds;
pub mod session;
mod sweep;
pub(crate) mod target;

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::engine::Engine;
use crate::output::progress::Progress;
use crate::plan::{self, Plan, PlannedTest};
use crate::record::{ModelRecord, RunInfo, RunRecord, Status, TestRecord};
use crate::util::system;

pub use error::{KnobError, OptionError, RunnerError};
pub use prepare::{Scope, inspect_model};
pub use rounds::{due_in_round, rotated, rounds_apply};

#[derive(Clone)]
pub struct RunOptions {
    pub config: Config,
    pub filters: Vec<String>,
    /// Run only this shard of the (filtered) plan: `tpsbench run --shard i/n`.
    pub shard: Option<plan::Shard>,
    /// Which part of the plan: all, or the ladders only.
    pub scope: Scope,
    /// Where the result file goes; `None` writes nothing (dry use from the library).
    pub results_dir: Option<PathBuf>,
    /// Continue the run in this result file, skipping the tests it holds.
    pub resume: Option<PathBuf>,
    /// Run only this model's tests (`--isolate` children, which say nothing of the file).
    pub only_model: Option<String>,
    /// Set (by Ctrl-C) to stop after the current test.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Bandwidths for decode rooflines; the default (none known) leaves rooflines out.
    pub bandwidth: crate::machine::Ceilings,
    /// Sample power (NVML or RAPL, where present) during each test.
    pub power: bool,
    /// No status lines (quantization, quality passes) on stderr.
    pub quiet: bool,
}

impl RunOptions {
    /// Options that run all of `config`, write into `results_dir`, and nothing else.
    pub fn new(config: Config, results_dir: Option<PathBuf>) -> RunOptions {
        RunOptions {
            config,
            filters: Vec::new(),
            shard: None,
            scope: Scope::All,
            results_dir,
            resume: None,
            only_model: None,
            stop: None,
            bandwidth: Default::default(),
            power: false,
            quiet: true,
        }
    }
}

pub struct RunOutcome {
    pub record: RunRecord,
    pub path: Option<PathBuf>,
    pub failed: usize,
    /// The run stopped early on request; the file can be resumed.
    pub interrupted: bool,
}

impl RunOutcome {
    pub(crate) fn new(record: RunRecord, path: Option<PathBuf>, interrupted: bool) -> Self {
        RunOutcome {
            failed: (record.tests.iter())
                .filter(|t| t.status == Status::Failed)
                .count(),
            record,
            path,
            interrupted,
        }
    }
}

pub fn run(
    engine: &dyn Engine,
    info: RunInfo,
    opts: &RunOptions,
    progress: &mut dyn Progress,
) -> Result<RunOutcome, RunnerError> {
    let prep = prepare::prepare(&opts.config, &opts.filters, false)?;
    let part = prepare::part(&prep.plan, opts.scope, opts.shard);
    let mut info = describe_plan(info, &prep.plan, opts);
    if opts.only_model.is_none() {
        let results = opts.results_dir.as_deref().unwrap_or(Path::new("results"));
        let earlier = dry_run::Earlier::read(results, &info);
        let est = dry_run::estimate(&opts.config, &prep, &part, &opts.bandwidth, &earlier);
        // A part not estimated would make the whole a guess: none is recorded.
        info.estimated_seconds = (est.unknown == 0).then_some(est.secs);
    }
    if part.is_empty() {
        return nothing_to_run(info, &prep.plan, opts);
    }
    let mine = this_process(&part, &prep.plan, opts);
    prepare::check_models(&prep.models, &mine)?;
    served_ready(&opts.config, http_models(&mine), &info.devices)?;
    let child = opts.only_model.is_some();
    let (path, mut record) = target::open(
        info,
        opts.results_dir.as_deref(),
        opts.resume.as_deref(),
        child,
    )?;
    // Auto rounds judge with a sequential design from the first round on: a file measured
    // with fixed rounds cannot be continued under it.
    let auto = &opts.config.settings.auto_rounds;
    if !child && let (Some(_), None, Some(file)) = (auto, &record.run.rounds_auto, &opts.resume) {
        let (file, rounds) = (file.clone(), record.run.rounds);
        return Err(OptionError::AutoResumesFixed { file, rounds }.into());
    }
    // A resumed file asked for more rounds records the larger count.
    record.run.rounds = record.run.rounds.max(opts.config.settings.rounds);
    let todo = prepare::remaining(&prep.plan, &mine, None, &record);
    let done = (part.iter())
        .filter(|t| prepare::is_done(&prep.plan, t, &record))
        .count();
    if !child {
        warn_before(opts, &prep, &todo, record.run.load_average);
    }
    if opts.resume.is_some() && !child {
        progress.note(&format!(
            "resuming: {done} tests done, {} to run",
            todo.len()
        ));
    }
    let rounds = opts.config.settings.rounds.max(1) as usize;
    let total = part.len() + (rounds - 1) * part.iter().filter(|t| rounds_apply(t)).count();
    // Only their counts were needed; the sweep holds its own lists.
    drop((part, todo));
    let mut sweep = sweep::Sweep::new(engine, opts, &prep, record, path, (done, total))?;
    let ran = rounds::run(&mut sweep, &mine, opts, progress)?;
    if !child {
        rounds::conclude_auto(&mut sweep, &ran, opts);
        // A decode near its host ceiling: the ceiling probed again before the file is final.
        if let Some(line) = crate::record::machine::recheck_host_ceiling(&mut sweep.record) {
            progress.note(&line);
        }
    }
    Ok(sweep.finish(ran.interrupted)?)
}

/// Before any test: served `models` answer (or their server can be started), and each
/// llama-server tpsbench starts sees the offload backends this tpsbench sees (`devices`): a
/// served test beside an in-process one compares the two.
pub(crate) fn served_ready(
    config: &Config,
    models: std::collections::BTreeSet<usize>,
    devices: &[crate::record::DeviceInfo],
) -> Result<(), RunnerError> {
    crate::kinds::serving::preflight(config, models.iter().copied())?;
    use crate::config::ServerLaunch;
    use crate::engine::endpoint::launch;
    let said = |b: &[String]| {
        if b.is_empty() {
            "the CPU".to_string()
        } else {
            b.join("+")
        }
    };
    let mine = crate::util::sorted_unique(
        devices
            .iter()
            .filter(|d| d.kind != crate::engine::DeviceKind::Cpu)
            .map(|d| d.backend.clone()),
    );
    for mi in models {
        let m = &config.models[mi];
        let Some(ServerLaunch::LlamaServer { binary, .. }) =
            m.served.as_ref().and_then(|s| s.server.as_ref())
        else {
            continue;
        };
        let Some(binary) = binary.clone().or_else(launch::pinned_llama_server) else {
            continue;
        };
        if let Some(theirs) = launch::server_backends(&binary).filter(|t| *t != mine) {
            return Err(RunnerError::ServerBackend {
                model: m.name.clone(),
                binary,
                server: said(&theirs),
                engine: said(&mine),
            });
        }
    }
    Ok(())
}

/// The part's tests this process runs: all of them, or one model's in an `--isolate` child.
fn this_process(part: &[PlannedTest], plan: &Plan, opts: &RunOptions) -> Vec<PlannedTest> {
    let mine = |t: &&PlannedTest| {
        opts.only_model
            .as_ref()
            .is_none_or(|m| *m == plan.models[t.model].name)
    };
    part.iter().filter(mine).cloned().collect()
}

fn http_models(tests: &[PlannedTest]) -> std::collections::BTreeSet<usize> {
    (tests.iter())
        .filter_map(|t| match &t.detail {
            plan::Detail::Serving(s) if s.transport == plan::serving::Transport::Http => {
                Some(s.model)
            }
            _ => None,
        })
        .collect()
}

/// The warnings before the sweep: requantized models, thread counts, a busy machine.
fn warn_before(
    opts: &RunOptions,
    prep: &prepare::Prepared,
    todo: &[PlannedTest],
    load_average: Option<[f64; 3]>,
) {
    let threads = prepare::thread_warnings(todo, crate::util::system::physical_cores());
    let logical = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    // Advice, not a fault: --quiet leaves it out (the load is in the file either way).
    let busy = prepare::busy_warning(load_average, logical).filter(|_| !opts.quiet);
    for w in prepare::requantized_warnings(&opts.config, prep, todo)
        .into_iter()
        .chain(threads)
        .chain(busy)
    {
        eprintln!("warning: {w}");
    }
}

/// The plan's fingerprint, settings, ids and shard, recorded in the run.
pub fn describe_plan(mut info: RunInfo, plan: &Plan, opts: &RunOptions) -> RunInfo {
    info.plan_hash = Some(plan.hash(&opts.config.settings));
    info.plan_settings = Some(plan::build::settings_line(&opts.config.settings));
    info.plan_ids = plan.tests.iter().map(|t| t.id.clone()).collect();
    info.shard = opts.shard;
    info
}

/// An empty part: not an error for a shard (more shards than tests), but for a filter.
pub(super) fn nothing_to_run(
    info: RunInfo,
    plan: &Plan,
    opts: &RunOptions,
) -> Result<RunOutcome, RunnerError> {
    if opts.shard.is_some() && !plan.tests.is_empty() {
        let record = target::open(info, None, None, false)?.1;
        return Ok(RunOutcome::new(record, None, false));
    }
    Err(RunnerError::NoMatch {
        filters: opts.filters.clone(),
    })
}

/// Run metadata shared by `tpsbench run`, `tpsbench ladder` and `cargo bench`.
pub fn run_info(
    config: &Config,
    command: Vec<String>,
    system_info: String,
    devices: Vec<crate::record::DeviceInfo>,
) -> RunInfo {
    let mut backends = unique(devices.iter().map(|d| d.backend.clone()));
    if backends.is_empty() {
        backends.push("CPU".into());
    }
    RunInfo {
        tool: crate::record::machine::tool(),
        llama_cpp: crate::record::machine::llama_build(system_info),
        started_at: system::now_rfc3339(),
        system: crate::record::machine::system(),
        devices,
        backends: backends.join(","),
        config_file: config.file.display().to_string(),
        seed: config.settings.seed,
        warmup: config.settings.warmup,
        repetitions: config.settings.repetitions,
        rounds: config.settings.rounds,
        rounds_auto: config
            .settings
            .auto_rounds
            .map(|a| crate::record::AutoRoundsRecord {
                max_rounds: a.max_rounds,
                max_seconds: a.max_seconds,
                stopped: None,
                open: Vec::new(),
            }),
        command,
        load_average: system::load_average(),
        ..Default::default()
    }
}

/// A test record before measurement: configuration filled, figures empty.
pub fn new_test_record(t: &PlannedTest, model: &ModelRecord, run: &RunInfo) -> TestRecord {
    TestRecord {
        id: t.id.clone(),
        identity: t.identity.clone(),
        model: model.name.clone(),
        test: t.name(),
        kind: t.kind,
        status: Status::Failed,
        model_filename: model.model_filename.clone(),
        model_type: model.model_type.clone(),
        model_size: model.model_size,
        model_n_params: model.model_n_params,
        backends: run.backends.clone(),
        n_ctx: t.params.n_ctx(),
        params: t.params.clone(),
        seed: run.seed,
        warmup: run.warmup,
        test_time: system::now_rfc3339(),
        ..Default::default()
    }
}

/// `xs` without repeats, in their first order.
pub(crate) fn unique<T: PartialEq>(xs: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for x in xs {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// Test-only fault injection: `TPSBENCH_FAULT_ABORT_AT=<text>` aborts the process (as a
/// crash inside llama.cpp would) when a test whose id contains the text starts. It lets the
/// tests prove that `--isolate` and `--resume` lose nothing but the current test.
pub(crate) fn fault_injection(id: &str) {
    if std::env::var("TPSBENCH_FAULT_ABORT_AT").is_ok_and(|v| !v.is_empty() && id.contains(&v)) {
        eprintln!("TPSBENCH_FAULT_ABORT_AT: aborting at {id}");
        std::process::abort();
    }
}

/// Keeps one entry per model that has tests in the record, newest facts first.
pub(crate) fn merge_models(
    into: &mut Vec<ModelRecord>,
    fresh: &[ModelRecord],
    tests: &[TestRecord],
) {
    for m in fresh {
        if !tests.iter().any(|t| t.model == m.name) {
            continue;
        }
        match into.iter_mut().find(|x| x.name == m.name) {
            // Keep facts learned by an earlier (resumed) process when this one did not load it.
            Some(x) if m.model_type.is_none() => {
                x.sha256.clone_from(&m.sha256);
                if m.quality.is_some() {
                    x.quality.clone_from(&m.quality);
                    x.bytes_per_token = m.bytes_per_token;
                    x.ref_tokens_per_token = m.ref_tokens_per_token;
                }
            }
            Some(x) => *x = m.clone(),
            None => into.push(m.clone()),
        }
    }
}

#[cfg(test)]
mod tests;
