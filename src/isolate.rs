//! `tpsbench run --isolate`: each model runs in a child process of its own, so that even an
//! abort inside llama.cpp loses only that model's current test. The parent owns the result
//! file; each child continues it with `--resume` limited to its model, and after a child
//! dies the parent records that model's missing tests as failed, with the cause.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::config::Config;
use crate::record::{RunInfo, RunRecord, SCHEMA_VERSION};
use crate::{results, runner, system};

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
/// read), the filters and the shard.
pub struct Plan<'a> {
    pub config: &'a Config,
    pub config_path: &'a Path,
    pub filters: &'a [String],
    pub shard: Option<crate::plan::Shard>,
}

/// Runs each model of the plan in a child `tpsbench` process; returns the final record and
/// its path. `child_args` are passed to every child (e.g. --verbose, --shard).
pub fn run(
    plan: &Plan,
    info: RunInfo,
    results_dir: &Path,
    stop: &std::sync::atomic::AtomicBool,
    child_args: &[String],
) -> Result<(RunRecord, Option<PathBuf>), String> {
    let Plan {
        config,
        config_path,
        filters,
        shard,
    } = *plan;
    let (models, mut planned) = runner::prepare(config, filters);
    let (mut serving, prompts) = crate::serving::run::prepare(config, &models, filters)?;
    if planned.is_empty() && serving.is_empty() {
        return Err(format!("no test matches the filter {filters:?}"));
    }
    if let Some(s) = shard {
        // The children get the same --shard: they run this part of each model's tests.
        (planned, serving) = runner::shard_plan(planned, serving, s);
    }
    if let Some(m) = models.iter().find(|m| m.error.is_some()) {
        return Err(format!(
            "model {:?}: {}",
            m.name,
            m.error.as_deref().unwrap_or_default()
        ));
    }
    if planned.is_empty() && serving.is_empty() {
        // More shards than tests: nothing to do here, and no empty file to leave behind.
        let record = RunRecord {
            schema_version: SCHEMA_VERSION,
            run: info,
            models: Vec::new(),
            tests: Vec::new(),
        };
        return Ok((record, None));
    }
    let path = results::new_result_path(results_dir, &info)?;
    let mut record = RunRecord {
        schema_version: SCHEMA_VERSION,
        run: info,
        models: Vec::new(),
        tests: Vec::new(),
    };
    results::write_atomic(&path, &record)?;
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the tpsbench executable: {e}"))?;
    let mut names: Vec<&str> = Vec::new();
    let model_of = planned
        .iter()
        .map(|t| t.model)
        .chain(serving.iter().map(|t| t.model));
    for m in model_of {
        let n = config.models[m].name.as_str();
        if !names.contains(&n) {
            names.push(n);
        }
    }
    for name in names {
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
        let mut cmd = Command::new(&exe);
        cmd.arg("run")
            .arg("--config")
            .arg(config_path)
            .arg("--resume")
            .arg(&path);
        cmd.args(["--only-model", name])
            .stdout(std::process::Stdio::null());
        for f in filters {
            cmd.args(["--filter", f]);
        }
        cmd.args(child_args);
        let status = cmd
            .status()
            .map_err(|e| format!("cannot start a child tpsbench: {e}"))?;
        record = results::read(&path)?;
        if status.success() || status.code() == Some(1) {
            continue; // 1: some tests failed, and they are recorded
        }
        // The child died: every planned test of this model not in the file failed with it.
        let cause = describe(status);
        let mrec = models
            .iter()
            .find(|m| m.name == name)
            .expect("planned model");
        let why =
            format!("the isolated process for model {name:?} {cause} before this test finished");
        let missing = runner::select(config, &models, planned.clone(), Some(name), &record);
        for t in &missing {
            let mut rec = runner::new_test_record(t, mrec, &record.run);
            rec.fail(why.clone());
            record.tests.push(rec);
        }
        let lost = crate::serving::records::lost(
            &serving,
            config,
            &models,
            prompts.as_ref(),
            &record,
            name,
            &why,
        );
        record.tests.extend(lost);
        if !record.models.iter().any(|m| m.name == name) {
            record.models.push(mrec.clone());
        }
        results::write_atomic(&path, &record)?;
    }
    if !stop.load(std::sync::atomic::Ordering::SeqCst) {
        record.run.finished_at = Some(system::now_rfc3339());
    }
    results::write_atomic(&path, &record)?;
    Ok((record, Some(path)))
}
