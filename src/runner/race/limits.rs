//! The limits of `[tune]` that prune before any speed is measured: the context (the
//! objective's and `min_ctx`) against the model's trained one; memory per device
//! (`limits/memory.rs`); the KLD budget from the ladder's quality tests (memory then checks
//! the variants they built); last `max_load_seconds`, timing the loads of what is left.
//! Memory leaves out llama.cpp's compute buffers, so it is a lower bound: a candidate it
//! keeps may still fail to load (and then fails its first round and leaves the race).

mod memory;
pub(crate) use memory::per_device;

use std::path::PathBuf;

use super::RunnerError;
use super::load::{header_path, unbuilt};
use crate::config::tune::Tune;
use crate::output::progress::Progress;
use crate::plan::serving::Transport;
use crate::plan::{Detail, ModelSource, PlannedTest};
use crate::record::tune::{Applied, Excluded, Limit, LoadTime, TuneRecord};
use crate::runner::RunOptions;
use crate::runner::prepare::Prepared;
use crate::runner::sweep::Sweep;

/// The candidates the limits keep. Into `rec`: the limits applied, what they excluded (each
/// candidate once, by the first limit it fails) and the load times of the kept candidates'
/// models when `max_load_seconds` measured them (else none: measured after bisection, for
/// what races).
pub(super) fn apply(
    engine: &dyn crate::engine::Engine,
    sweep: &mut Sweep,
    memory: &mut Memory,
    t: &Tune,
    space: Vec<PlannedTest>,
    rec: &mut TuneRecord,
    progress: &mut dyn Progress,
) -> Result<Vec<PlannedTest>, RunnerError> {
    let (opts, prep) = (memory.opts, memory.prep);
    let mut applied = Vec::new();
    let mut excluded = Vec::new();
    let one = memory::Context::one(t.limits.min_ctx.unwrap_or(0).max(t.objective.n_ctx()));
    if let Some(c) = t.limits.min_ctx {
        applied.push(Applied::MinCtx(c));
    }
    let mut keep = prune(space, &mut excluded, |c| context_excludes(opts, prep, c, t));
    // Memory needs no measurement: before the quality tests, so that none runs for a
    // variant memory excludes; again after them, for the variants they built (an unbuilt
    // variant's size is not known before).
    keep = prune(keep, &mut excluded, |c| memory.excludes(c, one, None));
    if let Some(max) = t.limits.max_kld {
        applied.push(Applied::MaxKld(max));
        keep = kld(sweep, prep, keep, max, &mut excluded, progress)?;
    }
    keep = prune(keep, &mut excluded, |c| memory.excludes(c, one, None));
    applied.extend(memory.limits.said());
    // Load time is a measurement (loads, no speed): only for what the other limits leave,
    // and only here when it is a limit. Otherwise it is measured after bisection, for what
    // races.
    let loads = match t.limits.max_load_seconds {
        Some(max) => {
            applied.push(Applied::MaxLoadSeconds(max));
            let timed = super::load::measure(engine, opts, prep, &keep);
            keep = prune(keep, &mut excluded, |c| {
                let (_, l) = timed.iter().find(|(k, _)| *k == c.load_key())?;
                let s = LoadTime::median(&l.cold_s).filter(|&s| s > max)?;
                let why = format!("{}: cold load {s:.3} s > {max} s", l.model);
                Some((Limit::MaxLoadSeconds, why))
            });
            super::load::distinct(timed)
        }
        None => Vec::new(),
    };
    (rec.excluded, rec.limits, rec.loads) = (excluded, applied, loads);
    Ok(keep)
}

/// The candidates `judge` keeps; each one it names a limit for joins `excluded`.
fn prune(
    candidates: Vec<PlannedTest>,
    excluded: &mut Vec<Excluded>,
    mut judge: impl FnMut(&PlannedTest) -> Option<(Limit, String)>,
) -> Vec<PlannedTest> {
    (candidates.into_iter())
        .filter(|c| {
            let Some((limit, why)) = judge(c) else {
                return true;
            };
            let id = c.id.clone();
            excluded.push(Excluded { id, limit, why });
            false
        })
        .collect()
}

/// The memory limits, and the models' shapes read so far.
pub(super) struct Memory<'a> {
    pub opts: &'a RunOptions,
    pub prep: &'a Prepared,
    limits: memory::Limits,
    pub shapes: memory::Shapes,
}

impl<'a> Memory<'a> {
    /// Refused: a `max_device_memory_gib` table names a device this build does not have.
    pub(super) fn new(
        opts: &'a RunOptions,
        prep: &'a Prepared,
        t: &Tune,
        devices: &[crate::engine::DeviceInfo],
    ) -> Result<Self, RunnerError> {
        Ok(Memory {
            opts,
            prep,
            limits: memory::limits(t, devices, &opts.config.file)?,
            shapes: memory::Shapes::default(),
        })
    }

