//! The limits of `[tune]` that prune before any speed is measured, those that need no
//! measurement first: the context (the objective's own, and `min_ctx`) against the model's
//! trained context, from the GGUF header; memory, the weights' file plus the KV cache at the
//! context, against `max_memory_gib` or the host's RAM less `memory_margin`, and on each
//! offload device what the candidate's placement puts there (`limits/memory.rs`); the KLD
//! budget from the ladder's quality tests (run on the variants still in the space; memory
//! then checks the variants they built); last `max_load_seconds`, timing the loads of what
//! is left. Memory leaves out llama.cpp's
//! compute buffers, so it is a lower bound: a candidate it excludes cannot fit, one it keeps
//! may still fail to load (and then fails its first round and leaves the race).

mod memory;
pub(crate) use memory::per_device;

use std::path::{Path, PathBuf};

use super::RunnerError;
use crate::config::tune::Tune;
use crate::output::progress::Progress;
use crate::plan::serving::Transport;
use crate::plan::{Detail, ModelSource, PlannedTest};
use crate::record::tune::{Applied, Excluded, Limit, LoadTime};
use crate::runner::RunOptions;
use crate::runner::prepare::Prepared;
use crate::runner::sweep::Sweep;

/// What the limits left.
pub(super) struct Pruned {
    /// The candidates the limits keep.
    pub keep: Vec<PlannedTest>,
    /// What they excluded, each candidate once, by the first limit it fails.
    pub excluded: Vec<Excluded>,
    /// The limits as applied, one line each.
    pub applied: Vec<Applied>,
    /// The load times of the kept candidates' models, when `max_load_seconds` measured
    /// them (else empty: measured after bisection, for what races).
    pub loads: Vec<LoadTime>,
}

/// Applies the limits of `t` to `space`.
pub(super) fn apply(
    engine: &dyn crate::engine::Engine,
    sweep: &mut Sweep,
    opts: &RunOptions,
    prep: &Prepared,
    t: &Tune,
    space: Vec<PlannedTest>,
    progress: &mut dyn Progress,
) -> Result<Pruned, RunnerError> {
    let mut applied = Vec::new();
    let mut excluded = Vec::new();
    let ctx_needed = t.limits.min_ctx.unwrap_or(0).max(t.objective.n_ctx());
    if let Some(c) = t.limits.min_ctx {
        applied.push(Applied::MinCtx(c));
    }
    let mut keep = Vec::new();
    for c in space {
        match context_excludes(opts, prep, &c, t) {
            Some(e) => excluded.push(e),
            None => keep.push(c),
        }
    }
    // Memory needs no measurement: before the quality tests, so that none runs for a
    // variant memory excludes; again after them, for the variants they built (an unbuilt
    // variant's size is not known before).
    let devices = sweep.record().run.devices.clone();
    let limits = memory::limits(t, &devices)
        .map_err(|m| RunnerError::Refused(format!("{}: {m}", opts.config.file.display())))?;
    let mut shapes = memory::Shapes::default();
    let mut memory = |keep: &mut Vec<PlannedTest>, excluded: &mut Vec<Excluded>| {
        keep.retain(|c| {
            let path = header_path(opts, prep, c);
            let name = &prep.plan.models[c.model].name;
            let at = memory::Context::one(ctx_needed);
            let why = (!unbuilt(opts, prep, c))
                .then(|| limits.excludes(&mut shapes, &path, name, c, at, None))
                .flatten();
            match why {
                Some(why) => {
                    excluded.push(Excluded {
                        id: c.id.clone(),
                        limit: Limit::Memory,
                        why,
                    });
                    false
                }
                None => true,
            }
        })
    };
    memory(&mut keep, &mut excluded);
    if let Some(max) = t.limits.max_kld {
        applied.push(Applied::MaxKld(max));
        keep = kld(sweep, prep, keep, max, &mut excluded, progress)?;
    }
    memory(&mut keep, &mut excluded);
    applied.extend(limits.said());
    // Load time is a measurement (loads, no speed): only for what the other limits leave,
    // and only here when it is a limit. Otherwise it is measured after bisection, for what
    // races (`load_times`).
    let loads = match t.limits.max_load_seconds {
        Some(max) => load_limit(
            engine,
            opts,
            prep,
            max,
            &mut keep,
            &mut excluded,
            &mut applied,
        ),
        None => Vec::new(),
    };
    Ok(Pruned {
        keep,
        excluded,
        applied,
        loads,
    })
}

