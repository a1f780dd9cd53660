//! The leaderboard page's "Which configuration?" section: each machine's tune
//! answer, every text from the file escaped. What it says is `tunes::lines`, shared with
//! the Markdown page.

use std::fmt::Write as _;

use super::load::Board;
use super::svg::escape;

/// "Which configuration?": per machine and objective, the answer and its lines.
pub(super) fn section(o: &mut String, b: &Board) {
    if b.tunes.is_empty() {
        return;
    }
    let _ = write!(
        o,
        r#"<section id="tune"><h2>Which configuration?</h2><p class="note">{}</p>"#,
        escape(&super::tunes::meaning(b))
    );
    for t in &b.tunes {
        let l = super::tunes::lines(b, t);
        let _ = write!(
            o,
            r#"<div class="answer"><h3>{}</h3><p class="verdict">{}</p><ul>"#,
            escape(&l.heading),
            escape(&l.answer)
        );
        for d in &l.details {
            let _ = write!(o, "<li>{}</li>", escape(d));
        }
        o.push_str("</ul></div>");
    }
    o.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::leaderboard::load::BoardTune;
    use crate::report::tune::Summary;

    /// A tune whose every text comes from an untrusted file, markup in each.
    fn hostile() -> Board {
        let s = Summary {
            objective: "tg8<script>".into(),
            winner: Some("m<b>/Q4_0/tg8".into()),
            mean: 10.0,
            interval: None,
            winner_rounds: 1,
            ties: vec![("t<i>".into(), Some(0.99))],
            open: vec![("o&<".into(), None)],
            slower: 1,
            failed: vec!["f\"<".into()],
            raced: 4,
            space: 5,
            excluded: vec![("memory<".into(), 1)],
            tests_run: 6,
            full_sweep: 8,
            rounds: 2,
            seconds: 1.0,
            stopped: "budget <spent>".into(),
            indifference: 0.02,
            alpha: 0.05,
        };
        Board {
            tunes: vec![BoardTune {
                machine: 0,
                file: "r<x>.json".into(),
                started_at: "2026-12-04T00:00:00Z<".into(),
                summary: s,
            }],
            ..Board::default()
        }
    }

    #[test]
    fn every_text_of_a_tune_from_the_file_is_escaped_in_the_page() {
        let mut o = String::new();
        section(&mut o, &hostile());
        let inner = o
            .replace("<section id=\"tune\">", "")
            .replace("<h2>", "")
            .replace("</h2>", "")
            .replace("<p class=\"note\">", "")
            .replace("<p class=\"verdict\">", "")
            .replace("</p>", "")
            .replace("<div class=\"answer\">", "")
            .replace("</div>", "")
            .replace("<h3>", "")
            .replace("</h3>", "")
            .replace("<ul>", "")
            .replace("</ul>", "")
            .replace("<li>", "")
            .replace("</li>", "")
            .replace("</section>", "");
        assert!(!inner.contains('<'), "{o}");
        assert!(o.contains("tg8&lt;script&gt;"), "{o}");
        assert!(
            o.contains("m&lt;b&gt;/Q4_0/tg8: 10.00 t/s (one round: no interval)"),
            "{o}"
        );
        assert!(
            o.contains("excluded by the limits before racing: memory&lt; 1 (of 5 in the space)"),
            "{o}"
        );
    }

    #[test]
    fn a_board_without_tunes_has_no_configuration_section() {
        let mut o = String::new();
        section(&mut o, &Board::default());
        assert!(o.is_empty());
    }
}
