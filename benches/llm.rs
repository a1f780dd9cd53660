//! `cargo bench`: the plan of models.toml measured once, in interleaved rounds, as
//! `tpsbench run` measures it; then criterion's report of those very repetitions, and the
//! answer from the same pass.
//!
//! Criterion measures each test in its own stretch of time, and a variant's level moves from
//! one stretch to the next by more than its samples show: an answer needs rounds paired
//! across variants. So the runner measures (rounds, one result file, every kind of test),
//! and criterion is handed each llama-bench test's repetitions afterwards: one criterion
//! sample is one repetition, throughput in tokens (`elem/s` are tokens per second). A test
//! with fewer than criterion's minimum of 10 repetitions is left out of criterion's report
//! (said on stderr); the answer still uses it.
//!
//! | variable                  | default       | meaning                                         |
//! |---------------------------|---------------|-------------------------------------------------|
//! | `TPSBENCH_CONFIG`         | `models.toml` | the configuration                               |
//! | `TPSBENCH_RESULTS_DIR`    | `results`     | where the result file goes                      |
//! | `TPSBENCH_ANSWER_SECONDS` | `150`         | the rounds' budget, unless models.toml sets one |
//!
//! Example: `cargo bench --bench llm -- SmolLM2-135M/Q4_1/tg128` (criterion's filter is the
//! run's `--filter`). A configuration with a `[tune]` table is raced, as `tpsbench tune`
//! races it. Baselines as criterion: `-- --save-baseline main`, later `-- --baseline main`
//! (exits 1 on a significant regression).
//!
//! The build must be for the machine: a CPU build on a machine with an NVIDIA or AMD GPU, or
//! a GPU build that sees no GPU, stops before anything runs (`TPSBENCH_BACKEND=cpu` measures
//! the CPU of a GPU box on purpose). `scripts/bench` builds for the machine.

use std::cell::Cell;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput};
use tpsbench::config;
use tpsbench::record::{RunRecord, Status, TestRecord};
use tpsbench::runner::session;
use tpsbench::util::system;

fn env_or<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Criterion's options that take a value: their values are not filters.
const VALUED: &[&str] = &[
    "--save-baseline",
    "--baseline",
    "--baseline-lenient",
    "--sample-size",
    "--measurement-time",
    "--warm-up-time",
    "--nresamples",
    "--noise-threshold",
    "--confidence-level",
    "--significance-level",
    "--profile-time",
    "--load-baseline",
    "--color",
    "--format",
    "--output-format",
    "--plotting-backend",
];

/// Positional arguments after `--`: criterion's filter, the run's `--filter`.
fn filters() -> Vec<String> {
    let mut out = Vec::new();
    let mut skip_value = false;
    for a in std::env::args().skip(1) {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        if a.starts_with("--") {
            skip_value = VALUED.contains(&a.as_str());
            continue;
        }
        out.push(a);
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

/// Rounds for the one pass, unless the configuration has its own: `rounds = "auto"` within
/// `TPSBENCH_ANSWER_SECONDS`, one repetition a round, as `tpsbench run`'s default sweep.
fn one_pass(cfg: &mut config::Config) {
    let s = &mut cfg.settings;
    if s.auto_rounds.is_some() || s.rounds >= 2 {
        return;
    }
    let max_rounds = 20;
    s.auto_rounds = Some(config::AutoRounds {
        max_rounds,
        max_seconds: Some(env_or("TPSBENCH_ANSWER_SECONDS", 150.0)),
        budget_given: true,
    });
    s.rounds = max_rounds;
    if !s.repetitions_given {
        s.repetitions = config::AutoRounds::REPETITIONS;
    }
}

/// Criterion's report of test `t`'s repetitions as measured: the warm-up call gets the
/// fastest repetition and a measurement time just under `n` of them, so that criterion takes
/// `n` samples of one iteration each, each one repetition in run order.
fn report(c: &mut Criterion, t: &TestRecord) {
    let reps = &t.samples_ns;
    let n = reps.len();
    if n < 10 {
        eprintln!(
            "criterion: {}: {n} repetitions, fewer than criterion's 10 samples: left out of its \
             report (the answer uses them)",
            t.id
        );
        return;
    }
    let fastest = reps.iter().copied().min().unwrap_or(1).max(2);
    let (group, name) = match t.id.match_indices('/').nth(1) {
        Some((i, _)) => (&t.id[..i], &t.id[i + 1..]),
        None => (t.id.as_str(), t.test.as_str()),
    };
    let mut g = c.benchmark_group(group);
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(n)
        .warm_up_time(Duration::from_nanos(1))
        .measurement_time(Duration::from_nanos((fastest - 1) * n as u64))
        .throughput(Throughput::Elements(t.params.n_tokens()));
    let calls = Cell::new(0usize);
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let k = calls.replace(calls.get() + 1);
            let ns = if k == 0 { fastest } else { reps[(k - 1) % n] };
            Duration::from_nanos(ns.saturating_mul(iters))
        })
    });
    g.finish();
}