/// The memory limits again on the candidates the objective made from the configurations
/// the limits kept, counting what they add:
/// - a goodput candidate's slots each hold a request's context (`kv_unified` as
///   `[serving]` says); an entry at a fixed endpoint is another machine's memory, not
///   checked;
/// - a drafted candidate of the speculative objective loads its draft model beside its
///   target. A drafter without a model file of its own (n-gram types; MTP, which runs on
///   the target's weights) adds nothing; a draft not built yet is not known and stays, as
///   an unbuilt variant does.
///
/// Any other candidate was checked as it is. Called where each objective makes its
/// candidates, so each is checked once.
pub(super) fn expanded(
    opts: &RunOptions,
    prep: &Prepared,
    t: &Tune,
    devices: &[crate::engine::DeviceInfo],
    candidates: Vec<PlannedTest>,
    excluded: &mut Vec<Excluded>,
) -> Result<Vec<PlannedTest>, RunnerError> {
    let limits = memory::limits(t, devices)
        .map_err(|m| RunnerError::Refused(format!("{}: {m}", opts.config.file.display())))?;
    let per_seq = t.limits.min_ctx.unwrap_or(0).max(t.objective.n_ctx());
    let one = memory::Context::one(per_seq);
    let unified = opts.config.serving.as_ref().is_some_and(|s| s.kv_unified);
    let mut shapes = memory::Shapes::default();
    let mut keep = Vec::new();
    for c in candidates {
        let (at, draft) = match &c.detail {
            Detail::Speculative(s) => {
                let file = match &s.draft {
                    Some(crate::plan::speculative::Draft::File(p)) => Some(p.clone()),
                    Some(crate::plan::speculative::Draft::Model(i)) => model_file(prep, *i),
                    None => None,
                };
                let label = s
                    .draft_label
                    .clone()
                    .unwrap_or_else(|| s.drafter.to_string());
                (one, file.map(|f| (f, label, s.draft_n_gpu_layers)))
            }
            Detail::Serving(s) if s.transport == Transport::InProcess || s.own_server => {
                let at = memory::Context {
                    per_seq,
                    seqs: s.n_seq_max,
                    unified,
                };
                (at, None)
            }
            _ => {
                keep.push(c);
                continue;
            }
        };
        let why = (!unbuilt(opts, prep, &c))
            .then(|| {
                let draft = draft
                    .as_ref()
                    .map(|(path, label, n_gpu_layers)| memory::DraftModel {
                        path,
                        label,
                        n_gpu_layers: *n_gpu_layers,
                    });
                let path = header_path(opts, prep, &c);
                let name = &prep.plan.models[c.model].name;
                limits.excludes(&mut shapes, &path, name, &c, at, draft.as_ref())
            })
            .flatten();
        match why {
            Some(why) => excluded.push(Excluded {
                id: c.id.clone(),
                limit: Limit::Memory,
                why,
            }),
            None => keep.push(c),
        }
    }
    Ok(keep)
}

/// A ladder variant not built yet: its size is not known (the base's would mislead).
fn unbuilt(opts: &RunOptions, prep: &Prepared, c: &PlannedTest) -> bool {
    matches!(
        prep.plan.models[c.model].source,
        ModelSource::Variant { .. }
    ) && header_path(opts, prep, c) != Path::new(&prep.models[c.model].path)
}

/// Model `i`'s file when it exists: a `[[model]]`'s, or a ladder variant's once built.
fn model_file(prep: &Prepared, i: usize) -> Option<PathBuf> {
    match &prep.plan.models[i].source {
        ModelSource::File(p) => Some(p.clone()),
        ModelSource::Variant { .. } | ModelSource::LadderFile { .. } => {
            Some(PathBuf::from(&prep.models[i].path)).filter(|p| p.is_file())
        }
    }
}

/// Refuses a `max_device_memory_gib` table naming a device this build does not have.
pub(super) fn check_devices(
    opts: &RunOptions,
    t: &Tune,
    devices: &[crate::engine::DeviceInfo],
) -> Result<(), RunnerError> {
    memory::limits(t, devices)
        .map(|_| ())
        .map_err(|m| RunnerError::Refused(format!("{}: {m}", opts.config.file.display())))
}

/// The load time of each distinct (model, model-level settings) of `candidates`, keyed.
fn timed(
    engine: &dyn crate::engine::Engine,
    opts: &RunOptions,
    prep: &Prepared,
    candidates: &[PlannedTest],
) -> Vec<(super::load::LoadKey, LoadTime)> {
    // A variant not built yet has no file of its own to load: not timed.
    let path_of = |c: &PlannedTest| {
        let p = header_path(opts, prep, c);
        let variant = matches!(
            prep.plan.models[c.model].source,
            ModelSource::Variant { .. }
        );
        (!variant || p == Path::new(&prep.models[c.model].path)).then_some(p)
    };
    let name_of = |c: &PlannedTest| prep.plan.models[c.model].name.clone();
    super::load::measure(engine, candidates, &path_of, &name_of)
}

