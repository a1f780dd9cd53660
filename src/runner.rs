//! Runs a sweep: inspects the model files, expands the plan, loads each model once per
//! model-level setting, measures every test, and rewrites the result file after each test,
//! so that a finished measurement is on disk before the next one starts. A test or model
//! that fails is recorded with its error and the sweep goes on.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::engine::{Engine, LoadParams, Model};
use crate::gguf::reader;
use crate::measure::PreparedTest;
use crate::plan::{self, PlannedTest, TestParams};
use crate::progress::{Progress, eta};
use crate::record::{ModelRecord, RunInfo, RunRecord, SCHEMA_VERSION, Status, TestRecord};
use crate::results;
use crate::stats::analysis::StopReason;
use crate::system;

/// What to run and where to write it.
pub struct RunOptions {
    pub config: Config,
    pub filters: Vec<String>,
    /// Run only this shard of the (filtered) plan: `tpsbench run --shard i/n`.
    pub shard: Option<plan::Shard>,
    /// Where the result file goes; `None` writes nothing (dry use from the library).
    pub results_dir: Option<PathBuf>,
    pub command: Vec<String>,
    /// Continue the run in this result file, skipping the tests it holds.
    pub resume: Option<PathBuf>,
    /// Run only this model's tests (used by `--isolate` children).
    pub only_model: Option<String>,
    /// Set (by Ctrl-C) to stop after the current test.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Bandwidths for decode rooflines; the default (none known) leaves rooflines out.
    pub bandwidth: crate::machine::Ceilings,
    /// Sample power (NVML or RAPL, where present) during each test.
    pub power: bool,
}

pub struct RunOutcome {
    pub record: RunRecord,
    pub path: Option<PathBuf>,
    pub failed: usize,
    /// The run stopped early on request; the file can be resumed.
    pub interrupted: bool,
}

/// Inspects a model file without llama.cpp: header check, size, hash, quantization.
pub fn inspect_model(name: &str, path: &Path) -> ModelRecord {
    let mut rec = ModelRecord {
        name: name.to_string(),
        path: path.display().to_string(),
        model_filename: path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
        file_size: 0,
        sha256: String::new(),
        architecture: None,
        quantization: None,
        model_type: None,
        model_size: None,
        model_n_params: None,
        error: None,
        bits_per_weight: None,
        provenance: None,
        quality: None,
        bytes_per_token: None,
        ref_tokens_per_token: None,
    };
    match reader::read_header(path) {
        Err(e) => rec.error = Some(format!("{}: {e}", path.display())),
        Ok(h) => {
            rec.file_size = h.file_size;
            rec.architecture = h.architecture().map(str::to_string);
            rec.quantization = h.file_type().map(str::to_string);
            match system::sha256_file(path) {
                Ok(s) => rec.sha256 = s,
                Err(e) => rec.error = Some(format!("{}: {e}", path.display())),
            }
            rec.provenance = crate::ladder::synthetic_provenance(&h, &rec);
        }
    }
    rec
}

/// Run metadata shared by `tpsbench run` and `cargo bench`.
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
        tool: system::tool(),
        llama_cpp: system::llama_build(system_info, crate::engine::llama::cpu_features_on()),
        started_at: system::now_rfc3339(),
        finished_at: None,
        system: system::system(),
        devices,
        backends: backends.join(","),
        config_file: config.file.display().to_string(),
        seed: config.settings.seed,
        warmup: config.settings.warmup,
        repetitions: config.settings.repetitions,
        command,
        gpus: Vec::new(),
        host_bandwidth: None,
        resumed_at: Vec::new(),
        shard: None,
        plan_hash: None,
    }
}

/// A test record before measurement: configuration filled, figures empty.
pub fn new_test_record(t: &PlannedTest, model: &ModelRecord, run: &RunInfo) -> TestRecord {
    TestRecord {
        id: t.id.clone(),
        identity: crate::record::test_identity(&model.sha256, &t.params),
        model: model.name.clone(),
        test: t.params.name(),
        kind: crate::plan::TestKind::of_sizes(t.params.n_prompt, t.params.n_gen),
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
    }
}

