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
use crate::system;

/// What to run and where to write it.
pub struct RunOptions {
    pub config: Config,
    pub filters: Vec<String>,
    /// Where the result file goes; `None` writes nothing (dry use from the library).
    pub results_dir: Option<PathBuf>,
    pub command: Vec<String>,
}

pub struct RunOutcome {
    pub record: RunRecord,
    pub path: Option<PathBuf>,
    pub failed: usize,
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
        llama_cpp: system::llama_build(system_info),
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
    }
}

/// A test record before measurement: configuration filled, figures empty.
pub fn new_test_record(t: &PlannedTest, model: &ModelRecord, run: &RunInfo) -> TestRecord {
    TestRecord {
        id: t.id.clone(),
        identity: crate::record::test_identity(&model.sha256, &t.params),
        model: model.name.clone(),
        test: t.params.name(),
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
        serving: None,
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

pub fn run(
    engine: &dyn Engine,
    info: RunInfo,
    opts: &RunOptions,
    progress: &mut dyn Progress,
) -> Result<RunOutcome, String> {
    let (mut models, tests) = prepare(&opts.config, &opts.filters);
    let (serving, prompts) = crate::serving::run::prepare(&opts.config, &models, &opts.filters)?;
    if tests.is_empty() && serving.is_empty() {
        return Err(format!("no test matches the filter {:?}", opts.filters));
    }
    // A file that is missing or not a valid GGUF is bad input: say so before hours of sweep,
    // rather than discover it when its turn comes. (A file llama.cpp itself then refuses is
    // a run-time failure, recorded with the test.)
    let bad: Vec<String> = models
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            tests.iter().any(|t| t.model == *i) || serving.iter().any(|t| t.model == *i)
        })
        .filter_map(|(_, m)| m.error.as_ref().map(|e| format!("model {:?}: {e}", m.name)))
        .collect();
    if !bad.is_empty() {
        return Err(bad.join("; "));
    }
    let path = match &opts.results_dir {
        Some(dir) => Some(results::new_result_path(dir, &info)?),
        None => None,
    };
    let mut record = RunRecord {
        schema_version: SCHEMA_VERSION,
        run: info,
        models: Vec::new(),
        tests: Vec::new(),
    };
    let settings = opts.config.settings;
    let started = Instant::now();
    let mut done: Vec<(TestParams, Duration)> = Vec::new();
    let mut loaded: Option<(usize, i32, Box<dyn Model + '_>)> = None;

    for (i, t) in tests.iter().enumerate() {
        progress.test_started(i, tests.len() + serving.len(), &t.id);
        let test_start = Instant::now();
        let mrec = &mut models[t.model];
        let mut rec = new_test_record(t, mrec, &record.run);

        // Load the model when the model or a model-level parameter changes.
        let needs_load =
            !matches!(&loaded, Some((m, ngl, _)) if *m == t.model && *ngl == t.params.n_gpu_layers);
        if needs_load {
            loaded = None; // free the previous model first
            if mrec.error.is_none() {
                let load = LoadParams {
                    n_gpu_layers: t.params.n_gpu_layers,
                };
                match engine.load(&opts.config.models[t.model].path, &load) {
                    Ok(m) => {
                        let mi = m.info();
                        mrec.model_type = Some(mi.description.clone());
                        mrec.model_size = Some(mi.size);
                        mrec.model_n_params = Some(mi.n_params);
                        loaded = Some((t.model, t.params.n_gpu_layers, m));
                    }
                    Err(e) => mrec.error = Some(e),
                }
            }
            rec = new_test_record(t, mrec, &record.run);
        }

        let result = match (&loaded, &mrec.error) {
            (Some((_, _, model)), None) => {
                measure(engine, model.as_ref(), &t.params, settings, progress)
            }
            (_, Some(e)) => Err(e.clone()),
            (None, None) => Err("model not loaded".into()),
        };
        match result {
            Ok(samples) => rec.set_samples(samples),
            Err(e) => rec.fail(e),
        }
        let line = match (rec.status, rec.avg_ts, rec.stddev_ts) {
            (Status::Ok, Some(a), Some(s)) => format!("{a:.2} ± {s:.2} t/s"),
            _ => format!("FAILED: {}", rec.error.as_deref().unwrap_or("")),
        };
        done.push((t.params.clone(), test_start.elapsed()));
        let remaining: Vec<&TestParams> = tests[i + 1..].iter().map(|x| &x.params).collect();
        progress.test_finished(&line, started.elapsed(), eta(&done, &remaining));
        record.tests.push(rec);
        record.models = models
            .iter()
            .filter(|m| {
                tests
                    .iter()
                    .any(|t| opts.config.models[t.model].name == m.name)
            })
            .cloned()
            .collect();
        if let Some(p) = &path {
            results::write_atomic(p, &record)?;
        }
    }
    drop(loaded);
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
    record.run.finished_at = Some(system::now_rfc3339());
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
    })
}

/// Measures one test on a fresh context.
pub fn measure(
    engine: &dyn Engine,
    model: &dyn Model,
    params: &TestParams,
    settings: crate::config::RunSettings,
    progress: &mut dyn Progress,
) -> Result<Vec<u64>, String> {
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
    let mut samples = Vec::with_capacity(settings.repetitions as usize);
    for r in 0..settings.repetitions {
        progress.repetition(r, settings.repetitions);
        samples.push(test.repetition(engine)?);
    }
    Ok(samples)
}

#[cfg(test)]
#[path = "runner_tests.rs"]
mod tests;
