//! The bisection lines of a tune's answer: what each bisection probed and saved, and whether
//! the speed was monotone where checked (the boundary against its neighbour with less
//! offload); a faster neighbour is said with its gap, as the values below it were not raced.

use crate::record::RunRecord;
use crate::record::tune::{Bisection, Outcome, Probe, ProbeFailure, TuneRecord};
use crate::report::count;

/// "ngl 99" for candidate `id` of `b`.
fn value(b: &Bisection, id: &str) -> String {
    let v = (b.ids.iter().position(|x| x == id))
        .map_or_else(|| "?".into(), |i| b.values[i].to_string());
    let flag = crate::config::knobs::knob(&b.axis).map_or(b.axis.as_str(), |k| k.flag);
    format!("{flag} {v}")
}

/// How a probe ended: "ok", "failed to load" (the placement did not load: what bisection
/// expects above the boundary), "failed its test", or "failed" (a file from before the
/// probes said which).
fn outcome(p: &Probe) -> &'static str {
    match (p.ok, p.failed) {
        (true, _) => "ok",
        (false, Some(ProbeFailure::Load)) => "failed to load",
        (false, Some(ProbeFailure::Test)) => "failed its test",
        (false, None) => "failed",
    }
}

fn group(record: &RunRecord, t: &TuneRecord, b: &Bisection) -> String {
    let probes: Vec<String> = (b.probes.iter())
        .map(|p| format!("{} {}", value(b, &p.id), outcome(p)))
        .collect();
    let mut s = format!("  {}: probes {}; ", b.ids[0], probes.join(", "));
    let Some(top) = &b.boundary else {
        s.push_str("nothing loads and runs: none raced\n");
        return s;
    };
    s.push_str(&format!("boundary {}", value(b, top)));
    let above = b.ids.iter().position(|x| x == top).map(|k| k + 1);
    if let Some(next) = above.and_then(|k| b.ids.get(k)) {
        // The value above was left out by its failed probe: said with its test's error.
        let probe = b.probes.iter().find(|p| &p.id == next && !p.ok);
        let error = (record.tests.iter())
            .find(|x| &x.id == next)
            .and_then(|x| x.error.as_deref());
        let (v, o) = (value(b, next), probe.map_or("failed", outcome));
        s.push_str(&format!(" ({v} {o}"));
        if let Some(e) = error {
            s.push_str(&format!(": {}", e.lines().next().unwrap_or_default()));
        }
        s.push(')');
    }
    let Some(n) = b.raced.iter().find(|x| *x != top) else {
        s.push_str(", no neighbour to check\n");
        return s;
    };
    // The race's verdict on the neighbour: a gap alone may be noise.
    let outcome = (t.candidates.iter())
        .find(|c| &c.id == n)
        .map_or("not raced", |c| match c.outcome {
            Outcome::Winner => "it is the answer",
            Outcome::Tie => "tied with the answer",
            Outcome::Open => "open against the answer",
            Outcome::Slower => "eliminated as slower than the answer",
            Outcome::Failed => "failed in the race",
        });
    let v = value(b, n);
    match super::ratio(record, t, n, top) {
        Some(r) if r > 1.0 => s.push_str(&format!(
            "; the neighbour {v} was {:.1}% faster over the rounds both ran ({outcome}): the \
             speed is not shown monotone here, and the values below it were not raced \
             (bisect = false races them all)\n",
            (r - 1.0) * 100.0
        )),
        Some(r) => s.push_str(&format!(
            "; the neighbour {v} was {:.1}% slower ({outcome}): monotone where checked\n",
            (1.0 - r) * 100.0
        )),
        None => s.push_str(&format!("; the neighbour {v} was not measured\n")),
    }
    s
}

pub(super) fn lines(record: &RunRecord, t: &TuneRecord) -> String {
    let Some(first) = t.bisections.first() else {
        return String::new();
    };
    let values: usize = t.bisections.iter().map(|b| b.ids.len()).sum();
    let probes: usize = t.bisections.iter().map(|b| b.probes.len()).sum();
    let raced: usize = t.bisections.iter().map(|b| b.raced.len()).sum();
    let mut s = format!(
        "bisected {}: {} and {raced} raced instead of {values} candidates ({}; the boundary \
         is the most offload that loads and runs, raced with its neighbour to check that the \
         speed is monotone)\n",
        first.axis,
        count(probes, "probe"),
        count(t.bisections.len(), "group"),
    );
    const SHOWN: usize = 8;
    for b in t.bisections.iter().take(SHOWN) {
        s.push_str(&group(record, t, b));
    }
    if t.bisections.len() > SHOWN {
        let more = t.bisections.len() - SHOWN;
        s.push_str(&format!("  ... and {more} more groups\n"));
    }
    s
}
