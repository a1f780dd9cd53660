//! `cargo bench`: criterion groups over the same plan and the same measurement code as
//! `tpsbench run`, writing the same result JSON.
//!
//! Ids read `SmolLM2-135M/Q4_1/pp512`; throughput is counted in tokens, so criterion's
//! `elem/s` are tokens per second. One criterion iteration is one llama-bench repetition
//! (memory cleared, depth restored, then the timed prompt or generation pass). Criterion's
//! defaults (100 samples in 5 s) assume nanosecond routines; a tg128 repetition takes about a
//! second on a CPU, so the defaults here are criterion's minimum of 10 flat samples and an
//! 8 s budget per test (10 repetitions of the slowest default test take longer; criterion
//! then takes what 10 samples need), all configurable. With the default models.toml (12 tests
//! and a ladder of five types) that brings `cargo bench` to an estimated 5 minutes on 2 cores
//! (from the published rates; 10 minutes with the earlier 30 s);
//! `TPSBENCH_MEASUREMENT_SECS=30` is the longer measurement of earlier versions:
//!
//! | variable                    | default       | meaning                                  |
//! |-----------------------------|---------------|------------------------------------------|
//! | `TPSBENCH_CONFIG`           | `models.toml` | the sweep                                |
//! | `TPSBENCH_SAMPLES`          | `10`          | criterion samples per test (at least 10) |
//! | `TPSBENCH_MEASUREMENT_SECS` | `8`           | criterion's measurement time per test    |
//! | `TPSBENCH_WARMUP_SECS`      | `1`           | criterion's warm-up time per test        |
//! | `TPSBENCH_RESULTS_DIR`      | `results`     | where the result JSON goes               |
//! | `TPSBENCH_ANSWER_SECONDS`   | `150`         | the interleaved answer pass's budget     |
//! | `TPSBENCH_QUIET_WAIT`       | `120`         | most seconds to wait for a quiet pass    |
//!
//! After criterion's lines comes the answer (which quantization: the fastest within the KLD
//! budget, ties named, and the table), as `tpsbench run` prints it. Criterion measures each
//! test in its own stretch of time, and a variant's level moves from one stretch to the next
//! by more than its samples show, so the answer does not come from criterion's
//! figures: when the plan compares variants, an interleaved pass follows, the same plan in
//! rounds (`rounds = "auto"`, one repetition per round, unless models.toml sets rounds of
//! its own), paired by round, written to a result file of its own. Its budget:
//! `TPSBENCH_ANSWER_SECONDS` (default 150; 0 skips the pass, and the answer is then judged
//! from criterion's file against the noise between launches).
//!
//! Example: `TPSBENCH_SAMPLES=20 cargo bench --bench llm -- SmolLM2-135M/Q4_1/tg128`
//!
//! A configuration with a `[tune]` table is raced instead (docs/tune.md): no criterion
//! groups, the race `tpsbench tune` runs, its result file in `TPSBENCH_RESULTS_DIR`, and
//! its answer last on stdout.
//!
//! Baselines as criterion: `cargo bench --bench llm -- --save-baseline main`, later
//! `cargo bench --bench llm -- --baseline main` (exits 1 on a significant regression).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput};
use tpsbench::engine::measure::PreparedTest;
use tpsbench::engine::{Engine, LoadParams};
use tpsbench::plan::PlannedTest;
use tpsbench::record::{RunRecord, SCHEMA_VERSION, Status};
use tpsbench::runner::Scope;
use tpsbench::runner::session::{self, Up};
use tpsbench::{config, record::results, runner, util::system};

fn env_or<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Positional arguments after `--` are criterion's filter; applying it before loading saves
/// the model loads and warmups of tests criterion would skip anyway.
fn filters() -> Vec<String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = Vec::new();
    let mut skip_value = false;
    for a in &args {
        if skip_value {
            skip_value = false;
            continue;
        }
        if a.starts_with("--") {
            // criterion options that take a value
            skip_value = matches!(
                a.as_str(),
                "--save-baseline"
                    | "--baseline"
                    | "--baseline-lenient"
                    | "--sample-size"
                    | "--measurement-time"
                    | "--warm-up-time"
                    | "--nresamples"
                    | "--noise-threshold"
                    | "--confidence-level"
                    | "--significance-level"
                    | "--profile-time"
                    | "--load-baseline"
                    | "--color"
                    | "--format"
                    | "--output-format"
                    | "--plotting-backend"
            );
            continue;
        }
        out.push(a.clone());
    }
    out
}

/// The value after a `--flag VALUE` or `--flag=VALUE` argument.
fn arg_value(flag: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().enumerate().find_map(|(i, a)| {
        if a == flag {
            args.get(i + 1).cloned()
        } else {
            a.strip_prefix(&format!("{flag}=")).map(str::to_string)
        }
    })
}

