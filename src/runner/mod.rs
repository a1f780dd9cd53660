//! Runs a plan, whatever its kinds of test: orders by load key, loads each model once per
//! key (building a ladder variant on first use), hands each test to the code for its kind
//! (`kinds`), and rewrites the result file after each test, so that a finished measurement
//! is on disk before the next one starts. Filter, scope, shard, resume, `--isolate`
//! children, progress and ETA, Ctrl-C and fault injection are handled here, once for every
//! kind. A test or model that fails is recorded with its error and the sweep goes on.

pub mod auto;
pub mod isolate;
pub mod knobs_check;
pub mod library_ab;
pub mod prepare;
pub mod session;
mod sweep;
pub mod target;

use std::path::PathBuf;

use crate::config::Config;
use crate::engine::Engine;
use crate::output::progress::Progress;
use crate::plan::{self, Plan, PlannedTest};
use crate::record::{
    ModelRecord, RunInfo, RunRecord, SCHEMA_VERSION, ShardInfo, Status, TestRecord,
};
use crate::util::system;

pub use prepare::{Scope, inspect_model};

/// What to run and where to write it.
pub struct RunOptions {
    pub config: Config,
    pub filters: Vec<String>,
    /// Run only this shard of the (filtered) plan: `tpsbench run --shard i/n`.
    pub shard: Option<plan::Shard>,
    /// Which part of the plan: all, the ladders only, or all but the llama-bench tests.
    pub scope: Scope,
    /// Where the result file goes; `None` writes nothing (dry use from the library).
    pub results_dir: Option<PathBuf>,
    pub command: Vec<String>,
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
    /// `resume` is this same run's file (cargo bench's criterion part wrote it): continue it
    /// without recording a resume.
    pub continuation: bool,
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
            command: Vec::new(),
            resume: None,
            only_model: None,
            stop: None,
            bandwidth: Default::default(),
            power: false,
            quiet: true,
            continuation: false,
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

pub fn run(
    engine: &dyn Engine,
    info: RunInfo,
    opts: &RunOptions,
    progress: &mut dyn Progress,
) -> Result<RunOutcome, String> {
    let prep = prepare::prepare(&opts.config, &opts.filters)?;
    let part = prepare::part(&prep.plan, opts.scope, opts.shard);
    let info = describe_plan(info, &prep.plan, opts);
    if part.is_empty() {
        return nothing_to_run(info, &prep.plan, opts);
    }
    let mine: Vec<PlannedTest> = part
        .iter()
        .filter(|t| {
            let name = &prep.plan.models[t.model].name;
            opts.only_model.as_ref().is_none_or(|m| m == name)
        })
        .cloned()
        .collect();
    prepare::check_models(&prep.models, &mine)?;
    // Served models answer (or their server can be started) before any test runs.
    let served: std::collections::BTreeSet<usize> = mine
        .iter()
        .filter_map(|t| match &t.detail {
            crate::plan::Detail::Serving(s)
                if s.transport == crate::plan::serving::Transport::Http =>
            {
                Some(s.model)
            }
            _ => None,
        })
        .collect();
    crate::kinds::serving::preflight(&opts.config, served)?;
    let child = opts.only_model.is_some();
    let target::Target { path, mut record } = target::open(
        info,
        opts.results_dir.as_deref(),
        opts.resume.as_deref(),
        child || opts.continuation,
    )?;
    // Auto rounds judge with a sequential design from the first round on: a file measured
    // with fixed rounds cannot be continued under it.
    if let (Some(_), None, Some(file)) = (
        &opts.config.settings.auto_rounds,
        &record.run.rounds_auto,
        &opts.resume,
    ) {
        if !child && !opts.continuation {
            return Err(format!(
                "{}: made with fixed rounds ({}): --rounds auto cannot continue it (its looks \
                 would not be the ones a sequential design plans); resume it with --rounds N, \
                 or start a new run with --rounds auto",
                file.display(),
                record.run.rounds
            ));
        }
    }
    // A resumed file asked for more rounds records the larger count.
    record.run.rounds = record.run.rounds.max(opts.config.settings.rounds);
    let todo = prepare::remaining(&prep.plan, &mine, None, &record);
    let done = part
        .iter()
        .filter(|t| prepare::is_done(&prep.plan, t, &record))
        .count();
    if !child {
        let threads = prepare::thread_warnings(&todo, crate::util::system::physical_cores());
        let logical = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        // Advice, not a fault: --quiet leaves it out (the load is in the file either way).
        let busy = prepare::busy_warning(record.run.load_average, logical).filter(|_| !opts.quiet);
        for w in prepare::requantized_warnings(&opts.config, &prep, &todo)
            .into_iter()
            .chain(threads)
            .chain(busy)
        {
            eprintln!("warning: {w}");
        }
    }
    if opts.resume.is_some() && !child && !opts.continuation {
        progress.note(&format!(
            "resuming: {done} tests done, {} to run",
            todo.len()
        ));
    }
    let rounds = opts.config.settings.rounds.max(1) as usize;
    let total = part.len() + (rounds - 1) * part.iter().filter(|t| rounds_apply(t)).count();
    let mut sweep = sweep::Sweep::new(engine, opts, &prep, record, path, (done, total))?;
    let mut interrupted = false;
    let auto = opts.config.settings.auto_rounds;
    let begun = std::time::Instant::now();
    let mut last = std::time::Duration::ZERO;
    let mut stopped = None;
    for round in 0..rounds {
        // `rounds = "auto"`: stop once the answer is resolved or the budget is spent.
        if let Some(a) = &auto {
            stopped = auto::stop_before(a, round, sweep.record(), begun.elapsed(), last);
            if stopped.is_some() {
                break;
            }
        }
        let due = due_in_round(&mine, round, sweep.record());
        if due.is_empty() {
            continue;
        }
        if rounds > 1 && !opts.quiet {
            let of = match auto {
                Some(_) => format!("at most {rounds}, auto"),
                None => rounds.to_string(),
            };
            progress.note(&format!("round {}/{of}", round + 1));
        }
        let t0 = std::time::Instant::now();
        interrupted = sweep.measure_all(&rotated(&due, round), progress)?;
        last = t0.elapsed();
        if interrupted {
            break;
        }
    }
    if let (Some(a), false) = (&auto, interrupted || child) {
        let done = sweep
            .record()
            .tests
            .iter()
            .map(|t| t.rounds_done())
            .max()
            .unwrap_or(0);
        let why = stopped.unwrap_or_else(|| {
            auto::stop_before(a, done, sweep.record(), begun.elapsed(), last)
                .unwrap_or_else(|| format!("budget spent: max_rounds {} reached", a.max_rounds))
        });
        let looked = auto::look(sweep.record(), auto::design(a));
        if !opts.quiet {
            eprintln!("auto rounds: {why}");
            if !looked.open.is_empty() {
                eprintln!(
                    "auto rounds: not established within the budget: {}",
                    looked.open.join("; ")
                );
            }
        }
        sweep.record_mut().run.rounds = done.max(1) as u32;
        if let Some(r) = sweep.record_mut().run.rounds_auto.as_mut() {
            r.stopped = Some(why);
            r.open = looked.open;
        }
    }
    sweep.finish(interrupted)
}

/// Whether a test takes part in rounds after the first: the llama-bench-style tests. A
/// quality test is deterministic, and a serving test repeats its own requests.
pub fn rounds_apply(t: &PlannedTest) -> bool {
    matches!(t.detail, plan::Detail::Bench)
}

/// The tests of `mine` that round `round` (0-based) still has to measure, in plan order:
/// every test without a record in round 0, then the llama-bench-style tests whose record
/// holds `round` rounds. A failed test is final and never measured again.
pub fn due_in_round(mine: &[PlannedTest], round: usize, record: &RunRecord) -> Vec<PlannedTest> {
    mine.iter()
        .filter(|t| {
            let rec = record.tests.iter().find(|r| r.id == t.id);
            match rec {
                None => round == 0,
                Some(r) => rounds_apply(t) && r.status == Status::Ok && r.rounds_done() == round,
            }
        })
        .cloned()
        .collect()
}

/// Round `round`'s order: A B C, then B C A, then C A B... The tests that share a model
/// load stay together (each group is loaded once per round) and the groups rotate; inside
/// a group of llama-bench-style tests, the tests rotate too. So no test always runs first
/// after a load, and every comparison inside a sweep is paired by round.
pub fn rotated(tests: &[PlannedTest], round: usize) -> Vec<PlannedTest> {
    let mut groups: Vec<Vec<PlannedTest>> = Vec::new();
    for t in tests {
        match groups.last_mut() {
            Some(g) if g[0].model == t.model && g[0].load_key() == t.load_key() => {
                g.push(t.clone())
            }
            _ => groups.push(vec![t.clone()]),
        }
    }
    if groups.is_empty() {
        return Vec::new();
    }
    let n = groups.len();
    groups.rotate_left(round % n);
    for g in &mut groups {
        if g.iter().all(rounds_apply) {
            let len = g.len();
            g.rotate_left(round % len);
        }
    }
    groups.concat()
}

/// The plan's fingerprint, settings, ids and shard, recorded in the run.
pub fn describe_plan(mut info: RunInfo, plan: &Plan, opts: &RunOptions) -> RunInfo {
    info.plan_hash = Some(plan.hash(&opts.config.settings));
    info.plan_settings = Some(plan::build::settings_line(&opts.config.settings));
    info.plan_ids = plan.tests.iter().map(|t| t.id.clone()).collect();
    info.shard = opts.shard.map(|s| ShardInfo {
        index: s.index,
        count: s.count,
    });
    info
}

/// An empty part: a shard with no tests is not an error (more shards than tests); a
/// filter or scope that keeps nothing is.
fn nothing_to_run(info: RunInfo, plan: &Plan, opts: &RunOptions) -> Result<RunOutcome, String> {
    if opts.shard.is_some() && !plan.tests.is_empty() {
        let record = RunRecord {
            schema_version: SCHEMA_VERSION,
            run: info,
            models: Vec::new(),
            tests: Vec::new(),
        };
        return Ok(RunOutcome {
            record,
            path: None,
            failed: 0,
            interrupted: false,
        });
    }
    if opts.scope == Scope::Ladders && opts.config.ladders.is_empty() {
        return Err(format!(
            "{}: no [[ladder]] tables: add one with a name, a base GGUF and a list of types",
            opts.config.file.display()
        ));
    }
    Err(format!("no test matches the filter {:?}", opts.filters))
}

/// Run metadata shared by `tpsbench run`, `tpsbench ladder` and `cargo bench`.
pub fn run_info(
    config: &Config,
    command: Vec<String>,
    system_info: String,
    devices: Vec<crate::record::DeviceInfo>,
) -> RunInfo {
    let mut backends: Vec<String> = Vec::new();
    for d in &devices {
        if !backends.contains(&d.backend) {
            backends.push(d.backend.clone());
        }
    }
    if backends.is_empty() {
        backends.push("CPU".into());
    }
    RunInfo {
        tool: crate::record::machine::tool(),
        llama_cpp: crate::record::machine::llama_build(
            system_info,
            crate::engine::llama::cpu_features_on(),
        ),
        started_at: system::now_rfc3339(),
        finished_at: None,
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
        gpus: Vec::new(),
        host_bandwidth: None,
        resumed_at: Vec::new(),
        shard: None,
        plan_hash: None,
        plan_settings: None,
        plan_ids: Vec::new(),
        load_average: system::load_average(),
        published: None,
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
        error: None,
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
        avg_ns: None,
        stddev_ns: None,
        avg_ts: None,
        stddev_ts: None,
        median_ts: None,
        samples_ns: Vec::new(),
        samples_ts: Vec::new(),
        stats: None,
        resources: None,
        serving: None,
        placement: None,
        not_honoured: Vec::new(),
        quality: None,
        rounds: Vec::new(),
    }
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