/// Inspects the models and expands the plan (filters applied).
pub fn prepare(config: &Config, filters: &[String]) -> (Vec<ModelRecord>, Vec<PlannedTest>) {
    let models: Vec<ModelRecord> = config
        .models
        .iter()
        .map(|m| inspect_model(&m.name, &m.path))
        .collect();
    let labels: Vec<String> = models
        .iter()
        .map(|m| m.quantization.clone().unwrap_or_else(|| "unknown".into()))
        .collect();
    let tests = plan::filter(plan::expand(config, &labels), filters);
    (models, tests)
}

/// The part of a plan that shard `s` runs: its llama-bench tests (`plan::shard`) and every
/// `count`-th serving group, so serving tests are spread over the shards, each run once.
pub fn shard_plan(
    planned: Vec<PlannedTest>,
    mut serving: Vec<crate::serving::plan::ServingTest>,
    s: plan::Shard,
) -> (Vec<PlannedTest>, Vec<crate::serving::plan::ServingTest>) {
    serving.retain(|t| t.group % s.count == s.index);
    (plan::shard(&planned, s.index, s.count), serving)
}

/// Where a run writes, and what it already holds when resumed.
struct Target {
    path: Option<PathBuf>,
    record: RunRecord,
}

/// A new result file, or the file of an interrupted run to continue (`--resume`).
fn open_target(info: RunInfo, opts: &RunOptions) -> Result<Target, String> {
    if let Some(p) = &opts.resume {
        let mut record = results::read(p)?;
        record.run.finished_at = None;
        record.run.resumed_at.push(system::now_rfc3339());
        return Ok(Target {
            path: Some(p.clone()),
            record,
        });
    }
    let path = match &opts.results_dir {
        Some(dir) => Some(results::new_result_path(dir, &info)?),
        None => None,
    };
    let record = RunRecord {
        schema_version: SCHEMA_VERSION,
        run: info,
        models: Vec::new(),
        tests: Vec::new(),
    };
    Ok(Target { path, record })
}

/// The tests to run: the plan, less other models (`only_model`) and tests already in a
/// resumed file (matched by identity, so a changed configuration is never mistaken for done).
pub fn select(
    config: &Config,
    models: &[ModelRecord],
    tests: Vec<PlannedTest>,
    only_model: Option<&str>,
    done: &RunRecord,
) -> Vec<PlannedTest> {
    tests
        .into_iter()
        .filter(|t| only_model.is_none_or(|m| config.models[t.model].name == m))
        .filter(|t| {
            let id = crate::record::test_identity(&models[t.model].sha256, &t.params);
            let name = &config.models[t.model].name;
            !done
                .tests
                .iter()
                .any(|d| d.identity == id && &d.model == name)
        })
        .collect()
}