/// criterion's --save-baseline / --baseline also name tpsbench baselines (same names, in
/// target/tpsbench/baselines), so `tpsbench compare` reads what cargo bench saved. True when
/// the run regressed against the baseline.
fn baselines(record: &RunRecord) -> bool {
    use tpsbench::report::compare;
    let dir = PathBuf::from(compare::BASELINE_DIR);
    if let Some(name) = arg_value("--save-baseline") {
        match compare::save_baseline(record, &name, &dir) {
            Ok(p) => eprintln!("tpsbench baseline {name:?} saved to {}", p.display()),
            Err(e) => eprintln!("error: {e}"),
        }
    }
    let Some(name) = arg_value("--baseline") else {
        return false;
    };
    match compare::load_side(&name, &dir) {
        Ok(base) => compare::against_baseline(&base, &name, record),
        Err(e) => {
            eprintln!("error: {e}");
            false
        }
    }
}

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("error: {e}");
    std::process::exit(2);
}

fn main() {
    let config_path = PathBuf::from(env_or("TPSBENCH_CONFIG", "models.toml".to_string()));
    let mut cfg = config::load(&config_path, system::physical_cores()).unwrap_or_else(|e| fail(e));
    if let Some(line) = session::hardware_mismatch() {
        fail(line);
    }
    let tune = cfg.tune.is_some();
    if tune {
        eprintln!("tpsbench: the configuration has a [tune] table: racing it (docs/tune.md)");
    } else {
        one_pass(&mut cfg);
    }
    let results_dir = env_or("TPSBENCH_RESULTS_DIR", "results".to_string());
    let request = session::Request {
        config: config_path,
        filters: filters(),
        results_dir: Some(PathBuf::from(results_dir)),
        command: std::env::args().collect(),
        tune,
        ..Default::default()
    };
    let checked = session::Checked {
        request,
        config: cfg,
    };
    let swept = session::start(checked)
        .and_then(session::sweep)
        .unwrap_or_else(|e| fail(e));
    let record = &swept.run.record;
    let mut c = Criterion::default().configure_from_args();
    let measured = record.tests.iter().filter(|t| t.kind.is_llama_bench());
    for t in measured.filter(|t| t.status == Status::Ok) {
        report(&mut c, t);
    }
    c.final_summary();
    if let session::Ending::Ran(v) = session::finish(&swept) {
        v.written.iter().for_each(|l| eprintln!("{l}"));
    }
    println!(
        "\ntpsbench: criterion's figures above are the repetitions of the interleaved rounds \
         below; its thrpt counts tokens (elem/s are tokens per second)."
    );
    let answer = match (&swept.run.path, tune) {
        (_, true) => tpsbench::report::tune::answer(record),
        (Some(p), false) => tpsbench::report::leaderboard::answer_run::of_run(record, p),
        (None, false) => None,
    };
    answer.iter().for_each(|a| print!("{a}"));
    if let Some(a) = tpsbench::report::speculative::of_run(record) {
        print!("{a}");
    }
    let failed = record.tests.iter().any(|t| t.status == Status::Failed);
    let code = match (swept.run.interrupted, failed || baselines(record)) {
        (true, _) => 130,
        (false, true) => 1,
        (false, false) => 0,
    };
    std::process::exit(code);
}
