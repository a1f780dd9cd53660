//! The latency side of a race's record: the goodput objective's SLO and load, and
//! the TTFT/ITL limits of a llama-bench objective with what broke them. What broke a limit
//! is a function of the tests' own samples ([`breaks`]), so a reader recomputes it as it
//! replays the race.

use serde::{Deserialize, Serialize};

use super::{Candidate, Excluded, Limit};
use crate::config::tune::GoodputObjective;
use crate::record::{Status, TestRecord};

/// `run.tune.slo`: absent from races without an SLO and from files written before it.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TuneSlo {
    pub goodput: Option<GoodputObjective>,
    /// A ppN objective's limit on its prefill time, a tgN objective's on its mean
    /// inter-token latency, and the quantile of the repetitions they apply to.
    pub max_ttft_ms: Option<f64>,
    pub max_itl_ms: Option<f64>,
    pub quantile: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broke: Vec<Excluded>,
}

/// The latency a llama-bench repetition of `t` stands for, in ms: a tg test's time over its
/// tokens (the mean inter-token latency of a batch-1 decode), a pp test's whole time (its
/// prompt's prefill). None for other kinds.
fn latencies(t: &TestRecord, limit: Limit) -> Option<Vec<f64>> {
    let p = &t.params;
    let per = match limit {
        Limit::MaxItlMs if p.n_prompt == 0 && p.n_gen > 0 => f64::from(p.n_gen),
        Limit::MaxTtftMs if p.n_gen == 0 && p.n_prompt > 0 => 1.0,
        _ => return None,
    };
    Some(
        (t.samples_ns.iter())
            .map(|&ns| ns as f64 / 1e6 / per)
            .collect(),
    )
}

/// Which of the `raced` candidates break the limits of `s`: the `s.quantile` quantile of each
/// one's repetitions (every round's) above a limit. The runner writes it; `verify` recomputes
/// it from the same samples. A failed test has no figure and breaks nothing it was not
/// measured against.
pub fn breaks(s: &TuneSlo, raced: &[Candidate], tests: &[TestRecord]) -> Vec<Excluded> {
    let mut out = Vec::new();
    for Candidate { id, .. } in raced {
        let found = tests.iter().find(|x| &x.id == id);
        let Some(t) = found.filter(|t| t.status == Status::Ok) else {
            continue;
        };
        for (limit, max, what) in [
            (Limit::MaxTtftMs, s.max_ttft_ms, "prefill (TTFT)"),
            (Limit::MaxItlMs, s.max_itl_ms, "ITL"),
        ] {
            let v = latencies(t, limit).filter(|v| !v.is_empty());
            let (Some(max), Some(mut v)) = (max, v) else {
                continue;
            };
            v.sort_by(f64::total_cmp);
            let q = crate::stats::quantile(&v, s.quantile);
            if q > max {
                out.push(Excluded {
                    id: id.clone(),
                    limit,
                    why: format!(
                        "p{} {what} {q:.2} ms over {} repetitions > {max} ms",
                        (s.quantile * 100.0).round(),
                        v.len()
                    ),
                });
                break;
            }
        }
    }
    out
}

/// The goodput steps of a served test, one per round.
pub fn goodput_steps(t: &TestRecord) -> &[crate::record::serving::GoodputStep] {
    (t.serving.as_ref())
        .and_then(|s| s.goodput.as_ref())
        .map_or(&[], |g| g.steps.as_slice())
}

/// A goodput race's round figure is counted, not timed: the first round of `t` whose
/// median (its goodput) is not its recorded step's good requests over its duration, as
/// "round K: goodput G but N good in D s". None when every round agrees.
pub fn goodput_disagrees(t: &TestRecord) -> Option<String> {
    if t.status != Status::Ok {
        return None;
    }
    let steps = goodput_steps(t);
    let rounds = t.round_medians();
    if steps.len() != rounds.len() {
        return Some(format!(
            "{} rounds but {} goodput steps",
            rounds.len(),
            steps.len()
        ));
    }
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1e-12);
    for (k, (r, st)) in rounds.iter().zip(steps).enumerate() {
        let counted = if st.duration_s > 0.0 {
            f64::from(st.n_good) / st.duration_s
        } else {
            0.0
        };
        if !close(*r, counted) || !close(st.goodput, counted) || st.n_good > st.n_requests {
            return Some(format!(
                "round {}: goodput {r} but {} of {} good in {} s",
                k + 1,
                st.n_good,
                st.n_requests,
                st.duration_s
            ));
        }
    }
    None
}