/// The load times, each figure once.
fn distinct(timed: Vec<(super::load::LoadKey, LoadTime)>) -> Vec<LoadTime> {
    let mut loads: Vec<LoadTime> = Vec::new();
    for (_, l) in timed {
        if !loads.contains(&l) {
            loads.push(l);
        }
    }
    loads
}

/// The load times of what races, when no `max_load_seconds` measured them before (the
/// candidates bisection or the limits left out are not loaded for it).
pub(super) fn load_times(
    engine: &dyn crate::engine::Engine,
    opts: &RunOptions,
    prep: &Prepared,
    race: &[PlannedTest],
) -> Vec<LoadTime> {
    distinct(timed(engine, opts, prep, race))
}

/// Times the loads of the models `keep` still holds and applies `max_load_seconds`; the
/// load times, each (model, settings) once.
fn load_limit(
    engine: &dyn crate::engine::Engine,
    opts: &RunOptions,
    prep: &Prepared,
    max: f64,
    keep: &mut Vec<PlannedTest>,
    excluded: &mut Vec<Excluded>,
    applied: &mut Vec<Applied>,
) -> Vec<LoadTime> {
    let timed = timed(engine, opts, prep, keep);
    applied.push(Applied::MaxLoadSeconds(max));
    keep.retain(|c| {
        let key = c.load_key();
        let Some((_, l)) = timed.iter().find(|(k, _)| *k == key) else {
            return true;
        };
        match LoadTime::median(&l.cold_s) {
            Some(s) if s > max => {
                excluded.push(Excluded {
                    id: c.id.clone(),
                    limit: Limit::MaxLoadSeconds,
                    why: format!("{}: cold load {s:.3} s > {max} s", l.model),
                });
                false
            }
            _ => true,
        }
    });
    distinct(timed)
}

/// The GGUF file of a candidate's model: the file, or a ladder variant's (its base until
/// it is built: the same shape and context).
pub(super) fn header_path(opts: &RunOptions, prep: &Prepared, c: &PlannedTest) -> PathBuf {
    match prep.plan.models[c.model].source {
        ModelSource::File(ref p) => p.clone(),
        ModelSource::LadderFile { ladder, file } => {
            opts.config.ladders[ladder].files[file].path.clone()
        }
        ModelSource::Variant { ladder, .. } => {
            let built = PathBuf::from(&prep.models[c.model].path);
            if built.is_file() {
                built
            } else {
                opts.config.ladders[ladder].base.clone()
            }
        }
    }
}

/// The context the model was trained for (`{arch}.context_length`).
fn trained_context(path: &Path) -> Option<u64> {
    let h = crate::gguf::reader::read_header(path).ok()?;
    let arch = h.architecture()?.to_string();
    h.get(&format!("{arch}.context_length"))
        .and_then(crate::gguf::Value::as_u64)
}

fn context_excludes(
    opts: &RunOptions,
    prep: &Prepared,
    c: &PlannedTest,
    t: &Tune,
) -> Option<Excluded> {
    let trained = trained_context(&header_path(opts, prep, c))?;
    let name = &prep.plan.models[c.model].name;
    if trained < u64::from(t.objective.n_ctx()) {
        return Some(Excluded {
            id: c.id.clone(),
            limit: Limit::Objective,
            why: format!(
                "{name} holds a context of {trained} tokens, {} needs {}",
                t.objective,
                t.objective.n_ctx()
            ),
        });
    }
    match t.limits.min_ctx {
        Some(m) if trained < u64::from(m) => Some(Excluded {
            id: c.id.clone(),
            limit: Limit::MinCtx,
            why: format!("{name} holds a context of {trained} tokens < {m}"),
        }),
        _ => None,
    }
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
    let mut out = Vec::new();
    for c in keep {
        let name = &prep.plan.models[c.model].name;
        let model = sweep.record().models.iter().find(|m| &m.name == name);
        let why = match model.and_then(|m| m.quality.as_ref()) {
            Some(q) if q.kld_mean <= max => None,
            Some(q) => Some(format!("{name}: KLD {:.4} > {max}", q.kld_mean)),
            None if matches!(prep.plan.models[c.model].source, ModelSource::File(_)) => {
                Some(format!("{name}: no KLD (not a [[ladder]] variant)"))
            }
            None => Some(format!("{name}: its quality test failed")),
        };
        match why {
            Some(why) => excluded.push(Excluded {
                id: c.id.clone(),
                limit: Limit::MaxKld,
                why,
            }),
            None => out.push(c),
        }
    }
    Ok(out)
}
