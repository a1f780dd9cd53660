//! A file's bisections (`run.tune.bisections`) audited against its tests: each
//! probe's outcome is its test's status, the boundary is the one the probes establish (the
//! last that passed, with the next value's failure seen), what raced is the boundary and
//! its neighbour, and each raced candidate skips exactly its probe round in the replay.

use super::mismatch;
use crate::record::tune::TuneRecord;
use crate::record::{Disagreement, RunRecord, Status};

/// The first statement of a bisection that its tests do not give.
pub(super) fn check(run: &RunRecord, t: &TuneRecord) -> Result<(), Disagreement> {
    for (n, b) in t.bisections.iter().enumerate() {
        let field = |f: &str| format!("bisections[{n}].{f}");
        if b.ids.len() != b.values.len() {
            return mismatch(
                &field("values"),
                b.values.len(),
                format!("one per candidate ({})", b.ids.len()),
            );
        }
        let at = |id: &str| b.ids.iter().position(|x| x == id);
        for (i, p) in b.probes.iter().enumerate() {
            let status = run.tests.iter().find(|x| x.id == p.id).map(|x| x.status);
            // What failed is said of a failed probe only.
            let failed_said = p.failed.is_none() || !p.ok;
            if at(&p.id).is_none() || (status == Some(Status::Ok)) != p.ok || !failed_said {
                return mismatch(
                    &field(&format!("probes[{i}]")),
                    format!("{}: ok {}, failed {:?}", p.id, p.ok, p.failed),
                    format!("its test's status {status:?}"),
                );
            }
        }
        let seen = |k: usize, ok: bool| b.probes.iter().any(|p| at(&p.id) == Some(k) && p.ok == ok);
        // The boundary: the last value seen to pass, the one after it (if any) seen to fail.
        let passed = (b.probes.iter())
            .filter(|p| p.ok)
            .filter_map(|p| at(&p.id))
            .max();
        let established = match passed {
            Some(k) => k + 1 == b.ids.len() || seen(k + 1, false),
            None => b.ids.is_empty() || seen(0, false),
        };
        let stated = b.boundary.as_deref().and_then(at);
        if stated != passed || !established {
            return mismatch(
                &field("boundary"),
                format!("{:?}", b.boundary),
                format!(
                    "{:?} (from its probes)",
                    passed.filter(|_| established).map(|k| &b.ids[k])
                ),
            );
        }
        let raced: &[String] = passed.map_or(&[], |k| &b.ids[k.saturating_sub(1)..=k]);
        let in_race = |id: &String| t.candidates.iter().any(|c| &c.id == id);
        let race_agrees =
            b.raced == raced && b.ids.iter().all(|id| in_race(id) == raced.contains(id));
        if !race_agrees {
            return mismatch(
                &field("raced"),
                format!("{:?}", b.raced),
                format!("{raced:?}, and only those of the group among the candidates"),
            );
        }
    }
    for c in &t.candidates {
        let probes = (t.bisections.iter().flat_map(|b| &b.probes))
            .filter(|p| p.id == c.id && p.ok)
            .count();
        if probes != c.probe_rounds {
            return mismatch(
                "probe_rounds",
                format!("{}: {}", c.id, c.probe_rounds),
                probes,
            );
        }
    }
    Ok(())
}
