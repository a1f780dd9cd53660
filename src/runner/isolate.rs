//! `tpsbench run --isolate`: each model runs in a child process of its own, so that even an
//! abort inside llama.cpp loses only that model's current test. The parent owns the result
//! file; each child continues it with `--resume` limited to its model (its progress counter
//! continues the parent's), and after a child dies the parent records that model's missing
//! tests as failed, with the cause. Every kind of test goes through it alike.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};

use super::error::RunnerError;
use crate::config::Config;
use crate::plan::PlannedTest;
use crate::record::{RunInfo, RunRecord};
use crate::runner::{self, Scope, prepare, target};
use crate::{record::results, util::system};

/// Describes how a child ended, for the error of the tests it did not finish.
fn describe(status: ExitStatus) -> String {
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

/// What an isolated run measures (the children read the configuration's file).
pub struct IsolatedSweep<'a> {
    pub config: &'a Config,
    pub config_path: &'a Path,
    pub filters: &'a [String],
    pub shard: Option<crate::plan::Shard>,
    pub resume: Option<&'a Path>,
}

/// Runs each model of the plan in a child `tpsbench` process, each given `child_args` too.
pub fn run(
    plan: &IsolatedSweep,
    info: RunInfo,
    results_dir: &Path,
    stop: &AtomicBool,
    child_args: &[String],
) -> Result<(RunRecord, Option<PathBuf>), RunnerError> {
    let prep = prepare::prepare(plan.config, plan.filters, false)?;
    let part = prepare::part(&prep.plan, Scope::All, plan.shard);
    let mut opts = runner::RunOptions::new(plan.config.clone(), None);
    opts.shard = plan.shard;
    opts.filters = plan.filters.to_vec();
    let info = runner::describe_plan(info, &prep.plan, &opts);
    if part.is_empty() {
        return Ok((
            runner::nothing_to_run(info, &prep.plan, &opts)?.record,
            None,
        ));
    }
    prepare::check_models(&prep.models, &part)?;
    // The file the children continue, on disk before the first child reads it.
    let (path, record) = target::open(info, Some(results_dir), plan.resume, false)?;
    let path = path.expect("a results directory was given");
    results::write_atomic(&path, &record)?;
    let exe = std::env::current_exe().map_err(RunnerError::NoExecutable)?;
    let children = Children {
        plan,
        exe: &exe,
        path: &path,
        child_args,
        prep: &prep,
        part: &part,
    };
    let record = every_round(&children, record, stop)?;
    let record = conclude(&path, record, stop)?;
    Ok((record, Some(path)))
}

/// What every child of the run shares: the plan, this executable, the file, the arguments.
struct Children<'a> {
    plan: &'a IsolatedSweep<'a>,
    exe: &'a Path,
    path: &'a Path,
    child_args: &'a [String],
    prep: &'a prepare::Prepared,
    part: &'a [PlannedTest],
}

/// Each round a fresh child per model, the models' order rotated; a child asked for
/// `--rounds r` measures only what round r still needs (`runner::due_in_round`).
fn every_round(
    c: &Children,
    mut record: RunRecord,
    stop: &AtomicBool,
) -> Result<RunRecord, RunnerError> {
    let names = runner::unique(
        c.part
            .iter()
            .map(|t| c.prep.plan.models[t.model].name.as_str()),
    );
    let rounds = c.plan.config.settings.rounds.max(1) as usize;
    for round in 0..rounds {
        let mut order = names.clone();
        order.rotate_left(round % names.len().max(1));
        for name in order {
            if stop.load(Ordering::SeqCst) {
                return Ok(record);
            }
            if has_due(c, &record, name, round) {
                record = one_child(c, name, round)?;
            }
        }
    }
    Ok(record)
}

/// Model `name` has tests that round `round` still has to measure.
fn has_due(c: &Children, record: &RunRecord, name: &str, round: usize) -> bool {
    let of_model: Vec<_> = (c.part.iter())
        .filter(|t| c.prep.plan.models[t.model].name == name)
        .cloned()
        .collect();
    !runner::due_in_round(&of_model, round, record).is_empty()
}

/// The file written for good, the ceiling checked once for the whole run.
fn conclude(
    path: &Path,
    mut record: RunRecord,
    stop: &AtomicBool,
) -> Result<RunRecord, RunnerError> {
    if !stop.load(Ordering::SeqCst) {
        record.run.finished_at = Some(system::now_rfc3339());
    }
    if let Some(line) = crate::record::machine::recheck_host_ceiling(&mut record) {
        eprintln!("{line}");
    }
    results::write_atomic(path, &record)?;
    Ok(record)
}

/// Runs the child of model `name` in round `round` (0-based); returns the file as it left it.
fn one_child(c: &Children, name: &str, round: usize) -> Result<RunRecord, RunnerError> {
    let status = wait_child(c, name, round)?;
    // A child that died left its journal: its finished tests are there.
    let mut record = crate::record::journal::read_resumable(c.path)?;
    // 1: some tests failed, and they are recorded; 130: interrupted, the file is resumable.
    if matches!(status.code(), Some(0 | 1 | 130)) {
        return Ok(record);
    }
    record_death(c, name, status, &mut record);
    results::write_atomic(c.path, &record)?;
    Ok(record)
}

/// Runs `run --resume FILE --only-model NAME --rounds ROUND+1` with the filters.
fn wait_child(c: &Children, name: &str, round: usize) -> Result<ExitStatus, RunnerError> {
    let mut cmd = Command::new(c.exe);
    cmd.arg("run")
        .arg("--config")
        .arg(c.plan.config_path)
        .arg("--resume")
        .arg(c.path)
        .args(["--only-model", name])
        .args(["--rounds", &(round + 1).to_string()])
        .stdout(std::process::Stdio::null())
        .args(c.plan.filters.iter().flat_map(|f| ["--filter", f]))
        .args(c.child_args);
    cmd.status().map_err(RunnerError::SpawnChild)
}

/// The child died: every planned test of model `name` not in the file failed with it.
fn record_death(c: &Children, name: &str, status: ExitStatus, record: &mut RunRecord) {
    let why = format!(
        "the isolated process for model {name:?} {} before this test finished",
        describe(status)
    );
    let mi = (c.prep.plan.models.iter())
        .position(|m| m.name == name)
        .expect("planned model");
    let mrec = (record.models.iter())
        .find(|m| m.name == name)
        .cloned()
        .unwrap_or_else(|| c.prep.models[mi].clone());
    for t in prepare::remaining(&c.prep.plan, c.part, Some(name), record) {
        let mut rec = runner::new_test_record(&t, &mrec, &record.run);
        rec.fail(why.clone());
        record.tests.push(rec);
    }
    if !record.models.iter().any(|m| m.name == name) {
        record.models.push(mrec);
    }
}
