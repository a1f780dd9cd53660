//! `rounds = "auto"`: after each round from the third (`stats::pairs::FIRST_LOOK`), the
//! comparisons the answer depends on are judged with the sequential design, and the rounds
//! stop when none is open or the budget is spent. They are, per ladder, the ladder table's
//! own (`stats::resolve`: the fastest within the KLD budget against each rival, and each
//! variant off the Pareto front); for the other llama-bench tests, per model and test name,
//! the fastest setting against each other.

use std::time::Duration;

use crate::config::AutoRounds;
use crate::ladder::table::{self, DEFAULT_KLD_BUDGET};
use crate::record::{RunRecord, Status};
use crate::stats::analysis::LevelInterval;
use crate::stats::compare::NoiseFloor;
use crate::stats::pairs::{Design, FIRST_LOOK};
use crate::stats::resolve::{Choice, resolve};
use crate::stats::ties::Figure;

/// The comparisons at one look.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Looked {
    /// How many comparisons the answer depends on.
    pub total: usize,
    /// Those not established, "Q4_K_M vs Q8_0 (tg128)".
    pub open: Vec<String>,
}

/// The comparisons of `record`'s answer under `design`, and those still open.
pub fn look(record: &RunRecord, design: Design) -> Looked {
    let mut out = Looked::default();
    // Ladders: the ladder table's own resolution (its design is the run's: auto).
    // Auto rounds pair every row from the third round on; the floor only judges a row that
    // has fewer (a failed test's).
    let floor = NoiseFloor::assumed();
    let (rows, groups) = table::rows_resolved(record, DEFAULT_KLD_BUDGET, &floor);
    for (idx, r) in &groups {
        let decoded = idx.iter().copied().filter(|&i| rows[i].tg_ts.is_some());
        let decoded: Vec<_> = decoded.collect();
        out.total += r.needed;
        let test = rows.iter().find_map(|r| r.tg_test.clone());
        let test = test.unwrap_or_default();
        for &(a, b) in &r.open {
            out.open.push(format!(
                "{} vs {} ({test})",
                rows[decoded[a]].quant_type, rows[decoded[b]].quant_type
            ));
        }
    }
    // The other tests: per model (without a ladder's provenance) and test name.
    let plain = |m: &str| {
        record
            .models
            .iter()
            .any(|x| x.name == m && x.provenance.is_none())
    };
    let keys = (record.tests.iter())
        .filter(|t| t.kind.is_llama_bench() && plain(&t.model))
        .map(|t| (t.model.clone(), t.test.clone()));
    for (model, test) in super::unique(keys) {
        let ts: Vec<_> = (record.tests.iter())
            .filter(|t| t.model == model && t.test == test && t.kind.is_llama_bench())
            .filter(|t| t.status == Status::Ok && t.median_ts.is_some())
            .collect();
        if ts.len() < 2 {
            continue;
        }
        let choices: Vec<Choice> = ts.iter().map(|t| choice(t)).collect();
        let r = resolve(&choices, DEFAULT_KLD_BUDGET, Some(design), 0.05, &floor);
        out.total += r.needed;
        for &(a, b) in &r.open {
            out.open.push(format!("{} vs {}", ts[a].id, ts[b].id));
        }
    }
    out
}

/// A test as a choice: the mean of its round medians, with its interval between rounds.
fn choice(t: &crate::record::TestRecord) -> Choice {
    let rounds = t.round_medians();
    let v = crate::stats::mean(&rounds);
    let covers = crate::stats::analysis::Covers::BetweenRounds;
    let speed = Figure::widened(v, LevelInterval::of(covers, &rounds).as_ref());
    Choice {
        speed,
        rounds,
        error: None,
    }
}

/// Before round `done + 1`: why the rounds stop now, or None to run it. `elapsed`: the run's
/// time so far; `last`: the last round's.
pub(crate) fn stop_before(
    a: &AutoRounds,
    done: usize,
    record: &RunRecord,
    elapsed: Duration,
    last: Duration,
) -> Option<String> {
    // Two rounds at least: fewer leave nothing to pair.
    if done < 2 {
        return None;
    }
    if done >= FIRST_LOOK {
        let l = look(record, Design::sequential(a.max_rounds));
        if l.total > 0 && l.open.is_empty() {
            let what = match l.total {
                1 => "the comparison the answer depends on is established".to_string(),
                n => format!("all {n} comparisons the answer depends on are established"),
            };
            return Some(format!("resolved after {done} rounds: {what}"));
        }
    }
    if done >= a.max_rounds as usize {
        return Some(format!("budget spent: max_rounds {} reached", a.max_rounds));
    }
    let why = past_budget("max_rounds_seconds", a.max_seconds?, elapsed, last, done)?;
    Some(format!("budget spent: {why}"))
}

/// Why a round that would end past `max` seconds (option `key`) does not start, if it would.
pub(crate) fn past_budget(
    key: &str,
    max: f64,
    elapsed: Duration,
    last: Duration,
    rounds: usize,
) -> Option<String> {
    ((elapsed + last).as_secs_f64() > max).then(|| {
        format!(
            "{:.0} s of {key} {max:.0} after {rounds} rounds (another round takes about {:.0} s)",
            elapsed.as_secs_f64(),
            last.as_secs_f64()
        )
    })
}

/// Whether the plan has a comparison for auto rounds to resolve: two llama-bench-style tests
/// of one test name for one model, or a ladder of two variants or more.
pub fn has_comparison(plan: &crate::plan::Plan) -> bool {
    let bench = plan.tests.iter().filter(|t| super::rounds_apply(t));
    let bench: Vec<_> = bench.collect();
    bench.iter().enumerate().any(|(i, t)| {
        bench[i + 1..].iter().any(|u| {
            let (mt, mu) = (&plan.models[t.model], &plan.models[u.model]);
            let same_test = t.params.n_prompt == u.params.n_prompt
                && t.params.n_gen == u.params.n_gen
                && t.params.n_depth == u.params.n_depth;
            let ladder = |m: &crate::plan::PlanModel| m.source.ladder();
            same_test && (t.model == u.model || ladder(mt).is_some() && ladder(mt) == ladder(mu))
        })
    })
}
