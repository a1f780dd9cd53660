//! What serving costs: a served test against its in-process twin, as ratios served /
//! in-process with Welch intervals (docs/served.md, "Served against in-process").

use crate::record::serving::{Ratio, Serving, VsInProcess};
use crate::stats::student::welch_log_ratio;

fn ratio(served: &[f64], in_process: &[f64]) -> Option<Ratio> {
    let (r, ci) = welch_log_ratio(in_process, served, 0.95)?;
    Some(Ratio {
        ratio: r,
        lo: ci.lo,
        hi: ci.hi,
        n_served: served.len() as u64,
        n_in_process: in_process.len() as u64,
    })
}

/// The ratios of `served` to `in_process` (the test with id `in_process_id`).
pub fn vs_in_process(served: &Serving, in_process: &Serving, in_process_id: &str) -> VsInProcess {
    let ttft = |s: &Serving| s.requests.iter().map(|r| r.ttft_ms).collect::<Vec<_>>();
    let per = |s: &Serving| Vec::from_iter(s.requests.iter().filter_map(|r| r.decode_ts));
    let agg = |s: &Serving| Vec::from_iter(s.reps.iter().filter_map(|r| r.aggregate_ts));
    VsInProcess {
        test: in_process_id.to_string(),
        ttft: ratio(&ttft(served), &ttft(in_process)),
        per_request_ts: ratio(&per(served), &per(in_process)),
        aggregate_ts: ratio(&agg(served), &agg(in_process)),
    }
}
