//! `tpsbench run --isolate`: each model runs in a child process of its own, so that even an
//! abort inside llama.cpp loses only that model's current test. The parent owns the result
//! file; each child continues it with `--resume` limited to its model (its progress counter
//! continues the parent's), and after a child dies the parent records that model's missing
//! tests as failed, with the cause. Every kind of test goes through it alike.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::config::Config;
use crate::record::{RunInfo, RunRecord, SCHEMA_VERSION};
use crate::runner::{self, Scope, prepare, target};
use crate::{record::results, util::system};

/// Describes how a child ended, for the error of the tests it did not finish.
fn describe(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                6 => " (SIGABRT: llama.cpp aborted)",
                9 => " (SIGKILL: killed, perhaps out of memory)",
                11 => " (SIGSEGV: crashed)",
                _ => "",
            };
            return format!("killed by signal {sig}{name}");
        }
    }
    format!("exited with {status}")
}

/// What an isolated run measures: the configuration (and its file, which the children
/// read), the filters, the shard, and the file to continue.
pub struct IsolatedSweep<'a> {
    pub config: &'a Config,
    pub config_path: &'a Path,
    pub filters: &'a [String],
    pub shard: Option<crate::plan::Shard>,
    pub resume: Option<&'a Path>,
}

/// Runs each model of the plan in a child `tpsbench` process; returns the final record and
/// its path. `child_args` are passed to every child (e.g. --verbose, --shard).
pub fn run(
    plan: &IsolatedSweep,
    info: RunInfo,
    results_dir: &Path,
    stop: &std::sync::atomic::AtomicBool,
    child_args: &[String],
) -> Result<(RunRecord, Option<PathBuf>), String> {
    let config = plan.config;
    let prep = prepare::prepare(config, plan.filters)?;
    let part = prepare::part(&prep.plan, Scope::All, plan.shard);
    let mut opts = runner::RunOptions::new(config.clone(), None);
    opts.shard = plan.shard;
    let info = runner::describe_plan(info, &prep.plan, &opts);
    if part.is_empty() {
        if plan.shard.is_some() && !prep.plan.tests.is_empty() {
            // More shards than tests: nothing to do here, and no empty file to leave behind.
            let record = RunRecord {
                schema_version: SCHEMA_VERSION,
                run: info,
                models: Vec::new(),
                tests: Vec::new(),
            };
            return Ok((record, None));
        }
        return Err(format!("no test matches the filter {:?}", plan.filters));
    }
    prepare::check_models(&prep.models, &part)?;
    let target = target::open(info, Some(results_dir), plan.resume, false)?;
    let path = target.path.expect("a results directory was given");
    let mut record = target.record;
    results::write_atomic(&path, &record)?;
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the tpsbench executable: {e}"))?;
    let mut names: Vec<&str> = Vec::new();
    for t in &part {
        let n = prep.plan.models[t.model].name.as_str();
        if !names.contains(&n) {
            names.push(n);
        }
    }
    // Rounds: each round is a fresh child per model (fresh processes, fresh contexts), the
    // models' order rotated each round; a child asked for `--rounds r` measures only what
    // round r still needs (`runner::due_in_round`).
    let rounds = config.settings.rounds.max(1) as usize;
    let mine = |record: &RunRecord, name: &str, round: usize| {
        let of_model: Vec<_> = part
            .iter()
            .filter(|t| prep.plan.models[t.model].name == name)
            .cloned()
            .collect();
        !runner::due_in_round(&of_model, round, record).is_empty()
    };
    'rounds: for round in 0..rounds {
        let mut order = names.clone();
        if !order.is_empty() {
            let n = order.len();
            order.rotate_left(round % n);
        }
        for name in order {
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                break 'rounds;
            }
            if !mine(&record, name, round) {
                continue;
            }
            record = one_child(&ChildRun {
                plan,
                exe: &exe,
                path: &path,
                name,
                round,
                child_args,
                prep: &prep,
                part: &part,
            })?;
        }
    }
    if !stop.load(std::sync::atomic::Ordering::SeqCst) {
        record.run.finished_at = Some(system::now_rfc3339());
    }
    // The children's tests are all here now: one check of the ceiling for the whole run.
    if let Some(line) = crate::record::machine::recheck_host_ceiling(&mut record) {
        eprintln!("{line}");
    }
    results::write_atomic(&path, &record)?;
    Ok((record, Some(path)))
}

/// One child process: its model, its round.
struct ChildRun<'a> {
    plan: &'a IsolatedSweep<'a>,
    exe: &'a Path,
    path: &'a Path,
    name: &'a str,
    round: usize,
    child_args: &'a [String],
    prep: &'a prepare::Prepared,
    part: &'a [crate::plan::PlannedTest],
}

/// Runs one child and returns the file as it left it; after a child died, that model's
/// missing tests are recorded as failed with the cause.
fn one_child(c: &ChildRun) -> Result<RunRecord, String> {
    let (plan, name, prep) = (c.plan, c.name, c.prep);
    let mut cmd = Command::new(c.exe);
    cmd.arg("run")
        .arg("--config")
        .arg(plan.config_path)
        .arg("--resume")
        .arg(c.path);
    cmd.args(["--only-model", name])
        .args(["--rounds", &(c.round + 1).to_string()])
        .stdout(std::process::Stdio::null());
    for f in plan.filters {
        cmd.args(["--filter", f]);
    }
    cmd.args(c.child_args);
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start a child tpsbench: {e}"))?;
    // A child that died left its journal: its finished tests are there.
    let mut record = crate::record::journal::read_resumable(c.path)?;
    match status.code() {
        Some(0 | 1) => return Ok(record), // 1: some tests failed, and they are recorded
        Some(130) => return Ok(record),   // interrupted: the file is resumable
        _ => {}
    }
    // The child died: every planned test of this model not in the file failed with it.
    let why = format!(
        "the isolated process for model {name:?} {} before this test finished",
        describe(status)
    );
    let mi = prep
        .plan
        .models
        .iter()
        .position(|m| m.name == name)
        .expect("planned model");
    let mrec = record
        .models
        .iter()
        .find(|m| m.name == name)
        .cloned()
        .unwrap_or_else(|| prep.models[mi].clone());
    for t in prepare::remaining(&prep.plan, c.part, Some(name), &record) {
        let mut rec = runner::new_test_record(&t, &mrec, &record.run);
        rec.fail(why.clone());
        record.tests.push(rec);
    }
    if !record.models.iter().any(|m| m.name == name) {
        record.models.push(mrec);
    }
    results::write_atomic(c.path, &record)?;
    Ok(record)
}
