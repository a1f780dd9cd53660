//! The roofline a decode row is held to when its file records none: estimated from the
//! machine's newest measured host bandwidth and the weights' size.

use std::collections::BTreeMap;

use super::{Board, Entry, Flag, Machine, RunInfo};

pub(super) fn with_bandwidth(
    machines: BTreeMap<String, (String, (Machine, RunInfo))>,
    bandwidths: &BTreeMap<String, (String, (f64, Option<u64>))>,
) -> Vec<Machine> {
    let mut v: Vec<Machine> = (machines.into_values())
        .map(|(_, (mut m, run))| match bandwidths.get(&m.key) {
            Some(&(_, (g, llc))) if m.bandwidth_gbs.is_none() => {
                m.bandwidth_gbs = Some(g);
                m.llc_bytes = llc;
                m.with_facts(&run)
            }
            _ => m,
        })
        .collect();
    v.sort_by_key(|m| m.label());
    v
}

/// Flags a decode the memory cannot deliver; returns the entries kept.
pub(super) fn roofline_flags(b: &mut Board, measured: Vec<Entry>, strict: bool) -> Vec<Entry> {
    let mut kept = Vec::new();
    for mut e in measured {
        let m = &b.machines[e.machine];
        if let Some(pct) = roofline_estimate(&e, m) {
            e.roofline_estimate = Some(pct);
            if pct >= 100.0 {
                let bw = m.bandwidth_gbs.unwrap_or(0.0);
                let what = format!(
                    "decode at {pct:.0}% or more of its bandwidth roofline (estimated from the \
                     weights' size and the machine's measured {bw:.1} GB/s; the file records \
                     none): implausible"
                );
                let line = format!("{}: {}: ", e.file.display(), e.test.id);
                if !b.flagged(strict, &line, &what) {
                    continue;
                }
                e.flags.push(Flag::Roofline(what));
            }
        }
        kept.push(e);
    }
    kept
}

/// t/s × weights' size / host bandwidth (the KV cache only adds bytes): on CPU machines and
/// models above the last-level cache, where DRAM bandwidth is the ceiling.
fn roofline_estimate(e: &Entry, m: &Machine) -> Option<f64> {
    let has_roofline = e.test.resources.as_ref().and_then(|r| r.roofline.as_ref());
    let cpu_decode = e.test.kind == crate::plan::TestKind::Tg && m.gpus.is_empty();
    if !cpu_decode || e.serving().is_some() || has_roofline.is_some() {
        return None;
    }
    let size = e.test.model_size?;
    if size <= m.llc_bytes? {
        return None;
    }
    let bytes_per_s = m.bandwidth_gbs? * 1e9;
    Some(e.test.avg_ts? * size as f64 / bytes_per_s * 100.0)
}
