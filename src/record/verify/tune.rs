//! A file's race (`run.tune`) replayed from its own rounds: `stats::race` run again
//! over each candidate's round medians (themselves checked against the samples), with the
//! file's settings, must reach the verdicts the file states. The verdicts are what the
//! leaderboard and the answer print (the winner, its ties, what each elimination claims), so
//! an edited outcome, winner or ratio is refused as an edited median is. The seconds cannot
//! be replayed (they are wall time): readers show them as recorded.

use std::fmt::Display;

use super::{close, mismatch};
use crate::record::tune::{TuneRecord, breaks, goodput_disagrees, verdicts};
use crate::record::{Disagreement, RunRecord};
use crate::stats::race::{self, Race, Settings};

/// The first verdict of `run.tune` that its rounds do not give.
pub(super) fn check(run: &RunRecord) -> Result<(), Disagreement> {
    let Some(t) = &run.run.tune else {
        return Ok(());
    };
    settings(t)?;
    if t.candidates.is_empty() {
        // A race the limits refused: nothing raced, so nothing can have won.
        return match &t.winner {
            None => Ok(()),
            Some(w) => mismatch("winner", format!("{w:?}"), "none (no candidate raced)"),
        };
    }
    let ids: Vec<String> = t.candidates.iter().map(|c| c.id.clone()).collect();
    super::bisect::check(run, t)?;
    let rounds: Vec<Vec<f64>> = (ids.iter())
        .map(|id| t.raced_rounds(&run.tests, id).unwrap_or_default())
        .collect();
    let r = replay(t, &rounds)?;
    let (candidates, winner) = verdicts(&r, &ids);
    if winner != t.winner {
        return replayed("winner", format!("{:?}", t.winner), format!("{winner:?}"));
    }
    for (i, (stored, got)) in t.candidates.iter().zip(&candidates).enumerate() {
        let ratio_agrees = match (stored.ratio, got.ratio) {
            (Some(a), Some(b)) => close(a, b),
            (a, b) => a == b,
        };
        let same = stored.outcome == got.outcome
            && stored.by == got.by
            && stored.at_round == got.at_round
            && stored.rounds == got.rounds
            && ratio_agrees;
        if !same {
            return replayed(&format!("candidates[{i}]"), describe(stored), describe(got));
        }
    }
    slo(run, t, &ids)
}

/// The race replayed from the candidates' `rounds`, as the runner fed them; the first of
/// its rounds, cost and stop that the file does not state.
fn replay(t: &TuneRecord, rounds: &[Vec<f64>]) -> Result<Race, Disagreement> {
    let settings = Settings {
        alpha: t.alpha,
        indifference: t.indifference,
        max_rounds: t.max_rounds as usize,
    };
    let mut r = Race::new(t.candidates.len(), settings);
    if !close(r.level(), t.level) {
        return mismatch("level", t.level, r.level());
    }
    // The runner feeds rounds until the race stops itself, or its time budget or Ctrl-C
    // ends it (which only the recorded round count tells). A race whose every candidate
    // left in round 1 (a goodput race whose load none met) records 0 rounds and its tests.
    let mut fed = 0;
    while r.stop().is_none() && (fed < t.rounds || (fed == 0 && t.tests_run > 0)) {
        fed += 1;
        let k = r.rounds_done();
        let values: Vec<(usize, Option<f64>)> = r
            .survivors()
            .into_iter()
            .map(|i| (i, rounds[i].get(k).copied()))
            .collect();
        r.add_round(&values);
    }
    let replayed_stop = r.stop().map(|s| s.describe());
    if replayed_stop.is_none() {
        r.end("recorded".into());
    }
    if r.rounds_done() != t.rounds {
        return replayed("rounds", t.rounds, r.rounds_done());
    }
    if r.cost() != t.tests_run {
        return replayed("tests_run", t.tests_run, r.cost());
    }
    let stored = format!("{:?}", t.stopped);
    match replayed_stop {
        Some(s) if s != t.stopped => replayed("stopped", stored, format!("{s:?}")),
        None if !t.stopped.starts_with("budget spent: ") => {
            replayed("stopped", stored, "a budget or an interruption")
        }
        _ => Ok(r),
    }
}

/// The race replayed from the tests' rounds gives `got` where the file states `stored`.
fn replayed<T>(field: &str, stored: impl Display, got: impl Display) -> Result<T, Disagreement> {
    mismatch(
        field,
        stored,
        format!("{got} (the race replayed from the tests' rounds)"),
    )
}

/// A goodput race's rounds are its tests' counts (good requests over the round's time), and
/// what broke a latency limit is what the tests' samples give.
fn slo(run: &RunRecord, t: &TuneRecord, ids: &[String]) -> Result<(), Disagreement> {
    let Some(s) = &t.slo else {
        return Ok(());
    };
    if s.goodput.is_some() {
        for x in run.tests.iter().filter(|x| ids.contains(&x.id)) {
            if let Some(why) = goodput_disagrees(x) {
                let field = format!("slo.goodput ({})", x.id);
                return mismatch(&field, "its rounds' goodput", why);
            }
        }
    }
    let got = breaks(s, &t.candidates, &run.tests);
    if got != s.broke {
        let show = |v: &[crate::record::tune::Excluded]| {
            let v: Vec<String> = v.iter().map(|e| format!("{}: {}", e.id, e.why)).collect();
            format!("[{}]", v.join("; "))
        };
        return mismatch(
            "slo.broke",
            show(&s.broke),
            format!("{} (from the tests' samples)", show(&got)),
        );
    }
    Ok(())
}

/// The settings a replay can run with: a family-wise error and an indifference that mean
/// something, a budget `tune` accepts, and the looks those give.
fn settings(t: &TuneRecord) -> Result<(), Disagreement> {
    if !(t.alpha > 0.0 && t.alpha < 1.0) {
        return mismatch("alpha", t.alpha, "a level in (0, 1)");
    }
    if !(0.0..0.5).contains(&t.indifference) {
        return mismatch("indifference", t.indifference, "a share in [0, 0.5)");
    }
    // The rounds `tpsbench tune` accepts, which bound the replay's work.
    let most = crate::config::MAX_ROUNDS;
    if !most.contains(&i64::from(t.max_rounds)) {
        let range = format!("{} to {}", most.start(), most.end());
        return mismatch("max_rounds", t.max_rounds, range);
    }
    let looks = race::looks(t.max_rounds as usize);
    if looks != t.looks {
        return mismatch("looks", format!("{:?}", t.looks), format!("{looks:?}"));
    }
    if t.candidates.len() > t.space {
        return mismatch(
            "space",
            t.space,
            format!("at least the {} candidates raced", t.candidates.len()),
        );
    }
    Ok(())
}

/// "ID: slower by B at round 3 (ratio 1.2), 3 rounds".
fn describe(c: &crate::record::tune::Candidate) -> String {
    let mut s = format!("{}: {}", c.id, c.outcome);
    if let Some(b) = &c.by {
        s.push_str(&format!(" by {b}"));
    }
    if let Some(r) = c.at_round {
        s.push_str(&format!(" at round {r}"));
    }
    if let Some(x) = c.ratio {
        s.push_str(&format!(" (ratio {})", super::short(x)));
    }
    s.push_str(&format!(", {} rounds", c.rounds));
    s
}
