//! Rounds: the sweep measured again and again in rotated order (A B C, B C A, C A B), so
//! that every comparison inside a run is paired by round; with `rounds = "auto"`, rounds are
//! added until the answer is resolved or the budget is spent, and the run records why it
//! stopped.

use std::time::{Duration, Instant};

use super::{RunOptions, auto, sweep::Sweep};
use crate::output::progress::Progress;
use crate::plan::{self, PlannedTest};
use crate::record::{RecordError, RunRecord, Status};
use crate::stats::pairs::Design;

pub(super) struct Ran {
    /// Stopped early on request (Ctrl-C): the file can be resumed.
    pub interrupted: bool,
    /// Why auto rounds stopped before the budget, when they did.
    stopped: Option<String>,
    begun: Instant,
    /// The last round's wall time (what auto rounds expect the next one to take).
    last: Duration,
}

pub(super) fn run(
    sweep: &mut Sweep,
    mine: &[PlannedTest],
    opts: &RunOptions,
    progress: &mut dyn Progress,
) -> Result<Ran, RecordError> {
    let rounds = opts.config.settings.rounds.max(1) as usize;
    let auto = opts.config.settings.auto_rounds;
    let mut ran = Ran {
        interrupted: false,
        stopped: None,
        begun: Instant::now(),
        last: Duration::ZERO,
    };
    for round in 0..rounds {
        // `rounds = "auto"`: stop once the answer is resolved or the budget is spent.
        if let Some(a) = &auto {
            ran.stopped = auto::stop_before(a, round, &sweep.record, ran.begun.elapsed(), ran.last);
            if ran.stopped.is_some() {
                break;
            }
        }
        // Rotated at once: the unrotated list would be one more copy of the tests held
        // through the round.
        let due = rotated(&due_in_round(mine, round, &sweep.record), round);
        if due.is_empty() {
            continue;
        }
        if rounds > 1 && !opts.quiet {
            let of = match auto {
                Some(_) => format!("at most {rounds}, auto"),
                None => rounds.to_string(),
            };
            progress.note(&format!("round {}/{of}", round + 1));
        }
        let t0 = Instant::now();
        ran.interrupted = sweep.measure_all(&due, progress)?;
        ran.last = t0.elapsed();
        if ran.interrupted {
            break;
        }
    }
    Ok(ran)
}

/// With auto rounds, records how many rounds ran, why they stopped and what stayed open,
/// and says so on stderr. Nothing for fixed rounds or an interrupted run.
pub(super) fn conclude_auto(sweep: &mut Sweep, ran: &Ran, opts: &RunOptions) {
    let (Some(a), false) = (&opts.config.settings.auto_rounds, ran.interrupted) else {
        return;
    };
    let done = sweep.record.tests.iter().map(|t| t.rounds_done()).max();
    let done = done.unwrap_or(0);
    let why = ran.stopped.clone().unwrap_or_else(|| {
        auto::stop_before(a, done, &sweep.record, ran.begun.elapsed(), ran.last)
            .unwrap_or_else(|| format!("budget spent: max_rounds {} reached", a.max_rounds))
    });
    let looked = auto::look(&sweep.record, Design::sequential(a.max_rounds));
    if !opts.quiet {
        eprintln!("auto rounds: {why}");
        if !looked.open.is_empty() {
            eprintln!(
                "auto rounds: not established within the budget: {}",
                looked.open.join("; ")
            );
        }
    }
    sweep.record.run.rounds = done.max(1) as u32;
    if let Some(r) = sweep.record.run.rounds_auto.as_mut() {
        r.stopped = Some(why);
        r.open = looked.open;
    }
}

/// Whether a test takes part in rounds after the first: the llama-bench-style tests. A
/// quality test is deterministic, and a serving test repeats its own requests.
pub fn rounds_apply(t: &PlannedTest) -> bool {
    matches!(t.detail, plan::Detail::Bench)
}

/// The tests of `mine` that round `round` (0-based) still has to measure: those without a
/// record in round 0, then the llama-bench-style ones holding `round` rounds (a failure is final).
pub fn due_in_round(mine: &[PlannedTest], round: usize, record: &RunRecord) -> Vec<PlannedTest> {
    mine.iter()
        .filter(|t| match record.tests.iter().find(|r| r.id == t.id) {
            None => round == 0,
            Some(r) => rounds_apply(t) && r.status == Status::Ok && r.rounds_done() == round,
        })
        .cloned()
        .collect()
}

/// Round `round`'s order: the groups that share a model load (loaded once a round) rotate,
/// and the llama-bench-style tests inside a group too, so no test always runs first.
pub fn rotated(tests: &[PlannedTest], round: usize) -> Vec<PlannedTest> {
    let mut groups: Vec<Vec<PlannedTest>> = Vec::new();
    for t in tests {
        match groups.last_mut() {
            Some(g) if g[0].model == t.model && g[0].load_key() == t.load_key() => {
                g.push(t.clone())
            }
            _ => groups.push(vec![t.clone()]),
        }
    }
    let n = groups.len().max(1);
    groups.rotate_left(round % n);
    for g in &mut groups {
        if g.iter().all(rounds_apply) {
            let len = g.len();
            g.rotate_left(round % len);
        }
    }
    groups.concat()
}
