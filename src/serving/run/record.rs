//! How a serving test's figures go into its record: llama-bench's per-repetition fields from
//! the samples, the serving figures beside them, and the one-line summary for progress.

use crate::record::TestRecord;
use crate::record::serving::Serving;

pub(crate) fn fill(
    rec: &mut TestRecord,
    s: Serving,
    samples_ns: Vec<u64>,
    samples_ts: Vec<f64>,
    n_ctx: u32,
) {
    rec.set_rates(samples_ns, samples_ts);
    rec.n_ctx = n_ctx;
    rec.serving = Some(Box::new(s));
}

pub(crate) fn summary_line(s: &Serving) -> String {
    let agg = s.aggregate_ts.map_or("-".into(), |x| format!("{x:.2}"));
    let per = s.per_request_ts.map_or("-".into(), |x| format!("{x:.2}"));
    format!(
        "aggregate {agg} t/s, per request {per} t/s, TTFT p50 {:.1} ms, ITL p50 {:.1} ms",
        s.ttft_ms.p50, s.itl_ms.p50
    )
}
