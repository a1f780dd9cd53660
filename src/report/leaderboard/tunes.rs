//! What "Which configuration?" says of each machine's newest tune: its figures recomputed
//! from the file's rounds, its verdicts replayed when the file was read (`record::verify`).

use super::load::{Board, BoardTune, machine_names};

pub(super) struct Lines {
    pub heading: String,
    pub answer: String,
    pub details: Vec<String>,
}

pub(super) fn lines(b: &Board, t: &BoardTune) -> Lines {
    let s = &t.summary;
    let r = &s.tune;
    let full_sweep = r.candidates.len() * r.rounds;
    let host = machine_names(b).get(t.machine).cloned().unwrap_or_default();
    let answer = match &s.winner {
        Some(w) => format!("{w}: {}", s.figure()),
        None => "no answer: no candidate was measured".into(),
    };
    let mut details = s.others();
    details.push(format!(
        "excluded by the limits before racing: {} (of {} in the space)",
        s.excluded_counts(),
        r.space
    ));
    details.push(format!(
        "cost: {} tests in {} rounds, {:.0}% of the full sweep of the {} raced at {} rounds \
         ({}); {:.0} s of racing (as recorded); {}",
        r.tests_run,
        r.rounds,
        100.0 * r.tests_run as f64 / full_sweep.max(1) as f64,
        r.candidates.len(),
        r.rounds,
        full_sweep,
        r.seconds,
        r.stopped
    ));
    let file = t.file.display();
    details.push(format!("file: {file} (started {})", t.started_at));
    Lines {
        heading: format!("{} on {host}", r.objective),
        answer,
        details,
    }
}

pub(super) fn meaning(b: &Board) -> String {
    let alpha = b.tunes.first().map_or(0.05, |t| t.summary.tune.alpha);
    format!(
        "The newest tune of each machine and objective (tpsbench tune, or run with a \
         [tune] table): the fastest configuration within its limits, found by racing. The \
         interval covers the variation between the winner's rounds in that one race on that \
         machine, not between machines or builds. Every elimination and tie holds at {:.0}% \
         family-wise; this page replayed each race from its file's rounds before showing it.",
        alpha * 100.0
    )
}