pub fn run(
    engine: &dyn Engine,
    info: RunInfo,
    opts: &RunOptions,
    progress: &mut dyn Progress,
) -> Result<RunOutcome, String> {
    let (mut models, mut planned) = prepare(&opts.config, &opts.filters);
    let (mut serving, prompts) =
        crate::serving::run::prepare(&opts.config, &models, &opts.filters)?;
    let matched = !planned.is_empty() || !serving.is_empty();
    if let (Some(s), true) = (opts.shard, matched) {
        (planned, serving) = shard_plan(planned, serving, s);
        if planned.is_empty() && serving.is_empty() {
            // More shards than tests: this one has nothing to do, which is not an error.
            return Ok(RunOutcome {
                record: RunRecord {
                    schema_version: SCHEMA_VERSION,
                    run: info,
                    models: Vec::new(),
                    tests: Vec::new(),
                },
                path: None,
                failed: 0,
                interrupted: false,
            });
        }
    }
    if planned.is_empty() && serving.is_empty() {
        return Err(format!("no test matches the filter {:?}", opts.filters));
    }
    // A file that is missing or not a valid GGUF is bad input: say so before hours of sweep,
    // rather than discover it when its turn comes. (A file llama.cpp itself then refuses is
    // a run-time failure, recorded with the test.)
    let bad: Vec<String> = models
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            planned.iter().any(|t| t.model == *i) || serving.iter().any(|t| t.model == *i)
        })
        .filter_map(|(_, m)| m.error.as_ref().map(|e| format!("model {:?}: {e}", m.name)))
        .collect();
    if !bad.is_empty() {
        return Err(bad.join("; "));
    }
    let Target { path, mut record } = open_target(info, opts)?;
    let serving = crate::serving::records::remaining(
        serving,
        &opts.config,
        &models,
        prompts.as_ref(),
        opts.only_model.as_deref(),
        &record,
    );
    let tests = select(
        &opts.config,
        &models,
        planned,
        opts.only_model.as_deref(),
        &record,
    );
    if opts.resume.is_some() {
        progress.note(&format!(
            "resuming: {} tests done, {} to run",
            record.tests.len(),
            tests.len()
        ));
    }
    let settings = opts.config.settings;
    let shapes: Vec<Option<crate::machine::roofline::Shape>> = opts
        .config
        .models
        .iter()
        .map(|m| {
            reader::read_header(&m.path)
                .ok()
                .and_then(|h| crate::machine::shape_of(&h))
        })
        .collect();
    let power = if opts.power {
        crate::machine::energy::detect()
    } else {
        None
    };
    let mut monitor = crate::machine::Monitor::new(power, opts.bandwidth.clone());
    monitor.host = record.run.host_bandwidth.clone();
    let started = Instant::now();
    let mut done: Vec<(TestParams, Duration)> = Vec::new();
    let mut loaded: Option<(usize, TestParams, Box<dyn Model + '_>)> = None;
    let mut interrupted = false;

    for (i, t) in tests.iter().enumerate() {
        if opts
            .stop
            .as_ref()
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst))
        {
            interrupted = true;
            progress.note(&format!(
                "interrupted: {} tests not run; continue with --resume",
                tests.len() - i
            ));
            break;
        }
        progress.test_started(i, tests.len() + serving.len(), &t.id);
        fault_injection(&t.id);
        let test_start = Instant::now();
        // Load the model when the model or a model-level parameter changes.
        let needs_load = !matches!(&loaded,
            Some((m, p, _)) if *m == t.model && p.same_model_params(&t.params));
        if needs_load {
            loaded = None; // free the previous model first
            let load = LoadParams::of(&t.params);
            let mrec = &mut models[t.model];
            match engine.load(&opts.config.models[t.model].path, &load) {
                Ok(m) => {
                    let mi = m.info();
                    mrec.model_type = Some(mi.description.clone());
                    mrec.model_size = Some(mi.size);
                    mrec.model_n_params = Some(mi.n_params);
                    mrec.error = None;
                    loaded = Some((t.model, t.params.clone(), m));
                }
                Err(e) => mrec.error = Some(e),
            }
        }
        let mrec = &models[t.model];
        let mut rec = new_test_record(t, mrec, &record.run);
        let active = monitor.begin();
        let result = match (&loaded, &mrec.error) {
            (Some((_, _, model)), None) => {
                let r = measure(engine, model.as_ref(), &t.params, settings, progress);
                rec.placement = model.placement(&t.params);
                r
            }
            (_, Some(e)) => Err(e.clone()),
            (None, None) => Err("model not loaded".into()),
        };
        match result {
            Ok((samples, stop)) => rec.set_measurement(samples, stop, settings.ci_target),
            Err(e) => rec.fail(e),
        }
        // Model facts from llama.cpp beat the header's where both exist.
        let shape = shapes[t.model].map(|mut s| {
            s.weight_bytes = mrec.model_size.unwrap_or(s.weight_bytes);
            s.n_params = mrec.model_n_params.unwrap_or(s.n_params);
            s
        });
        let timed_tokens = t.params.n_tokens() * rec.samples_ns.len() as u64;
        rec.resources = Some(monitor.end(
            active,
            &t.params,
            shape.as_ref(),
            rec.placement.as_ref(),
            rec.median_ts,
            timed_tokens,
        ));
        let line = match (rec.status, rec.avg_ts, rec.stddev_ts) {
            (Status::Ok, Some(a), Some(s)) => format!("{a:.2} ± {s:.2} t/s"),
            _ => format!("FAILED: {}", rec.error.as_deref().unwrap_or("")),
        };
        done.push((t.params.clone(), test_start.elapsed()));
        let remaining: Vec<&TestParams> = tests[i + 1..].iter().map(|x| &x.params).collect();
        progress.test_finished(&line, started.elapsed(), eta(&done, &remaining));
        record.tests.push(rec);
        merge_models(&mut record.models, &models, &record.tests);
        // On disk before the next test starts.
        if let Some(p) = &path {
            results::write_atomic(p, &record)?;
        }
    }
    drop(loaded);
    if !interrupted {
        // Serving tests run after the llama-bench-style tests (see serving::run).
        let mut sink = crate::serving::run::Sink {
            path: path.as_deref(),
            progress,
            offset: tests.len(),
            total: tests.len() + serving.len(),
        };
        let config = &opts.config;
        crate::serving::run::run_all(
            engine,
            config,
            &serving,
            prompts.as_ref(),
            &mut record,
            &mut models,
            &mut sink,
        )?;
    }
    merge_models(&mut record.models, &models, &record.tests);
    if !interrupted {
        record.run.finished_at = Some(system::now_rfc3339());
    }
    if let Some(p) = &path {
        results::write_atomic(p, &record)?;
    }
    let failed = record
        .tests
        .iter()
        .filter(|t| t.status == Status::Failed)
        .count();
    Ok(RunOutcome {
        record,
        path,
        failed,
        interrupted,
    })
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
fn merge_models(into: &mut Vec<ModelRecord>, fresh: &[ModelRecord], tests: &[TestRecord]) {
    for m in fresh {
        if !tests.iter().any(|t| t.model == m.name) {
            continue;
        }
        match into.iter_mut().find(|x| x.name == m.name) {
            // Keep facts learned by an earlier (resumed) process when this one did not load it.
            Some(x) if m.model_type.is_none() => x.sha256.clone_from(&m.sha256),
            Some(x) => *x = m.clone(),
            None => into.push(m.clone()),
        }
    }
}

