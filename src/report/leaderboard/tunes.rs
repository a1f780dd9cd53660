//! The leaderboard's "Which configuration?" section: each machine's tune answer,
//! from the result files that carry `run.tune`. The newest tune of each machine and
//! objective is shown. Its figures are the file's rounds, recomputed (`report::tune::summary`),
//! and its verdicts were replayed from those rounds when the file was read
//! (`record::verify`); only the race's wall time is shown as recorded. `load` collects the
//! tunes while it builds the board; here is what the section says, and its Markdown;
//! `html_tune.rs` writes the HTML one.

use std::fmt::Write;

use super::load::{Board, BoardTune, machine_names};
use crate::report::tune::Summary;
use crate::util::markdown::text as md;

/// What the section's lines say of one tune, as plain text (each writer escapes it): the
/// heading, the answer, then the ties, the open candidates, what was eliminated, what the
/// limits excluded and the cost.
pub(super) struct Lines {
    pub heading: String,
    pub answer: String,
    pub details: Vec<String>,
}

/// The section's text of `t`.
pub(super) fn lines(b: &Board, t: &BoardTune) -> Lines {
    let s = &t.summary;
    let host = machine_names(b).get(t.machine).cloned().unwrap_or_default();
    let answer = match &s.winner {
        Some(w) => format!("{w}: {}", s.figure()),
        None => "no answer: no candidate was measured".into(),
    };
    let mut details = Vec::new();
    if !s.ties.is_empty() {
        details.push(format!(
            "ties (established within {:.0}%): {}",
            s.indifference * 100.0,
            Summary::listed(&s.ties)
        ));
    }
    if !s.open.is_empty() {
        details.push(format!(
            "open (not separated from the answer within the budget): {}",
            Summary::listed(&s.open)
        ));
    }
    let mut raced = format!("eliminated as slower: {} of {} raced", s.slower, s.raced);
    if !s.failed.is_empty() {
        raced.push_str(&format!("; failed: {}", s.failed.join(", ")));
    }
    details.push(raced);
    details.push(format!(
        "excluded by the limits before racing: {} (of {} in the space)",
        s.excluded_counts(),
        s.space
    ));
    details.push(format!(
        "cost: {} tests in {} rounds, {:.0}% of the full sweep of the {} raced at {} rounds \
         ({}); {:.0} s of racing (as recorded); {}",
        s.tests_run,
        s.rounds,
        100.0 * s.tests_run as f64 / s.full_sweep.max(1) as f64,
        s.raced,
        s.rounds,
        s.full_sweep,
        s.seconds,
        s.stopped
    ));
    details.push(format!(
        "file: {} (started {})",
        t.file.display(),
        t.started_at
    ));
    Lines {
        heading: format!("{} on {host}", s.objective),
        answer,
        details,
    }
}

/// What every tune's figures mean, once under the section's heading.
pub(super) fn meaning(b: &Board) -> String {
    let alpha = b.tunes.first().map_or(0.05, |t| t.summary.alpha);
    format!(
        "The newest tune of each machine and objective (tpsbench tune, or run with a \
         [tune] table): the fastest configuration within its limits, found by racing. The \
         interval covers the variation between the winner's rounds in that one race on that \
         machine, not between machines or builds. Every elimination and tie holds at {:.0}% \
         family-wise; this page replayed each race from its file's rounds before showing it.",
        alpha * 100.0
    )
}

/// "Which configuration?" in Markdown: per machine and objective, the answer and its lines.
pub(super) fn markdown_section(o: &mut String, b: &Board) {
    if b.tunes.is_empty() {
        return;
    }
    let _ = writeln!(o, "## Which configuration?\n\n{}\n", md(&meaning(b)));
    for t in &b.tunes {
        let l = lines(b, t);
        let _ = writeln!(
            o,
            "### {}\n\n**Answer:** {}\n",
            md(&l.heading),
            md(&l.answer)
        );
        for d in &l.details {
            let _ = writeln!(o, "- {}", md(d));
        }
        o.push('\n');
    }
}
