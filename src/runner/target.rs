//! The result file a run writes: a new one, or an interrupted run's file to continue
//! (`--resume`), which must hold the same plan.

use std::path::PathBuf;

use super::error::RunnerError;
use crate::record::{RunInfo, RunRecord, SCHEMA_VERSION};
use crate::{record::results, util::system};

/// A new result file in `dir`, or `resume`'s after checking that it holds the plan `info`
/// describes: its path (none without `dir`) and its record. `quiet_resume`: an `--isolate`
/// child, which records no resume of its own.
pub fn open(
    info: RunInfo,
    dir: Option<&std::path::Path>,
    resume: Option<&std::path::Path>,
    quiet_resume: bool,
) -> Result<(Option<PathBuf>, RunRecord), RunnerError> {
    if let Some(p) = resume {
        // A run that crashed left its journal: everything it finished is there.
        let mut record = crate::record::journal::read_resumable(p)?;
        if let Some(why) = first_difference(&record.run, &info) {
            return Err(RunnerError::CannotResume {
                file: p.to_path_buf(),
                why,
            });
        }
        record.run.finished_at = None;
        if !quiet_resume {
            record.run.resumed_at.push(system::now_rfc3339());
        }
        if record.run.plan_hash.is_none() {
            // An older file: from now on it carries the plan it was resumed with.
            record.run.plan_hash = info.plan_hash;
            record.run.plan_settings = info.plan_settings;
            record.run.plan_ids = info.plan_ids;
        }
        return Ok((Some(p.to_path_buf()), record));
    }
    let path = dir
        .map(|d| results::new_result_path(d, &info))
        .transpose()?;
    let record = RunRecord {
        schema_version: SCHEMA_VERSION,
        run: info,
        models: Vec::new(),
        tests: Vec::new(),
    };
    Ok((path, record))
}

/// Why a run described by `now` cannot continue `file`'s (the first difference); files from
/// before plans were recorded are checked on the settings they record.
pub fn first_difference(file: &RunInfo, now: &RunInfo) -> Option<String> {
    if file.shard != now.shard {
        let show = |s: Option<crate::record::ShardInfo>| {
            s.map_or("no shard".to_string(), |s| format!("shard {s}"))
        };
        return Some(format!(
            "the file holds {}, this run is {}",
            show(file.shard),
            show(now.shard)
        ));
    }
    let Some(hash) = &file.plan_hash else {
        let pairs = [
            ("warmup", file.warmup.into(), now.warmup.into()),
            (
                "repetitions",
                file.repetitions.into(),
                now.repetitions.into(),
            ),
            ("seed", file.seed, now.seed),
        ];
        let (k, a, b) = pairs.into_iter().find(|(_, a, b): &(_, u64, u64)| a != b)?;
        return Some(format!("{k} is {a} in the file, {b} in the configuration"));
    };
    if Some(hash) == now.plan_hash.as_ref() {
        return None;
    }
    if let (Some(a), Some(b)) = (&file.plan_settings, &now.plan_settings) {
        if let Some((x, y)) = a.split(' ').zip(b.split(' ')).find(|(x, y)| x != y) {
            return Some(format!(
                "measurement setting {x} in the file, {y} in the configuration"
            ));
        }
    }
    for (i, id) in now.plan_ids.iter().enumerate() {
        match file.plan_ids.get(i) {
            Some(f) if f == id => continue,
            _ if !file.plan_ids.contains(id) => {
                return Some(format!(
                    "the configuration plans {id}, which the file's run did not"
                ));
            }
            _ => break,
        }
    }
    if let Some(id) = file.plan_ids.iter().find(|f| !now.plan_ids.contains(f)) {
        return Some(format!(
            "the file's run planned {id}, which the configuration does not"
        ));
    }
    if file.plan_ids != now.plan_ids {
        return Some("the same tests in another order (another configuration)".into());
    }
    Some("a test is defined differently (a model file or a test's parameters changed)".into())
}
