//! Bisection of a monotone placement axis (`n_gpu_layers`, and `n_cpu_moe` where one device
//! holds every layer): the memory a placement needs grows with the offload, so whether it
//! loads is monotone, and each group of candidates that differ only in the axis is probed
//! (one round of a candidate) for the most offload that fits. Only that boundary and its
//! neighbour with less offload race: the neighbour checks that the speed is monotone too,
//! never trusted silently (docs/tune.md, "Placement"). A failed probe is a failed test in
//! the file and says whether its load or its test failed; a raced candidate's probe is its
//! test's first round (`probe_rounds`), so the race replays from the rounds after it.

use super::RunnerError;
use crate::config::knobs::KnobValue;
use crate::config::tune::Tune;
use crate::engine::DeviceInfo;
use crate::output::progress::Progress;
use crate::plan::{PlannedTest, TestParams};
use crate::record::Status;
use crate::record::tune::{Bisection, Probe, ProbeFailure, TuneRecord};
use crate::runner::RunOptions;
use crate::runner::sweep::Sweep;

/// The fewest values of the axis in a group worth bisecting: with 3, the probe and the
/// two raced are already all of them.
pub(super) const MIN_VALUES: usize = 4;

/// A monotone axis: its name, a candidate's value, and its order of offload (larger: more).
struct Axis {
    name: &'static str,
    value: fn(&TestParams) -> i64,
    offload: fn(i64) -> i64,
    clear: fn(&mut TestParams),
}

const AXES: [Axis; 2] = [
    Axis {
        name: "n_gpu_layers",
        value: |p| i64::from(p.n_gpu_layers),
        // Negative asks for every layer: the most.
        offload: |v| if v < 0 { i64::MAX } else { v },
        clear: |p| p.n_gpu_layers = 0,
    },
    Axis {
        name: "n_cpu_moe",
        value: |p| p.knobs.get("n_cpu_moe").map_or(0, |v| v.as_i64()),
        // Each layer whose experts stay on the CPU is less offload.
        offload: |v| -v,
        clear: |p| p.knobs.set("n_cpu_moe", KnobValue::Int(0)),
    },
];

/// The probes of a bisection in the order run: (index, passed).
pub(super) type Probes = Vec<(usize, bool)>;

/// The last of `n` values in order of offload whose probe passes, probing the most offload
/// first (it usually fits: one probe), then halving; and the probes in order.
pub(super) fn boundary<E>(
    n: usize,
    probe: &mut dyn FnMut(usize) -> Result<bool, E>,
) -> Result<(Option<usize>, Probes), E> {
    let mut probes = Vec::new();
    if n == 0 {
        return Ok((None, probes));
    }
    let top = probe(n - 1)?;
    probes.push((n - 1, top));
    if top {
        return Ok((Some(n - 1), probes));
    }
    // Invariant: every index <= lo passes (lo = None: none known), hi fails.
    let (mut lo, mut hi): (Option<usize>, usize) = (None, n - 1);
    loop {
        let from = lo.map_or(0, |l| l + 1);
        if from >= hi {
            return Ok((lo, probes));
        }
        let mid = from + (hi - from) / 2;
        let ok = probe(mid)?;
        probes.push((mid, ok));
        if ok { lo = Some(mid) } else { hi = mid }
    }
}

/// The groups of `candidates` (indices) that differ only in `axis`, each in order of
/// offload, where `eligible` holds for every member.
fn groups(
    candidates: &[PlannedTest],
    axis: &Axis,
    eligible: &mut dyn FnMut(&PlannedTest) -> bool,
) -> Vec<Vec<usize>> {
    let mut keyed: Vec<((usize, TestParams), Vec<usize>)> = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        let mut key = c.params.clone();
        (axis.clear)(&mut key);
        let key = (c.model, key);
        match keyed.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(i),
            None => keyed.push((key, vec![i])),
        }
    }
    let mut out: Vec<Vec<usize>> = keyed.into_iter().map(|(_, v)| v).collect();
    out.retain(|v| v.iter().all(|&i| eligible(&candidates[i])));
    for v in &mut out {
        v.sort_by_key(|&i| (axis.offload)((axis.value)(&candidates[i].params)));
    }
    out
}