    /// Why `c` at context `at`, with `draft` loaded beside it, does not fit; None where it
    /// fits, or where its size is not known (a ladder variant not built yet).
    fn excludes(
        &mut self,
        c: &PlannedTest,
        at: memory::Context,
        draft: Option<&memory::DraftModel>,
    ) -> Option<(Limit, String)> {
        if unbuilt(self.opts, self.prep, c) {
            return None;
        }
        let path = header_path(self.opts, self.prep, c);
        let name = &self.prep.plan.models[c.model].name;
        let why = self
            .limits
            .excludes(&mut self.shapes, &path, name, c, at, draft)?;
        Some((Limit::Memory, why))
    }
}

/// The memory limits again on the candidates an objective made of the configurations kept,
/// with what they add: a goodput candidate's slots each hold a context (an entry at a fixed
/// endpoint is another machine's memory), a drafted one holds its draft model too (a
/// drafter without a file of its own adds nothing; a draft not built yet stays, as an
/// unbuilt variant does).
pub(super) fn expanded(
    memory: &mut Memory,
    t: &Tune,
    candidates: Vec<PlannedTest>,
    excluded: &mut Vec<Excluded>,
) -> Vec<PlannedTest> {
    let (opts, prep) = (memory.opts, memory.prep);
    let per_seq = t.limits.min_ctx.unwrap_or(0).max(t.objective.n_ctx());
    let unified = opts.config.serving.as_ref().is_some_and(|s| s.kv_unified);
    prune(candidates, excluded, |c| match &c.detail {
        Detail::Speculative(s) => {
            let file = match &s.draft {
                Some(crate::plan::speculative::Draft::File(p)) => Some(p.clone()),
                Some(crate::plan::speculative::Draft::Model(i)) => model_file(prep, *i),
                None => None,
            };
            let one = memory::Context::one(per_seq);
            let Some(path) = file else {
                return memory.excludes(c, one, None);
            };
            let label = s
                .draft_label
                .clone()
                .unwrap_or_else(|| s.drafter.to_string());
            let draft = memory::DraftModel {
                path: &path,
                label: &label,
                n_gpu_layers: s.draft_n_gpu_layers,
            };
            memory.excludes(c, one, Some(&draft))
        }
        Detail::Serving(s) if s.transport == Transport::InProcess || s.own_server => {
            let at = memory::Context {
                per_seq,
                seqs: s.n_seq_max,
                unified,
            };
            memory.excludes(c, at, None)
        }
        _ => None,
    })
}

/// Model `i`'s file when it exists: a `[[model]]`'s, or a ladder variant's once built.
fn model_file(prep: &Prepared, i: usize) -> Option<PathBuf> {
    match &prep.plan.models[i].source {
        ModelSource::File(p) => Some(p.clone()),
        _ => Some(PathBuf::from(&prep.models[i].path)).filter(|p| p.is_file()),
    }
}

/// Why the candidate's model cannot hold the objective's context, or `min_ctx`.
fn context_excludes(
    opts: &RunOptions,
    prep: &Prepared,
    c: &PlannedTest,
    t: &Tune,
) -> Option<(Limit, String)> {
    // The context the model was trained for.
    let h = crate::gguf::reader::read_header(&header_path(opts, prep, c)).ok()?;
    let trained = h.arch_u64("context_length")?;
    let name = &prep.plan.models[c.model].name;
    let (objective, n_ctx) = (&t.objective, t.objective.n_ctx());
    if trained < u64::from(n_ctx) {
        let why = format!("{name} holds a context of {trained} tokens, {objective} needs {n_ctx}");
        return Some((Limit::Objective, why));
    }
    let m = t.limits.min_ctx.filter(|&m| trained < u64::from(m))?;
    let why = format!("{name} holds a context of {trained} tokens < {m}");
    Some((Limit::MinCtx, why))
}

/// Runs the quality tests of the variants still in the space, then keeps the candidates
/// whose model's KLD is within `max`.
fn kld(
    sweep: &mut Sweep,
    prep: &Prepared,
    keep: Vec<PlannedTest>,
    max: f64,
    excluded: &mut Vec<Excluded>,
    progress: &mut dyn Progress,
) -> Result<Vec<PlannedTest>, RunnerError> {
    let quality: Vec<PlannedTest> = (prep.plan.tests.iter())
        .filter(|q| matches!(q.detail, Detail::Quality { .. }))
        .filter(|q| keep.iter().any(|c| c.model == q.model))
        .cloned()
        .collect();
    if sweep.measure_all(&quality, progress)? {
        return Err(RunnerError::Interrupted("measuring the ladder's quality"));
    }
    Ok(prune(keep, excluded, |c| {
        let name = &prep.plan.models[c.model].name;
        let model = sweep.record.models.iter().find(|m| &m.name == name);
        let why = match model.and_then(|m| m.quality.as_ref()) {
            Some(q) if q.kld_mean <= max => return None,
            Some(q) => format!("{name}: KLD {:.4} > {max}", q.kld_mean),
            None if matches!(prep.plan.models[c.model].source, ModelSource::File(_)) => {
                format!("{name}: no KLD (not a [[ladder]] variant)")
            }
            None => format!("{name}: its quality test failed"),
        };
        Some((Limit::MaxKld, why))
    }))
}