/// The interleaved pass behind the answer: the plan again in rounds, paired by round, when it
/// compares variants (a ladder, or several settings of one test). Auto rounds of one
/// repetition within `TPSBENCH_ANSWER_SECONDS`, unless the configuration sets rounds of its
/// own. None when there is nothing to compare, the budget is 0, or the pass failed (said on
/// stderr).
fn answer_pass(
    up: &Up,
    cfg: &config::Config,
    plan: &tpsbench::plan::Plan,
    results_dir: &Path,
) -> Option<(RunRecord, PathBuf)> {
    let seconds: f64 = env_or("TPSBENCH_ANSWER_SECONDS", 150.0);
    if seconds <= 0.0 || !runner::auto::has_comparison(plan) {
        return None;
    }
    let mut cfg = cfg.clone();
    let s = &mut cfg.settings;
    if s.auto_rounds.is_none() && s.rounds < 2 {
        let max_rounds = 20;
        s.auto_rounds = Some(config::AutoRounds {
            max_rounds,
            max_seconds: Some(seconds),
            budget_given: true,
        });
        s.rounds = max_rounds;
        if !s.repetitions_given {
            s.repetitions = config::AutoRounds::REPETITIONS;
        }
    } else if let Some(a) = s.auto_rounds.as_mut() {
        a.max_seconds = Some(a.max_seconds.map_or(seconds, |m| m.min(seconds)));
    }
    eprintln!(
        "\ntpsbench: the answer's interleaved pass: the plan in rounds, paired by round \
         (at most {seconds:.0} s; TPSBENCH_ANSWER_SECONDS=0 skips it)"
    );
    session::wait_for_quiet(env_or("TPSBENCH_QUIET_WAIT", 120));
    let request = session::Request {
        filters: filters(),
        results_dir: Some(results_dir.to_path_buf()),
        ..Default::default()
    };
    let opts = up.options(cfg.clone(), &request);
    let mut progress = tpsbench::output::progress::StderrProgress::new(false);
    match runner::run(&up.engine, up.info.clone(), &opts, &mut progress) {
        Ok(out) => {
            let path = out.path?;
            eprintln!("answer pass written to {}", path.display());
            Some((out.record, path))
        }
        Err(e) => {
            eprintln!("error: the answer's interleaved pass: {e}");
            None
        }
    }
}

/// A `[tune]` table: its race in place of criterion's sweep, as `tpsbench run` and
/// `tpsbench tune` run it (`runner::session`), the answer last on stdout; exits with the
/// code `tpsbench tune` would. Criterion measures each test in its own stretch of time, and
/// the race's eliminations need rounds paired across candidates, so criterion has no part
/// in it. Criterion's filter after `--` chooses the candidates.
fn tune(config_path: PathBuf, config: config::Config) -> ! {
    let request = session::Request {
        config: config_path,
        filters: filters(),
        results_dir: Some(PathBuf::from(env_or(
            "TPSBENCH_RESULTS_DIR",
            "results".to_string(),
        ))),
        command: std::env::args().collect(),
        tune: true,
        ..Default::default()
    };
    eprintln!(
        "tpsbench: the configuration has a [tune] table: racing its configurations (docs/tune.md)"
    );
    let checked = session::Checked { request, config };
    let swept = session::start(checked).and_then(session::sweep);
    let swept = swept.unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2);
    });
    if let session::Ending::Ran(v) = session::finish(&swept) {
        v.written.iter().for_each(|l| eprintln!("{l}"));
        if let Some(a) = tpsbench::report::tune::answer(&swept.run.record) {
            print!("{a}");
        }
        v.lines.iter().for_each(|l| eprintln!("{l}"));
    }
    std::process::exit(if swept.run.interrupted { 130 } else { 0 });
}