/// Bisects the first axis with a group of at least [`MIN_VALUES`] values; every other
/// candidate races. `t.bisect = false`: everything races. Returns what races; the
/// bisections go into `rec`.
pub(super) fn plan(
    sweep: &mut Sweep,
    memory: &mut super::limits::Memory,
    t: &Tune,
    candidates: Vec<PlannedTest>,
    rec: &mut TuneRecord,
    progress: &mut dyn Progress,
) -> Result<Vec<PlannedTest>, RunnerError> {
    if !t.bisect {
        return Ok(candidates);
    }
    let devices: Vec<DeviceInfo> = sweep.record.run.devices.clone();
    let (opts, prep) = (memory.opts, memory.prep);
    for axis in &AXES {
        let mut eligible = |c: &PlannedTest| {
            if axis.name != "n_cpu_moe" {
                return true;
            }
            // n_cpu_moe is monotone only where one device holds every layer.
            let path = super::load::header_path(opts, prep, c);
            memory.shapes.of(&path).is_some_and(|m| {
                let n = m.shape.n_layer as u32;
                crate::engine::placement::estimate::sole_device(&c.params, n, &devices).is_some()
            })
        };
        let big: Vec<Vec<usize>> = groups(&candidates, axis, &mut eligible)
            .into_iter()
            .filter(|g| g.len() >= MIN_VALUES)
            .collect();
        if big.is_empty() {
            continue;
        }
        let mut dropped: Vec<usize> = Vec::new();
        for g in big {
            if !opts.quiet {
                progress.note(&format!(
                    "tune: bisecting {} over {} candidates",
                    axis.name,
                    g.len()
                ));
            }
            let b = bisect_group(sweep, axis, &candidates, &g, progress)?;
            dropped.extend(g.iter().filter(|&&i| !b.raced.contains(&candidates[i].id)));
            rec.bisections.push(b);
        }
        let race = (candidates.into_iter().enumerate())
            .filter(|(i, _)| !dropped.contains(i))
            .map(|(_, c)| c)
            .collect();
        return Ok(race);
    }
    Ok(candidates)
}

/// Probes group `g` (in order of offload) for its boundary.
fn bisect_group(
    sweep: &mut Sweep,
    axis: &Axis,
    candidates: &[PlannedTest],
    g: &[usize],
    progress: &mut dyn Progress,
) -> Result<Bisection, RunnerError> {
    let mut probe = |k: usize| -> Result<bool, RunnerError> {
        let c = &candidates[g[k]];
        if sweep.measure_all(std::slice::from_ref(c), progress)? {
            return Err(RunnerError::Interrupted("bisecting"));
        }
        let test = sweep.record.tests.iter().find(|x| x.id == c.id);
        Ok(test.is_some_and(|x| x.status == Status::Ok))
    };
    let (b, probes) = boundary(g.len(), &mut probe)?;
    let id = |k: usize| candidates[g[k]].id.clone();
    // What failed of a failed probe: its load (the placement did not fit) or its test.
    let failed = |k: usize| match sweep.load_failed.contains(&id(k)) {
        true => ProbeFailure::Load,
        false => ProbeFailure::Test,
    };
    // The boundary and its neighbour with less offload race (the group's values are
    // distinct: its candidates differ only in them).
    let raced = b.map_or(Vec::new(), |k| (k.saturating_sub(1)..=k).map(id).collect());
    Ok(Bisection {
        axis: axis.name.to_string(),
        ids: g.iter().map(|&i| candidates[i].id.clone()).collect(),
        values: Vec::from_iter(g.iter().map(|&i| (axis.value)(&candidates[i].params))),
        probes: probes
            .into_iter()
            .map(|(k, ok)| Probe {
                id: id(k),
                ok,
                failed: (!ok).then(|| failed(k)),
            })
            .collect(),
        boundary: b.map(id),
        raced,
    })
}

/// The refusal when every bisection probe failed and nothing else races.
pub(super) fn nothing_loads(opts: &RunOptions, t: &Tune) -> String {
    format!(
        "{}: objective {}: no placement of the space loads and runs: every bisection probe failed (the tests in the file say why)",
        opts.config.file.display(),
        t.objective
    )
}

/// The probe rounds of each candidate: its test's rounds run as probes before the race.
pub(super) fn probe_rounds(record: &[Bisection], candidates: &[PlannedTest]) -> Vec<usize> {
    candidates
        .iter()
        .map(|c| {
            (record.iter().flat_map(|b| &b.probes))
                .filter(|p| p.id == c.id && p.ok)
                .count()
        })
        .collect()
}

#[cfg(test)]
mod tests;