/// Measures one test on a fresh context, repeating as the settings' stopping rule says.
pub fn measure(
    engine: &dyn Engine,
    model: &dyn Model,
    params: &TestParams,
    settings: crate::config::RunSettings,
    progress: &mut dyn Progress,
) -> Result<(Vec<u64>, StopReason), String> {
    if params.n_ctx() > model.info().n_ctx_train && model.info().n_ctx_train > 0 {
        return Err(format!(
            "the test needs a context of {} tokens but the model was trained for {}",
            params.n_ctx(),
            model.info().n_ctx_train
        ));
    }
    let session = model.session(params)?;
    let mut test = PreparedTest::new(
        session,
        params,
        model.info(),
        settings.seed,
        settings.warmup,
    )?;
    let policy = settings.policy();
    let mut samples = Vec::with_capacity(policy.min_repetitions as usize);
    let mut rates = Vec::with_capacity(policy.min_repetitions as usize);
    loop {
        progress.repetition(
            samples.len() as u32,
            policy.min_repetitions.max(samples.len() as u32 + 1),
        );
        let ns = test.repetition(engine)?;
        samples.push(ns);
        rates.push(params.n_tokens() as f64 * 1e9 / ns.max(1) as f64);
        let elapsed = samples.iter().sum::<u64>() as f64 * 1e-9;
        if let Some(reason) = policy.should_stop(&rates, elapsed, settings.seed) {
            return Ok((samples, reason));
        }
    }
}

#[cfg(test)]
#[path = "runner_tests.rs"]
mod tests;