fn main() {
    let config_path = PathBuf::from(env_or("TPSBENCH_CONFIG", "models.toml".to_string()));
    let cfg = match config::load(&config_path, system::physical_cores()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    if cfg.tune.is_some() {
        tune(config_path, cfg);
    }
    let start = session::Request {
        filters: filters(),
        command: std::env::args().collect(),
        ..Default::default()
    };
    let up = session::start_up(&cfg, &start).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2);
    });
    let engine = &up.engine;
    let samples = env_or("TPSBENCH_SAMPLES", 10usize).max(10);
    let mut c = Criterion::default()
        .sample_size(samples)
        .measurement_time(Duration::from_secs(env_or("TPSBENCH_MEASUREMENT_SECS", 8)))
        .warm_up_time(Duration::from_secs(env_or("TPSBENCH_WARMUP_SECS", 1)))
        .configure_from_args();

    let prep = match runner::prepare::prepare(&cfg, &filters()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let mut opts = up.options(cfg.clone(), &start);
    opts.quiet = true;
    let info = runner::describe_plan(up.info.clone(), &prep.plan, &opts);
    // The same plan as `tpsbench run`: criterion measures its llama-bench tests here, the
    // runner the other kinds below, into the same result file.
    let tests: Vec<PlannedTest> = runner::prepare::part(&prep.plan, Scope::All, None)
        .into_iter()
        .filter(|t| t.kind.is_llama_bench())
        .collect();
    if let Err(e) = runner::prepare::check_models(&prep.models, &tests) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
    let results_dir = PathBuf::from(env_or("TPSBENCH_RESULTS_DIR", "results".to_string()));
    let path = results::new_result_path(&results_dir, &info).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2);
    });
    let mut record = RunRecord {
        schema_version: SCHEMA_VERSION,
        run: info,
        models: Vec::new(),
        tests: Vec::new(),
    };
    let mut models = prep.models.clone();
    let rep = tpsbench::ladder::Reporter::new(false);

    let mut i = 0;
    // Ctrl-C: no group starts after it; the file keeps what was measured.
    while i < tests.len() && !up.stop.load(std::sync::atomic::Ordering::SeqCst) {
        // One group per model and model-level setting: the model is loaded once for it.
        let first = &tests[i];
        let end = tests[i..]
            .iter()
            .position(|t| t.model != first.model || t.load_key() != first.load_key())
            .map_or(tests.len(), |n| i + n);
        let group_tests = &tests[i..end];
        i = end;
        runner::prepare::ensure_variant(&cfg, &prep, &mut models, first.model, &rep);
        let mrec = models[first.model].clone();
        let loaded = match &mrec.error {
            Some(e) => Err(e.clone()),
            None => engine
                .load(Path::new(&mrec.path), &LoadParams::of(&first.params))
                .map_err(|e| e.to_string()),
        };
        let model = match loaded {
            Ok(m) => m,
            Err(e) => {
                eprintln!("error: {}: {e}", mrec.name);
                for t in group_tests {
                    let mut rec = runner::new_test_record(t, &mrec, &record.run);
                    rec.fail(e.clone());
                    record.tests.push(rec);
                }
                continue;
            }
        };
        let m = &mut models[first.model];
        m.model_type = Some(model.info().description.clone());
        m.model_size = Some(model.info().size);
        m.model_n_params = Some(model.info().n_params);
        let mrec = m.clone();
        // Test ids are `model/quant/test[/axis=value...]`: the group is `model/quant`.
        let group_name = format!(
            "{}/{}",
            mrec.name,
            mrec.quantization.as_deref().unwrap_or("unknown")
        );
        let mut group = c.benchmark_group(group_name.clone());
        group.sampling_mode(SamplingMode::Flat);
        for t in group_tests {
            let mut rec = runner::new_test_record(t, &mrec, &record.run);
            // Random ids, or the [sweep] text file's stream (`tokens = "text"`), as `run`.
            let source = tpsbench::kinds::bench::token_source(
                model.as_ref(),
                &t.params,
                cfg.settings.seed,
                prep.text.as_ref(),
            );
            let prepared = source.and_then(|(tokens, text)| {
                rec.text = text.map(Box::new);
                model
                    .session(&t.params)
                    .and_then(|s| PreparedTest::new(s, &t.params, tokens, cfg.settings.warmup))
                    .map_err(tpsbench::kinds::error::KindError::from)
            });
            rec.placement = model.placement(&t.params);
            let mut prepared = match prepared {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("error: {}: {e}", t.id);
                    rec.fail(e.to_string());
                    record.tests.push(rec);
                    continue;
                }
            };
            // Every criterion call: (iterations, repetition times). Warm-up calls come first,
            // so the measured samples are the last `samples` calls.
            let calls: RefCell<Vec<Vec<u64>>> = RefCell::new(Vec::new());
            let error: RefCell<Option<String>> = RefCell::new(None);
            group.throughput(Throughput::Elements(t.params.n_tokens()));
            let name =
                t.id.strip_prefix(&format!("{group_name}/"))
                    .unwrap_or(&t.id)
                    .to_string();
            group.bench_function(name, |b| {
                b.iter_custom(|iters| {
                    let mut reps = Vec::with_capacity(iters as usize);
                    for _ in 0..iters {
                        match prepared.repetition(engine) {
                            Ok(ns) => reps.push(ns),
                            Err(e) => {
                                *error.borrow_mut() = Some(e.to_string());
                                reps.push(0);
                            }
                        }
                    }
                    let total = reps.iter().sum();
                    calls.borrow_mut().push(reps);
                    Duration::from_nanos(total)
                })
            });
            let calls = calls.into_inner();
            match error.into_inner() {
                Some(e) => rec.fail(e),
                None if calls.is_empty() => continue, // filtered out by criterion
                None => {
                    let n = calls.len().min(samples);
                    let measured: Vec<u64> =
                        calls[calls.len() - n..].iter().flatten().copied().collect();
                    rec.set_measurement(
                        measured,
                        tpsbench::stats::analysis::StopReason::Fixed,
                        None,
                    );
                }
            }
            record.tests.push(rec);
            record.models = models
                .iter()
                .filter(|m| record.tests.iter().any(|t| t.model == m.name))
                .cloned()
                .collect();
            if let Err(e) = results::write_atomic(&path, &record) {
                eprintln!("error: {e}");
            }
        }
        group.finish();
    }
    record.run.finished_at = Some(system::now_rfc3339());
    record.models = models
        .iter()
        .filter(|m| record.tests.iter().any(|t| t.model == m.name))
        .cloned()
        .collect();
    if let Err(e) = results::write_atomic(&path, &record) {
        eprintln!("error: {e}");
    }
    // The other kinds (serving, quality) follow through the runner, with their own
    // methodology, continuing the same file: criterion's statistics do not apply to TTFT or
    // KLD.
    opts.scope = Scope::NotLlamaBench;
    opts.resume = Some(path.clone());
    opts.continuation = true;
    opts.quiet = false;
    let mut progress = tpsbench::output::progress::StderrProgress::new(false);
    let others = runner::prepare::part(&prep.plan, Scope::NotLlamaBench, None);
    if !others.is_empty() {
        match runner::run(engine, record.run.clone(), &opts, &mut progress) {
            Ok(out) => record = out.record,
            Err(e) => eprintln!("error: {e}"),
        }
    }
    eprintln!("results written to {}", path.display());
    c.final_summary();
    // Criterion's own HTML report (its html_reports feature), where criterion users look
    // first: under the target directory, as criterion places it.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("target"));
    let report = target.join("criterion/report/index.html");
    if report.exists() {
        let shown = std::fs::canonicalize(&report).unwrap_or(report);
        eprintln!("criterion's HTML report: {}", shown.display());
    }
    // The answer last on stdout, after criterion's lines: from the interleaved pass when
    // there is one, else from criterion's own file.
    let interrupted = up.stop.load(std::sync::atomic::Ordering::SeqCst);
    let answered = (!interrupted)
        .then(|| answer_pass(&up, &cfg, &prep.plan, &results_dir))
        .flatten();
    println!(
        "\ntpsbench: criterion's thrpt figures above count tokens: elem/s are tokens per second \
         (Kelem/s, thousands)."
    );
    let (answer_record, answer_path) = match &answered {
        Some((r, p)) => {
            println!(
                "tpsbench: the answer below comes from the interleaved pass ({}), paired by round; \
                 criterion's figures are each from one stretch of time.",
                p.display()
            );
            (r, p)
        }
        None => (&record, &path),
    };
    if let Some(a) = tpsbench::report::leaderboard::answer_run::of_run(answer_record, answer_path) {
        print!("{a}");
    }
    // The speculative tests ran after criterion, in the main result file (each pairs its own
    // plain decoding by round): their answer last.
    if let Some(a) = tpsbench::report::speculative::of_run(&record) {
        print!("{a}");
    }
    let mut code = if interrupted { 130 } else { 0 };
    if record.tests.iter().any(|t| t.status == Status::Failed) {
        code = 1;
    }
    // criterion's --save-baseline / --baseline also name tpsbench baselines (same names,
    // in target/tpsbench/baselines), so `tpsbench compare` can read what cargo bench saved.
    let dir = PathBuf::from(tpsbench::report::compare::BASELINE_DIR);
    if let Some(name) = arg_value("--save-baseline") {
        match tpsbench::report::compare::save_baseline(&record, &name, &dir) {
            Ok(p) => eprintln!("tpsbench baseline {name:?} saved to {}", p.display()),
            Err(e) => eprintln!("error: {e}"),
        }
    }
    if let Some(name) = arg_value("--baseline") {
        match tpsbench::report::compare::load_side(&name, &dir) {
            Ok(base) => {
                let this = tpsbench::report::compare::side_of_run("this run", &record);
                let settings = tpsbench::report::compare::baseline_settings(&this);
                let report = tpsbench::report::compare::compare_sides(&base, &this, &[], &settings);
                eprint!(
                    "\n{}",
                    report.to_markdown(&format!("baseline {name}"), "this run")
                );
                if let Some(line) = report.regression_line(0.05) {
                    eprintln!("error: {line} against baseline {name:?}");
                    code = 1;
                }
            }
            Err(e) => eprintln!("error: {e}"),
        }
    }
    std::process::exit(code);
}
